"""What a person reads first: the claims' verdict counts (end of a run), README's verdict table
and the results page.

Both are generated from one results directory (``noisyor-bench readme-results``, ``make
readme-results``) so that they always show the outputs of an actual run: README.md gets the
per-paper verdict counts of its ``claims.csv`` (between :data:`VERDICTS_BEGIN` and
:data:`VERDICTS_END`), the results page (``docs/results.md``) every claim and the main tables
(between :data:`BEGIN` and :data:`END`) and, from a published reference, that reference's
claims and tables (between :data:`REFERENCE_BEGIN` and :data:`REFERENCE_END`). Each rewrite
replaces the text between its markers and nothing else.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from noisyor_bench.experiments.papers import paper_of_claim as paper_of
from noisyor_bench.experiments.papers import papers as registered_papers
from noisyor_bench.infra.errors import DataError, UserError
from noisyor_bench.infra.integrity import verify_recorded_file
from noisyor_bench.reporting.claim_tables import timing_path

BEGIN = "<!-- results -->"
END = "<!-- /results -->"

README_TABLES = ("fig3a", "table4", "fig5", "table5")
"""Main tables shown on the results page (their Markdown views, ``tables/<name>.md``), when present."""

REFERENCE_BEGIN = "<!-- reference -->"
REFERENCE_END = "<!-- /reference -->"
REFERENCE_TABLES = ("fig3a", "fig4_recovery")
"""Tables of the published reference (``reference/<name>/tables``) shown in the results page's reference block."""

VERDICTS_BEGIN = "<!-- verdicts -->"
VERDICTS_END = "<!-- /verdicts -->"
RESULTS_PAGE = Path("docs") / "results.md"
"""The results page, relative to README's folder: every claim, the main tables, the reference."""

CLAIMS_PAGES_DIR = "claims"
"""Per-paper claims pages under the results directory (``claims/<paper>_claims.html``)."""

BEYOND = "beyond the papers"
"""How the verdict table labels a study of ours (``Paper.beyond_the_papers``): "APE on noisy-OR
(beyond the papers)", its own row, never counted as a paper's."""


def read_claims(claims_csv: str | Path) -> pd.DataFrame:
    """``claims.csv`` as a frame; an unreadable file, one edited since it was made (its sha256
    against its ``.prov.json``) or one without verdicts is a DataError. A headline table's
    wall-clock times (``claims_timing.csv`` beside it, reporting.evidence) come back as its
    ``timing`` column, for the pages that show them after the numbers."""
    path = Path(claims_csv)
    verify_recorded_file(path)
    try:
        frame = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DataError(f"{path}: cannot read the claims table ({err})") from None
    if "verdict" not in frame.columns:
        raise DataError(f"{path}: no 'verdict' column (columns: {list(frame.columns)})")
    if {"statistical_verdict", "numbers"} & set(frame.columns):  # a CSV written before qualifiers were named
        from noisyor_bench.reporting.claims import current_verdict

        old = frame.get("statistical_verdict", pd.Series("", index=frame.index))
        numbers = frame.get("numbers", pd.Series("", index=frame.index))
        frame["verdict"] = [current_verdict(*r) for r in zip(frame["verdict"], old, numbers)]
    return _with_timing(frame, path)


def _with_timing(frame: pd.DataFrame, claims_csv: Path) -> pd.DataFrame:
    """``frame`` with a ``timing`` column from the ``claims_timing.csv`` beside a headline
    ``claims.csv`` (claims without times: ""); unchanged when it has one or no such file exists."""
    timing_csv = timing_path(claims_csv)
    if "timing" in frame.columns or "claim_id" not in frame.columns or not timing_csv.is_file():
        return frame
    verify_recorded_file(timing_csv)
    try:
        times = pd.read_csv(timing_csv, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise DataError(f"{timing_csv}: cannot read the claims' timing table ({err})") from None
    if not {"claim_id", "timing"} <= set(times.columns):
        raise DataError(f"{timing_csv}: no 'claim_id' / 'timing' column (columns: {list(times.columns)})")
    by_claim = dict(zip(times["claim_id"], times["timing"]))
    frame = frame.copy()
    frame["timing"] = [by_claim.get(str(c), "") for c in frame["claim_id"]]
    return frame


def _counts(frame: pd.DataFrame) -> Counter[str]:
    return Counter(frame["verdict"].fillna("no data").astype(str))


def verdict_counts(claims_csv: str | Path) -> Counter[str]:
    """How many claims got each verdict in ``claims.csv``."""
    return _counts(read_claims(claims_csv))


def counts_text(counts: Counter[str]) -> str:
    """``"12 claims: 7 reproduced, 3 inconclusive, 2 not reproduced"`` (largest first)."""
    total = sum(counts.values())
    parts = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total} claim{'s' if total != 1 else ''}: {parts}" if total else "no claims checked"


