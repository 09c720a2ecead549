"""The cells each ACP claim reads: what a grid must run for the claim builders to decide it.

Beside the claim builders (:mod:`~noisyor_bench.reporting.acp.synthetic_claims`,
:mod:`~noisyor_bench.reporting.acp.text_claims`, :mod:`~noisyor_bench.reporting.acp.ablation`)
because it restates what they read: a claim id maps to the cells (experiment, dataset, method,
N_train) whose rows its builder compares, each with the seeds a decision needs.  The values come
from where the builders take them: the N_train in the claim id, the paper numbers
(``paper_numbers.yaml``: datasets, Table 4's comparisons, Fig. 5's largest N_train), the method
registry (a deterministic cell runs one seed) and the degrees-of-freedom rule of the verdicts
(:data:`~noisyor_bench.reporting.claims.MIN_DF`).

Where a statement fixes no N_train (Fig. 5's "small amount of data", supplement Fig. 3's
"smallest training set", the mechanism's cell), a builder reads whatever the grid ran, so the
cells are resolved against a grid (:class:`GridView`): the grid's own N_train where it runs the
experiment, else the paper grid's, else the paper's.  :func:`claim_cells` answers for every id the
builders emit (:func:`builder_claim_ids`; a test holds the two together, so a new claim cannot be
left unplanned).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.acp.grid import corpora as corpus_grid
from noisyor_bench.reporting.acp.paper import paper_numbers
from noisyor_bench.reporting.acp.synthetic_claims import (
    FIG5_LARGE_N_TRAIN,
    FIG5_PAPER_N_TRAIN,
    synrandom_fig5,
    table4_paper_comparisons,
)
from noisyor_bench.reporting.acp.text_claims import LARGE_N_THRESHOLD
from noisyor_bench.reporting.claims import MIN_DF

MIN_SEEDS = int(MIN_DF) + 1
"""Seeds a compared cell needs for a decision: a paired t CI of :data:`MIN_DF` degrees of freedom
(also the paired values of a pooled comparison)."""

SELECTED_RUN_SEEDS = 1
"""Seeds a recovery cell needs: the run selected on validation NELBO decides (Fig. 4, supplement Fig. 1)."""

TSNE = "tsne"
"""The ``reader`` of a classification cell the t-SNE figures must also list (``tsne.n_train``)."""


@dataclass(frozen=True, order=True)
class CellNeed:
    """One cell a claim reads, with the seeds its decision needs."""

    experiment: str
    dataset: str
    method: str
    n_train: int
    seeds: int
    reader: str = ""
    """``""``: the experiment's own table; :data:`TSNE`: the t-SNE figures list its N_train too."""

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.experiment, self.dataset, self.method, self.n_train)

    def text(self) -> str:
        return f"{self.experiment}/{self.dataset}/{self.method}/n{self.n_train}"


@dataclass(frozen=True)
class ClaimCells:
    """The cells of one claim resolved against a grid, and what its ``n`` counts."""

    claim_id: str
    cells: tuple[CellNeed, ...]
    unit: str = "seeds"
    """What the claim's ``n`` counts: ``seeds`` (more seeds raise it) or ``panels`` (t-SNE: (K,
    N_train) panels of the first seed; more seeds do not)."""


@dataclass(frozen=True)
class GridView:
    """What one grid of the config runs for ACP: its cells with their seed counts, the t-SNE
    columns, and the N_train it chose per experiment (to resolve a claim's open N_train)."""

    name: str
    seeds: Mapping[tuple[str, str, str, int], int]
    tsne: frozenset[int] = frozenset()
    classification_ks: tuple[int, ...] = ()
    fallback: GridView | None = field(default=None, compare=False)
    """The grid whose choices stand in where this one runs none (the paper grid)."""

    def sizes(self, experiment: str, dataset: str | None, methods: Sequence[str]) -> list[int]:
        """N_train where every one of ``methods`` runs in ``experiment`` on ``dataset`` (None: on
        any one dataset), ascending."""
        by_dataset: dict[str, dict[str, set[int]]] = {}
        for e, d, m, n in self.seeds:
            if e == experiment and (dataset is None or d == dataset):
                by_dataset.setdefault(d, {}).setdefault(m, set()).add(n)
        out: set[int] = set()
        for runs in by_dataset.values():
            out |= set.intersection(*(runs.get(m, set()) for m in methods)) if methods else set()
        return sorted(out)

    def runs(self, need: CellNeed) -> int:
        """Seeds the grid runs of the cell (0: not run; a t-SNE cell whose N_train the figures
        do not list: 0)."""
        if need.reader == TSNE and need.n_train not in self.tsne:
            return 0
        return int(self.seeds.get(need.key, 0))

    def covers(self, need: CellNeed) -> bool:
        return self.runs(need) >= need.seeds


