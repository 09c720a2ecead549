"""The decidability planner of the ACP claims: what deciding each open claim would cost.

For each ACP claim whose headline verdict (a claims CSV: ``results/tables/claims.csv``) is "not
tested" or "inconclusive", the planner lists the cells its builder reads
(:func:`~noisyor_bench.reporting.acp.claim_cells.claim_cells`) that a grid does not run (or runs
with too few seeds), prices adding them to that grid with the cost model
(:mod:`noisyor_bench.experiments.costs`: job seconds at one core of the measuring CPU, extra over
the grid's own, at the grid's budgets and search), and names the cheapest configured grid that
runs them all.  An inconclusive claim whose cells already ran with enough seeds is limited by
power, not by cells: more seeds decide it only where the claim's own estimate says how many
(its ``low_power`` column, "n>=K would resolve it"); they are priced then, else the row says so.

Sorted cheapest first; the summary says how many claims a budget of extra seconds lets the grid
decide together (cells shared between claims counted once).
"""

from __future__ import annotations

import copy
import csv
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.acp.grid import corpora as corpus_grid
from noisyor_bench.experiments.rundir import cell_path
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.reporting.acp.claim_cells import (
    MIN_SEEDS,
    TSNE,
    CellNeed,
    ClaimCells,
    GridView,
    claim_cells,
    grid_view,
)
from noisyor_bench.reporting.acp.paper import PAPER
from noisyor_bench.reporting.claims import INCONCLUSIVE, NOT_TESTED

PLAN_GRIDS = ("quick", "extended", "extended-fig5", "paper")
"""The grids a claim may be decided in (the cheapest that runs its cells is named)."""

PAPER_GRID = "paper"
"""The grid of the paper's protocol: it resolves a claim's open N_train where a grid has none."""

DEFAULT_BUDGET_SECONDS = 120.0
"""Extra job seconds (one core) the planner lets the grid spend by default: two minutes."""

OPEN_VERDICTS = (NOT_TESTED, INCONCLUSIVE)

Price = Callable[[Mapping[str, Any]], float]
"""Seconds of ACP's compute jobs in the active grid of a config."""

Basis = Callable[[Mapping[str, Any], Sequence[CellNeed]], str]
"""What the price of some cells of a config scales from, where it says something ("" : nothing)."""

_RESOLVE = re.compile(r"n\s*>=\s*(\d+) would resolve it")
_N = re.compile(r"\(n=(\d+)")


@dataclass(frozen=True)
class ClaimRow:
    """What the planner reads of one claim of the claims CSV."""

    claim_id: str
    verdict: str
    source: str = ""
    sources: str = ""
    low_power: str = ""

    def headline_n(self) -> int | None:
        """The ``n`` of the headline source's verdict (``sources``: "<source>: inconclusive (n=5)")."""
        for part in self.sources.split(";"):
            head = part.strip()
            if self.source and head.startswith(f"{self.source}:"):
                found = _N.search(head)
                return int(found.group(1)) if found else None
        return None

    def resolving_n(self) -> int | None:
        """The ``n`` the claim's own power estimate says would decide it (None: no estimate)."""
        found = [int(v) for v in _RESOLVE.findall(self.low_power)]
        return max(found) if found else None


