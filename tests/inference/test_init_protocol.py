"""Initialisation is part of the protocol.

Each search draw and each seed of a grid cell starts from its own initialisation, derived from
(cell, draw or final, seed); the same triple always gives the same one; AVI, ACP, SVI and LB-CDI
of one triple share the generative initialisation (paired comparisons); the final seed-0 run is
not the search winner's run replayed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from toydata import write_toy_dataset

from noisyor_bench.cli import main
from noisyor_bench.experiments.acp.runs import RunSpec
from noisyor_bench.inference.noisyor.registry import get_method
from noisyor_bench.inference.seeding import derive_init_seed, run_init_key, stream_seed
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.io import read_json
from noisyor_bench.models.noisyor.model import NoisyOR

D, K = 12, 4


def shape_model() -> NoisyOR:
    return NoisyOR.from_numpy(np.full((D, K), 0.3), np.full(D, 0.05), np.full(K, 0.2))


def initial_theta(method: str, seed: int, init_key: str | None) -> np.ndarray:
    """The generative theta a learning-mode method starts from (before any fit)."""
    m = get_method(method)(shape_model(), "learning", {}, seed, "cpu", init_key=init_key)
    return m.generative.theta.detach().double().numpy()


CELL = ("fig4", "syn-pattern", 1000)


def key(draw: int | None = None, cell: tuple[str, str, int] = CELL) -> str:
    return run_init_key(*cell, draw=draw)


# ---------------------------------------------------------------------------- the derivation
def test_init_key_names_cell_and_role() -> None:
    assert key() == "fig4/syn-pattern/n1000/final"
    assert key(3) == "fig4/syn-pattern/n1000/draw3"
    with pytest.raises(ConfigError, match="search draw"):
        run_init_key("fig4", "syn-pattern", 1000, draw=-1)


def test_derived_seed_is_deterministic_and_distinct() -> None:
    keys = [key(d) for d in (None, 0, 1, 2)] + [
        key(None, ("fig4", "syn-pattern", 200)),
        key(None, ("fig5", "syn-pattern", 1000)),
    ]
    seeds = [derive_init_seed(s, k) for s in range(5) for k in keys]
    assert len(set(seeds)) == len(seeds)  # every (cell, role, seed) its own root
    assert seeds == [derive_init_seed(s, k) for s in range(5) for k in keys]
    assert all(0 <= s < 2**63 for s in seeds)
    assert derive_init_seed(7, None) == 7  # no key: the seed itself (runs outside the grid unchanged)
    with pytest.raises(ConfigError, match="init_key"):
        derive_init_seed(0, "")
    with pytest.raises(ConfigError, match="seed"):
        derive_init_seed(-1, key())


def test_derived_seed_is_an_independent_hash_of_seed_and_key() -> None:
    """Recomputed independently: SeedSequence over the seed and the key's SHA-256 words."""
    import hashlib

    digest = hashlib.sha256(key(2).encode()).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 32, 4)]
    hi, lo = np.random.SeedSequence([5, *words]).generate_state(2, dtype=np.uint32)
    assert derive_init_seed(5, key(2)) == ((int(hi) << 32) | int(lo)) & (2**63 - 1)


# ---------------------------------------------------------------------------- the methods
def test_draws_and_seeds_of_a_cell_start_from_different_theta() -> None:
    thetas = {(d, s): initial_theta("avi", s, key(d)) for d in (None, 0, 1) for s in (0, 1)}
    labels = list(thetas)
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            assert not np.allclose(thetas[a], thetas[b]), (
                f"(draw, seed) {a} and {b} start from the same theta"
            )
    # the final seed-0 run does not replay draw 0 (the defaults) of the search on seed 0
    assert not np.allclose(thetas[(None, 0)], thetas[(0, 0)])


def test_same_cell_draw_seed_gives_same_theta() -> None:
    for d in (None, 2):
        np.testing.assert_array_equal(initial_theta("acp", 3, key(d)), initial_theta("acp", 3, key(d)))


@pytest.mark.parametrize("other", ["acp", "acp-sg", "svi", "lb-cdi"])
@pytest.mark.parametrize("draw", [None, 1])
def test_methods_of_one_seed_share_the_generative_init(other: str, draw: int | None) -> None:
    a = initial_theta("avi", 4, key(draw))
    b = initial_theta(other, 4, key(draw))
    np.testing.assert_allclose(b, a, rtol=1e-6, atol=0)  # SVI/LB-CDI may hold float64: same draw
    assert not np.allclose(a, initial_theta("avi", 4, None))  # and the key changed it


