"""Markdown of the calibration table: panel per dataset, the paper's rows flagged, the degradation curve."""

from __future__ import annotations

from typing import Any

import pandas as pd

from noisyor_bench.reporting.acp.calibration import FEASIBILITY_SES, mean_residual
from noisyor_bench.reporting.tables import format_number, markdown_table


def is_missing(value: Any) -> bool:
    """None, NaN or pandas' NA (an empty cell of a nullable integer column)."""
    return value is None or bool(pd.isna(value))


def _value_se(value: Any, se: Any, digits: int = 2, se_digits: int = 2) -> str:
    if is_missing(value):
        return ""
    text = format_number(value, digits)
    return text if is_missing(se) else f"{text} ± {format_number(se, se_digits)}"


def _flag(value: Any) -> str:
    if is_missing(value):
        return "–"
    return "yes" if str(value).lower() == "true" else "**no**"


def _enumerated(row: pd.Series, value: str) -> str:
    return value if is_missing(row.get("enumerated")) else str(row["enumerated"])


def panel_section(panel: pd.DataFrame) -> str:
    header = [
        "dataset",
        "variant of",
        "K",
        "rows",
        "truth −log p(x)",
        "estimator",
        "best mean-field NELBO",
        "near-exact F1",
        "near-exact EM",
        "MAP F1",
        "MAP EM",
        "indep. entropy",
    ]
    body = []
    for _, r in panel.iterrows():
        body.append(
            [
                r["dataset"],
                "" if is_missing(r.get("variant_of")) else r["variant_of"],
                int(r["K"]),
                "–" if is_missing(r.get("rows")) else f"{int(r['rows'])} ({r['rows_label']})",
                _value_se(r["truth_nll"], r["truth_se"]),
                r["truth_estimator"],
                _enumerated(r, _value_se(r["meanfield_nelbo"], r["meanfield_se"])),
                _enumerated(r, _value_se(r["near_exact_f1"], r["near_exact_f1_mc_se"], 2, 3)),
                _enumerated(r, _value_se(r["near_exact_em"], r["near_exact_em_se"])),
                _enumerated(r, format_number(r["map_f1"], 2)),
                _enumerated(r, _value_se(r["map_em"], r["map_em_se"])),
                format_number(r["indep_entropy"], 2),
            ]
        )
    return markdown_table(header, body)


def rows_section(rows: pd.DataFrame) -> str:
    header = [
        "artifact",
        "dataset",
        "N_train",
        "method",
        "paper NELBO / F1 / EM",
        "NELBO feasible",
        "EM feasible",
        "NELBO − truth",
        "NELBO − mean-field optimum",
        "near-exact F1 − F1",
        "near-exact EM − EM",
        "curve NELBO at F1 (nearest step)",
        "residual",
    ]
    body = []
    for _, r in rows.iterrows():
        paper = " / ".join(format_number(r[c], 1) or "–" for c in ("paper_nelbo", "paper_f1", "paper_em"))
        curve = ""
        if not is_missing(r["curve_nelbo"]):
            curve = f"{format_number(r['curve_nelbo'], 2)} ({int(r['curve_nearest_step'])})"
        elif not is_missing(r["paper_f1"]):
            curve = "outside the curve's F1 range"
        body.append(
            [
                r["paper_artifact"],
                r["dataset"],
                "–" if int(r["n_train"]) == 0 else int(r["n_train"]),
                r["method"],
                paper,
                _flag(r["nelbo_feasible"]),
                _flag(r["em_feasible"]),
                format_number(r["nelbo_above_truth"], 2),
                format_number(r["nelbo_above_meanfield"], 2),
                format_number(r["f1_below_near_exact"], 1),
                format_number(r["em_below_near_exact"], 1),
                curve,
                format_number(r["residual"], 2),
            ]
        )
    return markdown_table(header, body)


