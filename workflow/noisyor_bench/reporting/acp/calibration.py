"""The calibration table: the paper's rows against what each dataset's generator allows.

Why: a paper's NELBO below the truth's ``-log p(x)`` or an EM above the best decision's EM is
impossible on our generator, so such a row says the generator (or the scale) differs; a
feasible row is measured by its distance to near-exact inference instead.  For every paper
row with numbers (Fig. 3a: NELBO, F1, EM on SYN-PATTERN; Table 4: NELBO on SYN-RANDOM-7):

* ``nelbo_feasible`` -- paper NELBO >= truth - 2 SE (SE: the truth's standard error over rows);
* ``em_feasible`` -- paper EM <= MAP EM + 2 SE (the posterior mode maximises expected EM);
* ``nelbo_above_truth``, ``f1_below_near_exact``, ``em_below_near_exact`` -- the distances;
* ``curve_nelbo``, ``residual`` -- the row placed on the generator's degradation curve
  (:mod:`noisyor_bench.reporting.acp.degradation`): the curve's NELBO at the row's F1
  (linear in F1 between neighbouring step budgets) and the row's NELBO minus it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.infra.errors import DataError

FEASIBILITY_SES = 2.0
"""Standard errors of slack in both feasibility flags (about a 97.7% one-sided margin)."""

PANEL_ARTIFACT = "acp_calibration"
ROWS_ARTIFACT = "acp_calibration_rows"

PANEL_COLUMNS = (
    "artifact",
    "dataset",
    "variant_of",  # the paper's dataset a generator variant stands in for; empty for the paper's own
    "K",
    "D",
    "n_test",
    "rows",
    "rows_label",
    "truth_nll",
    "truth_se",
    "truth_estimator",
    "meanfield_nelbo",
    "meanfield_se",
    "meanfield_gap",
    "near_exact_f1",
    "near_exact_f1_mc_se",
    "near_exact_em",
    "near_exact_em_se",
    "map_f1",
    "map_em",
    "map_em_se",
    "indep_entropy",
    "samples",
    "enumerated",
)
ROW_COLUMNS = (
    "artifact",
    "paper_artifact",
    "dataset",  # the panel's dataset: the paper's own or a generator variant of it (variant_of)
    "variant_of",
    "n_train",
    "method",
    "paper_nelbo",
    "paper_f1",
    "paper_em",
    "nelbo_feasible",
    "em_feasible",
    "nelbo_above_truth",
    "nelbo_above_meanfield",
    "f1_below_near_exact",
    "em_below_near_exact",
    "curve_nelbo",
    "curve_nearest_step",
    "residual",
)


def paper_rows(paper: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every paper row with a number, tagged with its artifact and dataset."""
    out = []
    fig3a = paper.get("fig3a") or {}
    for r in fig3a.get("rows") or []:
        out.append(
            {
                "paper_artifact": "fig3a",
                "dataset": fig3a["dataset"],
                "n_train": int(r["n_train"]),
                "method": r["method"],
                "paper_nelbo": r.get("nelbo"),
                "paper_f1": r.get("f1"),
                "paper_em": r.get("em"),
            }
        )
    table4 = paper.get("table4") or {}
    for r in table4.get("rows") or []:
        for method, value in r.items():
            if method == "n_train" or value is None:
                continue
            out.append(
                {
                    "paper_artifact": "table4",
                    "dataset": table4["dataset"],
                    "n_train": int(r["n_train"]),
                    "method": method,
                    "paper_nelbo": float(value),
                    "paper_f1": None,
                    "paper_em": None,
                }
            )
    return out


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and np.isnan(value))


def nelbo_feasible(paper_nelbo: Any, truth: Any, truth_se: Any) -> bool | None:
    """Paper NELBO >= truth - 2 SE (None when either number is missing)."""
    if not (_present(paper_nelbo) and _present(truth)):
        return None
    se = float(truth_se) if _present(truth_se) else 0.0
    return bool(float(paper_nelbo) >= float(truth) - FEASIBILITY_SES * se)


def em_feasible(paper_em: Any, map_em: Any, map_em_se: Any) -> bool | None:
    """Paper EM <= MAP EM + 2 SE (None when either number is missing)."""
    if not (_present(paper_em) and _present(map_em)):
        return None
    se = float(map_em_se) if _present(map_em_se) else 0.0
    return bool(float(paper_em) <= float(map_em) + FEASIBILITY_SES * se)


def _minus(a: Any, b: Any) -> float | None:
    return float(a) - float(b) if _present(a) and _present(b) else None


