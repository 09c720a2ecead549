"""Held-out metrics against independent computations.

Reference values come from numpy float64 brute force over all 2^K latent states
(:func:`brute_force`), closed forms (binary q, factorised posteriors, expected exact match)
and scikit-learn; never from the module's own output.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score

from noisyor_bench.evaluation.heldout import (
    evaluate,
    exact_match,
    iw_log_likelihood,
    macro_f1,
    match_latents,
    nelbo,
    sampled_accuracy,
)
from noisyor_bench.models.noisyor.model import NoisyOR


# ---------------------------------------------------------------------------------- fixtures
def random_model(seed: int, d: int = 10, k: int = 4, leak: float = 0.05) -> NoisyOR:
    rng = np.random.default_rng(seed)
    theta = rng.gamma(1.0, 1.0, size=(d, k)) * (rng.random((d, k)) < 0.7)
    theta0 = np.full(d, leak)
    mu = rng.uniform(0.1, 0.5, size=k)
    return NoisyOR.from_numpy(theta, theta0, mu)


def sample_data(model: NoisyOR, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    z, x = model.sample(n, generator=torch.Generator().manual_seed(seed))
    return z.numpy().astype(np.uint8), x.numpy().astype(np.uint8)


def log_joint_np(p: dict[str, np.ndarray], x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """log p(x, z) for x (N, D), z (S, K): (N, S), plain numpy."""
    a = p["theta0"][None, :] + z @ p["theta"].T  # (S, D)
    with np.errstate(divide="ignore"):
        log_on = np.log(-np.expm1(-a))  # (S, D)
    pos = np.where(x[:, None, :] > 0, log_on[None], 0.0).sum(-1)
    neg = -((1 - x)[:, None, :] * a[None]).sum(-1)
    prior = (z * np.log(p["mu"]) + (1 - z) * np.log1p(-p["mu"])).sum(-1)
    return pos + neg + prior[None]


def brute_force(model: NoisyOR, x: np.ndarray, q: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Exact log p(x), posterior marginals and, for q, the ELBO and the variance of the
    Monte Carlo positive term, by enumerating the 2^K states in numpy."""
    p = model.numpy()
    k = model.K
    states = np.array(list(itertools.product([0, 1], repeat=k)), dtype=np.float64)
    x = x.astype(np.float64)
    lj = log_joint_np(p, x, states)  # (N, S)
    m = lj.max(1, keepdims=True)
    w = np.exp(lj - m)
    log_px = np.log(w.sum(1)) + m[:, 0]
    out = {"log_px": log_px, "marginals": (w @ states) / w.sum(1, keepdims=True)}
    if q is not None:
        qs = np.prod(np.where(states[None] > 0, q[:, None, :], 1 - q[:, None, :]), axis=-1)  # (N, S)
        with np.errstate(divide="ignore", invalid="ignore"):
            ent = -np.nansum(q * np.log(q) + (1 - q) * np.log(1 - q), axis=1)
        out["elbo"] = np.where(qs > 0, qs * lj, 0.0).sum(1) + ent
        a = p["theta0"][None, :] + states @ p["theta"].T
        with np.errstate(divide="ignore"):
            pos = np.where(x[:, None, :] > 0, np.log(-np.expm1(-a))[None], 0.0).sum(-1)  # (N, S)
        mean = (qs * pos).sum(1)
        out["pos_var"] = (qs * (pos - mean[:, None]) ** 2).sum(1)
    return out


@pytest.fixture(scope="module")
def small() -> tuple[NoisyOR, np.ndarray, np.ndarray]:
    model = random_model(0)
    z, x = sample_data(model, 150, seed=1)
    return model, z, x


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------------------------- F1 / EM
def test_macro_f1_matches_sklearn_including_empty_dimensions() -> None:
    rng = np.random.default_rng(3)
    t = (rng.random((60, 7)) < 0.3).astype(np.uint8)
    p = (rng.random((60, 7)) < 0.3).astype(np.uint8)
    t[:, 1] = 0
    p[:, 1] = 0  # no positives anywhere: zero_division rule
    p[:, 2] = 0  # true positives but none predicted: F1 = 0
    t[:, 3] = 0  # predicted positives but none true: F1 = 0
    expected = 100 * f1_score(t, p, average="macro", zero_division=1.0)
    assert macro_f1(t, p) == pytest.approx(expected, abs=1e-12)
    assert macro_f1(t, t) == 100.0
    assert macro_f1(np.zeros((5, 3)), np.zeros((5, 3))) == 100.0
    assert macro_f1(np.ones((5, 3)), np.zeros((5, 3))) == 0.0


