"""How the cells behind an ACP claim differ from the paper's protocol: its ``protocol_deviation``.

One place knows the paper's protocol for every claim, so a qualifier never says more than the
paper did:

* **Search**: the paper drew 100 hyperparameter settings per cell for the methods it searched
  (supplement Section 3; :attr:`~noisyor_bench.inference.noisyor.registry.MethodInfo.searched`:
  AVI and ACP) and ran the others with their defaults, so SVI / LB-CDI / UB-CDI never carry a
  search deviation.  Fewer draws reads ``search 10/100 draws x 2 inits``; a cell the search table
  does not list ran its defaults (``search 1/100 draws: the defaults``); without the search
  table nothing says how the cells were chosen: ``search table missing``, never "the defaults".
* **Seeds**: below the paper-protocol grids' 5, except where one run is the setting (a method
  that is deterministic in inference mode: the same posterior for every seed).
* **Data**: a smaller cell standing in for the paper's (MULTI-MNIST at fewer than 8,000 rows).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from noisyor_bench.inference.noisyor.registry import METHOD_NAMES, method_info
from noisyor_bench.reporting.acp.search_tables import search_protocol
from noisyor_bench.reporting.methods import method_label

PAPER_SEARCH_DRAWS = 100
"""The paper's random search: 100 draws per cell, the best kept (supplement Section 3)."""
PAPER_SEEDS = 5
"""Seeds of the paper-protocol grids (``paper``, ``paper-synpattern``)."""
MNIST_PAPER_N = 8000
"""Supplement Fig. 2's reduced MULTI-MNIST training set (8K rows)."""
SEARCH_TABLE_MISSING = "search table missing"


@dataclass(frozen=True)
class CellProtocol:
    """One cell a claim read: where it ran (the search table's experiment), how, with how many seeds."""

    experiment: str
    dataset: str
    method: str
    n_train: int
    n_seeds: int
    mode: str = ""  # "inference" / "learning"; "" = unknown

    @property
    def one_run_is_the_setting(self) -> bool:
        """A deterministic inference-mode cell: one seed is the paper's protocol, not fewer seeds."""
        return (
            self.mode == "inference"
            and self.method in METHOD_NAMES
            and method_info(self.method).deterministic_in_inference
        )


def paper_searched(method: str) -> bool:
    """Whether the paper drew ``method``'s hyperparameters by random search (the registry's
    :attr:`~noisyor_bench.inference.noisyor.registry.MethodInfo.searched`); names that are not
    methods (baseline rows) were not searched."""
    return method in METHOD_NAMES and bool(method_info(method).searched)


def search_deviation(search: pd.DataFrame | None, cell: CellProtocol) -> str:
    """The search deviation of one cell ("" when the paper did not search its method or this
    cell had the paper's draws)."""
    if not paper_searched(cell.method):
        return ""
    if search is None:
        return SEARCH_TABLE_MISSING
    listed = not search.empty and bool(
        (
            (search["experiment"] == cell.experiment)
            & (search["dataset"] == cell.dataset)
            & (search["method"] == cell.method)
            & (search["n_train"].astype(int) == int(cell.n_train))
        ).any()
    )
    if not listed:
        return f"search 1/{PAPER_SEARCH_DRAWS} draws: the defaults"
    draws, inits = search_protocol(search, cell.experiment, cell.dataset, cell.method, cell.n_train)
    if draws >= PAPER_SEARCH_DRAWS:
        return ""
    return f"search {draws}/{PAPER_SEARCH_DRAWS} draws" + (f" x {inits} inits" if inits > 1 else "")


def data_deviation(cell: CellProtocol) -> str:
    """Data standing in for the paper's in one cell ("" for the paper's data)."""
    if cell.experiment == "suppfig2" and cell.dataset == "multi-mnist" and cell.n_train != MNIST_PAPER_N:
        return f"MULTI-MNIST N_train {cell.n_train} in place of the paper's {MNIST_PAPER_N}"
    return ""


def protocol_deviation(search: pd.DataFrame | None, cells: Iterable[CellProtocol]) -> str:
    """The ``protocol_deviation`` of the cells a claim read: each deviation once, with the
    methods it concerns, in the order first met (``"seeds 2/5 (ACP, AVI); search table missing
    (ACP, AVI)"``)."""
    found: dict[str, set[str]] = {}
    for cell in cells:
        label = method_label(cell.method)
        if 0 < cell.n_seeds < PAPER_SEEDS and not cell.one_run_is_the_setting:
            found.setdefault(f"seeds {cell.n_seeds}/{PAPER_SEEDS}", set()).add(label)
        for text in (search_deviation(search, cell), data_deviation(cell)):
            if text:
                found.setdefault(text, set()).add(label)
    return "; ".join(f"{text} ({', '.join(sorted(who))})" for text, who in found.items())