def grid_view(cfg: Mapping[str, Any], name: str, fallback: GridView | None = None) -> GridView:
    """The :class:`GridView` of grid ``name`` of ``cfg``.  A cell of an experiment whose rows go to
    another's recovery table at the same K (``recovery_of``, e.g. quick's ``suppfig1``) also
    counts as that experiment's cell."""
    view = {**cfg, "grid": name}
    seeds: dict[tuple[str, str, str, int], int] = {}
    experiments = grid.experiments(view)
    for cell in grid.cells(view):
        n = len(grid.seeds(view, cell.experiment, cell.dataset, cell.method))
        keys = [cell.experiment]
        spec = experiments[cell.experiment]
        if spec.get("recovery_of") and int(spec.get("latents_factor", 1)) == 1:
            keys.append(str(spec["recovery_of"]))
        for experiment in keys:
            key = (experiment, cell.dataset, cell.method, cell.n_train)
            seeds[key] = max(seeds.get(key, 0), n)
    text_seeds = len(corpus_grid.seeds(view)) if corpus_grid.corpus_section(view) else 0
    for cell in corpus_grid.cells(view):
        seeds[(cell.experiment, cell.dataset, cell.method, cell.n_train)] = text_seeds
    return GridView(
        name,
        seeds,
        frozenset(corpus_grid.tsne_n_train(view)),
        tuple(corpus_grid.classification_ks(view)),
        fallback,
    )


def _chain(view: GridView) -> list[GridView]:
    out = [view]
    while out[-1].fallback is not None:
        out.append(out[-1].fallback)
    return out


def _first(view: GridView, pick: Callable[[GridView], Any], default: Any) -> Any:
    """``pick`` of the view, else of its fallbacks, else ``default`` (a pick answers None for "none")."""
    for v in _chain(view):
        found = pick(v)
        if found is not None:
            return found
    return default


def _cells(
    experiment: str, dataset: str, methods: Iterable[str], sizes: Iterable[int], seeds: int, reader: str = ""
) -> list[CellNeed]:
    return [CellNeed(experiment, dataset, m, int(n), seeds, reader) for m in methods for n in sizes]


def _dataset(block: str) -> str:
    return str(paper_numbers()[block]["dataset"])


def _seeds(mode: str, method: str) -> int:
    """Seeds of a compared cell: one where the method is deterministic in the mode, else :data:`MIN_SEEDS`."""
    return 1 if grid.is_deterministic_cell(mode, method) else MIN_SEEDS


# ------------------------------------------------------------------------------ synthetic claims
def _fig3a(n_train: int, methods: Sequence[str], constant: str | None = None) -> list[CellNeed]:
    """Fig. 3a cells: ``methods`` at ``n_train``, and a held-out-optimised ``constant`` (N_train = 0)."""
    mode, ds = str(paper_numbers()["fig3a"]["mode"]), _dataset("fig3a")
    out = [CellNeed("fig3a", ds, m, n_train, _seeds(mode, m)) for m in methods]
    if constant is not None:
        out.append(CellNeed("fig3a", ds, constant, 0, _seeds(mode, constant)))
    return out


def _recovery(block: str, n_train: int, methods: Sequence[str]) -> list[CellNeed]:
    """Recovery cells (the run selected on validation NELBO decides): Fig. 4's table, whatever
    experiment of the grid writes the rows (``recovery_of``)."""
    return _cells("fig4", _dataset(block), methods, [n_train], SELECTED_RUN_SEEDS)


def _fig5_small(view: GridView, dataset: str, methods: Sequence[str]) -> int:
    """The small N_train of a Fig. 5 panel: the smallest the grid runs ``methods`` at on the panel,
    else on any panel, else the paper grid's, else the paper's smallest."""

    def pick(v: GridView) -> int | None:
        ns = v.sizes("fig5", dataset, methods) or v.sizes("fig5", None, methods)
        return ns[0] if ns else None

    return int(_first(view, pick, FIG5_PAPER_N_TRAIN[0]))


def _fig5_pair(view: GridView, dataset: str) -> tuple[int, int]:
    """The smallest and largest N_train of AVI and ACP on a Fig. 5 panel (two distinct): the
    grid's on the panel, else on any panel, else the paper grid's, else the paper's."""
    both = ("avi", "acp")

    def pick(v: GridView) -> tuple[int, int] | None:
        for ns in (v.sizes("fig5", dataset, both), v.sizes("fig5", None, both)):
            if len(ns) >= 2:
                return ns[0], ns[-1]
        return None

    return _first(view, pick, (FIG5_PAPER_N_TRAIN[0], FIG5_PAPER_N_TRAIN[-1]))