def claims_page(results_dir: str | Path, paper_id: str) -> Path:
    """A paper's claims page (``claims/<paper>_claims.html``, noisyor-bench claims-pages)."""
    return Path(results_dir) / CLAIMS_PAGES_DIR / f"{paper_id}_claims.html"


def read_answers(results_dir: str | Path) -> tuple[list[Any], Any]:
    """The answers per paper and the run (reporting.answer) of a results directory's
    ``tables/claims.csv``, checked against its provenance record; the papers an earlier run
    answered and the latest did not select, from their last run (answer.results_answers)."""
    from noisyor_bench.reporting.answer import results_answers

    claims = Path(results_dir) / "tables" / "claims.csv"
    try:
        return results_answers(results_dir, read_claims(claims))
    except DataError as err:
        raise DataError(f"{claims}: {err}") from None


def write_landing_answer(results_dir: str | Path, out: str | Path, paper_ids: Sequence[str]) -> Path:
    """The report landing page's answer block (reStructuredText, included by
    docs/captions/workflow.rst): one line per paper linking its claims page, then the claims
    whose sources disagree (reporting.evidence); a line saying why when the claims cannot be
    read, so the report still builds."""
    from noisyor_bench.infra.io import write_text_atomic
    from noisyor_bench.reporting.answer import answer_rst, answer_title
    from noisyor_bench.reporting.evidence import disagreement_rst

    items: list[Any] = []
    if not (Path(results_dir) / "tables" / "claims.csv").is_file():
        text = "No claims yet: the run has not built ``tables/claims.csv``."
    else:
        try:
            items, run = read_answers(results_dir)
            names = {p: f"{p}_claims.html" for p in paper_ids}
            text = answer_rst(items, run, lambda p: names.get(p))
            disagreements = disagreement_rst(read_claims(Path(results_dir) / "tables" / "claims.csv"))
            text += f"\n\n{disagreements}" if disagreements else ""
        except (DataError, UserError) as err:
            text = f"The answer per paper could not be read: ``{err}``."
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, text + "\n")
    title = answer_title(items)  # the landing page's title (``title.rst`` beside the answer)
    write_text_atomic(Path(out).with_name(LANDING_TITLE), f"{title}\n{'=' * len(title)}\n")
    return Path(out)


LANDING_TITLE = "title.rst"
"""The report landing page's title (N of M claims reproduced per paper), written by
:func:`write_landing_answer` beside its answer block; docs/captions/workflow.rst includes it."""


def run_summary(results_dir: str | Path, report: str | None = None) -> str:
    """The lines printed when a run ends: one answer line per paper (reporting.answer: the same
    words as the report's landing page and README), the claims whose sources disagree
    (reporting.evidence), then where the tables and report are."""
    from noisyor_bench.reporting.answer import answer_lines
    from noisyor_bench.reporting.evidence import disagreement_lines

    results = Path(results_dir)
    claims = results / "tables" / "claims.csv"
    lines = []
    if claims.is_file():
        items, run = read_answers(results)

        def link(paper_id: str) -> str:
            page = claims_page(results, paper_id)
            return str(page if page.is_file() else results / "tables" / "claims.md")

        lines += answer_lines(items, run, link)
        lines += disagreement_lines(read_claims(claims))
        lines.append(f"Every claim: {results / 'tables' / 'claims.md'}")
    else:
        lines.append(f"Paper claims: no {claims} (the claims rule did not run)")
    from noisyor_bench.reporting.compare import read_reproduction_line

    reproduced = read_reproduction_line(results / "tables" / "comparison.csv")
    if reproduced:
        lines.append(f"Reproduction check: {reproduced} ({results / 'tables' / 'comparison.md'})")
    lines.append(f"Tables: {results / 'tables'}/*.html (one page per table), figures: {results / 'figures'}")
    if report:
        lines.append(
            f"Report: make report, or snakemake --report {report} (unzip it, open report/report.html)"
        )
    return "\n".join(lines)


