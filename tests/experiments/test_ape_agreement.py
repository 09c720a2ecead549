"""APE's agreement measure above its noise: the VI-vs-VI ceiling is computed from the
seeds' references (by hand below), the threshold is 40 of 45 pairs, and the ranking reference
sums the right combinations (checked against a closed form at a point-mass q)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.stats import multinomial

from noisyor_bench.evaluation.ranking import ceiling_sufficient, reference_ceilings
from noisyor_bench.experiments.ape.pairs import evaluation_combinations
from noisyor_bench.experiments.ape.ranking import (
    RankingSet,
    model_elbo_totals,
    ranking_agreement,
    ranking_set,
    ranking_settings,
)
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.topics.dirichlet_laplace import laplace_dirichlet_prior
from noisyor_bench.reporting.ape.agreement import ranking_reduction, seed_ceilings


def _agree_by_hand(a: list[float], b: list[float]) -> int:
    """Pairs (i < j) ordered alike, by enumeration (no ties in these vectors)."""
    return sum((a[i] > a[j]) == (b[i] > b[j]) for i, j in itertools.combinations(range(len(a)), 2))


TEN = list(range(10))  # the reference ranking 0 < 1 < ... < 9
ONE_SWAP = [1, 0, *range(2, 10)]  # swaps models 0 and 1: 44 of 45
THREE_SWAPS = [1, 0, 3, 2, 5, 4, *range(6, 10)]  # 42 of 45
REVERSED = TEN[::-1]  # 0 of 45


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        # seed -> totals; expected ceiling per seed: median over the other seeds of the agreement
        ({0: TEN, 1: ONE_SWAP}, {0: 44.0, 1: 44.0}),
        ({0: TEN, 1: ONE_SWAP, 2: THREE_SWAPS}, {0: 43.0, 1: 43.5, 2: 42.5}),  # 44, 42, 43
        ({0: TEN, 1: REVERSED, 2: TEN}, {0: 22.5, 1: 0.0, 2: 22.5}),
        ({0: TEN}, {}),  # one seed: no cross-seed ceiling
    ],
)
def test_reference_ceilings_are_the_median_pairwise_agreement(runs, expected):
    assert reference_ceilings(runs) == expected
    if len(runs) > 1:
        by_hand = {
            s: float(np.median([_agree_by_hand(runs[s], runs[o]) for o in runs if o != s])) for s in runs
        }
        assert by_hand == expected


@pytest.mark.parametrize(
    ("ceiling", "pairs", "judged"),
    [
        (45.0, 45, True),
        (40.0, 45, True),
        (39.5, 45, False),
        (39.0, 45, False),
        (0.0, 45, False),
        (float("nan"), 45, False),
        (9.0, 10, True),  # 5 models: 40/45 of 10 pairs is 8.9
        (8.0, 10, False),
        (3.0, 0, False),
    ],
)
def test_a_claim_is_judged_only_at_a_ceiling_of_40_of_45(ceiling, pairs, judged):
    assert ceiling_sufficient(ceiling, pairs) is judged


def _record(dataset, seed, vi_totals, mc, is_totals=None):
    return {
        "dataset": dataset,
        "seed": seed,
        "ranking": {
            "vi_totals": vi_totals,
            "vi_is_totals": is_totals or vi_totals,
            "mc_ceiling": mc,
            "documents": 30,
            "elbo_draws": 1000,
        },
    }


def test_seed_ceilings_across_seeds_and_one_seed_falls_back_to_monte_carlo():
    records = [
        _record("toybars", 0, TEN, 45),
        _record("toybars", 1, ONE_SWAP, 44, is_totals=REVERSED),
        _record("toybars", 2, THREE_SWAPS, 43),
        _record("mdreviews", 0, TEN, 38),
        {"dataset": "mdreviews", "seed": 1},  # a run from before the ranking record: no ceiling
    ]
    out = seed_ceilings(records)
    assert out[("toybars", 0)]["agree_vi_ceiling"] == 43.0  # median(44, 42)
    assert out[("toybars", 1)]["agree_vi_mc_ceiling"] == 44.0
    # agree_is's reference: seed 1 reversed -> 0 of 45 with seed 0, 3 with seed 2 (its 3 swaps)
    assert out[("toybars", 0)]["agree_is_ceiling"] == 21.0  # median(0, 42)
    assert out[("toybars", 1)]["agree_is_ceiling"] == 1.5  # median(0, 3)
    assert out[("mdreviews", 0)]["agree_vi_ceiling"] == 38.0  # one seed: its Monte Carlo ceiling
    assert ("mdreviews", 1) not in out


K, V, DOCS, MODELS = 3, 6, 4, 4


def _tiny() -> tuple[dict[str, np.ndarray], RankingSet]:
    rng = np.random.default_rng(3)
    arrays = {
        "documents": rng.integers(0, 4, size=(DOCS, V)),
        "test_thetas": rng.dirichlet(np.ones(V), size=(MODELS, K)),
    }
    arrays["documents"][:, 0] += 1  # no empty document
    return arrays, ranking_set(arrays, -1, torch.float64)


def test_ranking_set_is_every_document_with_every_model():
    arrays, ranking = _tiny()
    assert ranking.x.shape == (DOCS * MODELS, V) and ranking.thetas.shape == (MODELS, K, V)
    np.testing.assert_array_equal(ranking.doc_index, np.repeat(np.arange(DOCS), MODELS))
    np.testing.assert_array_equal(ranking.model_index, np.tile(np.arange(MODELS), DOCS))
    np.testing.assert_array_equal(ranking.x[ranking.rows(1)].numpy(), arrays["documents"])
    assert ranking_set(arrays, 2, torch.float64).x.shape[0] == 2 * MODELS
    with pytest.raises(DataError, match="ranking.documents = 9"):
        ranking_set(arrays, 9, torch.float64)
    # the evaluation combinations (per-pair topics) give the same set, each model held once
    combos = evaluation_combinations({**arrays, "eval_documents": np.arange(DOCS)})
    again = RankingSet.from_combinations(combos)
    np.testing.assert_array_equal(again.thetas.numpy(), ranking.thetas.numpy())
    np.testing.assert_array_equal(again.model_index, ranking.model_index)


def test_model_totals_at_a_point_mass_q_match_the_closed_form():
    """sigma -> 0: ELBO = log Mult(x | softmax(mu) theta) - KL(q || prior), KL in closed form
    (written out here with numpy; the log-sigma terms kept exactly)."""
    arrays, combos = _tiny()
    rng = np.random.default_rng(5)
    mu = rng.normal(size=(combos.x.shape[0], K))
    log_sigma = np.full_like(mu, -12.0)
    mean, var = (t.numpy() for t in laplace_dirichlet_prior(0.01, K, dtype=torch.float64))
    expected = np.zeros(MODELS)
    for i in range(combos.x.shape[0]):
        x = combos.x[i].numpy()
        pi = np.exp(mu[i] - mu[i].max())
        p = (pi / pi.sum()) @ arrays["test_thetas"][combos.model_index[i]]
        sigma2 = np.exp(2 * log_sigma[i])
        kl = 0.5 * np.sum(sigma2 / var + (mu[i] - mean) ** 2 / var - 1 + np.log(var) - 2 * log_sigma[i])
        expected[combos.model_index[i]] += multinomial.logpmf(x, int(x.sum()), p) - kl
    got = model_elbo_totals(
        combos, torch.as_tensor(mu), torch.as_tensor(log_sigma), 250, torch.Generator().manual_seed(0)
    )
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_ranking_agreement_records_the_reference_and_the_monte_carlo_ceiling():
    arrays, combos = _tiny()
    rng = np.random.default_rng(9)
    vi = (torch.as_tensor(rng.normal(size=(combos.x.shape[0], K))), torch.full((combos.x.shape[0], K), -12.0))
    # a method whose q is VI's: at a point mass its totals are VI's exactly, whatever the draws
    out = ranking_agreement(combos, {"vi": vi, "copy": vi}, 7, seed=1)
    assert out["pairs"] == math.comb(MODELS, 2)
    assert out["mc_ceiling"] == out["pairs"] == out["methods"]["copy"]["agree"]
    np.testing.assert_allclose(out["methods"]["vi"]["totals"], out["vi_totals"], rtol=1e-6)
    assert out["elbo_draws"] == 7 and out["documents"] == DOCS
    with pytest.raises(DataError, match="no VI posterior"):
        ranking_agreement(combos, {"copy": vi}, 7, seed=1)


def test_ranking_settings_and_the_protocol_deviation_text():
    section = {"evaluation": {"documents": 30, "elbo_samples": 50}}
    assert ranking_settings(section) == (None, 50)
    assert ranking_settings({**section, "ranking": {"documents": "all", "elbo_draws": 1000}}) == (-1, 1000)
    with pytest.raises(ConfigError, match="ranking.documents"):
        ranking_settings({**section, "ranking": {"documents": 1}})
    with pytest.raises(ConfigError, match="ranking.elbo_draws"):
        ranking_settings({**section, "ranking": {"elbo_draws": 0}})
    short = ranking_reduction({**section, "ranking": {"elbo_draws": 1000}}, 3)
    assert "the 30 evaluation documents" in short and "1,000 ELBO draws" in short and "3 seed(s)" in short
    assert ranking_reduction({**section, "ranking": {"documents": 300, "elbo_draws": 1000}}, 5) == ""
    assert ranking_reduction({**section, "ranking": {"documents": "all", "elbo_draws": 1000}}, 5) == ""
