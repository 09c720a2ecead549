"""The answer of a run, per paper: one line each, the same in the console, the report and README.

A reader wants, per paper, how many of its claims held. :func:`answers` counts the verdicts of
``tables/claims.csv`` per registered paper (the studies beyond the papers apart, after them);
:func:`run_info` says which run made them (grid, papers, commit, wall time of the last
invocation, compute per paper from the benchmark files); the renderers (:func:`answer_lines`,
:func:`answer_markdown`, :func:`answer_rst`) write the same line in each medium:

    ACP: 43 claims -- 20 reproduced, 5 not reproduced, 10 inconclusive, 8 not tested (grid quick, 14 min of jobs) -> <link>

Every input is read defensively by the callers that must not fail (the end of a run); the
functions here raise :class:`~noisyor_bench.infra.errors.DataError` naming the bad file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from noisyor_bench.infra.errors import DataError

VERDICT_ORDER = ("reproduced", "not reproduced", "inconclusive", "not tested")
"""Verdicts always shown, in this order (the vocabulary of one verdict per claim, docs/history.md); any other verdict found in an
older ``claims.csv`` (e.g. "budget-limited") follows, so no claim goes uncounted."""

QUALIFIER_COLUMNS = ("protocol_deviation", "unconverged", "weak_learning", "bound_gap", "low_power")
"""``claims.csv`` qualifier columns (strings, empty = none): shown as tags, never counted as verdicts."""

RUN_RECORD = Path("logs") / "last_run.json"
"""Wall time of the latest workflow invocation that executed jobs (relative to the results
directory), written by :func:`write_run_record` from the Snakefile's ``onsuccess``."""

RESULTS_RECORD = ".noisyor-bench-results.json"
"""The results directory's own record (grid, papers, config hash, commit; infra.resultsdir)."""


@dataclass(frozen=True)
class PaperAnswer:
    """One paper's (or study's) verdict counts."""

    paper_id: str
    name: str
    beyond: bool
    counts: Counter[str]
    qualifiers: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class RunInfo:
    """Which run produced the claims: all optional (a results directory copied without logs)."""

    grid: str | None = None
    papers: tuple[str, ...] = ()
    commit: str | None = None
    config_hash: str | None = None
    wall_seconds: float | None = None
    finished: str | None = None
    jobs: int | None = None
    job_seconds: Mapping[str, float] = field(default_factory=dict)
    claims_commit: str | None = None  # the code that judged the claims (claims.csv's provenance)
    claims_dirty: bool = False


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
    out = []
    for entry in sorted(papers.papers(), key=lambda p: p.beyond_the_papers):  # stable: registry order
        mine = owner == entry.id
        if not mine.any():
            continue
        qualifiers: Counter[str] = Counter()
        for column in QUALIFIER_COLUMNS:
            if column in frame.columns:
                set_ = frame.loc[mine, column].map(lambda v: isinstance(v, str) and v.strip() != "")
                if set_.any():
                    qualifiers[column] = int(set_.sum())
        out.append(
            PaperAnswer(entry.id, entry.name, entry.beyond_the_papers, Counter(verdicts[mine]), qualifiers)
        )
    return out


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
    them, experiments.costs.compute_rules) summed over ``tables/runtime_jobs.csv``."""
    from noisyor_bench.experiments.costs import compute_rules

    if not runtime_jobs_csv.is_file():
        return {}
    try:
        jobs = pd.read_csv(runtime_jobs_csv)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DataError(f"{runtime_jobs_csv}: cannot read the job times ({err})") from None
    if not {"rule", "s"} <= set(jobs.columns):
        raise DataError(f"{runtime_jobs_csv}: needs columns 'rule' and 's' (has {list(jobs.columns)})")
    out = {}
    for pid in paper_ids:
        rules = compute_rules([pid])
        if rules:
            out[pid] = float(jobs.loc[jobs["rule"].isin(rules), "s"].sum())
    return out


def run_info(results_dir: str | Path) -> RunInfo:
    """What the results directory records about the run behind its claims."""
    from noisyor_bench.experiments import papers

    results = Path(results_dir)
    own = _read_json(results / RESULTS_RECORD) or {}
    last = _read_json(results / RUN_RECORD) or {}
    ids = tuple(str(p) for p in (own.get("papers") or last.get("papers") or ()))
    wall = last.get("wall_seconds")
    # claims re-judged after the run (e.g. --forcerun claims_*) carry their own commit
    claims_prov = _read_json(results / "tables" / "claims.csv.prov.json") or {}
    claims_code = (claims_prov.get("environment") or {}).get("code") or {}
    return RunInfo(
        grid=own.get("grid") or last.get("grid"),
        papers=ids,
        commit=(own.get("updated") or {}).get("commit") or last.get("commit"),
        config_hash=own.get("config_hash"),
        wall_seconds=float(wall) if isinstance(wall, (int, float)) else None,
        finished=last.get("end"),
        jobs=last.get("jobs") if isinstance(last.get("jobs"), int) else None,
        job_seconds=job_seconds_per_paper(results / "tables" / "runtime_jobs.csv", ids or papers.ids()),
        claims_commit=claims_code.get("commit"),
        claims_dirty=bool(claims_code.get("dirty")),
    )


def write_run_record(
    results_dir: str | Path, start: float, end: float, jobs: int | None, grid: str, paper_ids: Sequence[str]
) -> Path:
    """Record the wall time of an invocation that executed jobs (:data:`RUN_RECORD`)."""
    from datetime import UTC, datetime

    from noisyor_bench.infra.io import write_text_atomic

    def iso(t: float) -> str:
        return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")

    path = Path(results_dir) / RUN_RECORD
    record = {
        "start": iso(start),
        "end": iso(end),
        "wall_seconds": round(end - start, 1),
        "jobs": jobs,
        "grid": grid,
        "papers": list(paper_ids),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return path


# ---------------------------------------------------------------------------------- rendering
def human_duration(seconds: float) -> str:
    """``42 s``, ``14 min``, ``2.5 h``: the precision a reader plans with."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def counts_phrase(answer: PaperAnswer) -> str:
    """``43 claims -- 20 reproduced, 5 not reproduced, 10 inconclusive, 8 not tested``."""
    parts = ", ".join(f"{n} {v}" for v, n in ordered_counts(answer.counts))
    return f"{answer.total} claim{'s' if answer.total != 1 else ''} -- {parts}"


