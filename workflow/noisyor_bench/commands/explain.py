"""CLI: ``noisyor-bench explain CLAIM_ID`` -- one claim, and what its verdict rests on.

Reads a results folder's merged claims table (``tables/claims.csv``) and follows the provenance
records: the claim's stage table (``claims_<stage>.csv``), the tables that stage judged from,
and the run folders behind the tables its id names (``fig3a-...`` -> ``fig3a.csv``; every table
of the stage when its id names none).  A headline table names the claim's source and every
source's verdict (reporting.evidence); the other sources are listed with their verdicts, re-judged
by today's claim code (``claims_sources.csv``), or, for a folder without that table, the paper's
published references with their stored verdicts. A speed claim's wall-clock times, which the
headline table leaves out, come from ``claims_timing.csv`` beside it (a ``timing`` line).
Nothing is recomputed: it reads CSV and JSON only.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import re
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Any

from noisyor_bench.infra.errors import UserError
from noisyor_bench.reporting.claim_tables import timing_path

WIDTH = 100
MAX_CELLS = 20
"""Run folders listed before ``--all`` is needed (one line per cell, its seeds collapsed)."""
INTERVAL = re.compile(r"\[[^\]]*\]\s*\([^)]*n=|\(no CI: n=|\(exact")
"""A statistic with its interval as the claims print it: ``-6.94 [-7.37, -6.51] (paired, n=5)``."""


def split_parts(numbers: str) -> list[str]:
    """The ``; ``-separated parts of a claim's numbers, never splitting inside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(numbers):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and numbers.startswith("; ", i):
            parts.append(numbers[start:i])
            start = i + 2
    parts.append(numbers[start:])
    return [p.strip() for p in parts if p.strip()]


def classify_numbers(numbers: str) -> dict[str, list[str]]:
    """The parts of a claim's numbers as ``statistic`` (with a CI), ``paper`` (the paper's
    numbers) and ``ours`` (the rest)."""
    out: dict[str, list[str]] = {"statistic": [], "ours": [], "paper": []}
    for part in split_parts(numbers):
        if INTERVAL.search(part):
            out["statistic"].append(part)
        elif re.search(r"\bpaper\b", part):
            out["paper"].append(part)
        else:
            out["ours"].append(part)
    return out


