"""The aviPAM paper's display names: the one home of every aviPAM label (Tables 1-4, the
collapse study's table and figures, and the convergence tables).

Run directories keep the lower-case method ids (``avipam-pam4``; the collapse study's
``<variant>-lr<rate>``, e.g. ``batchnorm-lr0.002``); readers see these names.
"""

from __future__ import annotations

CORPUS_LABELS: dict[str, str] = {
    "20news": "20 Newsgroups",
    "nips": "NIPS SUBSTITUTE (1,500 NeurIPS abstracts; the paper's UCI NIPS bag of words is unavailable)",
    "mnist": "MNIST test digits (stand-in for Omniglot)",
}
METHOD_LABELS: dict[str, str] = {
    "lda-gibbs": "LDA Gibbs (tomotopy)",
    "lda-online": "LDA DMFVI online (scikit-learn)",
    "lda-batch": "LDA DMFVI batch (scikit-learn)",
    "pam4-gibbs": "4-PAM Gibbs (tomotopy PAModel)",
    "avipam-pam4": "aviPAM 4-PAM",
    "avipam-pam5": "aviPAM 5-PAM",
    "avipam-ctm": "aviPAM CTM",
    "avipam-molda": "aviPAM MoLDA",
    # ablation: the encoder batch-norm's learnable gain, the paper's eq. 5 reading
    "avipam-pam4-gain": "aviPAM 4-PAM, BN with gain (ablation)",
    # calibration rows of Table 1: the pipeline against AVITM's published quality
    "avitm-published": "AVITM published topics (calibration, no training)",
    "prodlda": "ProdLDA, AVITM's settings (calibration)",
    "nvlda": "NVLDA, AVITM's settings (calibration)",
}
"""Tables 1-4's methods, in their row order."""

VARIANT_LABELS: dict[str, str] = {
    "batchnorm": "batch-norm (gain)",
    "norm": "norm (x/||x||, gain)",
    "none": "no normalisation",
}
"""The collapse study's encoder-output normalisations, in display order."""


def split_collapse_method(method: str) -> tuple[str, float]:
    """A collapse-study method id ``<variant>-lr<rate>`` -> (variant, learning rate)."""
    variant, _, lr = method.rpartition("-lr")
    return variant, float(lr)


def avipam_method_label(method: str, experiment: str = "") -> str | None:
    """The display name of an aviPAM method id: Tables 1-4's names, or for the collapse study
    ``<normalisation>, lr <rate>`` (``batchnorm-lr0.002`` -> ``batch-norm (gain), lr 0.002``);
    None for an id aviPAM does not name."""
    if method in METHOD_LABELS:
        return METHOD_LABELS[method]
    if "-lr" in method:
        try:
            variant, lr = split_collapse_method(method)
        except ValueError:
            return None
        if variant in VARIANT_LABELS:
            return f"{VARIANT_LABELS[variant]}, lr {lr:g}"
    return None
