"""The APE paper's display names of its methods: the one home of every APE label (Table 1,
Figures 1-2 and the convergence tables).

Run directories keep the lower-case method ids (``ape-model-aware``); readers see these.
"""

from __future__ import annotations

METHOD_LABELS: dict[str, str] = {
    "standard": "Standard encoder",
    "ape-naive": "APE (naive)",
    "ape-model-aware": "APE (model-aware)",
    "vi": "VI",
    "vi-warm": "VI warm-started from APE",
    "nuts": "NUTS",
    "vi-nuts-subset": "VI on NUTS's combinations",
}
"""Short names (figures, convergence tables)."""

TABLE1_LABELS: dict[str, str] = {
    "standard": "Standard encoder",
    "ape-naive": "APE encoder (naive arch.)",
    "ape-model-aware": "APE encoder (model-aware arch.)",
    "vi": "VI (non-amortized)",
    "vi-warm": "VI warm-started from APE (ours)",
    "nuts": "NUTS",
    "vi-nuts-subset": "VI on NUTS's combinations (ours)",
}
"""Table 1's row names (the paper's wording; rows beyond the paper marked "ours")."""


def ape_method_label(method: str, experiment: str = "") -> str | None:
    """The display name of an APE method id; None for an id APE does not name."""
    return METHOD_LABELS.get(method)