def _record(path: Path) -> dict[str, Any]:
    """The provenance sidecar of a file (``<file>.prov.json``), or {}."""
    try:
        return json.loads(path.with_name(path.name + ".prov.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _inputs(path: Path, role: str | None = None) -> list[Path]:
    """The input files a file's record names (relative to the file), optionally of one role."""
    return [
        path.parent / (entry.get("relpath") or entry["path"])
        for entry in _record(path).get("inputs") or []
        if role is None or entry.get("role") == role
    ]


BASE_COLUMNS = (
    "claim_id",
    "statement",
    "location",
    "verdict",
    "numbers",
    "rule",
    "evidence",
    "paper",
    "source",
    "sources",
    "agreement",
    "disagreement",
    "timing",
)
"""The columns of a claims table that are no qualifier (``statistical_verdict``: older tables)."""


def claim_timing(merged: Path, claim_id: str, row: dict[str, str]) -> str:
    """A claim's wall-clock times: its row's ``timing`` (a stage table), else its row of the
    headline table's ``claims_timing.csv`` beside it (reporting.evidence); "" when none."""
    if row.get("timing"):
        return row["timing"]
    timing = read_rows(timing_path(merged)).get(claim_id) or {}
    return timing.get("timing") or ""


def read_rows(path: Path) -> dict[str, dict[str, str]]:
    """A claims table's rows by claim id ({} when absent), read as text: no statistics library
    is loaded, so ``explain`` answers in well under a second of work."""
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            return {row["claim_id"]: row for row in csv.DictReader(fh) if row.get("claim_id")}
    except OSError:
        return {}


def _run_inputs(path: Path) -> list[Path]:
    """The run folders or run files a table's record names (roles ``--runs``, ``--runs (run file)``)."""
    return [
        path.parent / (entry.get("relpath") or entry["path"])
        for entry in _record(path).get("inputs") or []
        if str(entry.get("role", "")).startswith("--runs")
    ]


def _claim_ids(path: Path) -> set[str]:
    return set(read_rows(path))


MERGED_TABLES = ("claims_run.csv", "claims_sources.csv", "claims_timing.csv")
"""Claims tables of a results folder that no stage wrote: this run's merged claims, every
source's verdict and the headline claims' wall-clock times (reporting.evidence)."""


def stage_table(tables: Path, claim_id: str, merged: Path | None = None) -> Path | None:
    """The claims table of the stage that judged the claim: an input of the merged table, followed
    through a merged table in between (``claims.csv`` <- ``claims_run.csv`` <- ``claims_<stage>.csv``)."""
    merged = merged or tables / "claims.csv"
    candidates = _inputs(merged, "--claims") or [
        t for t in sorted(tables.glob("claims_*.csv")) if t.name not in MERGED_TABLES
    ]
    found = next((c for c in candidates if claim_id in _claim_ids(c)), None)
    if found is not None and found != merged and _inputs(found, "--claims"):
        return stage_table(tables, claim_id, found)
    return found


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[-_]", name) if t]


def named_tables(claim_id: str, tables: list[Path]) -> list[Path]:
    """The tables whose names share the longest leading run of words with the claim id
    (``fig3a-acp-beats-avi`` -> ``fig3a.csv``); all of them when none shares a word."""
    ident = _tokens(claim_id)

    def shared(table: Path) -> int:
        n = 0
        for a, b in zip(ident, _tokens(table.stem)):
            if a != b:
                break
            n += 1
        return n

    best = max((shared(t) for t in tables), default=0)
    return [t for t in tables if shared(t) == best] if best else list(tables)


def run_folder(path: Path) -> Path:
    """The run folder of a recorded run input (the folder itself, or a file in it)."""
    seeds = [p for p in (path, *path.parents) if p.name.startswith("seed")]
    if seeds:
        return seeds[0]
    return path.parent if path.suffix else path


def run_cells(runs: list[Path], results: Path) -> list[str]:
    """Run folders (:func:`run_folder`) relative to the results folder, the seeds of one cell on one line
    (``runs/fig3a/syn-pattern/acp/n20/seed{0,1,2}``)."""
    cells: dict[str, list[str]] = defaultdict(list)
    for folder in runs:
        try:
            rel = folder.resolve().relative_to(results.resolve()).as_posix()
        except ValueError:
            rel = folder.as_posix()
        head, _, last = rel.rpartition("/")
        if last.startswith("seed"):
            cells[head].append(last.removeprefix("seed"))
        else:
            cells[rel] = []
    return [f"{cell}/seed{_seed_list(seeds)}" if seeds else cell for cell, seeds in sorted(cells.items())]


def _seed_list(seeds: list[str]) -> str:
    ordered = sorted(seeds, key=lambda s: (len(s), s))
    return ordered[0] if len(ordered) == 1 else "{" + ",".join(ordered) + "}"


def _wrapped(label: str, text: str) -> list[str]:
    return textwrap.wrap(
        text, WIDTH, initial_indent=f"{label:<12}", subsequent_indent=" " * 12, break_on_hyphens=False
    ) or [label]


def reference_verdicts(claim_id: str, paper: Any, results: Path) -> list[str]:
    """``<reference folder>: <verdict>`` for the paper's registered references judging the claim."""
    out = []
    for rel in paper.references:
        folder = Path(rel)
        theirs = read_rows(folder / "tables" / "claims.csv").get(claim_id)
        if theirs is not None and folder.resolve() != results.resolve():
            out.append(f"{rel}: {_verdict(theirs)}")
    return out


def _run_source(tables: Path, claim_id: str) -> str | None:
    """This run's source label of the claim in ``claims_sources.csv`` (None without one)."""
    try:
        with (tables / "claims_sources.csv").open(encoding="utf-8", newline="") as fh:
            return next(
                (
                    r["source"]
                    for r in csv.DictReader(fh)
                    if r.get("claim_id") == claim_id and r.get("kind") == "run"
                ),
                None,
            )
    except OSError:
        return None


def source_verdicts(tables: Path, claim_id: str, headline: str) -> list[str]:
    """``<source>: <verdict>`` of every other source of the claim in ``claims_sources.csv`` (the
    references re-judged by today's claim code, reporting.evidence); [] without that table."""
    try:
        with (tables / "claims_sources.csv").open(encoding="utf-8", newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if r.get("claim_id") == claim_id]
    except OSError:
        return []
    return [
        f"{r['source']}: {r['verdict']}" + (f" (n={r['n']})" if r.get("n") else "")
        for r in rows
        if r.get("source") != headline
    ]


def _verdict(row: dict[str, str]) -> str:
    """The verdict as the table states it, with an older table's statistical verdict beside it."""
    statistical = row.get("statistical_verdict") or ""
    return row["verdict"] + (
        f" (statistical verdict: {statistical})" if statistical not in ("", row["verdict"]) else ""
    )


def explain(results: Path, claim_id: str, all_runs: bool = False) -> list[str]:
    """The lines ``explain`` prints for one claim of a results (or reference) folder."""
    from noisyor_bench.experiments import papers
    from noisyor_bench.infra.integrity import verify_recorded_file

    tables = results / "tables"
    merged = tables / "claims.csv"
    if not merged.is_file():
        raise UserError(
            f"{merged}: no claims table; run the workflow first (make reproduce) or pass --results with a "
            "results or reference folder (e.g. reference/paper-synpattern)"
        )
    verify_recorded_file(merged)  # a verdict edited by hand is refused, not explained
    claims = read_rows(merged)
    if claim_id not in claims:
        close = difflib.get_close_matches(claim_id, list(claims), n=5, cutoff=0.5)
        hint = (
            f"; did you mean: {', '.join(close)}"
            if close
            else f"; its {len(claims)} claims: {', '.join(claims)}"
        )
        raise UserError(f"no claim {claim_id!r} in {merged}{hint}")
    claim = claims[claim_id]
    paper = papers.get(claim.get("paper") or papers.paper_of_claim(claim_id))
    lines = [f"{claim_id}  [{paper.name}: {paper.title}]"]
    lines += _wrapped("statement", claim["statement"])
    lines += _wrapped("location", claim["location"])
    lines += _wrapped("verdict", _verdict(claim))
    if claim.get("source"):  # a headline table (reporting.evidence): where the verdict comes from
        lines += _wrapped("source", claim["source"])
        lines += _wrapped("sources", f"{claim.get('sources', '')} [{claim.get('agreement', '')}]")
        if claim.get("disagreement"):
            lines += _wrapped("why", claim["disagreement"])
    numbers = classify_numbers(claim["numbers"])
    for label, key in (("statistic", "statistic"), ("ours", "ours"), ("paper's", "paper")):
        for part in numbers[key]:
            lines += _wrapped(label, part)
    timing = claim_timing(merged, claim_id, claim)
    if timing:  # wall-clock times: they differ between runs, so claims.csv leaves them out
        lines += _wrapped("timing", timing)
    extra = (*BASE_COLUMNS, "statistical_verdict")
    qualifiers = {k: v for k, v in claim.items() if k not in extra and v}
    if not qualifiers:
        lines.append(f"{'qualifiers':<12}none")
    for name, text in qualifiers.items():
        lines += _wrapped("qualifier", f"{name.replace('_', ' ')}: {text}")
    if claim.get("evidence"):
        lines += _wrapped("evidence", claim["evidence"])
    lines += _wrapped("rule", claim["rule"])

    stage = stage_table(tables, claim_id)
    judged = [t for t in _inputs(stage) if t.suffix == ".csv"] if stage else []
    lines.append("sources:")
    lines.append(f"  {merged} <- {stage if stage else '(no stage claims table found)'}")
    if claim.get("source") and claim["source"] != _run_source(tables, claim_id):
        lines.append(f"  the headline is {claim['source']}'s verdict, re-judged from its own tables")
    if judged:
        lines += textwrap.wrap(
            "judged from: " + ", ".join(t.name for t in judged),
            WIDTH,
            initial_indent="  ",
            subsequent_indent="    ",
        )
    references = source_verdicts(tables, claim_id, claim.get("source", "")) or reference_verdicts(
        claim_id, paper, results
    )
    lines += [f"  also judged in {r}" for r in references] or ["  no registered reference judged this claim"]

    behind = named_tables(claim_id, judged)
    runs = list(dict.fromkeys(run_folder(r) for t in behind for r in _run_inputs(t)))
    cells = run_cells(runs, results)
    where = ", ".join(t.name for t in behind)
    present = sum(r.is_dir() for r in runs)
    lines.append(
        f"runs behind it ({where}): {len(runs)} run(s) in {len(cells)} cell(s)"
        + ("" if present == len(runs) else f"; {len(runs) - present} not in this folder")
        if runs
        else f"runs behind it: none recorded{f' by {where}' if where else ''}"
    )
    shown = cells if all_runs else cells[:MAX_CELLS]
    lines += [f"  {c}" for c in shown]
    if len(shown) < len(cells):
        lines.append(f"  ... {len(cells) - len(shown)} more cell(s) (--all lists every one)")
    return lines


def cmd_explain(args: argparse.Namespace) -> int:
    print("\n".join(explain(Path(args.results), args.claim, args.all)))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="a claim's verdict, statistic, numbers, qualifiers, sources and the runs behind it",
    )
    p.add_argument("claim", help="a claim id (tables/claims.csv, column claim_id)")
    p.add_argument(
        "--results",
        default="results",
        help="results or reference folder holding tables/claims.csv (default: results)",
    )
    p.add_argument("--all", action="store_true", help=f"list every run cell (default: the first {MAX_CELLS})")
    p.set_defaults(func=cmd_explain)
