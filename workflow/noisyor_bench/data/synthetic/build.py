"""Build a synthetic dataset file from its config entry (paper Section 4.1).

Recipe (the paper's four steps): choose mu, theta and theta0; sample z ~ p(z); sample
x ~ p(x | z).  Each split (train pool, validation, test) draws from its own child of one
``SeedSequence``, and z and x from separate streams, so

* the same config and seed give byte-identical files;
* enlarging the training pool never changes the validation and test sets, and smaller
  training sets are prefixes of larger ones (runs take the first N_train rows);
* sampling in row chunks (bounded memory for MULTI-MNIST's 50k x 784) gives the same bytes
  as sampling all at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from noisyor_bench.data.synthetic.sparsity import expected_sparsity
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.version import __version__

SPLITS = ("train", "val", "test")
IMAGE_SHAPES: dict[str, tuple[int, int]] = {
    "syn-pattern": (8, 8),
    "syn-pattern-overlap": (8, 8),
    "mnist": (28, 28),
}
_CHUNK_ROWS = 4096


@dataclass
class GeneratingParameters:
    theta: np.ndarray  # (D, K) float64 rates
    theta0: np.ndarray  # (D,) float64 leak rates
    mu: np.ndarray  # (K,) float64 prior probabilities
    info: dict[str, Any]  # provenance of the parameters (exemplars, thresholds, reading)


def generating_parameters(
    name: str, spec: Mapping[str, Any], raw_data_dir: str | Path | None, cache_dir: str | Path
) -> GeneratingParameters:
    """theta, theta0, mu for a dataset entry, by family."""
    family = spec.get("family")
    if family == "pattern":
        from noisyor_bench.data.synthetic.patterns import pattern_parameters

        theta, theta0, mu, info = pattern_parameters(spec, raw_data_dir, cache_dir)
    elif family == "random":
        from noisyor_bench.data.synthetic.synrandom import params_rng, random_parameters

        theta, theta0, mu = random_parameters(spec, params_rng(int(spec["seed"])), name=name)
        info = {"reading": "see docs/syn_random.md"}
    else:
        raise ConfigError(
            f"datasets.{name}.family: {family!r} is not allowed; allowed values: ['pattern', 'random']"
        )
    return GeneratingParameters(
        theta=np.asarray(theta, dtype=np.float64),
        theta0=np.asarray(theta0, dtype=np.float64),
        mu=np.asarray(mu, dtype=np.float64),
        info=dict(info),
    )


def sample_split(
    params: GeneratingParameters, n: int, seed_seq: np.random.SeedSequence
) -> tuple[np.ndarray, np.ndarray]:
    """Ancestral samples ``(z, x)`` as uint8 arrays, drawn in fixed-size row chunks."""
    z_rng, x_rng = (np.random.default_rng(s) for s in seed_seq.spawn(2))
    d, k = params.theta.shape
    z = np.empty((n, k), dtype=np.uint8)
    x = np.empty((n, d), dtype=np.uint8)
    for start in range(0, n, _CHUNK_ROWS):
        stop = min(start + _CHUNK_ROWS, n)
        zc = z_rng.random((stop - start, k)) < params.mu
        rates = params.theta0 + zc.astype(np.float64) @ params.theta.T
        p_on = -np.expm1(-rates)
        xc = x_rng.random((stop - start, d)) < p_on
        z[start:stop] = zc
        x[start:stop] = xc
    return z, x


def build_dataset(
    name: str, spec: Mapping[str, Any], raw_data_dir: str | Path | None, cache_dir: str | Path
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Arrays for ``results/data/<name>.npz`` and the JSON sidecar describing them."""
    params = generating_parameters(name, spec, raw_data_dir, cache_dir)
    seed = int(spec["seed"])
    split_seeds = dict(zip(SPLITS, np.random.SeedSequence([seed, 1]).spawn(len(SPLITS))))
    sizes = {"train": int(spec["n_train_pool"]), "val": int(spec["n_test"]), "test": int(spec["n_test"])}
    arrays: dict[str, np.ndarray] = {
        "theta": params.theta,
        "theta0": params.theta0,
        "mu": params.mu,
    }
    for split in SPLITS:
        z, x = sample_split(params, sizes[split], split_seeds[split])
        arrays[f"z_{split}"] = z
        arrays[f"x_{split}"] = x

    zeros = {s: float(1.0 - arrays[f"x_{s}"].mean()) * 100.0 for s in SPLITS}
    total = sum(sizes.values())
    overall = sum(zeros[s] * sizes[s] for s in SPLITS) / total
    d, k = params.theta.shape
    sidecar = {
        "name": name,
        "config": dict(spec),
        "seed": seed,
        "D": d,
        "K": k,
        "n_train_pool": sizes["train"],
        "n_val": sizes["val"],
        "n_test": sizes["test"],
        "sparsity_percent": {"all": overall, **zeros},
        "expected_sparsity_percent": 100.0 * expected_sparsity(params.theta, params.theta0, params.mu),
        "mean_active_latents": float(arrays["z_train"].sum(1).mean()),
        "parameters_info": params.info,
        "image_shape": IMAGE_SHAPES.get(str(spec.get("patterns"))),
        "noisyor_bench_version": __version__,
        "numpy_version": np.__version__,
    }
    return arrays, sidecar