def qualifier_phrase(answer: PaperAnswer) -> str:
    """``[unconverged: 11] [low power: 3]``: how many claims carry each qualifier ('' if none)."""
    return " ".join(f"[{q.replace('_', ' ')}: {n}]" for q, n in answer.qualifiers.items())


def _context(answer: PaperAnswer, run: RunInfo) -> str:
    bits = [f"grid {run.grid}" if run.grid else "grid unknown"]
    seconds = run.job_seconds.get(answer.paper_id)
    if seconds:
        bits.append(f"{human_duration(seconds)} of jobs")
    return f"({', '.join(bits)})"


def answer_line(answer: PaperAnswer, run: RunInfo, link: str | None = None) -> str:
    """The one line of a paper: ``ACP: 43 claims -- ... (grid quick, 14 min of jobs) -> link``."""
    line = f"{answer.name}: {counts_phrase(answer)} {_context(answer, run)}"
    return f"{line} -> {link}" if link else line


def run_line(run: RunInfo) -> str:
    """Which run the answer comes from: grid, papers, commit, the last invocation's wall time."""
    bits = [f"grid {run.grid or 'unknown'}"]
    if run.papers:
        bits.append(f"papers {' '.join(run.papers)}")
    if run.commit:
        bits.append(f"commit {run.commit[:12]}")
    if run.claims_commit and run.claims_commit != run.commit:
        dirty = " with uncommitted changes" if run.claims_dirty else ""
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
    lines = [answer_line(a, run, link(a.paper_id)) for a in own]
    if beyond:
        lines.append("Beyond the papers (studies of ours, not counted with the papers' claims):")
        lines += [f"  {answer_line(a, run, link(a.paper_id))}" for a in beyond]
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

    def bullet(a: PaperAnswer) -> str:
        text = f"**{escape(a.name)}**: {escape(counts_phrase(a))} {escape(_context(a, run))}"
        tags = qualifier_phrase(a)
        text += f"; qualifiers {escape(tags)}" if tags else ""
        return linked(a, f"- {text}")

    own, beyond = grouped(items)
    out = [bullet(a) for a in own] or list(empty)
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