def _demote(markdown: str, levels: int = 3) -> str:
    """Headings of an embedded Markdown table file pushed below the results page's own."""
    return re.sub(r"^(#+) ", lambda m: "#" * min(6, len(m.group(1)) + levels) + " ", markdown, flags=re.M)


def _claims_lines(claims: Path, columns: Sequence[str] = ("verdict", "statement")) -> list[str]:
    """The verdict counts, then per paper (an anchor README links to, a heading, its counts) one
    table row per claim of a ``claims.csv`` (read once); claims of no registered paper last. A
    headline table's ``source`` (reporting.evidence) follows the verdict."""
    from noisyor_bench.reporting.tables import markdown_table

    frame = read_claims(claims)
    if "source" in frame.columns and "verdict" in columns and "source" not in columns:
        frame["source"] = frame["source"].fillna("")
        at = list(columns).index("verdict") + 1
        columns = (*columns[:at], "source", *columns[at:])
    ids = frame["claim_id"].fillna("").astype(str) if "claim_id" in frame.columns else None
    owner = ids.map(_paper_of_or_none) if ids is not None else pd.Series(None, index=frame.index)
    out = [f"**{_papers_counts(frame[owner.notna()])}.**"]
    groups = [(p.id, _paper_label(p)) for p in registered_papers()] + [(None, "Other claims")]
    for paper_id, label in groups:
        mine = frame[owner.isna()] if paper_id is None else frame[owner == paper_id]
        if not len(mine):
            continue
        rows = [
            [r.get("claim_id", ""), *(_shown(r, c).replace("\n", " ") for c in columns)]
            for r in mine.to_dict("records")
        ]
        anchor = f'<a id="{claims_anchor(paper_id)}"></a>' if paper_id else ""
        out += [
            "",
            f"{anchor}**{label}**: {_paper_counts(mine) if paper_id else counts_text(_counts(mine))}.",
            "",
            *markdown_table(["claim", *columns], rows).splitlines(),
        ]
    return out


def _shown(row: Mapping[str, Any], column: str) -> str:
    """A claims CSV cell as people read it: the verdict by :func:`~noisyor_bench.reporting.claims.verdict_label`."""
    if column == "verdict":
        from noisyor_bench.reporting.claims import verdict_label

        return verdict_label(row)
    timing = row.get("timing")
    if column == "numbers" and isinstance(timing, str) and timing.strip():
        from noisyor_bench.reporting.claims import numbers_cell  # the wall-clock times after them

        return numbers_cell({"numbers": str(row.get("numbers", "")), "timing": timing})
    return str(row.get(column, ""))


def _paper_counts(frame: pd.DataFrame) -> str:
    """One paper's rows: ``14 of 41 claims reproduced, ...`` and its calibration rows apart
    (reporting.answer: the console's words)."""
    from noisyor_bench.reporting.answer import answers, calibration_phrase, counts_phrase

    (item,) = answers(frame)
    calibration = calibration_phrase(item)
    return counts_phrase(item) + (f"; {calibration} (not counted)" if calibration else "")


def _papers_counts(frame: pd.DataFrame) -> str:
    """The papers' claims together: ``The papers: 14 of 63 claims reproduced, ...`` (the studies
    beyond the papers and calibration rows not counted)."""
    from noisyor_bench.reporting.answer import PaperAnswer, answers, counts_phrase

    total: Counter[str] = Counter()
    for item in answers(frame):
        total.update({} if item.beyond else item.counts)
    return "The papers: " + counts_phrase(PaperAnswer("papers", "the papers", False, total))


def _tables_lines(tables_dir: Path, tables: Sequence[str]) -> list[str]:
    out: list[str] = []
    for name in tables:
        md = tables_dir / f"{name}.md"
        if md.is_file():
            verify_recorded_file(md)  # the results page copies no hand-edited table
            out += ["", _demote(md.read_text(encoding="utf-8").strip())]
    return out


