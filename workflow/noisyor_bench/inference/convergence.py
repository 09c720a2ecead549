"""Whether a fit converged, decided once, from its training curve, and recorded with the run.

A run *converged* if

* it stopped by its early-stopping rule (``stop_reason == "patience"``: ``patience``
  evaluations without a new best), or by the method's own convergence criterion
  (``"converged"``: UB-CDI / LB-CDI fixed-point rounds, SVI's tolerance on fresh data), or
* it reached its epoch limit (``"max_epochs"``) with the monitored NELBO on a plateau: with
  ``W = convergence_window`` evaluations and ``v`` the monitored values in order,

      (min(v[:-W]) - min(v[-W:])) / |min(v[:-W])|  <  convergence_rel_tol,

  i.e. the best of the last W evaluations improves on the best before them by less than
  the relative tolerance.  A run that hit its limit with fewer than W + 1 evaluations has
  no window to judge and did *not* converge.

The monitored values are the validation NELBOs of the curve (the quantity early stopping
and model selection use); a curve without any validation NELBO (a trainer without
``val_fn``) is judged on its training NELBO.  Non-finite values are left out.

:func:`plateau_reached` is that predicate alone, on a sequence of monitored values: the one
home of the rule.  :func:`assess` judges a finished fit with it, and the fits that *stop* as
soon as it holds call it on their curve so far: :class:`~noisyor_bench.inference.training.Trainer`
(``stop_on_plateau``, aviPAM), the tomotopy Gibbs chains
(:func:`noisyor_bench.inference.topics.gibbs.rule_holds`, ``stop_on_rule``) and scikit-learn's
online LDA pass by pass (:mod:`noisyor_bench.inference.topics.lda_meanfield`, ``stop_on_rule``).

A run that stopped at its epoch limit with its best evaluation the last one (``best_at_limit``)
was still improving when it was stopped: it is *never* converged, whatever the window says
(rule ``best-at-limit``).

Judged in nats (:func:`rejudge_absolute`): the NELBOs of noisy-OR fits are nats per
data point, and a relative tolerance scales with the NELBO (1e-3 is 0.038 nats at 38 nats but
0.24 at 240).  Every verdict records ``last_window_nats = best_before_window -
best_within_window`` (absolute, nats per data point, positive = improved), and the ACP runs are
judged on it: plateau when it is below ``abs_tol`` = :data:`ABS_TOL_NATS` (0.01 nats per data
point per window) instead of the relative rule.  Whether the remaining improvement matters for
a claim is the claims' business (the ``unconverged`` qualifier,
:mod:`noisyor_bench.reporting.claims`), from the per-cell maximum of ``last_window_nats``.

``converged`` is ``None`` where no fit happened (an empty curve) and where the curve is not
a training budget's: SVI, LB-CDI and UB-CDI in inference mode fit per-datapoint parameters
on held-out rows with the true model (N_train = 0); their curve is that evaluation-time
optimisation, so only their own criterion (``"converged"``) says anything, and otherwise
the verdict is "not applicable".

:func:`assess` is the one implementation; :class:`~noisyor_bench.inference.training.Trainer` (AVI,
ACP) and :class:`~noisyor_bench.inference.noisyor.fitloop.FitLoop` (SVI, LB-CDI, UB-CDI) call it at
the end of a fit, and :func:`noisyor_bench.experiments.acp.runs.execute_run` writes the result into
``metrics.json`` (``converged`` and the ``convergence`` object, :meth:`Convergence.as_dict`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from noisyor_bench.inference.fitting import EpochRecord, FitBudget

# Which rule decided (the ``rule`` key of metrics.json's ``convergence`` object).
EARLY_STOPPING = "early-stopping"  # stop_reason patience: converged
METHOD_CRITERION = "method-criterion"  # stop_reason converged (the method's own rule): converged
PLATEAU = "plateau"  # epoch limit, relative improvement over the window < rel_tol: converged
STILL_IMPROVING = "still-improving"  # epoch limit, relative improvement >= rel_tol: not converged
TOO_FEW_EVALUATIONS = "too-few-evaluations"  # epoch limit with < W + 1 evaluations: not converged
BEST_AT_LIMIT = "best-at-limit"  # epoch limit with the best evaluation the last one: never converged
NOT_APPLICABLE = "not-applicable"  # held-out (inference-mode) fit of SVI/LB-CDI/UB-CDI: null
NO_FIT = "no-fit"  # empty curve: null
RULES = (
    EARLY_STOPPING,
    METHOD_CRITERION,
    PLATEAU,
    STILL_IMPROVING,
    TOO_FEW_EVALUATIONS,
    BEST_AT_LIMIT,
    NOT_APPLICABLE,
    NO_FIT,
)


@dataclass(frozen=True)
class Convergence:
    """The verdict and the numbers behind it (``metrics.json``: ``converged``, ``convergence``)."""

    converged: bool | None
    rule: str
    stop_reason: str | None
    epochs: int
    best_epoch: int | None
    max_epochs: int
    window: int
    rel_tol: float
    monitored: str | None  # "val_nelbo" | "train_nelbo" | None (no finite value)
    evaluations: int
    best_before_window: float | None
    best_within_window: float | None
    relative_improvement: float | None
    last_window_nats: float | None = None  # best_before_window - best_within_window (absolute)
    best_at_limit: bool = False  # stopped at max_epochs with the best evaluation the last one
    abs_tol: float | None = None  # the absolute plateau tolerance it was judged on (None: rel_tol)

    def as_dict(self) -> dict[str, Any]:
        """The ``convergence`` object of metrics.json (plain JSON values)."""
        return asdict(self)


def monitored_values(records: Sequence[EpochRecord]) -> tuple[str | None, list[float]]:
    """The curve's monitored NELBO in epoch order: validation values, else training values."""
    for name in ("val_nelbo", "train_nelbo"):
        values = [float(v) for v in (getattr(r, name) for r in records) if v is not None and math.isfinite(v)]
        if values:
            return name, values
    return None, []