def place_on_curve(nelbo: Any, f1: Any, curve: pd.DataFrame) -> tuple[float | None, int | None]:
    """``(curve NELBO at F1, step whose F1 is nearest)``; ``(None, None)`` outside the curve's F1 range.

    The curve's points are taken in step order up to its best F1 (later steps can only trade
    F1 noise for NELBO); its NELBO at ``f1`` is linear in F1 between the two neighbours."""
    if not (_present(nelbo) and _present(f1)) or curve.empty:
        return None, None
    c = curve.sort_values("step")
    f1s, nelbos, steps = c["f1"].to_numpy(float), c["nelbo"].to_numpy(float), c["step"].to_numpy(int)
    stop = int(np.argmax(f1s)) + 1
    f1s, nelbos, steps = f1s[:stop], nelbos[:stop], steps[:stop]
    f1s = np.maximum.accumulate(f1s)  # a step that lost F1 noise keeps the running best
    target = float(f1)
    if target < f1s[0] or target > f1s[-1]:
        return None, None
    nearest = int(steps[int(np.argmin(np.abs(f1s - target)))])
    hi = int(np.searchsorted(f1s, target, side="left"))
    if f1s[hi] == target or hi == 0:
        return float(nelbos[hi]), nearest
    lo = hi - 1
    w = (target - f1s[lo]) / (f1s[hi] - f1s[lo])
    return float(nelbos[lo] + w * (nelbos[hi] - nelbos[lo])), nearest


def flag_rows(
    rows: Sequence[Mapping[str, Any]], panels: Sequence[Mapping[str, Any]], curves: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The paper rows with their flags, distances and curve residuals (see the module docstring),
    once on the paper's dataset and once on each generator variant of it (a panel whose
    ``variant_of`` names the row's dataset).  Rows of a dataset without a panel are left out: the
    grid did not build that dataset."""
    out = []
    for r in rows:
        for p in panels:
            if r["dataset"] not in (p["dataset"], p.get("variant_of")):
                continue
            curve = (
                curves[curves["dataset"] == p["dataset"]]
                if curves is not None and not curves.empty
                else pd.DataFrame(columns=["dataset", "step", "nelbo", "f1"])
            )
            out.append(_flagged(r, p, curve))
    return pd.DataFrame(out, columns=list(ROW_COLUMNS))


def _flagged(r: Mapping[str, Any], p: Mapping[str, Any], curve: pd.DataFrame) -> dict[str, Any]:
    """One paper row against one panel (and its curve)."""
    curve_nelbo, step = place_on_curve(r.get("paper_nelbo"), r.get("paper_f1"), curve)
    return {
        "artifact": ROWS_ARTIFACT,
        "paper_artifact": r.get("paper_artifact"),
        "dataset": p["dataset"],
        "variant_of": p.get("variant_of"),
        **{k: r.get(k) for k in ("n_train", "method")},
        "paper_nelbo": r.get("paper_nelbo"),
        "paper_f1": r.get("paper_f1"),
        "paper_em": r.get("paper_em"),
        "nelbo_feasible": nelbo_feasible(r.get("paper_nelbo"), p.get("truth_nll"), p.get("truth_se")),
        "em_feasible": em_feasible(r.get("paper_em"), p.get("map_em"), p.get("map_em_se")),
        "nelbo_above_truth": _minus(r.get("paper_nelbo"), p.get("truth_nll")),
        "nelbo_above_meanfield": _minus(r.get("paper_nelbo"), p.get("meanfield_nelbo")),
        "f1_below_near_exact": _minus(p.get("near_exact_f1"), r.get("paper_f1")),
        "em_below_near_exact": _minus(p.get("near_exact_em"), r.get("paper_em")),
        "curve_nelbo": curve_nelbo,
        "curve_nearest_step": step,
        "residual": _minus(r.get("paper_nelbo"), curve_nelbo),
    }


def mean_residual(flagged: pd.DataFrame) -> tuple[float | None, int]:
    """Mean residual over the rows placed on a curve, and how many were placed."""
    placed = pd.to_numeric(flagged["residual"], errors="coerce").dropna()
    return (float(placed.mean()) if len(placed) else None), int(len(placed))


def panel_frame(panels: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per dataset, the panel's columns in order."""
    if not panels:
        raise DataError("no calibration panels: pass at least one synthetic dataset")
    records = [{**{c: p.get(c) for c in PANEL_COLUMNS}, "artifact": PANEL_ARTIFACT} for p in panels]
    frame = pd.DataFrame(records, columns=list(PANEL_COLUMNS))
    return frame.astype({"rows": "Int64", "samples": "Int64"})
