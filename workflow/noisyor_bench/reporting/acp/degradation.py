"""The degradation curve of a generator: per-datapoint inference with the true model stopped after t steps.

Why: a reported (NELBO, F1) pair of an inference method with the true parameters should lie on
or above the curve traced by a per-datapoint optimiser at increasing step budgets -- it says
how far from converged the reported posterior was, and a row far above the curve says its
NELBO is worse than its F1 alone would explain.  The optimiser is SVI's per-datapoint Adam
(its learning rate ``lr_local``, started at the prior, as the SVI runs do) on the *exact*
ELBO; each step budget t gives the exact NELBO and the paper's F1/EM protocol
(:func:`noisyor_bench.evaluation.heldout.sampled_accuracy`: ``z_hat ~ q``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from noisyor_bench.infra.constants import DEFAULT_N_SAMPLES
from noisyor_bench.infra.errors import ConfigError

CURVE_ARTIFACT = "acp_calibration_curve"
CURVE_COLUMNS = ("artifact", "dataset", "step", "nelbo", "f1", "em")


def svi_learning_rate() -> float:
    """The per-datapoint learning rate of the benchmark's SVI (one home: its defaults)."""
    from noisyor_bench.inference.noisyor.svi import DEFAULTS

    return float(DEFAULTS["lr_local"])


def default_steps() -> list[int]:
    """The log grid of step budgets of the Fig. 3a sensitivity table, up to SVI's default cap."""
    from noisyor_bench.inference.noisyor.svi import DEFAULTS
    from noisyor_bench.reporting.acp.sensitivity import DEFAULT_STEPS

    return sorted({*DEFAULT_STEPS, int(DEFAULTS["posterior_steps"])})


def degradation_curve(
    data: Mapping[str, np.ndarray],
    name: str,
    rows: np.ndarray,
    steps: Sequence[int] | None = None,
    samples: int = DEFAULT_N_SAMPLES,
    seed: int = 0,
    lr: float | None = None,
) -> pd.DataFrame:
    """One row per step budget: exact NELBO, sampled F1/EM (percent) of the truncated optimiser."""
    from noisyor_bench.data.loading import ground_truth
    from noisyor_bench.evaluation.heldout import sampled_accuracy
    from noisyor_bench.models.noisyor import meanfield_exact
    from noisyor_bench.models.noisyor.exact import log_joint_table

    grid = default_steps() if steps is None else sorted({int(s) for s in steps})
    if not grid or grid[0] < 0:
        raise ConfigError(f"step budgets must be integers >= 0, got {list(steps or [])}")
    truth = ground_truth(data)
    x = torch.as_tensor(np.asarray(data["x_test"])[rows], dtype=torch.float64)
    z_true = np.asarray(data["z_test"])[rows].astype(bool)
    states, log_joint = log_joint_table(truth, x)
    start = torch.logit(truth.mu.to(torch.float64)).expand(x.shape[0], truth.K).clone()
    t0 = time.perf_counter()
    fitted = meanfield_exact.truncated_adam(
        states, log_joint, start, grid, svi_learning_rate() if lr is None else lr
    )
    out: list[dict[str, Any]] = []
    for step in grid:
        logits = fitted[step]
        nelbo = -meanfield_exact.elbo(states, log_joint, logits).mean()
        f1, em = sampled_accuracy(z_true, torch.sigmoid(logits), samples, torch.Generator().manual_seed(seed))
        out.append(
            {
                "artifact": CURVE_ARTIFACT,
                "dataset": name,
                "step": step,
                "nelbo": float(nelbo),
                "f1": f1,
                "em": em,
            }
        )
    frame = pd.DataFrame(out, columns=list(CURVE_COLUMNS))
    frame.attrs["seconds"] = time.perf_counter() - t0
    return frame
