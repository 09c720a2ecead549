"""Pattern recovery (ACP paper Fig. 4; supplement Figs. 1-2): per-run counts and per-cell success rates.

One row per run: the learned columns matched to the true patterns
(:func:`noisyor_bench.evaluation.recovery.match_patterns`) beside the paper's statement; per
(dataset, method, N_train, learned K) cell the share of seeds recovering every pattern with its
Wilson interval and the run the protocol selects on validation NELBO; per (N_train, learned K)
the paired same-initialisation comparison of AVI and ACP (exact McNemar on the seeds where one
recovers every pattern and the other does not, :func:`paired_recovery`).

Runs that learn more columns than there are true patterns (the K = 2 x K_true sensitivity,
config key ``latents_factor``) are matched on the best one-to-one subset: the Hungarian
assignment of a K_true x K similarity matrix picks K_true distinct learned columns.
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
from noisyor_bench.reporting.statistics import CI_LEVEL, mcnemar_exact, mean_ci, wilson_interval
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
    paper_dataset: str | None = None,
) -> pd.DataFrame:
    """One row per run: patterns recovered (Hungarian match, :mod:`.recovery`) beside the paper's statement,
    the run's ``val_nelbo`` and ``all_recovered``, and its cell's success rate over seeds (Wilson
    interval) and selected run (:func:`with_recovery_summary`). The runs share one dataset;
    ``paper_dataset``: the paper's dataset whose statements stand beside them (a generator
    variant's runs against the paper's SYN-PATTERN; default: the runs' own).

    With ``baselines``: the run's held-out ``nelbo``, the cell's ``baseline_nelbo`` and
    ``below_baseline`` (the cell's mean NELBO over seeds is worse than the baseline).
    """
    from noisyor_bench.evaluation.recovery import match_patterns

    dataset = single_value(runs, "dataset", "recovery")
    ref = paper_recovery_rows(paper_dataset or dataset, paper)
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
                "experiment": str(r.get("experiment", "")),
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
                "settings": str(r.get("settings") or ""),
                **convergence_counts(pd.DataFrame([r])),
                "val_nelbo": _finite_or_nan(r.get("val_nelbo")),
                "all_recovered": rec.n_recovered == rec.n_true,
            }
        )
    frame = pd.DataFrame(rows)
    if baselines:
        frame["nelbo"] = [float(r["nelbo"]) for r in runs.to_dict("records")]
        cell_mean = frame.groupby(["method", "n_train", "n_learned"])["nelbo"].transform("mean")
        frame["baseline_nelbo"] = [baseline_nelbo(baselines, dataset, int(n)) for n in frame["n_train"]]
        frame["below_baseline"] = (cell_mean > frame["baseline_nelbo"]).astype(bool)
    order = frame.assign(_r=frame["method"].map(method_rank)).sort_values(
        ["n_learned", "_r", "n_train", "seed"], ascending=[True, True, False, True]
    )
    return with_recovery_summary(order.drop(columns="_r").reset_index(drop=True))


def _finite_or_nan(value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return float("nan")
    return v if math.isfinite(v) else float("nan")


RECOVERY_GROUP = ("dataset", "method", "n_train", "n_learned")
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


def _with_learned(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with ``n_learned`` (tables written before the K = 2 x K_true rows: K = K_true)."""
    if "n_learned" in table.columns:
        return table
    if table.empty:
        return table.assign(n_learned=pd.Series(dtype=int))
    return table.assign(n_learned=table["n_true"].astype(int))


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
    table = _with_learned(table)
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
    table = _with_learned(table)
    summary = recovery_summary(table)
    out = table.drop(columns=[c for c in (*RECOVERY_SUMMARY_COLUMNS, "selected") if c in table.columns])
    out = out.merge(summary.drop(columns="n_true"), on=list(RECOVERY_GROUP), how="left", sort=False)
    out["selected"] = out["seed"].astype(float) == pd.to_numeric(out["selected_seed"], errors="coerce")
    return out


PAIRED = ("avi", "acp")
"""The paired comparison of the recovery table: AVI against ACP (paper Fig. 4)."""


def paired_recovery(table: pd.DataFrame, first: str = PAIRED[0], second: str = PAIRED[1]) -> pd.DataFrame:
    """Per (dataset, N_train, learned K): the seeds both ``first`` and ``second`` ran, paired
    (same seed = same initialisation of theta: the init key has no method), as a 2x2 table of
    "recovers every pattern" -- ``both``, ``first_only``, ``second_only``, ``neither`` -- and the
    exact McNemar p-value of the discordant pairs (:func:`~noisyor_bench.reporting.statistics.mcnemar_exact`).

    Why paired: AVI, ACP and ACP-SG of one seed start from one theta and often land in the same
    optimum, so their successes are not independent samples (a Fisher test would overstate n)."""
    table = _with_learned(table)
    rows = []
    keys = ["dataset", "n_train", "n_learned"]
    for key, g in table.groupby(keys, sort=True):
        a = g[g["method"] == first].set_index("seed")
        b = g[g["method"] == second].set_index("seed")
        seeds = sorted(set(a.index) & set(b.index))
        if not seeds:
            continue
        ok_a = [int(a.loc[s, "recovered"]) == int(a.loc[s, "n_true"]) for s in seeds]
        ok_b = [int(b.loc[s, "recovered"]) == int(b.loc[s, "n_true"]) for s in seeds]
        counts = {
            "both": sum(x and y for x, y in zip(ok_a, ok_b, strict=True)),
            "first_only": sum(x and not y for x, y in zip(ok_a, ok_b, strict=True)),
            "second_only": sum(y and not x for x, y in zip(ok_a, ok_b, strict=True)),
            "neither": sum(not x and not y for x, y in zip(ok_a, ok_b, strict=True)),
        }
        rows.append(
            {
                **dict(zip(keys, key)),
                "n_true": int(g["n_true"].iloc[0]),
                "first": first,
                "second": second,
                "n_pairs": len(seeds),
                **counts,
                "mcnemar_p": mcnemar_exact(counts["first_only"], counts["second_only"]),
            }
        )
    columns = [*keys, "n_true", "first", "second", "n_pairs", "both", "first_only", "second_only", "neither"]
    return pd.DataFrame(rows, columns=[*columns, "mcnemar_p"])


def format_paired(row: Mapping[str, Any]) -> str:
    """``"AVI vs ACP, 10 paired seeds: both 1, AVI only 2, ACP only 0, neither 7; McNemar exact p = 0.50"``."""
    a, b = method_label(str(row["first"])), method_label(str(row["second"]))
    return (
        f"{a} vs {b}, {int(row['n_pairs'])} paired seeds: both {int(row['both'])}, {a} only "
        f"{int(row['first_only'])}, {b} only {int(row['second_only'])}, neither {int(row['neither'])}; "
        f"McNemar exact p = {float(row['mcnemar_p']):.2f}"
    )


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
    table = _with_learned(table)
    has_base = "baseline_nelbo" in table.columns
    keyed = []
    datasets = list(dict.fromkeys(table["dataset"]))  # the figure's dataset first, then its variants
    several = len(datasets) > 1
    summary = recovery_summary(table).set_index(["dataset", "method", "n_train", "n_learned"])
    for (dataset, method, n_train, n_learned), g in table.groupby(
        ["dataset", "method", "n_train", "n_learned"], sort=False
    ):
        g = g.sort_values("seed")
        mean, _, n, ci = mean_ci(g["recovered"].to_numpy(float))
        sim_mean, _, sn, sim_ci = mean_ci(g["mean_similarity"].to_numpy(float))
        p = g.iloc[0]
        s = summary.loc[(dataset, method, n_train, n_learned)]
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
        over = int(n_learned) != int(p["n_true"])
        keyed.append(
            (
                (datasets.index(dataset), int(over), method_rank(method), -int(n_train)),
                [
                    *([dataset] if several else []),
                    method_label(method) + (f" (K = {int(n_learned)})" if over else ""),
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
        *(["Dataset"] if several else []),
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
    title = datasets[0] if datasets else ""
    if several:
        title += (
            f" and its generator variants {', '.join(datasets[1:])} (beside the paper's {datasets[0]} counts)"
        )
    return (
        f"# Pattern recovery on {title} (paper Fig. 4; supplement Figs. 1-2)\n\n"
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
        + _paired_markdown(table)
    )


def _paired_markdown(table: pd.DataFrame) -> str:
    """The paired AVI-vs-ACP section of the recovery Markdown (empty without pairs)."""
    pairs = paired_recovery(table)
    if pairs.empty:
        return ""
    rows = [
        [
            int(r["n_train"]),
            int(r["n_learned"]),
            int(r["n_pairs"]),
            int(r["both"]),
            int(r["first_only"]),
            int(r["second_only"]),
            int(r["neither"]),
            f"{float(r['mcnemar_p']):.2f}",
        ]
        for r in pairs.to_dict("records")
    ]
    a, b = (method_label(m) for m in PAIRED)
    header = [
        "N_train",
        "learned K",
        "paired seeds",
        "both all",
        f"{a} only",
        f"{b} only",
        "neither",
        "McNemar p",
    ]
    return (
        f"\n\n## {a} vs {b}, paired by seed\n\n"
        f"Same seed = same initialisation of theta ({a} and {b} of one seed start alike). 'all': the run "
        "recovers every true pattern. McNemar exact p: two-sided binomial test of the discordant seeds "
        "against 1/2 (descriptive; the claim's verdict rests on the run selected on validation NELBO).\n\n"
        + markdown_table(header, rows)
    )