def _block(
    folder: str | Path, origin: str, missing: str, tables: Sequence[str], columns: Sequence[str]
) -> str:
    """A results-page block from a folder with ``tables/claims.csv``: where it came from, the claims
    (``columns`` of each), then the Markdown views of ``tables`` that exist."""
    folder = Path(folder)
    claims = folder / "tables" / "claims.csv"
    if not claims.is_file():
        raise UserError(f"{claims} not found: {missing}")
    out = [
        f"Generated by `make readme-results` from `{folder}` ({origin}); do not edit by hand.",
        "",
        *_claims_lines(claims, columns),
    ]
    return "\n".join(out + _tables_lines(folder / "tables", tables))


def results_block(results_dir: str | Path, tables: tuple[str, ...] = README_TABLES) -> str:
    """The results page's results block from a results directory (claims, then the main tables);
    a run from a checkout with uncommitted changes says so beside its commit."""
    from noisyor_bench.reporting.answer import commit_phrase, run_info

    run = run_info(results_dir)
    return _block(
        results_dir,
        "the latest run's outputs" + (f", {commit_phrase(run)}" if run.commit and run.dirty else ""),
        "run the workflow first (make reproduce), or pass --results",
        tables,
        ("verdict", "statement"),
    )


def reference_block(reference_dir: str | Path, tables: tuple[str, ...] = REFERENCE_TABLES) -> str:
    """The results page's reference block from a published reference (``noisyor-bench publish-reference``):
    its claims with the numbers behind each verdict, then its main tables."""
    return _block(
        reference_dir,
        "its README says which commit, command, machine and time produced it",
        "publish a reference first (noisyor-bench publish-reference)",
        tables,
        ("verdict", "numbers"),
    )


def _paper_of_or_none(claim_id: str) -> str | None:
    """The registered paper of a claim id, None for an unregistered prefix (the end-of-run summary
    never fails; claims-merge has already reported the id)."""
    try:
        return paper_of(claim_id)
    except ValueError:
        return None


def _paper_label(entry: Any) -> str:
    """A registry entry's row label: its name, a study beyond the papers marked as such."""
    return f"{entry.name} ({BEYOND})" if entry.beyond_the_papers else entry.name


def verdict_table(frame: pd.DataFrame) -> str:
    """One row per registered paper, then one per study beyond the papers: how many claims, and
    how many got each verdict. An entry with no claim in ``frame`` is listed as not in this run;
    a claim id no entry claims is a ValueError (from the registry)."""
    from noisyor_bench.reporting.claims import VERDICTS
    from noisyor_bench.reporting.tables import markdown_table

    groups = frame["claim_id"].fillna("").astype(str).map(paper_of)
    verdicts = frame["verdict"].fillna("no data").astype(str)
    counts = {g: Counter(verdicts[groups == g]) for g in dict.fromkeys(groups)}
    columns = [*VERDICTS, *sorted(set(verdicts) - set(VERDICTS))]
    entries = sorted(registered_papers(), key=lambda p: p.beyond_the_papers)  # stable: registry order
    rows = []
    for entry in entries:
        label = _paper_label(entry)
        if entry.id in counts:
            c = counts[entry.id]
            rows.append([label, str(sum(c.values())), *(str(c.get(v, 0)) for v in columns)])
        else:
            rows.append([label, "not in this run", *("–" for _ in columns)])
    return markdown_table(["paper", "claims", *columns], rows)


def verdicts_block(results_dir: str | Path, results_page: str = RESULTS_PAGE.as_posix()) -> str:
    """README's answer block: one line per paper (reporting.answer: the same words as the console's
    end summary and the report's landing page), which run it comes from, and a link per paper to
    its claims on the results page (``results_page``, relative to README)."""
    from noisyor_bench.reporting.answer import answer_markdown

    folder = Path(results_dir)
    claims = folder / "tables" / "claims.csv"
    if not claims.is_file():
        raise UserError(f"{claims} not found: run the workflow first (make reproduce), or pass --results")
    frame = read_claims(claims)
    if "claim_id" not in frame.columns:
        raise DataError(f"{claims}: no 'claim_id' column (columns: {list(frame.columns)})")
    try:
        items, run = read_answers(folder)  # earlier runs' papers too, each labelled with its run
    except DataError as err:  # a claim id no registered paper claims
        raise DataError(f"{claims}: {err}") from None
    present = {a.paper_id for a in items}
    entries = sorted(registered_papers(), key=lambda p: p.beyond_the_papers)  # stable: registry order
    missing = [p.name for p in entries if p.id not in present]
    block = answer_markdown(items, run, lambda pid: f"{results_page}#{claims_anchor(pid)}")
    return "\n".join(
        [
            f"Generated by `make readme-results` from `{claims.as_posix()}`; do not edit by hand. "
            f"Every claim and the main tables: [{results_page}]({results_page}).",
            "",
            block,
            *(["", f"Not in this run: {', '.join(missing)}."] if missing else []),
        ]
    )