def test_other_training_streams_follow_the_key() -> None:
    """Encoder init (and every stream rooted at init_seed) differs between draws, not between AVI/ACP roots."""
    m0 = get_method("avi")(shape_model(), "learning", {}, 0, "cpu", init_key=key(0))
    m1 = get_method("avi")(shape_model(), "learning", {}, 0, "cpu", init_key=key(1))
    w0 = next(m0.encoder.parameters()).detach()
    w1 = next(m1.encoder.parameters()).detach()
    assert not torch.equal(w0, w1)
    assert m0.init_seed == derive_init_seed(0, key(0)) != m1.init_seed
    assert stream_seed(m0.init_seed, "shuffle") != stream_seed(m1.init_seed, "shuffle")


def test_run_spec_rejects_bad_init_key(tmp_path: Path) -> None:
    spec = RunSpec(
        dataset=tmp_path / "d.npz",
        method="avi",
        mode="learning",
        n_train=5,
        seed=0,
        out_dir=tmp_path / "r",
        init_key="",
    )
    with pytest.raises(ConfigError, match="init_key"):
        spec.validate()


# ---------------------------------------------------------------- the CLI (acp-search + acp-train-cell)
def _cell_args(dataset: Path) -> list[str]:
    budget = json.dumps({"max_epochs": 1, "patience": 1, "batch_size": 32})
    return [
        "--dataset",
        str(dataset),
        "--dataset-name",
        "toy",
        "--experiment",
        "exp",
        "--method",
        "avi",
        "--mode",
        "learning",
        "--n-train",
        "40",
        "--budget",
        budget,
        "--evaluation",
        json.dumps({"samples": 5, "iw_samples": 0}),
        "--device",
        "cpu",
        "--threads",
        "1",
    ]


def test_search_draws_and_final_seeds_are_independent_runs(tmp_path: Path) -> None:
    dataset = write_toy_dataset(tmp_path / "toy.npz")
    search = tmp_path / "search"
    # Two draws with the SAME hyperparameters: only the initialisation tells them apart.
    assert (
        main(
            [
                "acp-search",
                *_cell_args(dataset),
                "--seed",
                "0",
                "--draws",
                "[{}, {}]",
                "--out-dir",
                str(search),
            ]
        )
        == 0
    )
    d0, d1 = (read_json(search / f"draw{i}" / "metrics.json") for i in (0, 1))
    assert (d0["init_key"], d1["init_key"]) == ("exp/toy/n40/draw0", "exp/toy/n40/draw1")
    assert d0["init_seed"] == derive_init_seed(0, "exp/toy/n40/draw0") != d1["init_seed"]
    assert d0["val_nelbo"] != d1["val_nelbo"]

    results = tmp_path / "results"
    assert (
        main(
            [
                "acp-train-cell",
                *_cell_args(dataset),
                "--seeds",
                "0",
                "1",
                "--best",
                str(search / "best.json"),
                "--out-dir",
                *(str(results / f"runs/exp/toy/avi/n40/seed{s}") for s in (0, 1)),
            ]
        )
        == 0
    )
    runs = [read_json(results / "runs/exp/toy/avi/n40" / f"seed{s}" / "metrics.json") for s in (0, 1)]
    assert [r["init_key"] for r in runs] == ["exp/toy/n40/final"] * 2
    assert runs[0]["init_seed"] == derive_init_seed(0, "exp/toy/n40/final")
    assert len({d0["init_seed"], d1["init_seed"], runs[0]["init_seed"], runs[1]["init_seed"]}) == 4
    # the final seed-0 run is not the winning draw replayed (same hparams, seed 0)
    assert runs[0]["val_nelbo"] not in (d0["val_nelbo"], d1["val_nelbo"])


def test_checkpoint_of_another_init_key_is_not_resumed(tmp_path: Path) -> None:
    """The key is part of the checkpoint fingerprint and of the run's resume key."""
    from noisyor_bench.experiments.acp.runs import _resume_key
    from noisyor_bench.inference.fitting import FitBudget

    g = torch.Generator().manual_seed(0)
    x = (torch.rand((30, D), generator=g) < 0.3).to(torch.uint8)
    ckpt = tmp_path / "checkpoint.pt"
    budget = FitBudget(max_epochs=1, patience=1, batch_size=16)
    get_method("acp")(shape_model(), "learning", {}, 0, "cpu", init_key=key(0)).fit(
        x, x, budget, checkpoint_path=ckpt
    )
    other = get_method("acp")(shape_model(), "learning", {}, 0, "cpu", init_key=key(1))
    with pytest.raises(ConfigError, match="init_key"):
        other.fit(x, x, budget, checkpoint_path=ckpt)
    spec = RunSpec(
        dataset=tmp_path / "d.npz",
        method="acp",
        mode="learning",
        n_train=5,
        seed=0,
        out_dir=tmp_path / "r",
        init_key=key(0),
    )
    assert _resume_key(spec, "sha", torch.device("cpu"))["init_key"] == key(0)
