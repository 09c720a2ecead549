"""The mechanism, measured: ACP against ACP-SG (ACP with ``theta`` stopped in eq. 11), paired by seed.

The paper credits ACP's advantage over AVI to the posterior's share in the generative model's
gradient: "the posterior contributes explicitly to the gradient of the ELBO with respect to the
generative model parameters" (Section 1, paper line 21; Section 3, line 188).  ACP-SG
(:class:`~noisyor_bench.inference.noisyor.acp.ACPStopGrad`) keeps ACP's model-dependent ``q`` and cuts
exactly that path for ``theta``.  Per learning-mode cell (experiment, dataset, N_train) run with
ACP, ACP-SG (and AVI), this module pairs the runs by seed and reports

* held-out NELBO differences ``ACP − ACP-SG`` and ``AVI − ACP-SG`` with paired 95% CIs
  (:func:`noisyor_bench.reporting.claims.difference_ci`; lower NELBO is better, so a negative
  ``ACP − ACP-SG`` means the path helps);
* how far apart the learned models are: after matching ACP-SG's latents to ACP's
  (:func:`noisyor_bench.evaluation.latent_matching.match_latents`, Hungarian on the cosine of ``1 − exp(−theta)``),
  the mean absolute difference of ``theta`` (also relative to ACP's mean ``theta``) and the mean
  matched cosine; the same numbers for ACP against AVI as a yardstick (two methods whose
  encoders differ entirely);
* recovered true patterns per method (:func:`noisyor_bench.evaluation.recovery.match_patterns`) where the
  dataset has a ground truth, and the paired CI of ``ACP − ACP-SG`` recovered.

The claim (:func:`mechanism_claims`) reads "comes from" as "most of": cutting the path must
both hurt (``ACP − ACP-SG < 0``) and take away more than half of ACP's advantage over AVI
(:data:`SHARE_MARGIN`); an ACP-SG that keeps the advantage means the model-dependent *form* of
``q``, not the gradient through it, carries it.

Both methods search the same space with the same draws (the search seed and draw index fix a
draw), each keeping its own best draw; ``same_hparams`` says whether they ran with the same
hyperparameters (then, with a shared seed, they start from the same encoder and ``theta`` and
differ only in the gradient path).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.evaluation.latent_matching import match_latents, weight_similarity
from noisyor_bench.evaluation.recovery import DEFAULT_THRESHOLD, match_patterns
from noisyor_bench.experiments.rundir import load_posterior
from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.claims import (
    DF_RULE,
    INCONCLUSIVE,
    NOT_TESTED,
    QUALIFIER_RULE,
    REPRODUCED,
    Claim,
    Evidence,
    Interval,
    combine,
    difference_ci,
    verdict_above,
    verdict_below,
    with_evidence,
)
from noisyor_bench.reporting.collect import run_converged
from noisyor_bench.reporting.statistics import CI_LEVEL
from noisyor_bench.reporting.tables import format_values, markdown_table, parse_values

ARTIFACT = "ablation"
ABLATION, REFERENCE, BASELINE = "acp-sg", "acp", "avi"
PAPER_LOCATION = (
    "Section 3 (Amortized Conjugate Posterior), paper line 188; also Section 1, line 21; "
    "Fig. 4 reading, Section 4.3, line 284"
)
PAPER_STATEMENT = (
    "ACP's advantage comes from the gradient through q reaching theta: \"the posterior contributes "
    'explicitly to the gradient of the ELBO with respect to the generative model parameters" (line 21); '
    '"the (variational) posterior has also dependency on the generative model parameters theta ... '
    "In AVI, the expected conditional likelihood is a constant with respect to the generative model "
    'parameters and it does not contribute to the update" (line 188)'
)


# ------------------------------------------------------------------------------ theta distances
@dataclass(frozen=True)
class ThetaDistance:
    """How far apart two learned ``theta`` (D, K) are once their latents are matched."""

    mad: float  # mean |theta_a - theta_b[:, perm]| over all D x K entries
    rel_mad: float  # mad / mean(theta_a): scale-free
    mean_cosine: float  # mean over a's columns of the cosine with their matched column of b

    @staticmethod
    def between(theta_a: np.ndarray, theta_b: np.ndarray) -> ThetaDistance:
        """Distance after matching ``theta_b``'s columns to ``theta_a``'s (Hungarian, cosine of ``1 - exp(-theta)``)."""
        a, b = np.asarray(theta_a, dtype=np.float64), np.asarray(theta_b, dtype=np.float64)
        if a.shape != b.shape or a.ndim != 2:
            raise DataError(f"cannot compare learned theta of shapes {a.shape} and {b.shape}")
        perm = match_latents(b, a)  # column perm[j] of b matched to column j of a
        b = b[:, perm]
        mad = float(np.abs(a - b).mean())
        scale = float(a.mean())
        cos = float(np.diag(weight_similarity(a, b)).mean())
        return ThetaDistance(mad, mad / scale if scale > 0 else float("nan"), cos)


# ------------------------------------------------------------------------------ the table
def _by_seed(cell: pd.DataFrame, method: str) -> dict[int, Mapping[str, Any]]:
    return {int(r["seed"]): r for r in cell[cell["method"] == method].to_dict("records")}


def _iv_columns(prefix: str, iv: Interval) -> dict[str, Any]:
    return {
        prefix: iv.estimate,
        f"{prefix}_ci_low": iv.low,
        f"{prefix}_ci_high": iv.high,
        f"{prefix}_ci_kind": iv.kind,
        f"{prefix}_n": iv.n,
    }


def _nelbo(rows: Mapping[int, Mapping[str, Any]]) -> dict[int, float]:
    return {
        s: float(r["nelbo"])
        for s, r in rows.items()
        if r.get("nelbo") is not None and not math.isnan(r["nelbo"])
    }


def _converged(row: Mapping[str, Any]) -> bool:
    """A run counts as converged unless its metrics say ``converged: false`` (key absent or null =
    converged), judged in nats (:func:`~noisyor_bench.reporting.collect.run_converged`)."""
    value = row.get("converged")
    if value is None or bool(pd.isna(value)):
        return True
    return run_converged(row) is not False


def hparams_equal(a: Any, b: Any) -> bool:
    """Hyperparameters of two runs (JSON strings or dicts) are the same."""

    def norm(v: Any) -> Any:
        return json.loads(v) if isinstance(v, str) else v

    return norm(a) == norm(b)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def ablation_table(
    runs: pd.DataFrame,
    truths: Mapping[str, np.ndarray] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    level: float = CI_LEVEL,
) -> pd.DataFrame:
    """One row per (experiment, dataset, N_train) with ACP-SG runs: the paired comparisons of the module doc.

    ``runs``: :func:`noisyor_bench.reporting.collect.collect_runs` of the ACP, ACP-SG and AVI runs (with
    ``posterior_test.npz`` beside each ``metrics.json``).  ``truths``: dataset name -> true ``theta``,
    for the recovery columns (left empty for a dataset without one).
    """
    truths = dict(truths or {})
    if ABLATION not in set(runs["method"]):
        raise DataError(f"ablation table: no {ABLATION} runs among the given runs")
    if "mode" in runs.columns and set(runs.loc[runs["method"] == ABLATION, "mode"].dropna()) - {"learning"}:
        raise DataError(f"ablation table: {ABLATION} runs must be learning-mode runs")
    rows = []
    keys = runs.loc[runs["method"] == ABLATION, ["experiment", "dataset", "n_train"]].drop_duplicates()
    for experiment, dataset, n_train in keys.itertuples(index=False):
        cell = runs[
            (runs["experiment"] == experiment) & (runs["dataset"] == dataset) & (runs["n_train"] == n_train)
        ]
        sg, acp, avi = (_by_seed(cell, m) for m in (ABLATION, REFERENCE, BASELINE))
        if not acp:
            raise DataError(
                f"ablation table: {experiment}/{dataset}/n{n_train} has {ABLATION} runs but no {REFERENCE} runs"
            )
        rows.append(
            _cell_row(experiment, dataset, int(n_train), sg, acp, avi, truths.get(dataset), threshold, level)
        )
    table = pd.DataFrame(rows)
    return table.sort_values(["experiment", "dataset", "n_train"]).reset_index(drop=True)


def _cell_row(
    experiment: str,
    dataset: str,
    n_train: int,
    sg: Mapping[int, Mapping[str, Any]],
    acp: Mapping[int, Mapping[str, Any]],
    avi: Mapping[int, Mapping[str, Any]],
    truth: np.ndarray | None,
    threshold: float,
    level: float,
) -> dict[str, Any]:
    nel = {m: _nelbo(rows) for m, rows in (("acp", acp), ("sg", sg), ("avi", avi))}
    paired = sorted(set(acp) & set(sg))
    row: dict[str, Any] = {
        "artifact": ARTIFACT,
        "experiment": experiment,
        "dataset": dataset,
        "n_train": n_train,
        "seeds": ";".join(str(s) for s in paired),
        "n_paired": len(paired),
        "same_hparams": bool(paired)
        and all(hparams_equal(acp[s].get("hparams"), sg[s].get("hparams")) for s in paired),
    }
    all_runs = [*acp.values(), *sg.values(), *avi.values()]
    row["n_runs"], row["n_converged"] = len(all_runs), sum(_converged(r) for r in all_runs)
    for m in ("acp", "sg", "avi"):
        row[f"{m}_nelbo_mean"] = _mean(list(nel[m].values()))
        row[f"{m}_nelbo_values"] = format_values(nel[m], nel[m].values())
    row.update(
        _iv_columns("acp_minus_sg_nelbo", difference_ci(nel["acp"], nel["sg"], paired=True, level=level))
    )
    row.update(
        _iv_columns("avi_minus_sg_nelbo", difference_ci(nel["avi"], nel["sg"], paired=True, level=level))
    )
    row.update(
        _iv_columns("avi_minus_acp_nelbo", difference_ci(nel["avi"], nel["acp"], paired=True, level=level))
    )
    advantage = row["avi_minus_acp_nelbo"]
    row["advantage_share_lost"] = (
        -row["acp_minus_sg_nelbo"] / advantage if advantage is not None and advantage > 0 else float("nan")
    )
    thetas = {
        m: {s: load_posterior(r["run_dir"])["theta"] for s, r in rows.items()}
        for m, rows in (("acp", acp), ("sg", sg), ("avi", avi))
    }
    for other in ("sg", "avi"):
        common = sorted(set(thetas["acp"]) & set(thetas[other]))
        dist = {s: ThetaDistance.between(thetas["acp"][s], thetas[other][s]) for s in common}
        for field in ("mad", "rel_mad", "mean_cosine"):
            vals = [getattr(dist[s], field) for s in common]
            row[f"theta_{field}_acp_{other}"] = _mean(vals)
            row[f"theta_{field}_acp_{other}_values"] = format_values(common, vals)
    row.update(_recovery_columns(thetas, truth, threshold, level))
    return row


def _recovery_columns(
    thetas: Mapping[str, Mapping[int, np.ndarray]], truth: np.ndarray | None, threshold: float, level: float
) -> dict[str, Any]:
    out: dict[str, Any] = {"threshold": threshold if truth is not None else float("nan")}
    counts: dict[str, dict[int, float]] = {}
    for m in ("acp", "sg", "avi"):
        counts[m] = (
            {s: float(match_patterns(truth, th, threshold).n_recovered) for s, th in thetas[m].items()}
            if truth is not None
            else {}
        )
        out[f"{m}_recovered_mean"] = _mean(list(counts[m].values()))
        out[f"{m}_recovered_values"] = format_values(counts[m], counts[m].values())
    out["n_true"] = int(truth.shape[1]) if truth is not None else None
    iv = difference_ci(counts["acp"], counts["sg"], paired=True, level=level)
    out.update(_iv_columns("acp_minus_sg_recovered", iv))
    return out


# ------------------------------------------------------------------------------ Markdown
def _ci(row: Mapping[str, Any], prefix: str, digits: int = 2) -> str:
    est = row.get(prefix)
    if est is None or (isinstance(est, float) and math.isnan(est)):
        return ""
    return Interval(
        float(est),
        float(row[f"{prefix}_ci_low"]),
        float(row[f"{prefix}_ci_high"]),
        str(row[f"{prefix}_ci_kind"]),
        str(row[f"{prefix}_n"]),
    ).text(digits)


def _per_seed(text: Any, digits: int = 0) -> str:
    return ", ".join(f"{v:.{digits}f}" for _, v in sorted(parse_values(text).items()))


def ablation_markdown(table: pd.DataFrame) -> str:
    """The table for people: NELBO differences with CIs, theta distances, recovery per seed."""
    header = [
        "experiment",
        "dataset",
        "N_train",
        "seeds",
        "ACP − ACP-SG NELBO",
        "AVI − ACP-SG NELBO",
        "AVI − ACP NELBO",
        "advantage lost w/o path",
        "θ MAD ACP↔ACP-SG (rel.)",
        "θ cos ACP↔ACP-SG",
        "θ MAD ACP↔AVI (rel.)",
        "θ cos ACP↔AVI",
        "recovered ACP / ACP-SG / AVI (per seed)",
        "same hparams",
        "converged",
    ]
    rows = []
    for r in table.to_dict("records"):
        rec = ""
        if r.get("n_true") is not None and not (isinstance(r["n_true"], float) and math.isnan(r["n_true"])):
            rec = (
                f"{_per_seed(r['acp_recovered_values'])} / {_per_seed(r['sg_recovered_values'])} / "
                f"{_per_seed(r['avi_recovered_values'])} (of {int(r['n_true'])})"
            )
        rows.append(
            [
                r["experiment"],
                r["dataset"],
                int(r["n_train"]),
                r["seeds"],
                _ci(r, "acp_minus_sg_nelbo"),
                _ci(r, "avi_minus_sg_nelbo"),
                _ci(r, "avi_minus_acp_nelbo"),
                "" if math.isnan(r["advantage_share_lost"]) else f"{r['advantage_share_lost']:.0%}",
                f"{r['theta_mad_acp_sg']:.4f} ({r['theta_rel_mad_acp_sg']:.2f})",
                f"{r['theta_mean_cosine_acp_sg']:.3f}",
                f"{r['theta_mad_acp_avi']:.4f} ({r['theta_rel_mad_acp_avi']:.2f})"
                if not math.isnan(r["theta_mad_acp_avi"])
                else "",
                f"{r['theta_mean_cosine_acp_avi']:.3f}"
                if not math.isnan(r["theta_mean_cosine_acp_avi"])
                else "",
                rec,
                "yes" if r["same_hparams"] else "no",
                f"{int(r['n_converged'])}/{int(r['n_runs'])}",
            ]
        )
    return (
        "# Ablation: ACP with theta stopped in eq. 11 (ACP-SG), paired by seed\n\n"
        "ACP-SG computes ACP's posterior (eq. 11) from a detached copy of theta, so the ELBO's gradient reaches "
        "theta only through the likelihood terms (as in AVI); logit(mu) keeps its path. Held-out NELBO in nats per "
        "data point (lower is better): a negative ACP − ACP-SG means the gradient through q helps. Differences: "
        "mean [95% CI] of the per-seed paired differences (one-sample t). θ MAD: mean |θ_ACP − θ_other| after "
        "matching the other model's latents to ACP's (Hungarian, cosine of 1 − exp(−θ)); rel. = MAD / mean θ_ACP; "
        "cos: mean matched cosine. Advantage lost w/o path: (ACP-SG − ACP) / (AVI − ACP), the share of ACP's "
        "advantage over AVI that disappears when the path is cut (only where ACP beats AVI). ACP↔AVI is the yardstick of two models learned with different encoders. "
        "Recovered: true patterns with matched cosine ≥ the threshold (recovery table rule). same hparams: ACP and "
        "ACP-SG ran with the same search draw (then they start from the same state). converged: runs of the cell "
        "(ACP, ACP-SG, AVI) that converged (key absent = counted as converged).\n\n"
        + markdown_table(header, rows)
    )


# ------------------------------------------------------------------------------ the claim
SHARE_MARGIN = 0.5
""""Comes from" read as "most of": the path must carry more than this share of ACP's advantage over AVI."""

