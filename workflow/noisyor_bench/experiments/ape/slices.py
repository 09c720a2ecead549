"""Calibration slices of APE's encoder training: a few optimiser steps at the job's own pool.

Why: a step with the paper grid's 50,000-model pool (18 GB) costs many times a step with the
quick grid's 300 held models; the cost model priced it from the latter.  A training job asks for
the memory to hold its pool (:func:`noisyor_bench.experiments.ape.costs.train_mem_mb`), so it
steps on a held pool (:func:`noisyor_bench.experiments.ape.pairs.hold_pool`), and so does its
slice: on the job's real pool where this machine can hold it, else on a held stand-in of
:data:`STAND_IN_MODELS` models of the job's K x V, taking the same path (a held step gathers its
batch's models, whatever the pool's size: 29.7-31.5 ms a model-aware step with 2,000 and 16,000
held reviews models on one AMD EPYC core, docs/ape.md "The pool held or drawn").  A slice
trains the job's encoder on the dataset's real documents (the corpus without its Gibbs test
models, or the toy bars) for :data:`SLICE_STEPS` steps of the job's schedule and times the second
half (the first half pays the warm-up), then one validation of the job's ``validation_pairs``,
charged per step at the job's ``eval_every``.  Its work is those steps, the cost model's unit for
``ape_train``, and it prices the job alone (:data:`PRICED_ALONE`): scaled by the ratio to a slice
of a quick job, as other papers' slices are, it would carry that job's start-up and its
validation every few steps into the paper's 1.6 million steps (the reviews' naive encoder read
208 h that way, against 78 h of its own steps and validation).  Left out: the pool's drawing before the first
step (~3 ms a model, 2.6 min for 50,000) and start-up, per job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.ape.costs import _section
from noisyor_bench.experiments.costs import Job

#: Steps a slice trains; the last half is timed.
SLICE_STEPS = 20
#: Models of the held stand-in pool of a slice whose real pool this machine cannot hold.
STAND_IN_MODELS = 2000
#: A slice prices its job from its own rate (steps and validation), not scaled from a quick job's.
PRICED_ALONE = True


def _whole_stem(stem: str) -> str:
    """A segment job's training (``<stem>_segment<k>`` -> ``<stem>``); any other stem as it is."""
    return re.sub(r"_segment[0-9]+$", "", stem)


def _dataset(cfg: Mapping[str, Any], job: Job) -> tuple[str, dict[str, Any], str, int] | None:
    """(dataset, its section, method, seed) of an ``ape_train`` job or segment (None: not one)."""
    if job.rule != "ape_train":
        return None
    for name, ds in (_section(cfg).get("datasets") or {}).items():
        for method in ds["encoders"]:
            for seed in _section(cfg).get("seeds") or []:
                n = 1 if method == "standard" else int(ds["theta_pool"]["size"])
                if _whole_stem(job.job) == f"{name}_{method}_n{n}_seed{seed}":
                    return name, dict(ds), method, int(seed)
    return None


def bench_name(cfg: Mapping[str, Any], job: Job) -> tuple[str, str] | None:
    """The (rule, job) a slice of ``job`` is recorded under: its whole training (a segment's
    steps are the training's steps; None: no slice)."""
    return (job.rule, _whole_stem(job.job)) if _dataset(cfg, job) is not None else None


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
    import time

    import numpy as np
    import torch

    from noisyor_bench.data.synthetic.theta_pool import ThetaPool
    from noisyor_bench.experiments.ape import pairs
    from noisyor_bench.experiments.ape.steps import training_section
    from noisyor_bench.experiments.ape.train import ENCODER_KINDS, training_config
    from noisyor_bench.inference.topics.ape_encoders import build_encoder
    from noisyor_bench.inference.topics.ape_training import train_encoder, validation_nelbo
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    found = _dataset(cfg, job)
    assert found is not None
    name, ds, method, seed = found
    documents, n_topics = _documents(name, ds, raw_data_dir)
    n_docs, vocab = documents.shape
    p = ds["theta_pool"]
    pool = ThetaPool(int(p["seed"]), int(p["size"]), n_topics, vocab, float(p.get("alpha", 0.1)))
    standard = method == "standard"
    where = "held in memory"
    if standard:
        thetas, m = torch.from_numpy(pool.draw([0])), 1
        n_held = m
    elif pairs.hold_pool(pool.nbytes(), "cpu")[0]:
        thetas, m = pairs.training_models(pool, "cpu", hold=True)
        n_held = m
    else:  # the job holds it (its memory request); here a stand-in of its shape, on the same path
        stand_in = ThetaPool(pool.seed, min(STAND_IN_MODELS, pool.size), n_topics, vocab, pool.alpha)
        (thetas, n_held), m = pairs.training_models(stand_in, "cpu", hold=True, tensor_bytes=-1), pool.size
        where = f"held: a stand-in of {stand_in.size} of its {pool.size} models"
    budget = training_section(ds, method)
    job_config = training_config(budget, n_docs, m)[0]
    half = SLICE_STEPS // 2
    config = dataclasses.replace(job_config, max_steps=SLICE_STEPS, eval_every=half, patience=None)
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
        n_models=n_held,
        device="cpu",
    )
    seconds = float(result.records[-1].seconds)
    vx, vt = pairs.validation_pairs(documents, pool, int(budget.get("validation_pairs", 500)), standard)
    start = time.perf_counter()
    validation_nelbo(
        encoder, vx, vt, ape_prior(n_topics, dtype=torch.float32), job_config.val_mc_samples, seed
    )
    per_step = (time.perf_counter() - start) / job_config.eval_every
    return (
        seconds + half * per_step,
        float(half),
        f"steps {half + 1}-{SLICE_STEPS} ({name} {method}, pool {m} {where}) + one validation "
        f"({vx.shape[0]} pairs) per {job_config.eval_every} steps ({1000 * per_step:.2g} ms a step)",
    )


__all__ = ["SLICE_STEPS", "bench_name", "run"]
