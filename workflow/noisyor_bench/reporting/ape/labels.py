"""The APE paper's display names of its methods: the one home of every APE label (Table 1,
Figures 1-2, the APE-on-noisy-OR table and figure, and the convergence tables).

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

NOISYOR_LABELS: dict[str, str] = {
    "avi": "AVI (input x)",
    "avi-concat": "APE naive (x, theta concatenated)",
    "avi-model-aware": "APE model-aware [theta^T x, theta^T (1-x)]",
    "acp": "ACP (eq. 11 under theta)",
    "acp-model-aware": "ACP, model-aware input",
    "svi": "SVI (per datapoint)",
    "lb-cdi": "LB-CDI (per datapoint)",
}
"""The APE question on noisy-OR (experiment ``ape-noisyor``): encoders and per-datapoint baselines."""


def ape_method_label(method: str, experiment: str = "") -> str | None:
    """The display name of an APE method id (the noisy-OR study's names for experiment
    ``ape-noisyor``); None for an id APE does not name."""
    labels = NOISYOR_LABELS if experiment.startswith("ape-noisyor") else METHOD_LABELS
    return labels.get(method)
