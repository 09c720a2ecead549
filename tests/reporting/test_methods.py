"""How reporting names, orders and draws methods (noisyor_bench.reporting.methods): the registry's
values, unchanged from the tables' and figures' former copies."""

from __future__ import annotations

from noisyor_bench.inference.noisyor.registry import display_order
from noisyor_bench.reporting.methods import (
    DETERMINISTIC_IN_INFERENCE,
    method_colour,
    method_label,
    method_marker,
    method_rank,
)

# The lists reporting kept before the registry (aggregate.METHOD_ORDER / METHOD_LABELS /
# DETERMINISTIC_IN_INFERENCE, plots.figures.METHOD_COLORS / METHOD_MARKERS).
OLD_ORDER = ("avi", "acp", "acp-sg", "svi", "lb-cdi", "ub-cdi")
OLD_LABELS = {
    "avi": "AVI",
    "acp": "ACP",
    "acp-sg": "ACP-SG",
    "svi": "SVI",
    "lb-cdi": "LB-CDI",
    "ub-cdi": "UB-CDI",
}
OLD_COLOURS = {
    "avi": "#0072B2",
    "acp": "#D55E00",
    "svi": "#009E73",
    "lb-cdi": "#CC79A7",
    "ub-cdi": "#E69F00",
    "acp-sg": "#000000",
}
OLD_MARKERS = {"avi": "o", "acp": "s", "svi": "^", "lb-cdi": "D", "ub-cdi": "v", "acp-sg": "X"}


def test_display_order_is_the_tables_order() -> None:
    assert display_order() == OLD_ORDER
    assert [method_rank(m) for m in OLD_ORDER] == list(range(len(OLD_ORDER)))
    assert method_rank("indep-bernoulli") == len(OLD_ORDER)  # anything else sorts last


def test_labels_colours_markers_match_the_former_copies() -> None:
    assert {m: method_label(m) for m in OLD_ORDER} == OLD_LABELS
    assert {m: method_colour(m) for m in OLD_ORDER} == OLD_COLOURS
    assert {m: method_marker(m) for m in OLD_ORDER} == OLD_MARKERS
    # fallbacks for names that are not methods (reference rows)
    assert method_label("true-exact") == "TRUE-EXACT"
    assert (method_colour("true-exact"), method_marker("true-exact")) == ("#555555", "o")


def test_deterministic_methods_are_the_non_amortized_ones() -> None:
    assert set(DETERMINISTIC_IN_INFERENCE) == {"svi", "lb-cdi", "ub-cdi"}
