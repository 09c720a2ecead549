"""The answer of a run, per paper: one line each, the same in the console, the report and README.

A reader wants, per paper, how many of its claims held. :func:`answers` counts the verdicts of
``tables/claims.csv`` per registered paper (the studies beyond the papers apart, after them);
a paper's calibration rows (checks of our own metric or pipeline,
:attr:`~noisyor_bench.experiments.papers.Paper.calibration_prefixes`) are counted apart, never
among its claims. :func:`run_info` says which run made them (grid, papers, commit, wall time of
the last invocation, compute per paper from the benchmark files); the renderers
(:func:`answer_lines`, :func:`answer_markdown`, :func:`answer_rst`) write the same line in each
medium:

    ACP: 20 of 43 claims reproduced, 5 not reproduced, 10 inconclusive, 8 not tested (grid quick, 14 min of job CPU time) -> <link>

A run may select some papers only (``papers=[ape]``): :func:`results_answers` keeps the other
papers' answers from their last run (their stage claims CSVs, :attr:`Paper.claims_tables`),
each labelled with the run it came from (:func:`paper_runs`: one record per paper in
:data:`RUN_RECORD`).

Every input is read defensively by the callers that must not fail (the end of a run); the
functions here raise :class:`~noisyor_bench.infra.errors.DataError` naming the bad file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.qualifier_names import QUALIFIERS

VERDICT_ORDER = ("reproduced", "not reproduced", "inconclusive", "not tested")
"""Verdicts always shown, in this order (the vocabulary of one verdict per claim, docs/history.md); any other verdict found in an
older ``claims.csv`` (e.g. "budget-limited") follows, so no claim goes uncounted."""

QUALIFIER_COLUMNS = QUALIFIERS
"""``claims.csv`` qualifier columns (strings, empty = none): shown as tags, never counted as verdicts."""

RUN_RECORD = Path("logs") / "last_run.json"
"""The latest workflow invocation that executed jobs (relative to the results directory; its
wall time, jobs, grid, papers and commit as top-level keys) and, under :data:`PAPER_RUNS`, each
paper's own last run; written by :func:`write_run_record` from the Snakefile's ``onsuccess``."""

PAPER_RUNS = "paper_runs"
"""Key of :data:`RUN_RECORD`: paper id -> the record of the last invocation that selected it."""

CALIBRATION_HEADING = (
    "Calibration (checks of our own metric and pipeline, not claims of the papers; not counted):"
)

RESULTS_RECORD = ".noisyor-bench-results.json"
"""The results directory's own record (grid, papers, config hash, commit; infra.resultsdir)."""


@dataclass(frozen=True)
class RunInfo:
    """Which run produced the claims: all optional (a results directory copied without logs)."""

    grid: str | None = None
    papers: tuple[str, ...] = ()
    commit: str | None = None
    dirty: bool = False  # the checkout had uncommitted changes: the commit alone does not say the code
    config_hash: str | None = None
    wall_seconds: float | None = None
    finished: str | None = None
    jobs: int | None = None
    job_seconds: Mapping[str, float] = field(default_factory=dict)
    claims_commit: str | None = None  # the code that judged the claims (claims.csv's provenance)
    claims_dirty: bool = False
    created_commit: str | None = None  # the code of the invocation that created the results directory


@dataclass(frozen=True)
class PaperAnswer:
    """One paper's (or study's) verdict counts: its claims, and its calibration rows apart."""

    paper_id: str
    name: str
    beyond: bool
    counts: Counter[str]
    qualifiers: Counter[str] = field(default_factory=Counter)
    calibration: Counter[str] = field(default_factory=Counter)
    """Verdicts of its calibration rows (reproduced = within tolerance), never in :attr:`counts`."""
    calibration_ids: tuple[str, ...] = ()
    run: RunInfo | None = None
    """The run its claims came from (:func:`results_answers`); None: the answer's run."""
    sources: Counter[str] = field(default_factory=Counter)
    """How many of its headline verdicts each source gives (``claims.csv``'s ``source``, the
    evidence ladder of reporting.evidence); empty for a table without that column."""

    @property
    def total(self) -> int:
        """M: the paper's claims, calibration rows excluded."""
        return sum(self.counts.values())


