"""APE's evaluation settings: NUTS's combinations span distinct documents, and the warm
start runs at the paper's rate, VI's own rate and the authors' lr 0.1 x 600 steps."""

from __future__ import annotations

import numpy as np
import torch

from noisyor_bench.experiments.ape.baselines import nuts_index, select_combinations
from noisyor_bench.experiments.ape.evaluate import warm_variant_configs
from noisyor_bench.experiments.ape.pairs import evaluation_combinations


def _combos(n_docs: int = 30, n_models: int = 10):
    rng = np.random.default_rng(0)
    arrays = {
        "documents": rng.integers(0, 3, size=(40, 6)),
        "eval_documents": np.arange(n_docs),
        "test_thetas": rng.dirichlet(np.ones(6), size=(n_models, 2)),
    }
    return evaluation_combinations(arrays)


def test_nuts_documents_are_distinct_and_cycle_through_the_models():
    combos = _combos()
    index = nuts_index(combos, {"documents": 10})
    sub = select_combinations(combos, index)
    assert sorted(set(sub.doc_index.tolist())) == list(range(10))
    assert sorted(sub.model_index.tolist()) == list(range(10))  # every model once
    assert torch.equal(sub.x[3], combos.x[33]) and torch.equal(sub.theta[3], combos.theta[33])
    assert list(nuts_index(combos, {"documents": 50})) == [d * 10 + d % 10 for d in range(30)]  # capped


def test_nuts_without_documents_takes_the_first_combinations():
    combos = _combos()
    index = nuts_index(combos, {"combinations": 10})
    assert list(index) == list(range(10))
    assert set(select_combinations(combos, index).doc_index.tolist()) == {0}  # one document: the old design


def test_warm_start_variants():
    section = {
        "vi": {"lr": 0.05, "warm_lr": 0.0005, "max_steps": 6000, "warm_authors": {"lr": 0.1, "steps": 600}}
    }
    configs = warm_variant_configs(section)
    assert configs["vi_lr"].learning_rate == 0.05 and configs["vi_lr"].stop_rule
    assert configs["vi_lr"].max_steps == 6000
    authors = configs["authors"]
    assert (authors.learning_rate, authors.max_steps, authors.stop_rule) == (0.1, 600, False)
    same = warm_variant_configs(
        {"vi": {"lr": 0.0005, "warm_lr": 0.0005, "warm_authors": {"lr": 0.1, "steps": 0}}}
    )
    assert same == {}  # VI's rate is the paper's, and the authors' row is switched off
