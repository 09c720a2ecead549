"""APE's compute jobs for the cost model (:mod:`noisyor_bench.experiments.costs`).

Why here: APE's costs follow its own budgets.  Encoder training costs ~ its optimiser steps
(the epochs' steps over documents x models, capped by ``max_steps``:
:func:`noisyor_bench.experiments.ape.train.training_config`); NUTS ~ combinations x (warm-up
+ samples) x 2^tree depth (an upper bound: trees stop earlier); the data ~ the Gibbs sweeps
generating it.

VI and the evaluation are priced in *pair-draws*: one Monte Carlo draw of the ELBO of one
(document, model) pair.  A VI fit costs, per step up to its cap ``vi.max_steps`` (an upper
bound: the stopping rule ends most fits sooner), a fixed :data:`VI_STEP_OVERHEAD` plus
:data:`VI_STEP_DRAWS` per pair and MC sample and the curve's fixed-noise ELBO points.  The
evaluation job (rule ape_evaluate, :func:`noisyor_bench.experiments.ape.evaluate.evaluate_seed`)
runs far more than scoring: the warm-started VI fits (``vi.warm_lr``, VI's own rate,
``vi.warm_authors``), every method's ELBO / IS / paper-metric draws on the evaluation pairs,
the agreement reference (``ranking``: ``elbo_draws`` draws per pair over ``ranking.documents``
x test models for VI's reference and every method, and VI fitted there, one problem per test
model, when those are not the evaluation documents), VI on ``evaluation.document_sets`` random
sets of ``evaluation.documents`` documents with their scores, and NUTS's combinations scored
again.  :func:`evaluate_draws` counts them.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.ape import segments
from noisyor_bench.experiments.ape.steps import training_section
from noisyor_bench.experiments.costs import BASE_MEM_MB, Job

COMPUTE_RULES = ("ape_train", "ape_vi", "ape_nuts", "ape_evaluate")
#: Documents of the datasets without a configured count: product reviews, the authors' validation
#: and test splits (docs/papers.md). Steps are capped by ``max_steps`` in the quick grid, so the
#: count decides how far the paper grid's steps are from the measured ones.
DOCUMENTS = {"mdreviews": 1585}
DEFAULT_DOCUMENTS = 1000
#: Pair-draws of one VI step per pair and MC sample (forward, backward, Adam): 1.2 (toy bars,
#: 300 pairs) to 5 (reviews) ELBO draws in scratch timings of fit_vi and elbo, 2026-11-26.
VI_STEP_DRAWS = 3.0
#: Pair-draws of a VI step's fixed cost (torch dispatch, ~1.5 ms against 1.7-7 us a pair-draw).
VI_STEP_OVERHEAD = 500.0
#: Fixed-noise ELBO draws per step of a VI fit's curve (experiments.ape.baselines: 10 draws every
#: 25 steps; not imported: torch at DAG time; a test keeps them equal).
VI_EVAL_DRAWS_PER_STEP = 10 / 25
#: Defaults of the evaluation settings (experiments.ape.evaluate and .docsets).
EVALUATION_DEFAULTS = {
    "documents": 30,
    "is_samples": 1000,
    "elbo_samples": 100,
    "paper_draws": 10,
    "paper_repeats": 10,
    "timing_repeats": 3,
    "document_sets": 0,
}
WARM_FROM = "ape-model-aware"  # experiments.ape.evaluate.WARM_FROM: the encoder VI-warm starts from


def _section(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return dict(cfg["grids"][cfg["grid"]].get("ape") or {})


def train_steps(name: str, ds: Mapping[str, Any], method: str) -> int:
    """Optimiser steps of one encoder's training (as experiments/ape/train.py counts them)."""
    section = training_section(ds, method)
    docs = int((ds.get("data") or {}).get("documents", DOCUMENTS.get(name, DEFAULT_DOCUMENTS)))
    models = 1 if method == "standard" else int(ds["theta_pool"]["size"])
    steps = max(
        1,
        math.ceil(
            float(section.get("epochs", 2)) * math.ceil(docs * models / int(section.get("batch_size", 100)))
        ),
    )
    return min(steps, int(section["max_steps"])) if section.get("max_steps") else steps


def model_shape(ds: Mapping[str, Any]) -> tuple[int, int]:
    """(topics K, vocabulary V) of a dataset's models: its ``data`` (the reviews), else toy bars'
    fixed 2 x SIDE bars over SIDE^2 pixels."""
    data = ds.get("data") or {}
    if "topics" in data and "vocabulary" in data:
        return int(data["topics"]), int(data["vocabulary"])
    from noisyor_bench.data.synthetic.toybars import SIDE

    return 2 * SIDE, SIDE * SIDE


def train_mem_mb(ds: Mapping[str, Any], method: str) -> int:
    """Memory an encoder's training job asks for: its base plus the pool in float32, which
    it then holds instead of drawing each step's models (a tenth of the step time on the
    reviews' pool: :func:`noisyor_bench.experiments.ape.pairs.hold_pool`, which lets a pool take
    all but a reserve of a job's own memory limit)."""
    if method == "standard":
        return BASE_MEM_MB
    k, v = model_shape(ds)
    return BASE_MEM_MB + math.ceil(int(ds["theta_pool"]["size"]) * k * v * 4 / 2**20)