# ---------------------------------------------------------------------------------- counting
def _verdicts(frame: pd.DataFrame) -> pd.Series:
    return frame["verdict"].fillna("no verdict").astype(str).str.strip()


def ordered_counts(counts: Counter[str]) -> list[tuple[str, int]]:
    """Every verdict of :data:`VERDICT_ORDER` (zeros included), then any other, largest first."""
    extra = sorted((v for v in counts if v not in VERDICT_ORDER), key=lambda v: (-counts[v], v))
    return [(v, counts.get(v, 0)) for v in (*VERDICT_ORDER, *extra)]


def answers(frame: pd.DataFrame) -> list[PaperAnswer]:
    """Per registered entry with claims in ``frame``: its verdict and qualifier counts; the
    papers in registry order, then the studies beyond the papers. A claim id no entry claims is
    a DataError (claims-merge refuses those; a hand-made CSV may not)."""
    from noisyor_bench.experiments import papers

    for column in ("claim_id", "verdict"):
        if column not in frame.columns:
            raise DataError(f"claims table: no {column!r} column (columns: {list(frame.columns)})")
    ids = frame["claim_id"].fillna("").astype(str)
    try:
        owner = ids.map(papers.paper_of_claim)
    except ValueError as err:  # the caller names the file
        raise DataError(str(err)) from None
    verdicts = _verdicts(frame)
    calibration = ids.map(papers.is_calibration_claim).astype(bool)
    out = []
    for entry in sorted(papers.papers(), key=lambda p: p.beyond_the_papers):  # stable: registry order
        mine = owner == entry.id
        if not mine.any():
            continue
        claims = mine & ~calibration
        qualifiers: Counter[str] = Counter()
        for column in QUALIFIER_COLUMNS:
            if column in frame.columns:
                set_ = frame.loc[claims, column].map(lambda v: isinstance(v, str) and v.strip() != "")
                if set_.any():
                    qualifiers[column] = int(set_.sum())
        out.append(
            PaperAnswer(
                entry.id,
                entry.name,
                entry.beyond_the_papers,
                Counter(verdicts[claims]),
                qualifiers,
                Counter(verdicts[mine & calibration]),
                tuple(ids[mine & calibration]),
                sources=_sources(frame, claims),
            )
        )
    return out


def _sources(frame: pd.DataFrame, rows: pd.Series) -> Counter[str]:
    """The headline sources of ``rows`` of a claims table, most verdicts first ({} without a ``source`` column)."""
    if "source" not in frame.columns:
        return Counter()
    labels = frame.loc[rows, "source"].map(lambda v: v.strip() if isinstance(v, str) else "")
    return Counter({k: n for k, n in Counter(labels).most_common() if k})


# ---------------------------------------------------------------------------------- the run
def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: cannot read it ({err})") from None
    return data if isinstance(data, dict) else None


def job_seconds_per_paper(runtime_jobs_csv: Path, paper_ids: Sequence[str]) -> dict[str, float]:
    """Seconds of compute per paper: its compute rules' jobs (each paper's cost model lists
    them, experiments.costs.compute_rules) summed over ``tables/runtime_jobs.csv`` -- each job's
    CPU time (``cpu_time_s``) where Snakemake measured it, else its wall time (``s``): the wall
    time of a job waiting for a core on a loaded machine counts the wait, its CPU time does not,
    so the figure is the grid's cost, not the machine's load."""
    from noisyor_bench.experiments.costs import compute_rules

    if not runtime_jobs_csv.is_file():
        return {}
    try:
        jobs = pd.read_csv(runtime_jobs_csv)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DataError(f"{runtime_jobs_csv}: cannot read the job times ({err})") from None
    if not {"rule", "s"} <= set(jobs.columns):
        raise DataError(f"{runtime_jobs_csv}: needs columns 'rule' and 's' (has {list(jobs.columns)})")
    seconds = pd.to_numeric(jobs["s"], errors="coerce")
    if "cpu_time_s" in jobs.columns:
        cpu = pd.to_numeric(jobs["cpu_time_s"], errors="coerce")
        seconds = cpu.where(cpu > 0, seconds)
    out = {}
    for pid in paper_ids:
        rules = compute_rules([pid])
        if rules:
            out[pid] = float(seconds[jobs["rule"].isin(rules)].sum())
    return out