MECHANISM_RULE = (
    "at each (experiment, dataset), the cell with the smallest N_train where ACP and ACP-SG both ran (where the "
    "paper places ACP's advantage), paired by seed; two parts, both by paired 95% CIs (one-sample t on per-seed "
    "differences): (a) cutting the path hurts: ACP NELBO − ACP-SG NELBO < 0; (b) the path carries most of ACP's "
    f"advantage: where ACP's advantage over AVI is established (CI of AVI − ACP entirely above 0), per seed "
    f"(ACP-SG − ACP) − {SHARE_MARGIN:g}·(AVI − ACP) > 0, i.e. more than {SHARE_MARGIN:.0%} of the advantage is lost "
    "without the path (without an established advantage (b) is inconclusive); each part is reproduced if its CI "
    "lies entirely on the claimed side of 0, not reproduced if entirely on the other, else inconclusive (also with "
    "one seed); the claim is reproduced only if both parts are, not reproduced if either is not; larger N_train "
    "rows, theta distances and recovery are listed as evidence; " + DF_RULE
)


def _share_contrast(
    acp: Mapping[int, float], sg: Mapping[int, float], avi: Mapping[int, float]
) -> dict[int, float]:
    """Per seed ``(ACP-SG − ACP) − SHARE_MARGIN · (AVI − ACP)``: > 0 when the path carries most of the advantage."""
    return {
        s: (sg[s] - acp[s]) - SHARE_MARGIN * (avi[s] - acp[s]) for s in sorted(set(acp) & set(sg) & set(avi))
    }


