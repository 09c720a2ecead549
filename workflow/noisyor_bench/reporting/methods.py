"""How tables and figures name, order and draw the methods: thin views of the method registry.

:mod:`noisyor_bench.inference.noisyor.registry` is the one list of ACP's methods; the other papers'
display names come from their registry entries' labellers (:mod:`noisyor_bench.experiments.papers`,
``Paper.labeller``), chosen by the experiment id (``Paper.run_kinds``).  This module
only adds the fallbacks reporting needs for names that are not methods (reference rows such as
``indep-bernoulli``): an upper-cased label, the last position, a grey line.
"""

from __future__ import annotations

from noisyor_bench.experiments import papers
from noisyor_bench.inference.noisyor.registry import METHOD_NAMES, METHODS, display_order, method_info

DETERMINISTIC_IN_INFERENCE: tuple[str, ...] = tuple(m.name for m in METHODS if m.deterministic_in_inference)
"""Methods whose inference-mode posterior is a deterministic optimisation on the held-out rows
with the true model (no seed enters it): one value per setting."""

FALLBACK_COLOUR = "#555555"
FALLBACK_MARKER = "o"


def method_label(method: str, experiment: str = "") -> str:
    """The paper's display name of a method id: for an experiment of APE or aviPAM
    (``ape-train``, ``avipam-small``, ...) that paper's own name (``ape-model-aware`` ->
    ``APE (model-aware)``, ``avipam-pam4`` -> ``aviPAM 4-PAM``); otherwise the registry's
    (ACP: ``lb-cdi`` -> ``LB-CDI``); anything else upper-cased."""
    paper = papers.paper_of_experiment(experiment) if isinstance(experiment, str) and experiment else None
    label = paper.method_label(method, experiment) if paper is not None else None
    if label is not None:
        return label
    return method_info(method).label if method in METHOD_NAMES else method.upper()


def method_rank(method: str) -> int:
    """Position in the display order (:func:`~noisyor_bench.inference.noisyor.registry.display_order`);
    unknown methods sort last."""
    order = display_order()
    return order.index(method) if method in order else len(order)


def method_colour(method: str) -> str:
    """The method's colour in every figure; grey for anything else."""
    return method_info(method).colour if method in METHOD_NAMES else FALLBACK_COLOUR


def method_marker(method: str) -> str:
    """The method's marker in every figure; a circle for anything else."""
    return method_info(method).marker if method in METHOD_NAMES else FALLBACK_MARKER
