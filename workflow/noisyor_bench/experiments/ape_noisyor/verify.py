"""``noisyor-bench verify`` of an APE-on-noisy-OR run (found through the paper registry).

``agreement_exact``, ``gap_exact`` and ``inference_seconds`` are functions of the run's
``scores.npz`` (the exact ELBO of every test row under every candidate, and the inference time)
and the problem file's exact ``test_log_px``: they are recomputed from those files (the
problem file found from the run's record and accepted only with the recorded sha256).
"""

from __future__ import annotations

import numpy as np

from noisyor_bench.experiments.ape_noisyor.runs import ranking_summary
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import load_npz
from noisyor_bench.infra.runcheck import Recomputed, RunCheck


def recompute(check: RunCheck) -> Recomputed:
    problems = check.dataset()
    scores = load_npz(check.path / "scores.npz")
    log_px = load_npz(problems).get("test_log_px")
    elbo = scores.get("elbo")
    if elbo is None or log_px is None or np.shape(elbo) != np.shape(log_px):
        raise DataError(
            f"{check.path / 'scores.npz'} elbo {None if elbo is None else np.shape(elbo)} does not match "
            f"{problems} test_log_px {None if log_px is None else np.shape(log_px)}"
        )
    values = {**ranking_summary(elbo, log_px), "inference_seconds": float(scores["seconds"])}
    return Recomputed(
        check.rows(check.recorded, values),
        [str(problems)],
        "training statistics (epochs, convergence, train_seconds) are the training's own",
    )
