"""APE's evaluation settings: NUTS's combinations span distinct documents, and the warm
start runs at the paper's rate, VI's own rate and the authors' lr 0.1 x 600 steps."""

from __future__ import annotations

import numpy as np
import pytest
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


def test_chain_halves_score_each_half_of_the_samples_apart():
    """NUTS's convergence check: the paper-style value of the first and of the second half of the
    chain's samples, each the metric of that half alone (a chain that jumps halfway shows it)."""
    from noisyor_bench.experiments.ape.evaluate import _generator, chain_halves
    from noisyor_bench.experiments.ape.pairs import EvalCombinations
    from noisyor_bench.models.topics.logistic_normal import paper_prior
    from noisyor_bench.models.topics.paper_metric import paper_metric_terms

    gen = torch.Generator().manual_seed(0)
    # drawn from its own seed (Dirichlet.sample would read the global stream, which the tests run
    # before in the same process move: the halves' difference then varied from run to run)
    theta = torch.as_tensor(np.random.default_rng(1).dirichlet(np.full(8, 0.5), size=(3, 2)))
    x = torch.randint(1, 4, (3, 8), generator=gen).double()
    combos = EvalCombinations(x, theta, np.arange(3), np.zeros(3, dtype=int))
    jump = torch.tensor([3.0, -3.0]).expand(10, 3, 2)  # the chain jumps at sample 10 to topic 1
    h = torch.cat([torch.zeros(10, 3, 2), jump]).double()
    ev = {"paper_draws": 4, "paper_repeats": 3}
    first, second = chain_halves(combos, h, ev, seed=1)
    stream = _generator(1, "ape-eval-paper-halves")  # one stream, the halves in chain order
    by_hand = [paper_metric_terms(x, theta, part, paper_prior(2), 4, 3, stream) for part in (h[:10], h[10:])]
    assert first == pytest.approx(float(by_hand[0]["total"].mean()), abs=1e-12)
    assert second == pytest.approx(float(by_hand[1]["total"].mean()), abs=1e-12)
    assert abs(second - first) > 0.1  # the halves see two different states (0.78 nats apart here)
    assert chain_halves(combos, h[:1], ev, seed=1) is None
