"""The ACP paper's reported numbers: the loader of ``paper_numbers.yaml``.

``paper_numbers.yaml`` (package data beside this module) is the only place paper numbers are
written down; tables, claims and the dataset table (paper sparsities) read them through
:func:`paper_numbers`.
"""

from __future__ import annotations

from typing import Any

from noisyor_bench.experiments import papers

PAPER = "acp"


def paper_numbers() -> dict[str, Any]:
    """The paper's reported numbers (package data ``paper_numbers.yaml``); a fresh copy."""
    return papers.paper_numbers(PAPER)


def paper_sparsity(dataset: str) -> float | None:
    """The sparsity (percent of zeros in ``x``) the paper reports for ``dataset`` in its Table 2
    (SYN-PATTERN, MULTI-MNIST) or Table 3 (SYN-RANDOM rows); ``None`` for other datasets."""
    numbers = paper_numbers()
    for block in ("table2", "table3"):
        for row in numbers[block]["rows"]:
            if row["dataset"] == dataset:
                return float(row["sparsity"])
    return None