def read_claims(path: str | Path) -> list[ClaimRow]:
    """The ACP claims of a claims CSV: column ``paper`` = acp where the table has it, else the ids
    with ACP's claim prefixes (its registry entry)."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            header = list(reader.fieldnames or [])
            missing = [c for c in ("claim_id", "verdict") if c not in header]
            if missing:
                raise DataError(
                    f"{path}: no column {', '.join(missing)} (columns: {', '.join(header) or 'none'})"
                )
            rows = list(reader)
    except FileNotFoundError:
        raise DataError(f"{path}: no such claims table (write one with claims-merge or judge)") from None
    from noisyor_bench.experiments import papers

    prefixes = tuple(papers.get(PAPER).claim_prefixes)
    out = []
    for row in rows:
        if ("paper" in header and (row.get("paper") or "") != PAPER) or (
            "paper" not in header and not str(row["claim_id"]).startswith(prefixes)
        ):
            continue
        out.append(
            ClaimRow(
                str(row["claim_id"]),
                str(row["verdict"] or ""),
                str(row.get("source") or ""),
                str(row.get("sources") or ""),
                str(row.get("low_power") or ""),
            )
        )
    return out


# ------------------------------------------------------------------------------ grids with more cells
def _template(cfg: Mapping[str, Any], experiment: str, prefer: Sequence[str]) -> Mapping[str, Any] | None:
    """ACP experiment ``experiment`` of the first grid that has it (``prefer`` first)."""
    grids = cfg.get("grids") or {}
    for name in dict.fromkeys([*prefer, *grids]):
        found = ((((grids.get(name) or {}).get("acp") or {}).get("experiments")) or {}).get(experiment)
        if found:
            return found
    return None


def _add_synthetic(acp: dict[str, Any], cfg: dict[str, Any], need: CellNeed, prefer: Sequence[str]) -> None:
    exps = acp.setdefault("experiments", {})
    if need.experiment not in exps:
        template = _template(cfg, need.experiment, prefer)
        if template is None:
            raise ConfigError(
                f"no grid of the config has an ACP experiment {need.experiment!r} (needed by {need.text()})"
            )
        keep = {k: copy.deepcopy(v) for k, v in template.items() if k not in _CELL_KEYS}
        exps[need.experiment] = {**keep, "datasets": [], "runs": {}}
    exp = exps[need.experiment]
    if need.dataset not in exp["datasets"]:
        exp["datasets"] = [*exp["datasets"], need.dataset]
        runs: dict[str, list[int]] = {}
    else:
        runs = {m: list(ns) for m, ns in grid.runs_for(exp, need.dataset).items()}
    runs[need.method] = sorted({*map(int, runs.get(need.method, [])), need.n_train})
    exp.setdefault("dataset_runs", {})[need.dataset] = runs
    if need.dataset not in (acp.get("datasets") or [need.dataset]):
        acp["datasets"] = [*acp["datasets"], need.dataset]
    have = grid.seeds(cfg, need.experiment, need.dataset)
    if len(have) < need.seeds and not grid.is_deterministic_cell(exp.get("mode"), need.method):
        exp.setdefault("dataset_seeds", {})[need.dataset] = _more_seeds(have, need.seeds)


_CELL_KEYS = {"datasets", "runs", "dataset_runs", "seeds", "dataset_seeds", "not_run"}
"""Keys of an experiment that say which cells it runs (not copied from a template)."""


def _more_seeds(have: Sequence[int], count: int) -> list[int]:
    out, s = [int(v) for v in have], 0
    while len(out) < count:
        if s not in out:
            out.append(s)
        s += 1
    return out


def _add_text(acp: dict[str, Any], cfg: dict[str, Any], need: CellNeed, prefer: Sequence[str]) -> None:
    text = acp.setdefault("text", {})
    if need.method not in corpus_grid.methods(cfg):
        text["methods"] = [*corpus_grid.methods(cfg), need.method]
    k = corpus_grid.classification_latents(need.experiment)
    if need.experiment == corpus_grid.TOPICS_EXPERIMENT:
        topics = _text_part(text, cfg, "topics", need, prefer)
        topics["n_train"] = sorted({*map(int, topics.get("n_train", [])), need.n_train})
    elif k is not None:
        cls = _text_part(text, cfg, "classification", need, prefer)
        cls["K"] = sorted({*map(int, cls.get("K", [])), k})
        cls["n_train"] = sorted({*map(int, cls.get("n_train", [])), need.n_train})
        if need.reader == TSNE:
            tsne = _text_part(text, cfg, "tsne", need, prefer)
            tsne["n_train"] = sorted({*map(int, tsne.get("n_train", [])), need.n_train}, reverse=True)
    else:
        raise ConfigError(f"{need.text()}: not an ACP experiment the planner can add")
    if len(corpus_grid.seeds(cfg)) < need.seeds:
        text["seeds"] = _more_seeds(corpus_grid.seeds(cfg), need.seeds)


def _text_part(
    text: dict[str, Any], cfg: Mapping[str, Any], part: str, need: CellNeed, prefer: Sequence[str]
) -> dict[str, Any]:
    """``text[part]`` (topics, classification, tsne), else the first grid's that has one (its
    settings, without its N_train and K lists)."""
    if part not in text:
        grids = cfg.get("grids") or {}
        texts = [((grids.get(name) or {}).get("acp") or {}).get("text") or {} for name in [*prefer, *grids]]
        template = next((t[part] for t in texts if t.get(part)), None)
        if template is None:
            raise ConfigError(
                f"no grid of the config has an ACP text.{part} section (needed by {need.text()})"
            )
        text[part] = _emptied_text({part: template})[part]
    return text[part]


def _emptied_text(text: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(text))
    for key, lists in (
        ("topics", ("n_train",)),
        ("classification", ("K", "n_train")),
        ("tsne", ("n_train",)),
    ):
        if key in out:
            out[key] = {**out[key], **{name: [] for name in lists}}
    return out


def _is_text(need: CellNeed) -> bool:
    return (
        need.experiment == corpus_grid.TOPICS_EXPERIMENT
        or corpus_grid.classification_latents(need.experiment) is not None
    )


PLANNED = "+planned"
"""Suffix of the grid a plan adds cells to: a copy, so that the grid itself, when it is a measured
reference grid of the cost model (quick), is still the one its measurements were taken on."""


def with_cells(
    cfg: Mapping[str, Any], grid_name: str, cells: Iterable[CellNeed], prefer: Sequence[str] = PLAN_GRIDS
) -> dict[str, Any]:
    """A copy of ``cfg`` with grid ``<grid_name>+planned`` (made active): grid ``grid_name`` that
    also runs ``cells`` with at least their seeds, in the grid's way: a cell joins its
    experiment's per-dataset runs (an experiment the grid lacks is copied from the first of
    ``prefer`` that has it, its budget and search included, without its cells), seeds are raised
    per (experiment, dataset), a real-corpus cell joins the text section's N_train / K lists (so
    the grid's cross product grows with it)."""
    out = copy.deepcopy(dict(cfg))
    if grid_name not in (out.get("grids") or {}):
        raise ConfigError(f"grids.{grid_name}: no such grid (grids: {', '.join(out.get('grids') or {})})")
    name = grid_name if grid_name.endswith(PLANNED) else grid_name + PLANNED
    out["grids"][name] = copy.deepcopy(out["grids"][grid_name])
    out["grid"] = name
    acp = out["grids"][name].setdefault("acp", {})
    for need in sorted(set(cells)):
        if _is_text(need):
            _add_text(acp, out, need, prefer)
        else:
            _add_synthetic(acp, out, need, prefer)
    return out


