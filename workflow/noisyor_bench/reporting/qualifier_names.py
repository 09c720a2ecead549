"""The names of a claim's qualifiers, in the order people read them: one home, so that the claims
that write them (:mod:`noisyor_bench.reporting.claims`) and every reader that shows them (the
answer, the claims pages) agree, without the readers importing the claims' statistics."""

QUALIFIERS = (
    "protocol_deviation",
    "unconverged",
    "weak_learning",
    "bound_gap",
    "low_power",
    "generator_sensitive",
)
"""Named qualifiers of a claim, beside the verdict and never changing it."""