def curve_section(curve: pd.DataFrame) -> str:
    body = [
        [
            r["dataset"],
            int(r["step"]),
            format_number(r["nelbo"], 2),
            format_number(r["f1"], 1),
            format_number(r["em"], 1),
        ]
        for _, r in curve.iterrows()
    ]
    return markdown_table(["dataset", "steps", "NELBO (exact)", "F1", "EM"], body)


def residual_sentence(rows: pd.DataFrame) -> str:
    """The mean (median) residual of the paper rows on each generator's degradation curve."""
    parts = []
    for dataset, of in rows.groupby("dataset", sort=False):
        mean, placed = mean_residual(of)
        if mean is None:
            continue
        median = float(pd.to_numeric(of["residual"], errors="coerce").dropna().median())
        variant = of["variant_of"].iloc[0]
        label = dataset if is_missing(variant) or not variant else f"{dataset} (a variant of {variant})"
        parts.append(f"{label}: {mean:+.2f} nats (median {median:+.2f}) over {placed} rows")
    if not parts:
        return "No paper row falls within a degradation curve's F1 range."
    return (
        "Mean residual of the paper rows placed on each generator's degradation curve -- "
        + "; ".join(parts)
        + " (row NELBO minus the curve's NELBO at the row's F1; positive: the row's NELBO is worse than a "
        "truncated optimiser with the same F1 reaches on this generator; the generator whose curve leaves "
        "the smallest residuals explains the paper's rows best)."
    )


def calibration_markdown(
    panel: pd.DataFrame, rows: pd.DataFrame, curve: pd.DataFrame, lr: float, exact_max_k: int
) -> str:
    flags_failed = rows[
        (rows["nelbo_feasible"].astype(str).str.lower() == "false")
        | (rows["em_feasible"].astype(str).str.lower() == "false")
    ]
    if flags_failed.empty:
        verdict = "Every paper row is feasible on every generator."
    else:
        counts = "; ".join(
            f"{n} on {ds}" for ds, n in flags_failed.groupby("dataset", sort=False).size().items()
        )
        feasible = [ds for ds in rows["dataset"].drop_duplicates() if ds not in set(flags_failed["dataset"])]
        verdict = (
            f"Infeasible paper rows (marked **no**): {counts} -- their numbers cannot come from inference "
            "with that generator's true model"
            + (f"; every row is feasible on {', '.join(feasible)}." if feasible else ".")
        )
    parts = [
        "# Calibration: the paper's rows against what each generator allows\n",
        "Per synthetic dataset, on the test split (nats per data point; F1/EM in percent): the truth's "
        "−log p(x); the best NELBO of any factorised q with the true parameters (per row the optimum of "
        "the exact ELBO, coordinate ascent from several starts; 2^K enumeration); the paper's F1/EM protocol "
        "(z drawn from the posterior) with the exact joint posterior (near-exact: EM exactly, F1 from draws) "
        "and with its mode (MAP: the highest expected EM any inference can have); the entropy of the "
        "independent Bernoulli with the generator's exact pixel marginals. ± : standard error over the "
        "rows (F1: Monte Carlo SE of the draws). 'not computed (K = ...)': 2^K states are too many to "
        f"enumerate (K > {exact_max_k}); these quantities are not estimated.\n",
        panel_section(panel),
        f"\n## The paper's rows\n\nFeasible: NELBO ≥ truth − {FEASIBILITY_SES:g} SE; EM ≤ MAP EM + "
        f"{FEASIBILITY_SES:g} SE. {verdict}\n",
        rows_section(rows),
        "\n## Degradation curve\n\nPer-datapoint Adam on the exact ELBO with the true model "
        f"(learning rate {lr:g}, SVI's, from the prior), stopped after t steps: exact NELBO, F1/EM by the "
        "paper's protocol. A paper row is placed at its F1 (linear between neighbouring steps).\n",
        curve_section(curve)
        if not curve.empty
        else "No dataset with paper (NELBO, F1) rows is enumerable.\n",
        "\n" + residual_sentence(rows) + "\n",
    ]
    return "\n".join(parts)