def claims_anchor(paper_id: str) -> str:
    """The results page's anchor of a paper's claims (``claims-<paper>``)."""
    return f"claims-{paper_id.replace('_', '-')}"


def replace_block(text: str, block: str, begin: str = BEGIN, end: str = END, where: str = "README") -> str:
    """``text`` with everything between the markers ``begin`` and ``end`` replaced by ``block``."""
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), flags=re.S)
    if len(pattern.findall(text)) != 1:
        raise UserError(f"{where} must contain exactly one '{begin}' ... '{end}' block")
    return pattern.sub(lambda _: f"{begin}\n{block}\n{end}", text)


def update_readme(
    readme: str | Path,
    results_dir: str | Path | None,
    reference_dir: str | Path | None = None,
    results_page: str | Path | None = None,
) -> list[Path]:
    """Rewrite the generated blocks: from ``results_dir``, README's verdict table and the results
    page's results block; from ``reference_dir``, the results page's reference block (each when
    given). ``results_page`` defaults to :data:`RESULTS_PAGE` beside README. Every block is
    built and every marker checked before anything is written; returns the files changed."""
    import os

    from noisyor_bench.infra.io import write_text_atomic

    readme = Path(readme)
    page = Path(results_page) if results_page is not None else readme.parent / RESULTS_PAGE
    edits: dict[Path, list[tuple[str, str, str]]] = {readme: [], page: []}
    if results_dir is not None:
        link = Path(os.path.relpath(page, readme.parent)).as_posix()
        edits[readme].append((verdicts_block(results_dir, link), VERDICTS_BEGIN, VERDICTS_END))
        edits[page].append((results_block(results_dir), BEGIN, END))
    if reference_dir is not None:
        edits[page].append((reference_block(reference_dir), REFERENCE_BEGIN, REFERENCE_END))
    new_texts: dict[Path, tuple[str, str]] = {}
    for path, blocks in edits.items():
        if not blocks:
            continue
        try:
            old = path.read_text(encoding="utf-8")
        except OSError as err:
            raise UserError(f"{path}: cannot read it ({err.strerror or err})") from None
        new = old
        for block, begin, end in blocks:
            new = replace_block(new, block, begin, end, where=str(path))
        new_texts[path] = (old, new)
    changed = [path for path, (old, new) in new_texts.items() if new != old]
    for path in changed:
        write_text_atomic(path, new_texts[path][1])
    return changed


