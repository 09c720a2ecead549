"""Pattern recovery (ACP paper Fig. 4; supplement Figs. 1-2): per-run counts and per-cell success rates.

One row per run: the learned columns matched to the true patterns
(:func:`noisyor_bench.evaluation.recovery.match_patterns`) beside the paper's statement; per
(dataset, method, N_train) cell the share of seeds recovering every pattern with its Wilson
interval and the run the protocol selects on validation NELBO.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.experiments.rundir import load_posterior
from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.acp.baselines import BELOW_NOTE, baseline_nelbo, mark_below
from noisyor_bench.reporting.acp.paper import paper_numbers
from noisyor_bench.reporting.collect import convergence_counts, single_value
from noisyor_bench.reporting.methods import method_label, method_rank
from noisyor_bench.reporting.statistics import CI_LEVEL, mean_ci, wilson_interval
from noisyor_bench.reporting.tables import CI_NOTE, format_ci, format_number, markdown_table


def paper_recovery_rows(
    dataset: str, paper: Mapping[str, Any] | None = None
) -> dict[tuple[str, int], dict[str, Any]]:
    """Paper pattern-recovery statements for ``dataset``: (method, N_train) -> row (with ``source``)."""
    paper = paper_numbers() if paper is None else paper
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for block in ("fig4", "supp_fig1", "supp_fig2"):
        if paper[block]["dataset"] != dataset:
            continue
        for r in paper[block]["rows"]:
            out[(r["method"], int(r["n_train"]))] = {**r, "source": paper[block]["source"]["item"]}
    return out


def recovery_table(
    runs: pd.DataFrame,
    theta_true: np.ndarray,
    threshold: float,
    paper: Mapping[str, Any] | None = None,
    baselines: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """One row per run: patterns recovered (Hungarian match, :mod:`.recovery`) beside the paper's statement,
    the run's ``val_nelbo`` and ``all_recovered``, and its cell's success rate over seeds (Wilson
    interval) and selected run (:func:`with_recovery_summary`).

    With ``baselines``: the run's held-out ``nelbo``, the cell's ``baseline_nelbo`` and
    ``below_baseline`` (the cell's mean NELBO over seeds is worse than the baseline).
    """
    from noisyor_bench.evaluation.recovery import match_patterns

    dataset = single_value(runs, "dataset", "recovery")
    ref = paper_recovery_rows(dataset, paper)
    rows = []
    for r in runs.to_dict("records"):
        post = load_posterior(r["run_dir"])
        if post["theta"].ndim != 2 or post["theta"].shape[0] != theta_true.shape[0]:
            raise DataError(
                f"{r['run_dir']}/posterior_test.npz: theta has shape {post['theta'].shape}, "
                f"expected (D={theta_true.shape[0]}, K)"
            )
        rec = match_patterns(theta_true, post["theta"], threshold)
        p = ref.get((r["method"], int(r["n_train"])), {})
        rows.append(
            {
                "artifact": "recovery",
                "dataset": dataset,
                "method": r["method"],
                "method_label": method_label(r["method"]),
                "n_train": int(r["n_train"]),
                "seed": int(r["seed"]),
                "n_true": rec.n_true,
                "n_learned": int(post["theta"].shape[1]),
                "recovered": rec.n_recovered,
                "mean_similarity": rec.mean_similarity,
                "min_similarity": float(rec.matched.min()),
                "threshold": threshold,
                "matched_similarities": ";".join(f"{v:.4f}" for v in rec.matched),
                "assignment": ";".join(str(int(v)) for v in rec.assignment),
                "paper_recovered": p.get("recovered"),
                "paper_statement": p.get("statement", ""),
                "paper_source": p.get("source", ""),
                "run_dir": r["run_dir"],
                **convergence_counts(pd.DataFrame([r])),
                "val_nelbo": _finite_or_nan(r.get("val_nelbo")),
                "all_recovered": rec.n_recovered == rec.n_true,
            }
        )
    frame = pd.DataFrame(rows)
    if baselines:
        frame["nelbo"] = [float(r["nelbo"]) for r in runs.to_dict("records")]
        cell_mean = frame.groupby(["method", "n_train"])["nelbo"].transform("mean")
        frame["baseline_nelbo"] = [baseline_nelbo(baselines, dataset, int(n)) for n in frame["n_train"]]
        frame["below_baseline"] = (cell_mean > frame["baseline_nelbo"]).astype(bool)
    order = frame.assign(_r=frame["method"].map(method_rank)).sort_values(
        ["_r", "n_train", "seed"], ascending=[True, False, True]
    )
    return with_recovery_summary(order.drop(columns="_r").reset_index(drop=True))


def _finite_or_nan(value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return float("nan")
    return v if math.isfinite(v) else float("nan")


RECOVERY_GROUP = ("dataset", "method", "n_train")
RECOVERY_SUMMARY_COLUMNS = (
    "n_seeds",
    "n_all_recovered",
    "success_rate",
    "success_ci_low",
    "success_ci_high",
    "mean_recovered",
    "selected_seed",
    "selected_val_nelbo",
    "selected_recovered",
    "selected_all_recovered",
)


def selected_run(group: pd.DataFrame) -> pd.Series | None:
    """The run the protocol picks among a cell's seeds: lowest finite validation NELBO
    (ties: lowest seed); ``None`` when no run has one (e.g. tables written before ``val_nelbo``)."""
    if "val_nelbo" not in group.columns:
        return None
    val = pd.to_numeric(group["val_nelbo"], errors="coerce")
    ok = group[np.isfinite(val.to_numpy(dtype=float))]
    if ok.empty:
        return None
    return ok.assign(_v=pd.to_numeric(ok["val_nelbo"])).sort_values(["_v", "seed"]).iloc[0].drop("_v")


def recovery_summary(table: pd.DataFrame, level: float = CI_LEVEL) -> pd.DataFrame:
    """One row per (dataset, method, N_train) of a recovery table: the success rate over seeds
    (share of seeds recovering every true pattern) with its Wilson interval, the mean recovered
    count, and the run selected on validation NELBO (:func:`selected_run`) with its outcome."""
    rows = []
    for key, g in table.groupby(list(RECOVERY_GROUP), sort=False):
        recovered = g["recovered"].astype(int).to_numpy()
        full = recovered == g["n_true"].astype(int).to_numpy()
        low, high = wilson_interval(int(full.sum()), len(g), level)
        pick = selected_run(g)
        rows.append(
            {
                **dict(zip(RECOVERY_GROUP, key)),
                "n_true": int(g["n_true"].iloc[0]),
                "n_seeds": int(len(g)),
                "n_all_recovered": int(full.sum()),
                "success_rate": float(full.mean()),
                "success_ci_low": low,
                "success_ci_high": high,
                "mean_recovered": float(recovered.mean()),
                "selected_seed": None if pick is None else int(pick["seed"]),
                "selected_val_nelbo": None if pick is None else float(pick["val_nelbo"]),
                "selected_recovered": None if pick is None else int(pick["recovered"]),
                "selected_all_recovered": None
                if pick is None
                else bool(int(pick["recovered"]) == int(pick["n_true"])),
            }
        )
    return pd.DataFrame(rows, columns=[*RECOVERY_GROUP, "n_true", *RECOVERY_SUMMARY_COLUMNS])


def with_recovery_summary(table: pd.DataFrame) -> pd.DataFrame:
    """The per-run recovery table with each cell's summary (:func:`recovery_summary`) on its
    rows, and ``selected`` marking the run chosen on validation NELBO."""
    summary = recovery_summary(table)
    out = table.drop(columns=[c for c in (*RECOVERY_SUMMARY_COLUMNS, "selected") if c in table.columns])
    out = out.merge(summary.drop(columns="n_true"), on=list(RECOVERY_GROUP), how="left", sort=False)
    out["selected"] = out["seed"].astype(float) == pd.to_numeric(out["selected_seed"], errors="coerce")
    return out


def format_success(n_all: int, n: int, low: float, high: float) -> str:
    """``"7/10 (70%; Wilson 95% CI 40–89%)"``."""
    if n == 0:
        return ""
    return f"{n_all}/{n} ({100 * n_all / n:.0f}%; Wilson 95% CI {100 * low:.0f}–{100 * high:.0f}%)"


def format_selected(row: Mapping[str, Any]) -> str:
    """``"seed 4: 8/8 (all)"`` for the run chosen on validation NELBO; ``"n/a"`` without one."""
    seed = row.get("selected_seed")
    if seed is None or (isinstance(seed, float) and math.isnan(seed)):
        return "n/a (no validation NELBO)"
    rec, n_true = int(row["selected_recovered"]), int(row["n_true"])
    return f"seed {int(seed)}: {rec}/{n_true}" + (" (all)" if rec == n_true else "")


def recovery_markdown(table: pd.DataFrame, digits: int = 3) -> str:
    has_base = "baseline_nelbo" in table.columns
    keyed = []
    summary = recovery_summary(table).set_index(["method", "n_train"])
    for (method, n_train), g in table.groupby(["method", "n_train"], sort=False):
        g = g.sort_values("seed")
        mean, _, n, ci = mean_ci(g["recovered"].to_numpy(float))
        sim_mean, _, sn, sim_ci = mean_ci(g["mean_similarity"].to_numpy(float))
        p = g.iloc[0]
        s = summary.loc[(method, n_train)]
        s = s.iloc[0] if isinstance(s, pd.DataFrame) else s
        paper_count = (
            "" if pd.isna(p["paper_recovered"]) else f"{int(p['paper_recovered'])}/{int(p['n_true'])}"
        )
        statement = p["paper_statement"] if isinstance(p["paper_statement"], str) else ""
        conv = f"{int(g['n_converged'].sum())}/{int(g['n_runs'].sum())}" if "n_converged" in g.columns else ""
        extra = []
        if has_base:
            nel_mean, _, nn, nel_ci = mean_ci(g["nelbo"].to_numpy(float))
            extra = [mark_below(p, format_ci(nel_mean, nel_ci, nn, 2)), format_number(p["baseline_nelbo"], 2)]
        keyed.append(
            (
                (method_rank(method), -int(n_train)),
                [
                    method_label(method),
                    int(n_train),
                    ", ".join(str(int(v)) for v in g["recovered"]) + f" (of {int(p['n_true'])})",
                    format_success(
                        int(s["n_all_recovered"]),
                        int(s["n_seeds"]),
                        float(s["success_ci_low"]),
                        float(s["success_ci_high"]),
                    ),
                    format_ci(mean, ci, n, 2),
                    format_selected({**s.to_dict(), "n_true": int(p["n_true"])}),
                    format_ci(sim_mean, sim_ci, sn, digits),
                    *extra,
                    conv,
                    paper_count,
                    statement,
                ],
            )
        )
    rows = [row for _, row in sorted(keyed, key=lambda kr: kr[0])]
    header = [
        "Method",
        "N_train",
        "recovered per seed",
        "seeds recovering all",
        "recovered (mean ± CI)",
        "selected on val. NELBO",
        "mean matched similarity",
        *(["NELBO", "indep. Bernoulli"] if has_base else []),
        "runs converged",
        "paper recovered",
        "paper statement",
    ]
    threshold = float(table["threshold"].iloc[0]) if len(table) else float("nan")
    dataset = table["dataset"].iloc[0] if len(table) else ""
    return (
        f"# Pattern recovery on {dataset} (paper Fig. 4; supplement Figs. 1-2)\n\n"
        "Learned columns are matched one-to-one to the true patterns (Hungarian algorithm) on the cosine "
        "similarity of p_ik = 1 − exp(−θ_ik); a true pattern counts as recovered when its matched similarity "
        f"is ≥ {threshold:g}. Paper counts are read from the text. *Seeds recovering all*: the share of "
        "seeds whose run recovers every true pattern, with its Wilson 95% interval. *Selected on val. NELBO*: "
        "the run the protocol would report, the seed with the lowest validation NELBO (test set untouched), "
        "and its count.\n"
        + CI_NOTE
        + (
            "NELBO: held-out NELBO of the learned model (nats per data point). " + BELOW_NOTE
            if has_base
            else ""
        )
        + "\n"
        + markdown_table(header, rows)
    )
