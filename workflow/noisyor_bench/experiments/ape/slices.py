"""Calibration slices of APE's encoder training: a few optimiser steps at the job's own pool.

Why: a step with the paper grid's 50,000-model pool (18 GB: each step draws its models unless
the device holds the pool, :func:`noisyor_bench.experiments.ape.pairs.hold_pool`) costs many times
a step with the quick grid's 300 held models; the cost model priced it from the latter.  A slice
takes the path the machine that runs it allows (it trains on the CPU: the pool is held when half
the available RAM takes it), so a slice measured where the pool was drawn per step prices a job
whose device holds it too high: that job runs at the held step time, which a slice on a machine
with that memory measures (docs/ape.md, "The pool held or drawn").  A slice trains the job's encoder on the dataset's real documents (the corpus
without its Gibbs test models, or the toy bars) and the job's real pool for :data:`SLICE_STEPS`
steps of the job's schedule and times the second half (the first half pays the warm-up).  Its
work is those steps, the cost model's unit for ``ape_train``.  The validation of the real run
(every ``eval_every`` steps) is left out: a slice validates two pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.ape.costs import _section
from noisyor_bench.experiments.costs import Job

#: Steps a slice trains; the last half is timed.
SLICE_STEPS = 20


def _dataset(cfg: Mapping[str, Any], job: Job) -> tuple[str, dict[str, Any], str, int] | None:
    """(dataset, its section, method, seed) of an ``ape_train`` job (None: not one)."""
    if job.rule != "ape_train":
        return None
    for name, ds in (_section(cfg).get("datasets") or {}).items():
        for method in ds["encoders"]:
            for seed in _section(cfg).get("seeds") or []:
                n = 1 if method == "standard" else int(ds["theta_pool"]["size"])
                if job.job == f"{name}_{method}_n{n}_seed{seed}":
                    return name, dict(ds), method, int(seed)
    return None


def bench_name(cfg: Mapping[str, Any], job: Job) -> tuple[str, str] | None:
    """The (rule, job) a slice of ``job`` is recorded under: the job itself (None: no slice)."""
    return (job.rule, job.job) if _dataset(cfg, job) is not None else None


def _documents(name: str, ds: Mapping[str, Any], raw_data_dir: str | None) -> tuple[Any, int]:
    """(documents (N, V) float32, topics K) as the dataset step builds them, without test models."""
    import tempfile

    import numpy as np

    from noisyor_bench.experiments.ape import datasets

    if name == "toybars":
        arrays = datasets.toybars_arrays(ds)[0]
        return np.asarray(arrays["documents"], dtype=np.float32), int(arrays["true_topics"].shape[0])
    from noisyor_bench.data.corpora import mdreviews
    from noisyor_bench.data.rawdata import fetch, resolve_raw_data_dir

    mirror = resolve_raw_data_dir(raw_data_dir)
    with tempfile.TemporaryDirectory(prefix="noisyor-slice-") as cache:
        paths = {key: fetch(raw, mirror, cache) for key, raw in mdreviews.RAW_KEYS.items()}
        splits = {s: mdreviews.read_csr(paths[s]) for s in mdreviews.SPLITS}
        vocabulary = mdreviews.read_vocabulary(paths["vocab"])
    counts = mdreviews.build_reviews(splits, vocabulary, int(ds["data"]["vocabulary"]))[0]
    return np.asarray(counts, dtype=np.float32), int(ds["data"]["topics"])


def run(cfg: Mapping[str, Any], job: Job, raw_data_dir: str | None) -> tuple[float, float, str]:
    """(seconds of the timed steps, those steps, what was run) of the ``ape_train`` job."""
    import dataclasses

    import numpy as np
    import torch

    from noisyor_bench.data.synthetic.theta_pool import ThetaPool
    from noisyor_bench.experiments.ape import pairs
    from noisyor_bench.experiments.ape.steps import training_section
    from noisyor_bench.experiments.ape.train import ENCODER_KINDS, training_config
    from noisyor_bench.inference.topics.ape_encoders import build_encoder
    from noisyor_bench.inference.topics.ape_training import train_encoder
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    found = _dataset(cfg, job)
    assert found is not None
    name, ds, method, seed = found
    documents, n_topics = _documents(name, ds, raw_data_dir)
    n_docs, vocab = documents.shape
    p = ds["theta_pool"]
    pool = ThetaPool(int(p["seed"]), int(p["size"]), n_topics, vocab, float(p.get("alpha", 0.1)))
    standard = method == "standard"
    thetas, m = (torch.from_numpy(pool.draw([0])), 1) if standard else pairs.training_models(pool, "cpu")
    config, _, _ = training_config(training_section(ds, method), n_docs, m)
    half = SLICE_STEPS // 2
    config = dataclasses.replace(config, max_steps=SLICE_STEPS, eval_every=half, patience=None)
    valid_x = torch.from_numpy(documents[:2])
    valid_theta = torch.from_numpy(pool.draw([0, min(1, pool.size - 1)]))
    encoder = build_encoder(ENCODER_KINDS[method], vocab, n_topics, seed=seed)
    result = train_encoder(
        encoder,
        torch.from_numpy(np.ascontiguousarray(documents)),
        thetas,
        ape_prior(n_topics, dtype=torch.float32),
        config,
        seed=seed,
        valid_x=valid_x,
        valid_theta=valid_theta,
        n_models=m,
        device="cpu",
    )
    seconds = float(result.records[-1].seconds)
    where = "held in memory" if isinstance(thetas, (torch.Tensor, pairs.HeldPool)) else "drawn per step"
    return seconds, float(half), f"steps {half + 1}-{SLICE_STEPS} ({name} {method}, pool {m} {where})"


__all__ = ["SLICE_STEPS", "bench_name", "run"]