def _train_job(name: str, ds: Mapping[str, Any], method: str, seed: Any, chain: str) -> Job:
    """One encoder's whole training (one job, whatever the segments)."""
    n = 1 if method == "standard" else int(ds["theta_pool"]["size"])
    return Job(
        "ape_train",
        f"{name}_{method}_n{n}_seed{seed}",
        float(train_steps(name, ds, method)),
        key=(name, method),
        size=float(n),
        cuda=True,
        mem_mb=train_mem_mb(ds, method),
        chain=chain,
        stage=1,
        family=method,
    )


def max_job_hours(cfg: Mapping[str, Any]) -> float | None:
    """``ape.max_job_hours`` of the active grid (None: every training is one job)."""
    value = _section(cfg).get("max_job_hours")
    return None if value is None else float(value)


@functools.lru_cache(maxsize=16)
def _whole_training_seconds(cfg_json: str) -> dict[str, float]:
    """One-core seconds of each whole training job (stem -> seconds), from the checkout's
    measured runs and slices, once per config."""
    from noisyor_bench.experiments import costs

    cfg = json.loads(cfg_json)
    references = costs.checkout_references(cfg.get("job_seconds"))
    return costs.job_seconds("ape", cfg, references, reference_jobs, rule="ape_train")


def training_segments(cfg: Mapping[str, Any], job: Job) -> int:
    """Segments of a whole training job (:mod:`~noisyor_bench.experiments.ape.segments`): one
    without ``ape.max_job_hours``, else enough that each stays under it on one core by the cost
    model (the estimate of the whole job), at most one per step."""
    hours = max_job_hours(cfg)
    if hours is None:
        return 1
    seconds = _whole_training_seconds(json.dumps(cfg, sort_keys=True, default=str)).get(job.job, 0.0)
    return min(segments.count(seconds, hours), max(1, int(job.work)))


def segment_count(cfg: Mapping[str, Any], dataset: str, method: str, seed: Any) -> int:
    """Segments of one encoder's training (the rules' input functions ask)."""
    ds = dict(_section(cfg)["datasets"][dataset])
    return training_segments(cfg, _train_job(dataset, ds, method, seed, ""))


def _segment_jobs(cfg: Mapping[str, Any], whole: Job) -> list[Job]:
    """The whole training as its segments' jobs, stage after stage in its chain."""
    n = training_segments(cfg, whole)
    if n == 1:
        return [whole]
    stops = segments.segment_stops(int(whole.work), n)
    return [
        dataclasses.replace(
            whole,
            job=segments.segment_stem(whole.job, k, n),
            work=float(stop - (stops[k - 1] if k else 0)),
            unit=whole.work,  # one fit: the whole training
            stage=1 + k,
        )
        for k, stop in enumerate(stops)
    ]


def jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """APE's compute jobs in the active grid of ``cfg`` (a training over ``ape.max_job_hours``
    as its segments)."""
    return _jobs(cfg, split=True)


def reference_jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """As :func:`jobs`, every training one job (how slices and measured runs record them)."""
    return _jobs(cfg, split=False)


def _jobs(cfg: Mapping[str, Any], split: bool) -> list[Job]:
    ape = _section(cfg)
    out = []
    for name, ds in (ape.get("datasets") or {}).items():
        nuts = ds.get("nuts") or {}
        for seed in ape.get("seeds") or []:
            # one chain per seed: VI, then NUTS (from VI's draw) beside the encoders, then the
            # evaluation of both (the encoders do not wait for VI: an upper bound by VI's minutes)
            chain = f"{name}_seed{seed}"
            trains: list[Job] = []
            for method in ds["encoders"]:
                whole = _train_job(name, ds, method, seed, chain)
                trains += _segment_jobs(cfg, whole) if split else [whole]
            out += trains
            last = max(j.stage for j in trains) if trains else 1
            out.append(Job("ape_vi", chain, vi_draws(ds, eval_pairs(ds)), key=(name,), chain=chain))
            # nuts.documents (one combination per document) and nuts.seeds (a subset)
            sampled = nuts_pairs(ds)
            nuts_seeds = nuts.get("seeds")
            sampled_here = sampled > 0 and (nuts_seeds is None or int(seed) in [int(s) for s in nuts_seeds])
            if sampled_here:
                # run_nuts' defaults: 100 warm-up + 100 samples, depth 10
                iterations = int(nuts.get("warmup", 100)) + int(nuts.get("samples", 100))
                work = sampled * iterations * 2 ** int(nuts.get("max_tree_depth", 10))
                out.append(Job("ape_nuts", chain, float(work), key=(name,), chain=chain, stage=1))
            work = evaluate_draws(name, ds, sampled if sampled_here else 0)
            out.append(Job("ape_evaluate", chain, work, key=(name,), cell=False, chain=chain, stage=last + 1))
    return out


