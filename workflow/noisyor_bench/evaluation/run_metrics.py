"""A run's test metrics from its posterior file and the dataset: the one code path.

``posterior_test.npz`` holds ``q`` on the test split and the generative parameters used; the
metrics of :func:`evaluate_posterior` (held-out NELBO, F1/EM after latent matching, exact and
importance-weighted bounds: :mod:`noisyor_bench.evaluation.heldout`) are computed by this one
function both when a run finishes and when ``noisyor-bench evaluate`` recomputes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from noisyor_bench.data.loading import has_truth
from noisyor_bench.evaluation.heldout import evaluate, match_latents, weight_similarity
from noisyor_bench.models.noisyor.model import NoisyOR


def evaluate_posterior(
    posterior: Mapping[str, np.ndarray],
    data: Mapping[str, np.ndarray],
    mode: str,
    n_samples: int,
    iw_samples: int,
    exact_max_k: int,
    eval_seed: int,
    nll: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Test metrics from a ``posterior_test.npz`` content and the dataset.

    The single code path used by :func:`execute_run` and by ``noisyor-bench evaluate``, so a
    recomputation reproduces the recorded numbers exactly.  Learning mode: Hungarian matching
    of the learned to the true weight columns (when both K agree), recorded with the mean
    cosine similarity of the matched columns; inference mode: identity.  A dataset without
    ground truth (a real corpus) gets no matching, no F1/EM and no exact metrics: the 2^K
    enumeration checks bounds against synthetic truths, and at K=20 with D~1,300 words it
    would cost ~10^12 operations per run.  ``nll`` (a likelihood config mapping) adds the model's
    held-out ``-log p(x)`` on synthetic data (:func:`noisyor_bench.evaluation.heldout.heldout_nll`).
    """
    model = NoisyOR.from_numpy(posterior["theta"], posterior["theta0"], posterior["mu"])
    z_test = data.get("z_test")
    extra: dict[str, Any] = {
        "latent_matching": "identity",
        "latent_permutation": None,
        "latent_match_cosine": None,
    }
    perm = None
    if not has_truth(data):
        extra["latent_matching"] = None
        z_test = None
        exact_max_k = 0
        nll = None
    elif mode == "learning":
        extra["latent_matching"] = "hungarian"
        theta_true = np.asarray(data["theta"])
        if theta_true.shape == np.shape(posterior["theta"]):
            perm = match_latents(posterior["theta"], theta_true)
            sim = weight_similarity(posterior["theta"], theta_true)
            extra["latent_permutation"] = [int(i) for i in perm]
            extra["latent_match_cosine"] = float(np.mean(sim[perm, np.arange(len(perm))]))
        else:
            extra["latent_matching"] = None  # K differs: no matching, no F1/EM
            z_test = None
    metrics = evaluate(
        model,
        data["x_test"],
        posterior["q"],
        z_true=z_test,
        n_samples=n_samples,
        iw_samples=iw_samples,
        seed=eval_seed,
        exact_max_k=exact_max_k,
        permutation=perm,
        nll=nll,
    )
    metrics.update(extra)
    return metrics


__all__ = ["evaluate_posterior"]