def _mechanism_parts(row: Mapping[str, Any]) -> tuple[list[str], str]:
    """Verdicts of parts (a) and (b) at one cell, and the numbers behind them."""
    acp, sg, avi = (parse_values(row[f"{m}_nelbo_values"]) for m in ("acp", "sg", "avi"))
    hurt = difference_ci(acp, sg, paired=True)
    verdicts = [verdict_below(hurt)]
    text = f"(a) ACP−ACP-SG {hurt.text()}"
    if not avi:
        return verdicts + [INCONCLUSIVE], text + "; (b) no AVI runs in this cell"
    advantage = difference_ci(avi, acp, paired=True)
    text += f"; AVI−ACP (ACP's advantage) {advantage.text()}"
    if verdict_above(advantage) != REPRODUCED:
        return verdicts + [
            INCONCLUSIVE
        ], text + "; (b) not tested: ACP's advantage over AVI is not established here"
    contrast = _share_contrast(acp, sg, avi)
    iv = difference_ci(contrast, {s: 0.0 for s in contrast}, paired=True)
    share = row.get("advantage_share_lost")
    return verdicts + [verdict_above(iv)], (
        text + f"; (b) share of the advantage lost without the path {share:.0%}, contrast {iv.text()}"
    )


def _model_distance(row: Mapping[str, Any]) -> str:
    """θ cosine / relative MAD between ACP and ACP-SG, and the recovered-count difference where truth exists."""
    text = (
        f"θ cos ACP↔ACP-SG {row['theta_mean_cosine_acp_sg']:.3f} (rel. MAD {row['theta_rel_mad_acp_sg']:.2f})"
    )
    if isinstance(row.get("acp_recovered_values"), str) and row["acp_recovered_values"]:
        text += f", recovered ACP−ACP-SG {_ci(row, 'acp_minus_sg_recovered')}"
    return text


