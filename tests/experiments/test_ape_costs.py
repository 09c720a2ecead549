"""The price of APE's VI, NUTS and evaluation jobs (noisyor_bench.experiments.ape.costs): the
evaluation job runs the agreement reference (``ranking``), VI on random document sets and the
warm starts, and is priced by them."""

from __future__ import annotations

import copy

import pytest
from conftest import REPO

from noisyor_bench.experiments.ape import baselines as ape_baselines
from noisyor_bench.experiments.ape import costs as ape_costs
from noisyor_bench.experiments.ape import evaluate as ape_evaluate
from noisyor_bench.experiments.config import load_config

#: A dataset section as paper-ape-toybars sets it: ranking on 300 documents, 10
#: document sets, three warm starts, NUTS on 30 documents in seed 0.
TOYBARS = {
    "data": {"documents": 500, "test_models": 10},
    "theta_pool": {"size": 50000},
    "encoders": ["standard", "ape-naive", "ape-model-aware"],
    "training": {"epochs": 2, "batch_size": 100, "max_steps": 20000},
    "evaluation": {
        "documents": 30,
        "is_samples": 1000,
        "paper_samples": 100,
        "paper_draws": 10,
        "paper_repeats": 10,
        "elbo_samples": 100,
        "timing_repeats": 5,
        "document_sets": 10,
    },
    "ranking": {"documents": 300, "elbo_draws": 1000},
    "vi": {
        "lr": 0.01,
        "warm_lr": 0.0005,
        "max_steps": 100000,
        "samples": 1,
        "warm_authors": {"lr": 0.1, "steps": 600},
    },
    "nuts": {"documents": 30, "warmup": 100, "samples": 100, "max_tree_depth": 10, "seeds": [0]},
}


@pytest.fixture(scope="module")
def toybars():
    """A grid with that dataset and three seeds."""
    return {"grid": "g", "grids": {"g": {"ape": {"seeds": [0, 1, 2], "datasets": {"toybars": TOYBARS}}}}}


def _ds(cfg, **sections):
    ds = copy.deepcopy(cfg["grids"][cfg["grid"]]["ape"]["datasets"]["toybars"])
    for name, values in sections.items():
        ds[name] = {**(ds.get(name) or {}), **values}
    return ds


def _evaluate(cfg, **sections):
    return ape_costs.evaluate_draws("toybars", _ds(cfg, **sections))


def test_the_paper_ape_toybars_grid_is_priced():
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "paper-ape-toybars"})
    jobs = ape_costs.jobs(cfg)
    assert {j.rule for j in jobs} == {"ape_train", "ape_vi", "ape_nuts", "ape_evaluate"}
    assert all(j.work > 0 for j in jobs)


def test_constants_are_the_evaluation_codes():
    assert ape_costs.VI_EVAL_DRAWS_PER_STEP == ape_baselines.VI_EVAL_SAMPLES / ape_baselines.VI_EVAL_EVERY
    assert ape_costs.WARM_FROM == ape_evaluate.WARM_FROM


def test_more_ranking_documents_cost_proportionally_more(toybars):
    """Other documents than the evaluation's: VI fitted there and every method's draws, both
    linear in the documents."""
    work = {n: _evaluate(toybars, ranking={"documents": n}) for n in (100, 200, 300)}
    assert work[300] > work[200] > work[100]
    assert work[300] - work[200] == pytest.approx(work[200] - work[100], rel=1e-12)
    # the reference on the evaluation documents reuses VI's fit: cheaper than one more document
    assert _evaluate(toybars, ranking={"documents": 30}) < _evaluate(toybars, ranking={"documents": 31})


def test_ranking_draws_are_priced_per_document_and_model(toybars):
    """Each extra ELBO draw costs one draw per (ranking document, test model) for VI's reference
    and for each method (3 encoders and VI; VI-warm has no q on other documents)."""
    one = _evaluate(toybars, ranking={"elbo_draws": 1000})
    two = _evaluate(toybars, ranking={"elbo_draws": 2000})
    assert two - one == pytest.approx(1000 * 300 * 10 * (3 + 1 + 1))


def test_more_document_sets_cost_proportionally_more(toybars):
    work = {n: _evaluate(toybars, evaluation={"document_sets": n}) for n in (0, 5, 10, 15)}
    assert work[15] - work[10] == pytest.approx(work[10] - work[5], rel=1e-12)
    assert work[5] - work[0] > work[10] - work[5] > 0  # plus the fit's fixed cost per step
    # an extra set's VI: 30 documents x 10 models for max_steps steps, then its IS and paper draws
    ds = _ds(toybars)
    per_pair_step = ape_costs.VI_STEP_DRAWS + ape_costs.VI_EVAL_DRAWS_PER_STEP
    pairs = 30 * 10
    expected = pairs * (100_000 * per_pair_step + 1000 + 10 * 10)
    assert work[10] - work[5] == pytest.approx(5 * expected)
    assert ds["vi"]["max_steps"] == 100_000 and ds["evaluation"]["is_samples"] == 1000


def test_ape_vi_scales_with_steps_and_evaluation_pairs(toybars):
    ds = _ds(toybars)
    pairs = ape_costs.eval_pairs(ds)
    assert pairs == 30 * 10
    assert ape_costs.vi_draws(ds, pairs, steps=2000) == pytest.approx(
        2 * ape_costs.vi_draws(ds, pairs, steps=1000)
    )
    (vi,) = [j for j in ape_costs.jobs(toybars) if j.rule == "ape_vi" and j.job == "toybars_seed0"]
    bigger = copy.deepcopy(toybars)
    bigger["grids"]["g"]["ape"]["datasets"]["toybars"] = _ds(toybars, evaluation={"documents": 60})
    (vi2,) = [j for j in ape_costs.jobs(bigger) if j.rule == "ape_vi" and j.job == "toybars_seed0"]
    assert vi2.work > vi.work


def test_nuts_follows_documents_and_seeds(toybars):
    jobs = ape_costs.jobs(toybars)
    nuts = [j for j in jobs if j.rule == "ape_nuts"]
    assert [j.job for j in nuts] == ["toybars_seed0"]  # nuts.seeds: [0]
    assert nuts[0].work == 30 * (100 + 100) * 2**10  # one combination per document, depth 10
    # documents beyond the evaluation's are not sampled (experiments.ape.baselines.nuts_index)
    assert ape_costs.nuts_pairs(_ds(toybars, nuts={"documents": 300})) == 30
    assert ape_costs.nuts_pairs({"evaluation": {"documents": 30}, "data": {"test_models": 10}}) == 0
    # the seed that sampled NUTS scores its combinations again
    evals = {j.job: j.work for j in jobs if j.rule == "ape_evaluate"}
    assert evals["toybars_seed0"] > evals["toybars_seed1"] == evals["toybars_seed2"]


def test_warm_starts_are_priced_per_variant(toybars):
    """vi-warm, VI's own rate (it differs from warm_lr here) and the authors' 600 steps."""
    base = _evaluate(toybars)
    same_rate = _evaluate(toybars, vi={"lr": 0.0005})  # no separate run at VI's own rate
    no_authors = _evaluate(toybars, vi={"warm_authors": {"lr": 0.1, "steps": 0}})
    ds = _ds(toybars)
    assert base - same_rate == pytest.approx(ape_costs.vi_draws(ds, 300))
    assert base - no_authors == pytest.approx(ape_costs.vi_draws(ds, 300, steps=600))