def test_macro_f1_by_hand() -> None:
    t = np.array([[1, 0], [1, 1], [0, 1], [0, 0]])
    p = np.array([[1, 1], [0, 1], [0, 1], [0, 0]])
    # dim 0: TP=1 FP=0 FN=1 -> 2/3; dim 1: TP=2 FP=1 FN=0 -> 4/5
    assert macro_f1(t, p) == pytest.approx(100 * (2 / 3 + 4 / 5) / 2)


def test_exact_match_by_hand() -> None:
    t = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]])
    p = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 1], [0, 1, 0]])
    assert exact_match(t, p) == 75.0
    assert exact_match(torch.tensor(t), torch.tensor(t)) == 100.0
    with pytest.raises(ValueError):
        exact_match(t, p[:, :2])


def test_sampled_accuracy_expected_exact_match_closed_form() -> None:
    """E_{z_hat~q}[EM] = mean_n prod_k P(z_hat_k = z_k) exactly; check within MC error."""
    rng = np.random.default_rng(4)
    n, k, s = 200, 3, 400
    z = (rng.random((n, k)) < 0.4).astype(np.uint8)
    q = rng.uniform(0.0, 1.0, size=(n, k))
    q[:10] = z[:10]  # deterministic rows: always matched
    p_match = np.prod(np.where(z > 0, q, 1 - q), axis=1)
    expected = 100 * p_match.mean()
    se = 100 * math.sqrt((p_match * (1 - p_match)).sum() / s) / n
    _, em = sampled_accuracy(z, q, n_samples=s, generator=gen(5))
    assert abs(em - expected) < 5 * se
    f1, em = sampled_accuracy(z, z.astype(np.float64), n_samples=3, generator=gen(5))
    assert f1 == 100.0 and em == 100.0


# ---------------------------------------------------------------------------------- NELBO
def test_nelbo_binary_q_is_minus_log_joint(small: tuple[NoisyOR, np.ndarray, np.ndarray]) -> None:
    """q in {0,1}: every draw equals q, entropy 0, so -ELBO = -log p(x, z=q) exactly."""
    model, z, x = small
    q = z.astype(np.float64)
    expected = -np.array(
        [log_joint_np(model.numpy(), x[i : i + 1].astype(float), q[i : i + 1])[0, 0] for i in range(len(x))]
    )
    got = nelbo(model, x, q, n_samples=7, generator=gen(0)).numpy()
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_nelbo_infinite_not_nan_for_impossible_observation() -> None:
    """x_1 = 1 with zero leak and its only cause switched off by q = 0: ELBO = -inf."""
    model = NoisyOR.from_numpy(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0.0, 0.1]), np.array([0.3, 0.3]))
    x = np.array([[1, 0], [1, 0]])
    q = np.array([[0.0, 0.5], [1.0, 0.0]])
    got = nelbo(model, x, q, n_samples=5, generator=gen(0)).numpy()
    assert got[0] == math.inf and np.isfinite(got[1])
    assert not np.isnan(iw_log_likelihood(model, x, q, 5, gen(0)).numpy()).any()


def test_nelbo_matches_exact_elbo_within_mc_error(small: tuple[NoisyOR, np.ndarray, np.ndarray]) -> None:
    """With q = exact posterior marginals (numpy enumeration), the MC estimate agrees with the
    enumerated ELBO within 5 standard errors; the SE uses the exact per-point variance."""
    model, _, x = small
    ref0 = brute_force(model, x)
    q = ref0["marginals"]
    ref = brute_force(model, x, q)
    s = 200
    got = nelbo(model, x, q, n_samples=s, generator=gen(2)).numpy()
    se = math.sqrt(ref["pos_var"].sum() / s) / len(x)
    assert se > 0
    assert abs(got.mean() - (-ref["elbo"].mean())) < 5 * se
    # and it is not trivially equal to log p(x): the posterior does not factorise here
    assert (-ref["elbo"].mean()) - (-ref["log_px"].mean()) > 10 * se


def test_nelbo_chunking_does_not_change_values(small: tuple[NoisyOR, np.ndarray, np.ndarray]) -> None:
    model, _, x = small
    q = np.full((len(x), model.K), 0.3)
    a = nelbo(model, x, q, 20, gen(9)).numpy()
    b = nelbo(model, x, q, 20, gen(9), chunk_elements=97).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-12)


# ---------------------------------------------------------------------------------- IW bound
def factorised_model() -> NoisyOR:
    """Every observation has at most one parent, so p(z | x) factorises over k."""
    theta = np.zeros((9, 3))
    theta[0:3, 0] = [0.5, 1.2, 2.0]
    theta[3:6, 1] = [0.7, 0.3, 1.5]
    theta[6:8, 2] = [1.0, 2.5]  # x_8 has no parent
    return NoisyOR.from_numpy(theta, np.full(9, 0.1), np.array([0.2, 0.4, 0.3]))