def only_cells(
    cfg: Mapping[str, Any], grid_name: str, cells: Iterable[CellNeed], prefer: Sequence[str] = PLAN_GRIDS
) -> dict[str, Any]:
    """A copy of ``cfg`` with grid ``<grid_name>+planned`` (made active): grid ``grid_name``
    running only ``cells``, at its own protocol."""
    out = copy.deepcopy(dict(cfg))
    if grid_name not in (out.get("grids") or {}):
        raise ConfigError(f"grids.{grid_name}: no such grid (grids: {', '.join(out.get('grids') or {})})")
    name = grid_name + PLANNED
    out["grids"][name] = copy.deepcopy(out["grids"][grid_name])
    acp = out["grids"][name].setdefault("acp", {})
    for exp in (acp.get("experiments") or {}).values():
        exp.update(datasets=[], runs={})
        exp.pop("dataset_runs", None)
    if "text" in acp:
        acp["text"] = _emptied_text(acp["text"])
    return with_cells(out, name, cells, prefer)


# ------------------------------------------------------------------------------ prices
def cost_model_price(cfg: Mapping[str, Any], root: str | Path) -> tuple[Price, Basis, str]:
    """The cost model's price of a config (seconds of ACP's compute jobs at one core of the
    measuring CPU, from the measured runs under ``root``), the basis of the estimate of some of
    its cells (:func:`foreign_references`), and the words that say on what CPU."""
    from noisyor_bench.experiments import costs

    references = costs.load_references(root, cfg.get("job_seconds"))
    if not references:
        raise DataError(
            f"{root}: no measured runs to price cells from ({', '.join(p for _, p in costs.REFERENCE_TABLES)})"
        )
    cpus = sorted({m.cpu for r in references for m in r.jobs.values() if m.cpu})
    cache: dict[str, list[Any]] = {}

    def estimates(c: Mapping[str, Any]) -> list[Any]:
        key = json.dumps(c, sort_keys=True, default=str)
        if key not in cache:
            cache[key] = costs.estimate_jobs(c, references, [PAPER])
        return cache[key]

    def price(c: Mapping[str, Any]) -> float:
        return float(sum(e.cpu_seconds for e in estimates(c)))

    def basis(c: Mapping[str, Any], cells: Sequence[CellNeed]) -> str:
        return foreign_references(estimates(c), cells)

    where = ", ".join(f"{g} ({p})" for g, p in costs.REFERENCE_TABLES)
    machine = f"one core of the measuring CPU ({', '.join(cpus) or 'not recorded'}), scaled from {where}"
    return price, basis, machine