def run_info(results_dir: str | Path) -> RunInfo:
    """What the results directory records about the run behind its claims."""
    from noisyor_bench.experiments import papers

    results = Path(results_dir)
    own = _read_json(results / RESULTS_RECORD) or {}
    last = _read_json(results / RUN_RECORD) or {}
    ids = tuple(str(p) for p in (last.get("papers") or own.get("papers") or ()))
    wall = last.get("wall_seconds")
    # claims re-judged after the run (e.g. --forcerun claims_*) carry their own commit
    claims_prov = _read_json(results / "tables" / "claims.csv.prov.json") or {}
    claims_code = (claims_prov.get("environment") or {}).get("code") or {}
    return RunInfo(
        grid=own.get("grid") or last.get("grid"),
        papers=ids,
        commit=last.get("commit") or (own.get("updated") or {}).get("commit"),
        dirty=bool(last.get("dirty")) if last.get("commit") else False,
        config_hash=own.get("config_hash"),
        wall_seconds=float(wall) if isinstance(wall, (int, float)) else None,
        finished=last.get("end"),
        jobs=last.get("jobs") if isinstance(last.get("jobs"), int) else None,
        job_seconds=job_seconds_per_paper(results / "tables" / "runtime_jobs.csv", ids or papers.ids()),
        claims_commit=claims_code.get("commit"),
        claims_dirty=bool(claims_code.get("dirty")),
        created_commit=(own.get("created") or {}).get("commit"),
    )


def _record_run(record: Mapping[str, Any], job_seconds: Mapping[str, float]) -> RunInfo:
    wall = record.get("wall_seconds")
    commit = record.get("commit")
    return RunInfo(
        grid=str(record["grid"]) if record.get("grid") else None,
        papers=tuple(str(p) for p in record.get("papers") or ()),
        commit=str(commit) if commit else None,
        dirty=bool(record.get("dirty")),
        wall_seconds=float(wall) if isinstance(wall, (int, float)) else None,
        finished=record.get("end"),
        jobs=record.get("jobs") if isinstance(record.get("jobs"), int) else None,
        job_seconds=job_seconds,
    )


