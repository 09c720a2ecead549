"""APE's non-amortised baselines on the test combinations: VI from random initialisation and
NUTS warm-started from VI (appendix A.2), one run directory per (dataset, seed).

* ``results/runs/ape-vi/<dataset>/vi/n0/seed<s>/``: ``posterior.npz`` (``mu``, ``log_sigma``
  (P, K) of every combination), ``curve.csv`` (step, seconds, elbo per pair[, eval_elbo]),
  ``metrics.json`` (time, steps, the A.2 stopping rule's verdict as ``converged``);
* ``results/runs/ape-nuts/<dataset>/nuts/n0/seed<s>/``: ``samples.npz`` (``h`` (S, P', K) on
  the first P' combinations, ``init``), ``metrics.json`` (time, P', warm-up, step size).

VI and NUTS run in float32 (their times are Table 1's); the metrics are computed in float64
by :mod:`.evaluate`.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from noisyor_bench.experiments.ape.pairs import evaluation_combinations
from noisyor_bench.experiments.rundir import partial_dir
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.infra import provenance
from noisyor_bench.infra.io import load_npz, read_json, write_json_atomic, write_npz_atomic, write_text_atomic

log = logging.getLogger(__name__)

VI_EXPERIMENT = "ape-vi"
NUTS_EXPERIMENT = "ape-nuts"
VI_EVAL_EVERY = 25  # steps between the fixed-noise ELBO points of Figure 1 (left), off the clock
VI_EVAL_SAMPLES = 10


def vi_config(section: Mapping[str, Any], warm: bool = False) -> Any:
    from noisyor_bench.inference.topics.ape_vi import ViConfig

    vi = dict(section.get("vi") or {})
    return ViConfig(
        learning_rate=float(vi.get("warm_lr", 0.0005) if warm else vi.get("lr", 0.01)),
        decay_steps=int(vi.get("decay_steps", 5000)),
        window=int(vi.get("window", 10)),
        rel_tol=float(vi.get("rel_tol", 1e-5)),
        max_steps=int(vi.get("max_steps", 100_000)),
        n_mc_samples=int(vi.get("samples", 1)),
        init="random",
        eval_every=VI_EVAL_EVERY,
        eval_samples=VI_EVAL_SAMPLES,
    )


def _finish(work: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    work.rename(out)


def _work(out: Path) -> Path:
    work = partial_dir(out)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def _identity(experiment: str, dataset: str, method: str, seed: int) -> dict[str, Any]:
    return {"experiment": experiment, "dataset": dataset, "method": method, "n_train": 0, "seed": int(seed)}


def run_vi(
    dataset_path: str | Path, dataset: str, seed: int, section: Mapping[str, Any], out_dir: str | Path
) -> dict[str, Any]:
    """VI from random initialisation on every test combination; writes the run directory."""
    from noisyor_bench.inference.topics.ape_vi import fit_vi
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    arrays = load_npz(dataset_path)
    combos = evaluation_combinations(arrays, torch.float32)
    n_topics = combos.theta.shape[1]
    config = vi_config(section)
    log.info(
        "%s seed %d: VI on %d combinations (max %d steps)", dataset, seed, combos.x.shape[0], config.max_steps
    )
    result = fit_vi(
        combos.x,
        combos.theta,
        ape_prior(n_topics, dtype=torch.float32),
        config,
        seed=stream_seed(seed, "ape-vi"),
        progress=lambda row: log.info(
            "VI step %d: ELBO/pair %.3f, %.1f s", row["step"], row["elbo"], row["seconds"]
        ),
    )
    out = Path(out_dir)
    work = _work(out)
    write_npz_atomic(
        work / "posterior.npz", mu=result.mu.cpu().numpy(), log_sigma=result.log_sigma.cpu().numpy()
    )
    write_text_atomic(work / "curve.csv", pd.DataFrame(result.curve).to_csv(index=False, lineterminator="\n"))
    metrics = {
        **_identity(VI_EXPERIMENT, dataset, "vi", seed),
        "mode": "inference",
        "combinations": int(combos.x.shape[0]),
        "steps": int(result.steps),
        "seconds": float(result.seconds),
        "stop_reason": result.stop_reason,
        "epochs": int(result.steps),
        "converged": bool(result.converged),
        "convergence": result.convergence.as_dict() if result.convergence else None,
        "final_elbo": float(result.curve[-1].get("eval_elbo", result.curve[-1]["elbo"])),
        "vi": dict(section.get("vi") or {}),
    }
    metrics["provenance"] = provenance.artifact_record(
        "run",
        [provenance.file_entry(dataset_path, "dataset", out)],
        [],
        out,
        config={"seed": seed, "vi": metrics["vi"]},
    )
    write_json_atomic(work / "metrics.json", metrics)
    _finish(work, out)
    log.info(
        "%s seed %d: VI %d steps, %.1f s, converged %s -> %s",
        dataset,
        seed,
        result.steps,
        result.seconds,
        result.converged,
        out,
    )
    return metrics


def run_nuts(
    dataset_path: str | Path,
    dataset: str,
    seed: int,
    section: Mapping[str, Any],
    vi_dir: str | Path,
    out_dir: str | Path,
) -> dict[str, Any]:
    """NUTS on the first ``nuts.combinations`` test combinations, started from a draw of VI's q."""
    from noisyor_bench.inference.topics.ape_nuts import run_nuts as sample
    from noisyor_bench.inference.topics.ape_nuts import warm_start_from_q
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    nuts = dict(section.get("nuts") or {})
    arrays = load_npz(dataset_path)
    combos = evaluation_combinations(arrays, torch.float32).subset(int(nuts.get("combinations", 300)))
    n = combos.x.shape[0]
    q = load_npz(Path(vi_dir) / "posterior.npz")
    mu, log_sigma = (torch.as_tensor(q[k][:n], dtype=torch.float32) for k in ("mu", "log_sigma"))
    gen = torch.Generator().manual_seed(stream_seed(seed, "ape-nuts-init"))
    init = warm_start_from_q(mu, log_sigma, gen)
    log.info(
        "%s seed %d: NUTS on %d combinations (%d warm-up + %d samples, tree depth <= %d)",
        dataset,
        seed,
        n,
        int(nuts.get("warmup", 100)),
        int(nuts.get("samples", 100)),
        int(nuts.get("max_tree_depth", 10)),
    )
    result = sample(
        combos.x,
        combos.theta,
        ape_prior(combos.theta.shape[1], dtype=torch.float32),
        seed=stream_seed(seed, "ape-nuts"),
        init=init,
        num_samples=int(nuts.get("samples", 100)),
        warmup_steps=int(nuts.get("warmup", 100)),
        max_tree_depth=int(nuts.get("max_tree_depth", 10)),
    )
    out = Path(out_dir)
    work = _work(out)
    write_npz_atomic(work / "samples.npz", h=result.samples.cpu().numpy(), init=result.init.cpu().numpy())
    metrics = {
        **_identity(NUTS_EXPERIMENT, dataset, "nuts", seed),
        "mode": "inference",
        "combinations": int(n),
        "seconds": float(result.seconds),
        "step_size": float(result.step_size),
        "converged": None,
        "nuts": nuts,
    }
    metrics["provenance"] = provenance.artifact_record(
        "run",
        [
            provenance.file_entry(dataset_path, "dataset", out),
            provenance.file_entry(Path(vi_dir) / "posterior.npz", "warm start (VI)", out),
        ],
        [],
        out,
        config={"seed": seed, "nuts": nuts},
    )
    write_json_atomic(work / "metrics.json", metrics)
    _finish(work, out)
    log.info("%s seed %d: NUTS %.1f s -> %s", dataset, seed, result.seconds, out)
    return metrics


def read_run(run_dir: str | Path) -> dict[str, Any]:
    return read_json(Path(run_dir) / "metrics.json")