def test_iw_and_nelbo_tight_when_posterior_factorises() -> None:
    model = factorised_model()
    _, x = sample_data(model, 80, seed=3)
    ref = brute_force(model, x)
    q = ref["marginals"]
    # p(x, z) / q(z) = p(x) for every z: the bound is exact for any S
    for s in (1, 13):
        got = iw_log_likelihood(model, x, q, n_samples=s, generator=gen(s)).numpy()
        np.testing.assert_allclose(got, ref["log_px"], rtol=1e-10, atol=1e-10)
    ref_q = brute_force(model, x, q)
    np.testing.assert_allclose(ref_q["elbo"], ref["log_px"], atol=1e-10)  # sanity of the reference
    s = 400
    got = nelbo(model, x, q, n_samples=s, generator=gen(1)).numpy()
    se = math.sqrt(ref_q["pos_var"].sum() / s) / len(x)
    assert abs(got.mean() + ref["log_px"].mean()) < 5 * se


def test_iw_binary_q_is_log_joint(small: tuple[NoisyOR, np.ndarray, np.ndarray]) -> None:
    model, z, x = small
    expected = np.array(
        [
            log_joint_np(model.numpy(), x[i : i + 1].astype(float), z[i : i + 1].astype(float))[0, 0]
            for i in range(len(x))
        ]
    )
    got = iw_log_likelihood(model, x, z.astype(np.float64), n_samples=4, generator=gen(0)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_iw_bound_properties(small: tuple[NoisyOR, np.ndarray, np.ndarray]) -> None:
    """IW(S) <= log p(x) (in expectation), increases with S, >= ELBO; IW(1) estimates the ELBO."""
    model, _, x = small
    ref0 = brute_force(model, x)
    q = ref0["marginals"]
    ref = brute_force(model, x, q)
    means, sems = {}, {}
    for s in (1, 10, 100, 1000):
        v = iw_log_likelihood(model, x, q, n_samples=s, generator=gen(100 + s)).numpy()
        means[s], sems[s] = v.mean(), v.std() / math.sqrt(len(v))
    log_px, elbo = ref["log_px"].mean(), ref["elbo"].mean()
    assert elbo < log_px
    assert abs(means[1] - elbo) < 5 * sems[1]
    assert means[1] < means[10] < means[100] < means[1000]
    assert means[100] > elbo
    assert means[1000] <= log_px + 5 * sems[1000]
    assert log_px - means[1000] < 0.05 * (log_px - elbo)  # S = 1000 nearly closes the gap


# ---------------------------------------------------------------------------------- evaluate()
def test_evaluate_exact_metrics_and_gap(small: tuple[NoisyOR, np.ndarray, np.ndarray]) -> None:
    model, z, x = small
    rng = np.random.default_rng(7)
    q = rng.uniform(0.0, 1.0, size=(len(x), model.K))
    q[:5, 0] = 0.0
    q[5:10, 1] = 1.0
    ref = brute_force(model, x, q)
    out = evaluate(model, x, q, z_true=z, n_samples=50, iw_samples=50, seed=3)
    assert out["exact_nll"] == pytest.approx(-ref["log_px"].mean(), rel=1e-10)
    assert out["exact_elbo"] == pytest.approx(ref["elbo"].mean(), rel=1e-10)
    assert out["exact_nelbo"] == -out["exact_elbo"]
    assert out["exact_gap"] >= 0
    assert out["exact_gap"] == pytest.approx(out["exact_nelbo"] - out["exact_nll"], rel=1e-9)
    assert out["mc_gap"] == pytest.approx(out["nelbo"] - out["exact_nll"])
    assert all(np.isfinite(out[k]) for k in ("nelbo", "iw_nll", "f1", "em", "f1_map", "em_map"))
    assert out["f1_map"] == pytest.approx(macro_f1(z, q > 0.5))
    assert out["em_map"] == pytest.approx(exact_match(z, q > 0.5))


def test_evaluate_gap_zero_for_exact_factorised_posterior() -> None:
    model = factorised_model()
    z, x = sample_data(model, 50, seed=4)
    q = brute_force(model, x)["marginals"]
    out = evaluate(model, x, q, z_true=z, n_samples=10, iw_samples=10, seed=0)
    assert out["exact_gap"] >= 0
    assert out["exact_gap"] == pytest.approx(0.0, abs=1e-10)
    assert out["iw_nll"] == pytest.approx(out["exact_nll"], rel=1e-10)


def test_evaluate_deterministic_and_seed_dependent(small: tuple[NoisyOR, np.ndarray, np.ndarray]) -> None:
    model, z, x = small
    q = np.full((len(x), model.K), 0.4)
    a = evaluate(model, x, q, z_true=z, n_samples=20, iw_samples=20, seed=11)
    b = evaluate(model, torch.tensor(x), torch.tensor(q), z_true=z, n_samples=20, iw_samples=20, seed=11)
    c = evaluate(model, x, q, z_true=z, n_samples=20, iw_samples=20, seed=12)
    assert a == b
    assert a["nelbo"] != c["nelbo"] and a["iw_nll"] != c["iw_nll"] and a["f1"] != c["f1"]


def test_evaluate_optional_parts(small: tuple[NoisyOR, np.ndarray, np.ndarray]) -> None:
    model, z, x = small
    q = np.full((len(x), model.K), 0.4)
    out = evaluate(model, x, q, z_true=None, n_samples=5, iw_samples=0, seed=0, exact_max_k=model.K - 1)
    for key in (
        "f1",
        "em",
        "f1_map",
        "em_map",
        "exact_nll",
        "exact_elbo",
        "exact_nelbo",
        "exact_gap",
        "mc_gap",
        "iw_nll",
    ):
        assert out[key] is None, key
    out = evaluate(model, x, q, z_true=z[:, :2], n_samples=5, iw_samples=0, seed=0)
    assert out["f1"] is None and out["em"] is None
    with pytest.raises(ValueError, match="q has shape"):
        evaluate(model, x, q[:, :2])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        evaluate(model, x, q + 1.0)


# ---------------------------------------------------------------------------------- matching
def test_match_latents_recovers_permutation_and_fixes_f1(
    small: tuple[NoisyOR, np.ndarray, np.ndarray],
) -> None:
    model, z, x = small
    theta = model.numpy()["theta"]
    sigma = np.array([2, 0, 3, 1])  # learned column c is true column sigma[c]
    rng = np.random.default_rng(0)
    learned = theta[:, sigma] * rng.uniform(0.8, 1.2, size=theta.shape)
    perm = match_latents(learned, theta)
    np.testing.assert_array_equal(sigma[perm], np.arange(4))  # perm[j] is the learned column of true j
    q_true_order = z.astype(np.float64)
    q_learned_order = q_true_order[:, sigma]
    plain = evaluate(model, x, q_learned_order, z_true=z, n_samples=3, iw_samples=0, seed=0)
    matched = evaluate(
        model, x, q_learned_order, z_true=z, n_samples=3, iw_samples=0, seed=0, permutation=perm
    )
    assert matched["f1"] == 100.0 and matched["em"] == 100.0
    assert plain["f1"] < 100.0
    with pytest.raises(ValueError, match="cannot match"):
        match_latents(learned[:, :3], theta)


def test_match_latents_handles_zero_column() -> None:
    theta = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    perm = match_latents(theta[:, [1, 2, 0]], theta)
    assert sorted(perm.tolist()) == [0, 1, 2]
    assert perm[0] == 2 and perm[1] == 0


def test_nelbo_on_the_nll_rows_is_the_nelbo_of_exactly_those_rows() -> None:
    """``nll_rows_nelbo`` averages the NELBO over the rows the NLL scored (here a subset of the
    sparse rows an exact path affords), so NELBO - NLL is a gap on the same rows. A 0/1 posterior
    makes the NELBO deterministic: the subset's own evaluation is an independent value."""
    from noisyor_bench.evaluation.noisyor_likelihood import LikelihoodConfig, scored_rows

    model = random_model(5, d=16, k=17)  # K > 16: no enumeration; 82 of 120 rows afford an exact path
    _, x = sample_data(model, 120, seed=6)
    q = (np.random.default_rng(8).uniform(size=(len(x), model.K)) < 0.2).astype(np.float64)
    spec = {"use_ais": False, "max_rows": 15, "min_rows": 1}
    out = evaluate(model, x, q, n_samples=4, iw_samples=0, seed=1, exact_max_k=0, nll=spec)
    rows, _ = scored_rows(x, model.K, LikelihoodConfig.from_mapping(spec))
    assert out["nll_rows"] == rows.size == 15
    alone = evaluate(model, x[rows], q[rows], n_samples=4, iw_samples=0, seed=2, exact_max_k=0)
    assert out["nll_rows_nelbo"] == pytest.approx(alone["nelbo"], rel=1e-12)
    assert out["nll_rows_nelbo"] != pytest.approx(out["nelbo"], rel=1e-3)  # the subset is not every row
    assert "nll_rows_nelbo" not in evaluate(model, x, q, n_samples=4, iw_samples=0, seed=1, exact_max_k=0)
