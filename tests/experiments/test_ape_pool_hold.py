"""APE's training pool held on the training device when it fits there (experiments.ape.pairs):
the decision on given sizes, the pool drawn in blocks equal to the per-batch draw bit for bit,
and training on the held pool ending bit-identical to training on per-batch draws."""

import numpy as np
import pytest
import torch

from noisyor_bench.data.synthetic.theta_pool import ThetaPool
from noisyor_bench.experiments.ape import pairs
from noisyor_bench.inference.topics.ape_encoders import build_encoder
from noisyor_bench.inference.topics.ape_training import ApeTrainingConfig, train_encoder
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.models.topics.logistic_normal import ape_prior

GIB = 1 << 30
PAPER_POOL = 50_000 * 30 * 3000 * 4  # mdreviews' pool in float32: 16.8 GiB


def test_a_pool_is_held_when_it_takes_at_most_half_the_free_memory():
    held, why = pairs.hold_pool(PAPER_POOL, "cpu", available=40 * GIB)
    assert held and "held on cpu" in why and "16.8 GiB" in why and "40 GiB" in why
    held, why = pairs.hold_pool(PAPER_POOL, "cpu", available=30 * GIB)
    assert not held and "drawn per batch" in why
    assert pairs.hold_pool(PAPER_POOL, "cpu", available=30 * GIB, fraction=0.6)[0]
    # small pools (the quick grid's) are held whatever the device reports
    assert pairs.hold_pool(pairs.MATERIALISE_BYTES, "cpu", available=0)[0]
    assert not pairs.hold_pool(pairs.MATERIALISE_BYTES + 1, "cpu", available=0)[0]


def test_under_a_jobs_own_memory_limit_the_pool_may_take_all_but_the_reserve(monkeypatch):
    # 20 GiB of room under a cgroup limit: half would refuse the 16.8 GiB pool, the job's own
    # limit (no other process shares it) holds it beside the reserve
    monkeypatch.setattr(pairs, "available_memory", lambda device: (20 * GIB, pairs.CGROUP_SOURCE))
    held, why = pairs.hold_pool(PAPER_POOL, "cpu")
    assert held and "cgroup" in why and "- 2 GiB" in why
    monkeypatch.setattr(pairs, "available_memory", lambda device: (18 * GIB, pairs.CGROUP_SOURCE))
    assert not pairs.hold_pool(PAPER_POOL, "cpu")[0]  # 16.8 > 18 - 2
    # the node's MemAvailable is shared: half of it, as before
    monkeypatch.setattr(pairs, "available_memory", lambda device: (20 * GIB, "available RAM"))
    assert not pairs.hold_pool(PAPER_POOL, "cpu")[0]
    assert pairs.hold_pool(PAPER_POOL, "cpu", available=20 * GIB, own_limit=True)[0]


def test_unknown_memory_draws_a_large_pool_per_batch(monkeypatch):
    monkeypatch.setattr(pairs, "available_memory", lambda device: (None, "RAM (unknown)"))
    held, why = pairs.hold_pool(PAPER_POOL, "cpu")
    assert not held and "unknown" in why
    assert pairs.hold_pool(1000, "cpu")[0]


def test_cuda_decides_from_the_devices_free_memory(monkeypatch):
    asked = []

    def mem_get_info(device):
        asked.append(torch.device(device))
        return free, 141 * GIB

    monkeypatch.setattr(torch.cuda, "mem_get_info", mem_get_info)
    free = 130 * GIB  # an H200 with little else on it
    held, why = pairs.hold_pool(PAPER_POOL, "cuda:1")
    assert held and "held on cuda:1" in why and "free on cuda:1" in why
    assert asked == [torch.device("cuda:1")]
    free = 20 * GIB  # a smaller or busier GPU
    held, why = pairs.hold_pool(PAPER_POOL, "cuda:1")
    assert not held and "drawn per batch" in why


def test_the_cpu_figure_is_meminfos_available_memory():
    available, source = pairs.available_memory("cpu")
    assert available is not None and available > 0 and source


@pytest.mark.parametrize("block", [1, 7, 64, 1000])
def test_a_pool_materialised_in_blocks_is_the_per_batch_draw_bit_for_bit(block):
    pool = ThetaPool(seed=9, size=50, n_topics=4, vocab_size=300, alpha=0.1)
    held = pairs.materialise_pool(pool, "cpu", block=block)
    assert held.dtype == torch.float32 and held.shape == (50, 4, 300)
    assert np.array_equal(held.numpy(), pool.draw(np.arange(50), np.float32))
    idx = torch.tensor([3, 49, 3, 0])
    assert torch.equal(pairs.HeldPool(held)(idx), torch.from_numpy(pool.draw(idx.numpy())))


def test_a_draw_into_an_array_of_the_wrong_shape_is_refused():
    pool = ThetaPool(seed=9, size=5, n_topics=2, vocab_size=10)
    with pytest.raises(ConfigError, match="shape"):
        pool.draw([0, 1], out=np.empty((3, 2, 10), dtype=np.float32))


def _train(kind, pool, documents, **source):
    thetas, m = pairs.training_models(pool, "cpu", **source)
    encoder = build_encoder(kind, pool.vocab_size, pool.n_topics, hidden_units=8, seed=4)
    cfg = ApeTrainingConfig(max_steps=12, batch_size=6, eval_every=4, learning_rate=0.05)
    result = train_encoder(
        encoder, documents, thetas, ape_prior(pool.n_topics), cfg, 11, documents[:5],
        torch.from_numpy(pool.draw([0, 1, 2, 3, 4])), n_models=m, device="cpu",
    )  # fmt: skip
    return thetas, encoder, result


@pytest.mark.parametrize("kind", ["naive", "model_aware"])
def test_training_on_the_held_pool_equals_training_on_per_batch_draws(kind):
    pool = ThetaPool(seed=3, size=40, n_topics=3, vocab_size=60, alpha=0.1)
    gen = torch.Generator().manual_seed(0)
    documents = torch.zeros(30, 60)
    for row in range(30):  # sparse documents: a tensor pool would take the compact path
        documents[row, torch.randperm(60, generator=gen)[:6]] = torch.randint(
            1, 4, (6,), generator=gen
        ).float()
    drawn, enc_a, res_a = _train(kind, pool, documents, hold=False)
    held, enc_b, res_b = _train(kind, pool, documents, hold=True, tensor_bytes=0)
    assert not isinstance(drawn, (torch.Tensor, pairs.HeldPool)) and isinstance(held, pairs.HeldPool)
    for (name, a), b in zip(enc_a.state_dict().items(), enc_b.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    strip = [{k: v for k, v in r.items() if k != "elapsed_seconds"} for r in res_a.history]
    assert strip == [{k: v for k, v in r.items() if k != "elapsed_seconds"} for r in res_b.history]
    assert res_a.steps == res_b.steps == 12


def test_a_small_pool_is_still_handed_over_as_a_tensor():
    """The quick grid's pools: held and passed as a tensor, as before (the compact path)."""
    pool = ThetaPool(seed=3, size=20, n_topics=3, vocab_size=60)
    thetas, m = pairs.training_models(pool)
    assert isinstance(thetas, torch.Tensor) and m == 20
    assert np.array_equal(thetas.numpy(), pool.materialise(np.float32))