# ---------------------------------------------------------------- VI and the evaluation, in pair-draws
def _evaluation(ds: Mapping[str, Any]) -> dict[str, Any]:
    return {**EVALUATION_DEFAULTS, **dict(ds.get("evaluation") or {})}


def n_test_models(ds: Mapping[str, Any]) -> int:
    """Held-out models of a dataset (``data.test_models``; the paper's 10)."""
    return int((ds.get("data") or {}).get("test_models", 10))


def eval_pairs(ds: Mapping[str, Any]) -> int:
    """Evaluation pairs: the first ``evaluation.documents`` documents x the test models."""
    return int(_evaluation(ds)["documents"]) * n_test_models(ds)


def nuts_pairs(ds: Mapping[str, Any]) -> int:
    """Combinations NUTS samples per seed (experiments.ape.baselines.nuts_index): one for each of
    the first ``nuts.documents`` evaluation documents, else the first ``nuts.combinations``
    pairs; 0 without either (the workflow then runs no NUTS, rules/ape.smk)."""
    nuts = dict(ds.get("nuts") or {})
    if nuts.get("documents"):
        return min(int(nuts["documents"]), int(_evaluation(ds)["documents"]))
    return min(int(nuts.get("combinations", 0)), eval_pairs(ds))


def vi_draws(ds: Mapping[str, Any], pairs: int, steps: int | None = None, fits: int | None = None) -> float:
    """Pair-draws of VI on ``pairs`` pairs for ``steps`` steps (default ``vi.max_steps``), as
    ``fits`` problems (default: one per test model with ``vi.group_by_model``, else one)."""
    vi = dict(ds.get("vi") or {})
    steps = int(vi.get("max_steps", 100_000)) if steps is None else int(steps)
    if fits is None:
        fits = n_test_models(ds) if vi.get("group_by_model") else 1
    per_pair = int(vi.get("samples", 1)) * VI_STEP_DRAWS + VI_EVAL_DRAWS_PER_STEP
    return float(steps * (fits * VI_STEP_OVERHEAD + pairs * per_pair))


def _warm_steps(ds: Mapping[str, Any]) -> list[int]:
    """Step caps of the warm-started fits (evaluate.warm_variant_configs): the paper's rate,
    VI's own rate where it differs, the authors' fixed steps where set."""
    vi = dict(ds.get("vi") or {})
    cap = int(vi.get("max_steps", 100_000))
    steps = [cap]
    if float(vi.get("lr", 0.01)) != float(vi.get("warm_lr", 0.0005)):
        steps.append(cap)
    authors = dict(vi.get("warm_authors") or {"lr": 0.1, "steps": 600})
    if authors.get("steps"):
        steps.append(int(authors["steps"]))
    return steps


def _ranking_documents(name: str, ds: Mapping[str, Any]) -> int | None:
    """Documents of the agreement reference other than the evaluation's (None: the same, VI's fit
    reused; experiments.ape.ranking.ranking_settings)."""
    docs = (ds.get("ranking") or {}).get("documents")
    if docs is None:
        return None
    n = (
        int((ds.get("data") or {}).get("documents", DOCUMENTS.get(name, DEFAULT_DOCUMENTS)))
        if docs == "all"
        else int(docs)
    )
    return None if n == int(_evaluation(ds)["documents"]) else n


def evaluate_draws(name: str, ds: Mapping[str, Any], nuts_pairs: int = 0) -> float:
    """Pair-draws of one seed's evaluation job (module docstring); ``nuts_pairs``: the
    combinations NUTS sampled in this seed (0: none), scored again beside VI's."""
    ev = _evaluation(ds)
    pairs, models = eval_pairs(ds), n_test_models(ds)
    encoders = list(ds["encoders"])
    warm = WARM_FROM in encoders
    methods = len(encoders) + 1 + int(warm)  # the encoders, VI, VI-warm
    paper = int(ev["paper_draws"]) * int(ev["paper_repeats"])
    score = int(ev["elbo_samples"]) + int(ev["is_samples"]) + paper  # score_q per pair
    work = len(encoders) * max(int(ev["timing_repeats"]), 5) * pairs  # timed forward passes
    if warm:
        work += sum(vi_draws(ds, pairs, steps) for steps in _warm_steps(ds))
    work += methods * pairs * score
    draws = int((ds.get("ranking") or {}).get("elbo_draws", ev["elbo_samples"]))
    other = _ranking_documents(name, ds)
    if other is None:  # VI's reference (stream a) and every method (stream b)
        work += (methods + 1) * pairs * draws
    else:  # VI-warm has no q there; VI fitted one problem per test model
        work += (methods - int(warm) + 1) * other * models * draws
        work += vi_draws(ds, other * models, fits=models)
    sets = int(ev["document_sets"])
    if sets > 0:
        set_pairs = sets * int(ev["documents"]) * models
        work += vi_draws(ds, set_pairs) + set_pairs * (int(ev["is_samples"]) + paper)
    if nuts_pairs > 0:  # NUTS's and VI's score_q on NUTS's combinations, NUTS's paper metric
        work += nuts_pairs * (2 * score + paper)
    return float(work)