def foreign_references(estimates: Iterable[Any], cells: Sequence[CellNeed]) -> str:
    """The datasets of the measured jobs that the estimates of ``cells`` (their search and
    training jobs) scale from, where another dataset than the cell's ("" : none): the cost model
    scales seconds by rows x epochs, not by a dataset's dimensions."""
    paths = {cell_path(c.experiment, c.dataset, c.method, c.n_train): c.dataset for c in cells}
    foreign: set[str] = set()
    for e in estimates:
        path = next((p for p in paths if e.job == p or e.job.startswith(p + "/")), None)
        if path is None or not e.reference:
            continue
        parts = e.reference.split(": ", 1)[-1].split("/")
        if len(parts) >= 3 and parts[2] != paths[path]:
            foreign.add(parts[2])
    return ", ".join(sorted(foreign))


# ------------------------------------------------------------------------------ the plan
@dataclass(frozen=True)
class Missing:
    need: CellNeed
    have: int
    """Seeds the grid runs of the cell (0: not run)."""


@dataclass
class ClaimPlan:
    """One open claim: its cells in the grid, their price, the cheapest grid and the status."""

    claim: ClaimRow
    cells: ClaimCells | None
    missing: list[Missing] = field(default_factory=list)
    extra_seconds: float | None = None
    """Job seconds of adding the missing cells to the grid (None: nothing to add decides it)."""
    cheapest_grid: str | None = None
    foreign: str = ""
    """The other datasets whose measured jobs the price of its missing cells scales from."""
    status: str = ""
    decidable: bool = False
    """Adding the missing cells decides it within the budget."""


@dataclass
class Plan:
    grid: str
    budget: float
    machine: str
    grid_seconds: dict[str, float]
    claims: list[ClaimPlan]
    together: list[str]
    together_seconds: float


def _target(row: ClaimRow, cells: ClaimCells) -> tuple[ClaimCells, bool]:
    """The claim's cells with the seeds a decision needs, and whether it is limited by power
    (inconclusive with its cells run at enough seeds): then the seeds its own power estimate
    names, where it names them and its ``n`` counts seeds."""
    n = row.headline_n()
    if not row.verdict.startswith(INCONCLUSIVE) or n is None or n < MIN_SEEDS or cells.unit != "seeds":
        return cells, False
    want = row.resolving_n()
    if want is None:
        return cells, True
    raised = tuple(
        CellNeed(c.experiment, c.dataset, c.method, c.n_train, max(c.seeds, want), c.reader)
        if c.seeds > 1
        else c
        for c in cells.cells
    )
    return ClaimCells(cells.claim_id, raised, cells.unit), False


