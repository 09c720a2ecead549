"""APE encoders: the appendix's parameter counts pin the layout; the statistics are what the paper says."""

import numpy as np
import pytest
import torch

from noisyor_bench.inference.topics.ape_encoders import (
    ENCODER_KINDS,
    build_encoder,
    count_parameters,
    model_aware_statistic,
)
from noisyor_bench.infra.errors import ConfigError, DataError

# Appendix A.2: "24,721 on the synthetic data and 316,781 on the real data; this is compared to
# 16,721 and 19,781 parameters for model-aware APE".  The naive counts are not in the paper:
# 2 x 100 hidden units on a (K + 1) V input, the same heads (our statement, docs/ape.md).
PAPER_COUNTS = {
    ("model_aware", 100, 20): 16_721,
    ("standard", 100, 20): 24_721,
    ("model_aware", 3000, 30): 19_781,
    ("standard", 3000, 30): 316_781,
}
NAIVE_COUNTS = {(100, 20): 224_721, (3000, 30): 9_316_781}


@pytest.mark.parametrize(("key", "expected"), sorted(PAPER_COUNTS.items()))
def test_parameter_counts_match_the_paper(key, expected):
    kind, vocab, topics = key
    assert count_parameters(build_encoder(kind, vocab, topics)) == expected


@pytest.mark.parametrize(("key", "expected"), sorted(NAIVE_COUNTS.items()))
def test_naive_parameter_counts(key, expected):
    vocab, topics = key
    # (K + 1) V * 100 + 100 first layer, the rest as the model-aware encoder
    first = (topics + 1) * vocab * 100 + 100
    rest = 200 + 100 * 100 + 100 + 200 + 2 * (100 * topics + topics + 2 * topics) + 1
    assert first + rest == expected
    assert count_parameters(build_encoder("naive", vocab, topics)) == expected


def test_model_aware_statistic_is_normalised_theta_times_x():
    gen = torch.Generator().manual_seed(0)
    x = torch.poisson(torch.full((4, 7), 2.0), generator=gen).double()
    theta = torch.as_tensor(np.random.default_rng(0).dirichlet(np.ones(7), size=(4, 3)))  # its own seed
    stat = model_aware_statistic(x, theta)
    for b in range(4):
        raw = torch.stack([(theta[b, k] * x[b]).sum() for k in range(3)])
        torch.testing.assert_close(stat[b], raw / raw.sum())
    shared = model_aware_statistic(x, theta[0])
    torch.testing.assert_close(shared[2], model_aware_statistic(x[2:3], theta[0:1])[0])
    assert torch.all(model_aware_statistic(torch.zeros(2, 7, dtype=torch.float64), theta[:2]) == 0)


@pytest.mark.parametrize("kind", ENCODER_KINDS)
def test_forward_shapes_and_seeded_init(kind):
    enc = build_encoder(kind, 12, 3, hidden_units=8, seed=4, dtype=torch.float64)
    same = build_encoder(kind, 12, 3, hidden_units=8, seed=4, dtype=torch.float64)
    x = torch.rand(5, 12, dtype=torch.float64)
    theta = torch.softmax(torch.randn(5, 3, 12, dtype=torch.float64), -1)
    mu, log_sigma = enc(x, theta)
    assert mu.shape == log_sigma.shape == (5, 3)
    for a, b in zip(enc.parameters(), same.parameters()):
        assert torch.equal(a, b)
    enc.eval()
    mu_shared, _ = enc(x, theta[0])
    mu_batched, _ = enc(x, theta[0].expand(5, 3, 12))
    torch.testing.assert_close(mu_shared, mu_batched)


def test_bad_inputs_name_the_problem():
    with pytest.raises(ConfigError, match="unknown APE encoder kind"):
        build_encoder("template", 10, 3)
    enc = build_encoder("model_aware", 10, 3)
    with pytest.raises(DataError, match="needs theta"):
        enc(torch.ones(2, 10))
    with pytest.raises(DataError, match=r"x must be"):
        enc(torch.ones(2, 9), torch.ones(3, 10))


def test_encode_uses_running_statistics_so_pairs_do_not_interact():
    from noisyor_bench.inference.topics.ape_encoders import encode

    enc = build_encoder("model_aware", 12, 3, hidden_units=8, seed=0, dtype=torch.float64)
    x = torch.rand(6, 12, dtype=torch.float64)
    theta = torch.softmax(torch.randn(6, 3, 12, dtype=torch.float64), -1)
    enc.train()
    mu_all, ls_all = encode(enc, x, theta, batch_size=4)
    mu_one, ls_one = encode(enc, x[5:], theta[5:])
    torch.testing.assert_close(mu_all[5:], mu_one)
    torch.testing.assert_close(ls_all[5:], ls_one)
    assert enc.training  # mode restored