# ---------------------------------------------------------------------------------- time
def _human(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _paper_name(paper_id: str) -> str:
    return next((p.name for p in registered_papers() if p.id == paper_id), paper_id)


def _row_wall(row: Mapping[str, Any], cores: int) -> float:
    """Wall seconds of one measured row on ``cores`` cores: the measurement itself on the same
    core count, else max(core_seconds / cores, longest job)."""
    if "wall_seconds" in row and int(row.get("cores", 0)) == cores:
        return float(row["wall_seconds"])
    core_seconds = row.get("core_seconds", float(row.get("wall_seconds", 0)) * int(row.get("cores", 1)))
    return max(float(core_seconds) / cores, float(row.get("longest_job_seconds", 0)))


def paper_rows(grid_row: Mapping[str, Any], grid: str = "") -> dict[str, Mapping[str, Any]]:
    """paper -> its measured row: ``papers:`` holds each paper's row (measured alone,
    ``papers=[<paper>]``); the grid's own keys are the row of the paper named by its ``paper:``
    key.  A registered paper with no measured row falls back to its registry entry's
    ``runtime`` row for the grid (:class:`noisyor_bench.experiments.papers.Paper`)."""
    from noisyor_bench.experiments import papers

    own = {k: v for k, v in grid_row.items() if k != "papers"}
    rows: dict[str, Mapping[str, Any]] = (
        {str(own["paper"]): own} if "paper" in own and {"core_seconds", "wall_seconds"} & set(own) else {}
    )
    rows.update({str(k): v for k, v in (grid_row.get("papers") or {}).items()})
    for paper in papers.papers():
        if paper.id not in rows and grid in paper.runtime:
            rows[paper.id] = paper.runtime[grid]
    return rows


def estimate_time(
    table: Mapping[str, Any],
    grid: str,
    cores: int,
    papers: Sequence[str] | None = None,
    speed: Any = None,
    hashes: Mapping[str, str | None] | None = None,
    modelled: Mapping[str, float] | None = None,
) -> str:
    """One line: the expected wall time of an experiment grid on ``cores`` cores, from measured numbers.

    Wall time on c cores ~ max(core_seconds / c, longest job): the jobs are independent
    beyond their stages, and no job runs on more than one core (threads: 1).  With several
    papers (``papers``; default every registered one) the papers' times add up: each paper's grid alone
    keeps the cores busy, so running them together does not overlap much.

    ``hashes``: today's config hash of each paper in the grid
    (:func:`noisyor_bench.experiments.config_hash.config_hash`); a row recorded at another hash is
    not this config's time: a warning says so, and the paper's ``modelled`` wall seconds (the cost
    model's, scaled by work from the measured jobs) replace it where given.  ``speed``
    (:class:`noisyor_bench.experiments.calibration.Speed`): this machine against the measuring
    CPU; every time scales by its factor.
    """
    from noisyor_bench.experiments import papers as registry

    row = (table.get("grids") or {}).get(grid) or {}
    machine = table.get("machine", "an unnamed machine")
    cores = max(int(cores), 1)
    wanted = list(papers) if papers else list(registry.ids())
    rows = paper_rows(row, grid)
    known = [p for p in wanted if p in rows]
    missing = [p for p in wanted if p not in rows]
    if not known:
        return (
            f"Time estimate: none recorded for the {grid!r} grid and papers {', '.join(wanted)} "
            "(config/runtime_estimates.yaml)."
        )
    factor = speed.factor if speed is not None else 1.0
    walls = {p: _row_wall(rows[p], cores) for p in known}
    warnings = []
    for p in known:
        then, now = rows[p].get("config_hash"), (hashes or {}).get(p)
        if then and now and str(then) != now:
            instead = (
                f"the cost model scales the measured jobs by work: {_human(modelled[p] * factor)}"
                if modelled and p in modelled
                else "the measured time is of another config"
            )
            warnings.append(
                f"  warning: {_paper_name(p)}'s config of the {grid} grid (hash {now}) differs from the "
                f"measured one ({then}); {instead}"
            )
            if modelled and p in modelled:
                walls[p] = modelled[p]
    walls = {p: w * factor for p, w in walls.items()}
    lines = [
        f"Time estimate ({grid} grid, {cores} core{'s' if cores != 1 else ''}): about {_human(sum(walls.values()))}"
    ]
    lines += warnings
    if len(wanted) > 1:
        parts = [f"{_paper_name(p)} {_human(walls[p])}" for p in known]
        parts += [f"{_paper_name(p)} not recorded (not included)" for p in missing]
        lines.append(f"  per paper: {', '.join(parts)}")
    for p in known:
        basis = " ".join(str(rows[p].get("how", "")).split())
        lines.append(f"  basis{f' ({_paper_name(p)})' if len(known) > 1 else ''}: {basis}")
    lines.append(f"  measured on: {machine}")
    lines += [f"  {line}" for line in (speed.lines() if speed is not None else [])]
    lines.append(
        "  progress: Snakemake's 'N of M steps'; each job's log (results/logs/) has epoch lines with an ETA"
    )
    return "\n".join(lines)


def load_estimates(path: str | Path) -> dict[str, Any]:
    """The measured-times table (``config/runtime_estimates.yaml``)."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise UserError(f"{path}: cannot read the time estimates ({err})") from None
    if not isinstance(data, dict) or not isinstance(data.get("grids"), dict):
        raise UserError(f"{path}: expected a mapping with 'machine' and 'grids'")
    return data
