"""The AIS doubling check of an ``nll_*`` record in words, for tables and claims.

Apart from :mod:`noisyor_bench.evaluation.noisyor_likelihood` because the tables that print these
labels read records only: importing the estimator would cost them torch's start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def doubling_check_text(record: Mapping[str, Any]) -> str:
    """The doubled-schedule check of an ``nll_*`` record (:meth:`LikelihoodResult.summary` with
    ``nll_ais_*`` keys) in words -- "AIS 400 temperatures x 16 chains; doubling moved -log p(x)
    by -0.052 ± 0.031 nats/row on 16 rows" -- so a table says how far its AIS schedule is from
    convergence; "" when no row used AIS."""
    if not record.get("nll_ais_rows"):
        return ""
    head = f"AIS {record.get('nll_ais_steps')} temperatures x {record.get('nll_ais_chains')} chains"
    delta, se = record.get("nll_ais_check_delta"), record.get("nll_ais_check_delta_se")
    if delta is None:
        return f"{head}; doubling not checked"
    spread = "" if se is None else f" ± {float(se):.3f}"
    rows = record.get("nll_ais_check_rows")
    on = "" if rows is None else f" on {int(rows)} rows"
    return f"{head}; doubling moved -log p(x) by {-float(delta):+.3f}{spread} nats/row{on}"


def upper_bound_label(record: Mapping[str, Any]) -> str:
    """ "upper bound (doubling moved 0.44 ± 0.08 nats/row)" for an AIS estimate whose doubled-schedule
    check failed (``nll_ais_converged`` false: the change or its SE above ``check_tol``) or was
    not run; "" for exact rows and a converged schedule.  An unconverged AIS ``-log p(x)`` reads
    high (``E[log Z_hat] <= log Z``), so it is a bound, not an estimate."""
    if not record.get("nll_ais_rows") or record.get("nll_ais_converged") is True:
        return ""
    delta, se = record.get("nll_ais_check_delta"), record.get("nll_ais_check_delta_se")
    if delta is None:
        return "upper bound (doubling not checked)"
    spread = "" if se is None else f" ± {float(se):.2f}"
    return f"upper bound (doubling moved {abs(float(delta)):.2f}{spread} nats/row)"
