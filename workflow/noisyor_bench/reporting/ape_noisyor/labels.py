"""Display names of the APE-on-noisy-OR study (experiment ``ape-noisyor``): the one home of its
labels (its table, figure and convergence table).  Run directories keep the lower-case ids."""

from __future__ import annotations

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


def ape_noisyor_method_label(method: str, experiment: str = "") -> str | None:
    """The display name of an encoder or per-datapoint baseline of the study; None for other ids."""
    return NOISYOR_LABELS.get(method)
