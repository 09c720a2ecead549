"""``noisyor-bench verify`` of an APE run (found through the paper registry).

An evaluation run (``ape-eval``) stores per method the per-combination ELBOs and per-model
totals in ``scores.npz``: ``elbo_pair``, ``elbo_per_word``, ``agree_vi`` (from the ranking
totals ``rank_model_<m>`` / ``rank_reference_vi`` when present), ``agree_vi_eval``,
``agree_is`` and ``pairs`` are recomputed from them.  The training, VI and NUTS runs record statistics of the
training or sampling itself, which only re-running recomputes: ``NotRecomputable`` says so.
"""

from __future__ import annotations

import numpy as np

from noisyor_bench.evaluation.ranking import pairwise_agreement
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import load_npz
from noisyor_bench.infra.runcheck import NotRecomputable, Recomputed, RunCheck

NOT_RECOMPUTABLE = {
    "ape-train": "an APE encoder-training run records statistics of its training (validation NELBO, "
    "steps, convergence), which only re-training recomputes (noisyor-bench ape-train); its encoder's "
    "test numbers are in the ape-eval run that scores it (verify that run)",
    "ape-vi": "an APE VI run records statistics of its optimisation (steps, final ELBO, convergence), "
    "which only re-running VI recomputes (noisyor-bench ape-vi); its posterior's test numbers are in "
    "the ape-eval run that scores it (verify that run)",
    "ape-nuts": "an APE NUTS run records the sampler's timing and step size only, which only "
    "re-sampling recomputes (noisyor-bench ape-nuts); its samples' test numbers are in the ape-eval "
    "run that scores them (verify that run)",
}


def recompute(check: RunCheck) -> Recomputed:
    if check.experiment != "ape-eval":
        raise NotRecomputable(
            NOT_RECOMPUTABLE.get(
                str(check.experiment), f"no recomputation for APE runs of {check.experiment!r}"
            )
        )
    path = check.path / "scores.npz"
    scores = load_npz(path)
    if "elbo_model_vi" not in scores or "is_model_vi" not in scores:
        raise DataError(f"{path} lacks VI's per-model totals (elbo_model_vi, is_model_vi)")
    tokens = float(check.recorded["tokens"])
    rows = []
    for m, values in (check.recorded.get("methods") or {}).items():
        pair, model = scores.get(f"elbo_pair_{m}"), scores.get(f"elbo_model_{m}")
        if pair is None or model is None:
            raise DataError(f"{path} lacks elbo_pair_{m} / elbo_model_{m}")
        agree_vi = pairwise_agreement(model, scores["elbo_model_vi"])
        agree_is = pairwise_agreement(model, scores["is_model_vi"])
        again = {
            "elbo_pair": float(np.mean(pair)),
            "elbo_per_word": float(np.sum(pair)) / tokens,
            "agree_vi": agree_vi.agree,
            "agree_is": agree_is.agree,
            "pairs": agree_vi.pairs,
        }
        if "rank_reference_vi" in scores:  # agree_vi against the ranking reference
            ranked = scores.get(f"rank_model_{m}")
            again["agree_vi_eval"] = again["agree_vi"]
            again["agree_vi"] = (
                None if ranked is None else pairwise_agreement(ranked, scores["rank_reference_vi"]).agree
            )
        rows += [(f"{m}.{k}", a, b, ok) for k, a, b, ok in check.rows(values, again)]
    return Recomputed(
        rows,
        [],
        "ll_paper and ll_is (Monte Carlo estimates from the methods' posteriors), time_s, nuts_subset and "
        "figure1 are recomputed only by re-running the evaluation (noisyor-bench ape-evaluate)",
    )