def _paper_records(last: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """paper id -> its last run's record in a :data:`RUN_RECORD`; a record written before there
    was one per paper stands for every paper it names."""
    own = last.get(PAPER_RUNS)
    if isinstance(own, dict):
        return {str(p): dict(r) for p, r in own.items() if isinstance(r, dict)}
    top = {k: v for k, v in last.items() if k != PAPER_RUNS}
    return {str(p): top for p in last.get("papers") or ()} if top.get("end") else {}


def paper_runs(results_dir: str | Path) -> dict[str, RunInfo]:
    """paper id -> the last run that selected it (:data:`RUN_RECORD`), for every paper recorded."""
    results = Path(results_dir)
    last = _read_json(results / RUN_RECORD) or {}
    records = _paper_records(last)
    if not records:
        return {}
    seconds = job_seconds_per_paper(results / "tables" / "runtime_jobs.csv", list(records))
    return {p: _record_run(r, seconds) for p, r in records.items()}


def write_run_record(
    results_dir: str | Path,
    start: float,
    end: float,
    jobs: int | None,
    grid: str,
    paper_ids: Sequence[str],
    commit: str | None = None,
    dirty: bool | None = None,
) -> Path:
    """Record an invocation that executed jobs (:data:`RUN_RECORD`): its wall time, jobs, grid,
    papers, commit and whether the checkout had uncommitted changes (``dirty``), and under :data:`PAPER_RUNS` the same record for each of its papers, the
    other papers' records kept from their last run."""
    from datetime import UTC, datetime

    from noisyor_bench.infra.io import write_text_atomic

    def iso(t: float) -> str:
        return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")

    path = Path(results_dir) / RUN_RECORD
    try:
        earlier = _paper_records(_read_json(path) or {})
    except DataError:  # an unreadable record is replaced, not a failed run
        earlier = {}
    record = {
        "start": iso(start),
        "end": iso(end),
        "wall_seconds": round(end - start, 1),
        "jobs": jobs,
        "grid": grid,
        "papers": list(paper_ids),
        "commit": commit,
        "dirty": dirty,
    }
    runs = {**earlier, **{p: record for p in paper_ids}}
    record = {**record, PAPER_RUNS: dict(sorted(runs.items()))}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return path


def _stage_claims(results: Path, paper_id: str) -> pd.DataFrame | None:
    """A paper's claims from its stage claims CSVs under ``results`` (None: it has none there)."""
    from dataclasses import asdict

    from noisyor_bench.experiments import papers
    from noisyor_bench.reporting.claims import read_claims

    rows = []
    for rel in papers.get(paper_id).claims_tables:
        path = results / rel
        if path.is_file():  # a hand-edited file is refused (its provenance record)
            rows += [asdict(c) for c in read_claims(path) if c.paper == paper_id]
    return pd.DataFrame(rows) if rows else None


def results_answers(results_dir: str | Path, frame: pd.DataFrame) -> tuple[list[PaperAnswer], RunInfo]:
    """The answer of a results directory: per paper with claims in ``frame`` (its
    ``tables/claims.csv``), and per paper the latest run did not select, its answer from its own
    last run (its stage claims CSVs still in ``tables/``), each labelled with the run it came from
    (:attr:`PaperAnswer.run`); papers in registry order, the studies beyond the papers last."""
    from noisyor_bench.experiments import papers

    results = Path(results_dir)
    run = run_info(results)
    per_paper = paper_runs(results)
    found = {a.paper_id: a for a in answers(frame)}
    latest = set(run.papers)
    for entry in papers.papers():
        if entry.id in found or entry.id in latest:
            continue  # a paper of the latest run answers from it alone, never from older files
        try:
            earlier = _stage_claims(results, entry.id)
        except DataError as err:
            raise DataError(f"{entry.name}'s claims of its last run: {err}") from None
        if earlier is not None:
            found.update((a.paper_id, a) for a in answers(earlier) if a.paper_id == entry.id)
    order = [p.id for p in sorted(papers.papers(), key=lambda p: p.beyond_the_papers)]
    items = [
        replace(found[p], run=per_paper.get(p, run if p in latest or not latest else RunInfo()))
        for p in order
        if p in found
    ]
    return items, run


# ---------------------------------------------------------------------------------- rendering
def human_duration(seconds: float) -> str:
    """``42 s``, ``14 min``, ``2.5 h``: the precision a reader plans with."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def counts_phrase(answer: PaperAnswer) -> str:
    """``20 of 43 claims reproduced, 5 not reproduced, 10 inconclusive, 8 not tested``: N of M,
    M the paper's claims (its calibration rows apart, :func:`calibration_phrase`)."""
    (_, reproduced), *rest = ordered_counts(answer.counts)
    noun = "claim" if answer.total == 1 else "claims"
    return f"{reproduced} of {answer.total} {noun} reproduced" + "".join(f", {n} {v}" for v, n in rest)


CALIBRATION_WORDS = {"reproduced": "within tolerance", "not reproduced": "outside tolerance"}
"""A calibration row's verdict in its own words: it checks a tolerance, not a paper's claim."""


def calibration_phrase(answer: PaperAnswer) -> str:
    """``calibration: 1 of 1 within tolerance`` (then any other verdict); '' without calibration rows."""
    total = sum(answer.calibration.values())
    if not total:
        return ""
    (_, within), *rest = ordered_counts(answer.calibration)
    others = "".join(f", {n} {CALIBRATION_WORDS.get(v, v)}" for v, n in rest if n)
    return f"calibration: {within} of {total} within tolerance{others}"


DIRTY_LABEL = "with uncommitted changes"
"""Said after a commit whose checkout had uncommitted changes: the commit alone does not name
the code that ran (the console's answer, the README block, docs/results.md and the report)."""


def commit_phrase(run: RunInfo) -> str:
    """``commit 772a63da76b2``, or ``commit 772a63da76b2 with uncommitted changes``."""
    return f"commit {str(run.commit)[:12]}" + (f" {DIRTY_LABEL}" if run.dirty else "")


def run_label(run: RunInfo) -> str:
    """Which run an answer came from: ``run of 2026-11-26T10:18:10+00:00 (grid quick, papers acp
    avipam, commit 772a63da76b2)``."""
    if run.finished is None and run.grid is None:
        return "from an earlier run without a run record"
    bits = [f"grid {run.grid or 'unknown'}"]
    if run.papers:
        bits.append(f"papers {' '.join(run.papers)}")
    if run.commit:
        bits.append(commit_phrase(run))
    when = f" of {run.finished}" if run.finished else ""
    return f"from the run{when} ({', '.join(bits)})"


def _labelled(items: Sequence[PaperAnswer]) -> bool:
    """Whether the answers come from more than one run (then each names the run it came from)."""
    runs = {
        None if a.run is None else (a.run.finished, a.run.papers, a.run.grid, a.run.commit, a.run.dirty)
        for a in items
    }
    return len(runs) > 1


def qualifier_phrase(answer: PaperAnswer) -> str:
    """``[unconverged: 11] [low power: 3]``: how many claims carry each qualifier ('' if none)."""
    return " ".join(f"[{q.replace('_', ' ')}: {n}]" for q, n in answer.qualifiers.items())


def _context(answer: PaperAnswer, run: RunInfo) -> str:
    run = answer.run or run
    bits = [f"grid {run.grid}" if run.grid else "grid unknown"]
    seconds = run.job_seconds.get(answer.paper_id)
    if seconds:
        bits.append(f"{human_duration(seconds)} of job CPU time")
    if answer.sources:
        bits.append("verdicts from " + ", ".join(f"{label} {n}" for label, n in answer.sources.items()))
    return f"({', '.join(bits)})"


def answer_line(answer: PaperAnswer, run: RunInfo, link: str | None = None, labelled: bool = False) -> str:
    """The one line of a paper: ``ACP: 20 of 43 claims reproduced, ... (grid quick, 14 min of
    jobs) -> link``; ``labelled``: the run it came from too (answers of several runs)."""
    line = f"{answer.name}: {counts_phrase(answer)} {_context(answer, run)}"
    if labelled:
        line += f" [{run_label(answer.run or run)}]"
    return f"{line} -> {link}" if link else line


def calibration_line(answer: PaperAnswer) -> str:
    """``aviPAM calibration: 1 of 1 within tolerance (avipam-calibration-avitm)``."""
    return f"{answer.name} {calibration_phrase(answer)} ({', '.join(answer.calibration_ids)})"


def answer_title(items: Sequence[PaperAnswer]) -> str:
    """The report's title: ``noisyor-bench: ACP 20 of 43 claims reproduced; APE 5 of 12 claims
    reproduced`` (the papers' own claims; the studies beyond them and calibration rows apart)."""
    own, _ = grouped(items)
    if not own:
        return "noisyor-bench: no paper claims judged yet"
    parts = [f"{a.name} {counts_phrase(a).split(',')[0]}" for a in own]
    return "noisyor-bench: " + "; ".join(parts)


def run_line(run: RunInfo) -> str:
    """Which run the answer comes from: grid, papers, commit, the last invocation's wall time."""
    bits = [f"grid {run.grid or 'unknown'}"]
    if run.papers:
        bits.append(f"papers {' '.join(run.papers)}")
    if run.commit:
        bits.append(commit_phrase(run))
    if run.created_commit and run.commit and run.created_commit[:12] != str(run.commit)[:12]:
        # later invocations re-ran only some jobs: the rest are the first run's
        bits.append(f"results first made at commit {run.created_commit[:12]}")
    if run.claims_commit and (run.claims_commit != run.commit or (run.claims_dirty and not run.dirty)):
        dirty = f" {DIRTY_LABEL}" if run.claims_dirty else ""
        bits.append(f"claims judged at commit {run.claims_commit[:12]}{dirty}")
    if run.wall_seconds is not None:
        jobs = f", {run.jobs} jobs" if run.jobs is not None else ""
        when = f", finished {run.finished}" if run.finished else ""
        bits.append(f"last invocation {human_duration(run.wall_seconds)} wall{jobs}{when}")
    return "Run: " + "; ".join(bits)


def grouped(items: Sequence[PaperAnswer]) -> tuple[list[PaperAnswer], list[PaperAnswer]]:
    """The papers' own answers, and the studies beyond the papers (counted apart)."""
    return [a for a in items if not a.beyond], [a for a in items if a.beyond]


def answer_lines(
    items: Sequence[PaperAnswer], run: RunInfo, link: Callable[[str], str | None] = lambda _: None
) -> list[str]:
    """Plain text (console): the papers' lines, then the studies beyond the papers, then the run."""
    own, beyond = grouped(items)
    several = _labelled(items)
    lines = [answer_line(a, run, link(a.paper_id), several) for a in own]
    calibrated = [a for a in items if a.calibration]
    if calibrated:
        lines.append(CALIBRATION_HEADING)
        lines += [f"  {calibration_line(a)}" for a in calibrated]
    if beyond:
        lines.append("Beyond the papers (studies of ours, not counted with the papers' claims):")
        lines += [f"  {answer_line(a, run, link(a.paper_id), several)}" for a in beyond]
    if not items:
        lines.append("No claims in this run.")
    lines.append(run_line(run))
    return lines


def _answer_bullets(
    items: Sequence[PaperAnswer],
    run: RunInfo,
    escape: Callable[[str], str],
    linked: Callable[[PaperAnswer, str], str],
    empty: Sequence[str] = (),
) -> str:
    """The README's and the report's answer: one bullet per paper (the console's words, bold name,
    its qualifier tags), the beyond-the-paper studies apart, the run line last. ``escape`` makes
    text safe in the markup; ``linked`` appends the paper's claims link to a bullet."""

    several = _labelled(items)

    def bullet(a: PaperAnswer) -> str:
        text = f"**{escape(a.name)}**: {escape(counts_phrase(a))} {escape(_context(a, run))}"
        tags = qualifier_phrase(a)
        text += f"; qualifiers {escape(tags)}" if tags else ""
        text += f"; {escape(run_label(a.run or run))}" if several else ""
        return linked(a, f"- {text}")

    own, beyond = grouped(items)
    out = [bullet(a) for a in own] or list(empty)
    calibrated = [a for a in items if a.calibration]
    if calibrated:
        out += [
            "",
            escape(CALIBRATION_HEADING),
            "",
            *(f"- {escape(calibration_line(a))}" for a in calibrated),
        ]
    if beyond:
        out += ["", "Beyond the papers (studies of ours, counted apart):", "", *(bullet(a) for a in beyond)]
    out += ["", escape(run_line(run)) + "."]
    return "\n".join(out)


def answer_markdown(
    items: Sequence[PaperAnswer], run: RunInfo, link: Callable[[str], str | None] = lambda _: None
) -> str:
    """Markdown (README): one bullet per paper, the same words as the console, the link a link."""

    def linked(a: PaperAnswer, bullet: str) -> str:
        target = link(a.paper_id)
        return f"{bullet} -> [claims]({target})" if target else bullet

    return _answer_bullets(items, run, lambda text: text, linked)


_RST_SPECIAL = re.compile(r"([\\`*_|<>\[\]])")


def _rst(text: str) -> str:
    """Text safe in reStructuredText (no accidental markup, substitution or reference)."""
    return _RST_SPECIAL.sub(r"\\\1", text)


def answer_rst(
    items: Sequence[PaperAnswer], run: RunInfo, target: Callable[[str], str | None] = lambda _: None
) -> str:
    """reStructuredText (the report's landing page): a bullet list, each paper's claims page a
    link to the report result named ``target(paper_id)`` (a file name the report knows)."""

    def linked(a: PaperAnswer, bullet: str) -> str:
        name = target(a.paper_id)
        return f"{bullet} -> `{name}`_" if name else bullet

    return _answer_bullets(items, run, _rst, linked, empty=["- no claims in this run"])