MECHANISM_CLAIM = "mechanism-gradient-through-q"
"""The mechanism claim's id without an ablation table; with one, one id per cell (:func:`mechanism_claim_id`)."""


def mechanism_claim_id(experiment: str, dataset: str) -> str:
    """The mechanism claim's id of one (experiment, dataset) of the ablation table."""
    return f"{MECHANISM_CLAIM}-{experiment}-{dataset}"


def mechanism_claims(tables: Mapping[str, pd.DataFrame]) -> list[Claim]:
    """One claim per (experiment, dataset) of the ablation table: does ACP's advantage need theta's path through q?"""
    t = tables.get(ARTIFACT)
    if t is None or t.empty:
        return [
            Claim(
                MECHANISM_CLAIM,
                PAPER_STATEMENT,
                PAPER_LOCATION,
                NOT_TESTED,
                "not tested: ablation table (ACP vs ACP-SG)",
                MECHANISM_RULE,
            )
        ]
    claims = []
    for (experiment, dataset), g in t.groupby(["experiment", "dataset"], sort=True):
        g = g.sort_values("n_train")
        small = g.iloc[0]
        verdicts, decisive = _mechanism_parts(small)
        rest = [
            f"N={int(r['n_train'])}: ACP−ACP-SG {_ci(r, 'acp_minus_sg_nelbo')}, AVI−ACP-SG "
            f"{_ci(r, 'avi_minus_sg_nelbo')}, {_model_distance(r)}"
            for r in g.to_dict("records")[1:]
        ]
        numbers = f"N={int(small['n_train'])}: {decisive}; {_model_distance(small)}" + "".join(
            f"; {e}" for e in rest
        )
        evidence = Evidence()
        evidence.note(g)  # the cell's ACP, ACP-SG and AVI runs: qualified unconverged if any did not converge
        claims.append(
            with_evidence(
                Claim(
                    mechanism_claim_id(experiment, dataset),
                    PAPER_STATEMENT
                    + f"; checked as: without theta's path through q (ACP-SG) ACP loses most of its "
                    f"advantage ({experiment}, {dataset}, N_train={int(small['n_train'])})",
                    PAPER_LOCATION,
                    combine(verdicts),
                    numbers,
                    MECHANISM_RULE + QUALIFIER_RULE,
                ),
                evidence,
            )
        )
    return claims


__all__ = [
    "MECHANISM_CLAIM",
    "ThetaDistance",
    "ablation_markdown",
    "ablation_table",
    "mechanism_claim_id",
    "mechanism_claims",
]
