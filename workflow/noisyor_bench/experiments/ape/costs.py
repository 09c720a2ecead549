"""APE's compute jobs for the cost model (:mod:`noisyor_bench.experiments.costs`).

Why here: APE's costs follow its own budgets.  Encoder training costs ~ its optimiser steps
(the epochs' steps over documents x models, capped by ``max_steps``:
:func:`noisyor_bench.experiments.ape.train.training_config`); VI ~ its step cap; NUTS ~
combinations x (warm-up + samples) x 2^tree depth (an upper bound: trees stop earlier);
the evaluation ~ its importance and ELBO samples; the data ~ the Gibbs sweeps generating it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.costs import BASE_MEM_MB, Job

COMPUTE_RULES = ("ape_train", "ape_vi", "ape_nuts", "ape_evaluate")
BUDGET_KEYS = {"standard": "standard_training", "ape-naive": "naive_training"}
#: Documents of the datasets without a configured count: product reviews, the authors' validation
#: and test splits (docs/papers.md). Steps are capped by ``max_steps`` in the quick grid, so the
#: count decides how far the paper grid's steps are from the measured ones.
DOCUMENTS = {"mdreviews": 1585}
DEFAULT_DOCUMENTS = 1000


def _section(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return dict(cfg["grids"][cfg["grid"]].get("ape") or {})


def train_steps(name: str, ds: Mapping[str, Any], method: str) -> int:
    """Optimiser steps of one encoder's training (as experiments/ape/train.py counts them)."""
    key = BUDGET_KEYS.get(method)
    section = ds[key] if key and ds.get(key) else ds["training"]
    docs = int((ds.get("data") or {}).get("documents", DOCUMENTS.get(name, DEFAULT_DOCUMENTS)))
    models = 1 if method == "standard" else int(ds["theta_pool"]["size"])
    steps = max(
        1,
        math.ceil(
            float(section.get("epochs", 2)) * math.ceil(docs * models / int(section.get("batch_size", 100)))
        ),
    )
    return min(steps, int(section["max_steps"])) if section.get("max_steps") else steps


def jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """APE's compute jobs in the active grid of ``cfg``."""
    ape = _section(cfg)
    out = []
    for name, ds in (ape.get("datasets") or {}).items():
        pool = int(ds["theta_pool"]["size"])
        ev, nuts, vi = ds.get("evaluation") or {}, ds.get("nuts") or {}, ds.get("vi") or {}
        for seed in ape.get("seeds") or []:
            # one chain per seed: VI, then NUTS (from VI's draw) beside the encoders, then the
            # evaluation of both (the encoders do not wait for VI: an upper bound by VI's minutes)
            chain = f"{name}_seed{seed}"
            for method in ds["encoders"]:
                n = 1 if method == "standard" else pool
                out.append(
                    Job(
                        "ape_train",
                        f"{name}_{method}_n{n}_seed{seed}",
                        float(train_steps(name, ds, method)),
                        key=(name, method),
                        cuda=True,
                        mem_mb=BASE_MEM_MB + pool // 20,
                        chain=chain,
                        stage=1,
                    )
                )
            out.append(Job("ape_vi", chain, float(vi.get("max_steps", 1)), key=(name,), chain=chain))
            # issue 32: nuts.documents (one combination per document) and nuts.seeds (a subset)
            sampled = int(nuts.get("documents") or nuts.get("combinations", 0))
            nuts_seeds = nuts.get("seeds")
            if sampled > 0 and (nuts_seeds is None or int(seed) in [int(s) for s in nuts_seeds]):
                work = (
                    sampled * (int(nuts["warmup"]) + int(nuts["samples"])) * 2 ** int(nuts["max_tree_depth"])
                )
                out.append(Job("ape_nuts", chain, float(work), key=(name,), chain=chain, stage=1))
            work = (
                len(ds["encoders"])
                * (int(ev.get("is_samples", 1)) + int(ev.get("elbo_samples", 1)))
                * int(ev.get("timing_repeats", 1))
            )
            out.append(Job("ape_evaluate", chain, float(work), key=(name,), cell=False, chain=chain, stage=2))
    return out