def _seconds(value: float) -> str:
    return f"{value:,.0f} s" if value < 3600 else f"{value:,.0f} s ({value / 3600:,.1f} h)"


def plan(
    rows: Sequence[ClaimRow],
    cfg: Mapping[str, Any],
    grid_name: str,
    price: Price,
    budget: float = DEFAULT_BUDGET_SECONDS,
    grids: Sequence[str] = PLAN_GRIDS,
    machine: str = "",
    basis: Basis | None = None,
) -> Plan:
    """The plan of every open claim of ``rows`` for grid ``grid_name`` of ``cfg``."""
    known = cfg.get("grids") or {}
    for name in (grid_name, *grids, PAPER_GRID):
        if name not in known:
            raise ConfigError(f"grids.{name}: no such grid (grids: {', '.join(known)})")
    paper = grid_view(cfg, PAPER_GRID)
    views = {
        name: grid_view(cfg, name, None if name == PAPER_GRID else paper)
        for name in dict.fromkeys([grid_name, *grids])
    }
    grid_seconds = {name: price({**cfg, "grid": name}) for name in dict.fromkeys([grid_name, *grids])}
    base = grid_seconds[grid_name]
    ranked = sorted(grids, key=lambda g: grid_seconds[g])
    planned = []
    for row in rows:
        if not any(row.verdict.startswith(v) for v in OPEN_VERDICTS):
            continue
        planned.append(_plan_claim(row, cfg, grid_name, views, ranked, (price, basis), base, budget, grids))
    planned.sort(key=lambda p: (p.extra_seconds is None, p.extra_seconds or 0.0, p.claim.claim_id))
    together, cells, seconds = [], set(), 0.0
    for p in planned:
        if not p.decidable:
            continue
        trial = cells | {m.need for m in p.missing}
        cost = price(with_cells(cfg, grid_name, trial, grids)) - base
        if cost <= budget:
            together.append(p.claim.claim_id)
            cells, seconds = trial, cost
    return Plan(grid_name, budget, machine, grid_seconds, planned, together, seconds)


def _plan_claim(
    row: ClaimRow,
    cfg: Mapping[str, Any],
    grid_name: str,
    views: Mapping[str, GridView],
    ranked: Sequence[str],
    pricing: tuple[Price, Basis | None],
    base: float,
    budget: float,
    grids: Sequence[str],
) -> ClaimPlan:
    found = claim_cells(row.claim_id, views[grid_name])
    if found is None:
        return ClaimPlan(
            row, None, status="no cells entry: declare its cells in reporting/acp/claim_cells.py"
        )
    cells, power = _target(row, found)
    view = views[grid_name]
    missing = [Missing(c, view.runs(c)) for c in cells.cells if not view.covers(c)]
    cheapest = None
    for name in ranked:
        resolved = claim_cells(row.claim_id, views[name])
        if resolved is not None and all(views[name].covers(c) for c in _target(row, resolved)[0].cells):
            cheapest = name
            break
    price, basis = pricing
    added = with_cells(cfg, grid_name, [m.need for m in missing], grids)
    extra = price(added) - base if missing else 0.0
    foreign = basis(added, [m.need for m in missing]) if basis is not None and missing else ""
    out = ClaimPlan(row, cells, missing, None if power else extra, cheapest, foreign)
    n = row.headline_n()
    if power:
        out.status = f"power: inconclusive at n={n} with its cells ({row.source}); no estimate of the seeds that decide it"
    elif not missing:
        out.status = f"its cells run in {grid_name}"
    elif extra <= budget:
        out.status, out.decidable = f"decidable in {grid_name} for +{_seconds(extra)}", True
    elif cheapest == PAPER_GRID:
        at_paper = claim_cells(row.claim_id, views[PAPER_GRID])
        own = price(only_cells(cfg, PAPER_GRID, at_paper.cells if at_paper else (), grids))
        out.status = f"paper grid only (its cells at the paper's protocol: {_seconds(own)})"
    elif cheapest is not None:
        out.status = f"{cheapest} runs its cells"
    else:
        out.status = f"no configured grid runs its cells ({', '.join(grids)})"
    left_out = grid.not_run_experiments({**cfg, "grid": grid_name})
    for experiment in dict.fromkeys(m.need.experiment for m in missing):
        if experiment in left_out:
            out.status += f"; {grid_name} leaves {experiment} out: {left_out[experiment]}"
    return out