def _fig5(kind: str, dataset: str, view: GridView) -> list[CellNeed]:
    both = ("avi", "acp")
    if kind == "advantage-grows":
        return _cells("fig5", dataset, both, _fig5_pair(view, dataset), MIN_SEEDS)
    if kind == "better-small-n":
        return _cells("fig5", dataset, both, [_fig5_small(view, dataset, both)], MIN_SEEDS)
    if kind == "on-par-large-n":  # the statement's large amount of data: the paper's largest N_train
        small = _fig5_small(view, dataset, both)
        return _cells("fig5", dataset, both, sorted({small, FIG5_LARGE_N_TRAIN}), MIN_SEEDS)
    methods = ("acp", "svi", "lb-cdi")  # beats-svi-lbcdi
    return _cells("fig5", dataset, methods, [_fig5_small(view, dataset, methods)], MIN_SEEDS)


def _table4() -> list[CellNeed]:
    """Every comparison the paper's Table 4 prints: the competitor and ACP at its N_train."""
    ds = _dataset("table4")
    out = {CellNeed("table4", ds, m, n, MIN_SEEDS) for n, m in table4_paper_comparisons()}
    out |= {CellNeed("table4", ds, "acp", n, MIN_SEEDS) for n, _ in table4_paper_comparisons()}
    return sorted(out)


# ------------------------------------------------------------------------------ real-corpus claims
def _classification(view: GridView, select: Callable[[list[int]], int | None]) -> list[CellNeed]:
    """Supplement Fig. 3 cells: ACP and AVI at the N_train ``select`` picks from the grid's
    classification N_train, at its smallest K (the claims pool over K: one K decides)."""

    def pick(v: GridView) -> tuple[int, int] | None:
        ns = sorted({key[3] for key in v.seeds if key[1] == corpus_grid.CLASSIFICATION_DATASET})
        n = select(ns) if ns and v.classification_ks else None
        return None if n is None else (min(v.classification_ks), n)

    found = _first(view, pick, None)
    if found is None:
        return []
    k, n = found
    return _cells(
        corpus_grid.classification_experiment(k),
        corpus_grid.CLASSIFICATION_DATASET,
        ("acp", "avi"),
        [n],
        MIN_SEEDS,
    )


def _tsne(view: GridView) -> list[CellNeed]:
    """Supplement Figs. 4-6: ACP and AVI at every (K, t-SNE N_train) panel, first seed; the claim
    pools the panels below the largest N_train, so it needs :data:`MIN_SEEDS` of them: the
    grid's panels if it has that many, else the paper grid's."""

    def pick(v: GridView) -> tuple[tuple[int, ...], list[int]] | None:
        ks, ns = v.classification_ks, sorted(v.tsne)
        return (ks, ns) if len(ks) * max(len(ns) - 1, 0) >= MIN_SEEDS else None

    found = _first(view, pick, None)
    if found is None:
        return []
    ks, ns = found
    return [
        cell
        for k in ks
        for cell in _cells(
            corpus_grid.classification_experiment(k),
            corpus_grid.CLASSIFICATION_DATASET,
            ("acp", "avi"),
            ns,
            1,
            TSNE,
        )
    ]


def _smallest(ns: list[int]) -> int | None:
    return ns[0] if ns else None


def _above_threshold(ns: list[int]) -> int | None:
    above = [n for n in ns if n > LARGE_N_THRESHOLD]
    return above[0] if above else None


# ------------------------------------------------------------------------------ the mechanism
def _mechanism(view: GridView, experiment: str, dataset: str) -> list[CellNeed]:
    """ACP, ACP-SG and AVI at the smallest N_train the grid runs all three in the cell (the
    ablation table's decisive row), else the paper grid's."""
    methods = ("acp", "acp-sg", "avi")

    def pick(v: GridView) -> int | None:
        ns = v.sizes(experiment, dataset, methods)
        return ns[0] if ns else None

    n = _first(view, pick, None)
    return [] if n is None else _cells(experiment, dataset, methods, [n], MIN_SEEDS)


# ------------------------------------------------------------------------------ the map
_N = r"-n(\d+)"
_FIG5 = re.compile(r"fig5-(?:acp-)?(advantage-grows|better-small-n|on-par-large-n|beats-svi-lbcdi)-(.+)")