def relative_improvement(
    values: Sequence[float], window: int
) -> tuple[float | None, float | None, float | None]:
    """``(best_before, best_within, (best_before - best_within) / |best_before|)`` of the last
    ``window`` values against all earlier ones; ``None``s with fewer than ``window + 1`` values.

    Positive = the window found a better (lower) value; <= 0 = no improvement.  A best-before
    of exactly 0 gives 0 (no change) or +inf (any improvement)."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    if len(values) < window + 1:
        return None, None, None
    before, within = min(values[:-window]), min(values[-window:])
    if before == 0.0:
        return before, within, 0.0 if within >= before else math.inf
    return before, within, (before - within) / abs(before)


ABS_TOL_NATS = 0.01
"""Absolute plateau tolerance of the noisy-OR (ACP) runs: nats per data point per window."""


def plateau_reached(values: Sequence[float | None], window: int, rel_tol: float) -> bool:
    """Whether the monitored ``values`` (in evaluation order, lower is better) are on a plateau:
    the best of the last ``window`` improves on the best before them by less than ``rel_tol``
    (relative; :func:`relative_improvement`).  Non-finite values and ``None`` are left out first,
    as :func:`monitored_values` leaves them out for :func:`assess`; fewer than ``window + 1``
    values left: ``False`` (no verdict yet).  A best-before of exactly 0 followed by any
    improvement (relative improvement +inf) is not a plateau."""
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    rel = relative_improvement(finite, int(window))[2]
    return rel is not None and rel < float(rel_tol)


def _best_is_last(records: Sequence[EpochRecord], monitored: str | None, best_epoch: int | None) -> bool:
    """Whether the best monitored evaluation is the last one: ``best_epoch`` is the epoch of the
    last record with a monitored value (when given), else the last value is the strict minimum
    (a tie with an earlier value is not a new best, as in the trainers; a single evaluation is
    both the best and the last, as ``best_epoch`` says then)."""
    if monitored is None:
        return False
    evaluated = [r for r in records if (v := getattr(r, monitored)) is not None and math.isfinite(v)]
    if not evaluated:
        return False
    if best_epoch is not None:
        return int(best_epoch) >= int(evaluated[-1].epoch)
    values = [float(getattr(r, monitored)) for r in evaluated]
    return len(values) == 1 or values[-1] < min(values[:-1])


def assess(
    records: Sequence[EpochRecord],
    stop_reason: str | None,
    best_epoch: int | None,
    budget: FitBudget,
    applicable: bool = True,
    abs_tol: float | None = None,
) -> Convergence:
    """The verdict of one finished fit (module docstring); ``applicable=False`` for a curve
    that is not a training budget's (inference-mode SVI/LB-CDI/UB-CDI); ``abs_tol``: judge the
    plateau on the absolute last-window improvement (nats per data point) instead of ``rel_tol``."""
    window, rel_tol = int(budget.convergence_window), float(budget.convergence_rel_tol)
    monitored, values = monitored_values(records)
    before, within, rel = relative_improvement(values, window)
    stop = stop_reason or None
    gain = None if before is None or within is None else float(before - within)
    at_limit = stop == "max_epochs" and _best_is_last(records, monitored, best_epoch)

    def verdict(converged: bool | None, rule: str) -> Convergence:
        return Convergence(
            converged=converged,
            rule=rule,
            stop_reason=stop,
            epochs=int(records[-1].epoch) if records else 0,
            best_epoch=None if best_epoch is None else int(best_epoch),
            max_epochs=int(budget.max_epochs),
            window=window,
            rel_tol=rel_tol,
            monitored=monitored,
            evaluations=len(values),
            best_before_window=before,
            best_within_window=within,
            relative_improvement=None if rel is None or not math.isfinite(rel) else rel,
            last_window_nats=gain,
            best_at_limit=bool(at_limit),
            abs_tol=None if abs_tol is None else float(abs_tol),
        )

    if not records:
        return verdict(None, NO_FIT)
    if stop == "patience":
        return verdict(True, EARLY_STOPPING)
    if stop == "converged":
        return verdict(True, METHOD_CRITERION)
    if not applicable:
        return verdict(None, NOT_APPLICABLE)
    if rel is None:
        return verdict(False, TOO_FEW_EVALUATIONS)
    if at_limit:
        return verdict(False, BEST_AT_LIMIT)
    if abs_tol is not None:
        return (
            verdict(True, PLATEAU) if gain is not None and gain < abs_tol else verdict(False, STILL_IMPROVING)
        )
    if plateau_reached(values, window, rel_tol):
        return verdict(True, PLATEAU)
    return verdict(False, STILL_IMPROVING)


def rejudge_absolute(verdict: Convergence, abs_tol: float = ABS_TOL_NATS) -> Convergence:
    """``verdict`` judged in nats (the ACP runs): a run at its epoch limit is on a plateau when
    its last-window improvement ``last_window_nats`` is below ``abs_tol``; the other rules
    (early stopping, the method's criterion, not applicable, best at the limit, too few
    evaluations) stand.  From the recorded numbers alone, so it also reads old verdicts."""
    gain = verdict.last_window_nats
    if gain is None and verdict.best_before_window is not None and verdict.best_within_window is not None:
        gain = float(verdict.best_before_window - verdict.best_within_window)
    judged = replace(verdict, last_window_nats=gain, abs_tol=float(abs_tol))
    if verdict.rule not in (PLATEAU, STILL_IMPROVING) or gain is None:
        return judged
    if verdict.best_at_limit:
        return replace(judged, converged=False, rule=BEST_AT_LIMIT)
    plateau = gain < abs_tol
    return replace(judged, converged=plateau, rule=PLATEAU if plateau else STILL_IMPROVING)


__all__ = [
    "ABS_TOL_NATS",
    "Convergence",
    "RULES",
    "assess",
    "monitored_values",
    "plateau_reached",
    "rejudge_absolute",
    "relative_improvement",
]