# ------------------------------------------------------------------------------ the table
def missing_text(missing: Sequence[Missing]) -> str:
    """``fig5/syn-random-4: acp, avi n30, n10000 (>=3 seeds)``; cells run with too few seeds:
    ``(3 -> 78 seeds)``; one group per (experiment, dataset, seeds)."""
    groups: dict[tuple[str, str, int, int], dict[str, list[int]]] = {}
    for m in missing:
        key = (m.need.experiment, m.need.dataset, m.have, m.need.seeds)
        groups.setdefault(key, {}).setdefault(m.need.method, []).append(m.need.n_train)
    parts = []
    for (experiment, dataset, have, seeds), methods in groups.items():
        by_sizes: dict[tuple[int, ...], list[str]] = {}
        for method, ns in methods.items():
            by_sizes.setdefault(tuple(sorted(set(ns))), []).append(method)
        cells = "; ".join(f"{', '.join(ms)} {', '.join(f'n{n}' for n in ns)}" for ns, ms in by_sizes.items())
        count = f"{have} -> {seeds} seeds" if have else f">={seeds} seed{'s' if seeds != 1 else ''}"
        parts.append(f"{experiment}/{dataset}: {cells} ({count})")
    return "; ".join(parts) or "-"


def format_plan(result: Plan) -> str:
    """The planner's table (Markdown) after a header, then the grids' costs and the summary."""
    g = result.grid
    lines = [
        f"ACP decidability plan for grid {g}: {len(result.claims)} claims not tested or inconclusive",
        f"Cost: job seconds of the cost model's compute jobs at {result.machine or 'one core'}; "
        f"'+s in {g}': extra over the {g} grid's own, the cells at its budgets and search.",
        "",
        f"| claim | verdict now | missing cells in {g} | +s in {g} | scaled from other datasets | cheapest grid | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in result.claims:
        extra = "-" if p.extra_seconds is None else f"+{_seconds(p.extra_seconds)}"
        lines.append(
            f"| {p.claim.claim_id} | {p.claim.verdict} | {missing_text(p.missing)} | {extra} "
            f"| {p.foreign or '-'} | {p.cheapest_grid or 'none'} | {p.status} |"
        )
    costs = ", ".join(
        f"{name} {_seconds(s)}" for name, s in sorted(result.grid_seconds.items(), key=lambda i: i[1])
    )
    lines += [
        "",
        f"Grids (ACP compute jobs, one core): {costs}.",
        f"Budget {_seconds(result.budget)}: {g} would decide {len(result.together)} of {len(result.claims)} "
        f"claims together for +{_seconds(result.together_seconds)}"
        + (f" ({', '.join(result.together)})" if result.together else "")
        + ".",
    ]
    return "\n".join(lines)


__all__ = [
    "DEFAULT_BUDGET_SECONDS",
    "OPEN_VERDICTS",
    "PAPER_GRID",
    "PLAN_GRIDS",
    "ClaimPlan",
    "ClaimRow",
    "Missing",
    "Plan",
    "cost_model_price",
    "format_plan",
    "missing_text",
    "only_cells",
    "plan",
    "read_claims",
    "with_cells",
]