_FIXED: list[tuple[re.Pattern[str], Callable[[re.Match[str], GridView], list[CellNeed]]]] = [
    (re.compile(r"fig3a-acp-beats-avi" + _N), lambda m, v: _fig3a(int(m[1]), ("acp", "avi"))),
    (re.compile(r"fig3a-avi-as-good-as-acp" + _N), lambda m, v: _fig3a(int(m[1]), ("avi", "acp"))),
    (re.compile(r"fig3b-ubcdi-tighter-bound-worse-elbo"), lambda m, v: _fig3a(0, ("ub-cdi",))),
    (
        re.compile(r"fig3a-(lb-cdi|svi)-worse-than-amortized" + _N),
        lambda m, v: _fig3a(int(m[2]), ("avi", "acp"), constant=m[1]),
    ),
    (
        re.compile(r"fig4-acp-recovers-all-avi-misses" + _N),
        lambda m, v: _recovery("fig4", int(m[1]), ("acp", "avi")),
    ),
    (re.compile(r"fig4-both-recover-all" + _N), lambda m, v: _recovery("fig4", int(m[1]), ("avi", "acp"))),
    (
        re.compile(r"suppfig1-lbcdi-svi-do-not-recover" + _N),
        lambda m, v: _recovery("supp_fig1", int(m[1]), ("lb-cdi", "svi")),
    ),
    (
        re.compile(r"suppfig2-acp-recovers-more-than-avi" + _N),
        lambda m, v: _cells("suppfig2", _dataset("supp_fig2"), ("acp", "avi"), [int(m[1])], MIN_SEEDS),
    ),
    (re.compile(r"table4-acp-lowest-every-row"), lambda m, v: _table4()),
    (_FIG5, lambda m, v: _fig5(m[1], m[2], v) if m[2] in synrandom_fig5() else []),
    (
        re.compile(r"table5-(?:acp-higher-mean-pmi|acp-best-topics-higher-pmi|similar-mean-pmi)" + _N),
        lambda m, v: _cells(
            corpus_grid.TOPICS_EXPERIMENT, corpus_grid.TOPICS_DATASET, ("acp", "avi"), [int(m[1])], MIN_SEEDS
        ),
    ),
    (re.compile(r"suppfig3-acp-higher-em-small-n"), lambda m, v: _classification(v, _smallest)),
    (re.compile(r"suppfig3-avi-higher-em-large-n"), lambda m, v: _classification(v, _above_threshold)),
    (re.compile(r"suppfig4-6-acp-separates-categories-small-n"), lambda m, v: _tsne(v)),
]
"""Claim id (as the builders write it) -> its cells; the mechanism claims follow (:func:`claim_cells`)."""

UNITS = {"suppfig4-6-acp-separates-categories-small-n": "panels"}
"""Claims whose ``n`` is not the seeds of their cells (the t-SNE claim pools first-seed panels)."""


def claim_cells(claim_id: str, view: GridView) -> ClaimCells | None:
    """The cells claim ``claim_id`` reads, resolved against ``view`` (and its fallbacks); None for
    an id no builder emits.  The mechanism claims (ACP vs ACP-SG, one per cell of the ablation
    table, :func:`~noisyor_bench.reporting.acp.ablation.mechanism_claim_id`) read ACP, ACP-SG and
    AVI in their cell; the id without a cell (no ablation table) reads Fig. 4's, the paper's
    reading of the mechanism."""
    for pattern, build in _FIXED:
        match = pattern.fullmatch(claim_id)
        if match:
            cells = build(match, view)
            return ClaimCells(claim_id, tuple(cells), UNITS.get(claim_id, "seeds")) if cells else None
    from noisyor_bench.reporting.acp.ablation import MECHANISM_CLAIM  # torch: only for these claims

    if claim_id == MECHANISM_CLAIM:
        cells = _mechanism(view, "fig4", _dataset("fig4"))
    elif claim_id.startswith(MECHANISM_CLAIM + "-"):
        experiment, _, dataset = claim_id[len(MECHANISM_CLAIM) + 1 :].partition("-")
        cells = _mechanism(view, experiment, dataset)
    else:
        return None
    return ClaimCells(claim_id, tuple(cells)) if cells else None


def builder_claim_ids(cfg: Mapping[str, Any]) -> list[str]:
    """Every ACP claim id the claim builders can emit for the grids of ``cfg``: the synthetic and
    real-corpus claims (what the builders return without tables: each claim, not tested) and the
    mechanism claims of every cell a grid runs ACP-SG in."""
    from noisyor_bench.reporting.acp.ablation import MECHANISM_CLAIM, mechanism_claim_id
    from noisyor_bench.reporting.acp.synthetic_claims import synthetic_claims
    from noisyor_bench.reporting.acp.text_claims import text_claims

    ids = [c.claim_id for c in synthetic_claims({}) + text_claims({})] + [MECHANISM_CLAIM]
    for name in cfg.get("grids") or {}:
        for cell in grid.cells({**cfg, "grid": name}):
            if cell.method == "acp-sg" and cell.mode == "learning":
                ids.append(mechanism_claim_id(cell.experiment, cell.dataset))
    return list(dict.fromkeys(ids))


__all__ = [
    "MIN_SEEDS",
    "SELECTED_RUN_SEEDS",
    "TSNE",
    "CellNeed",
    "ClaimCells",
    "GridView",
    "builder_claim_ids",
    "claim_cells",
    "grid_view",
]
