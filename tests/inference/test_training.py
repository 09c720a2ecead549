"""The generic minibatch trainer: epochs, early stopping, best-state restore, exact resume,
divergence detection.  A noisy least-squares toy problem stands in for a real method so each
property is checked against values computed here, not by the trainer."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.seeding import stream_generator, stream_seed
from noisyor_bench.inference.training import (
    NonFiniteLossError,
    Trainer,
    load_checkpoint,
)
from noisyor_bench.infra.errors import ConfigError, DataError, UserError

N, D = 37, 3


class Toy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(D, dtype=torch.float64))


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, D, generator=g, dtype=torch.float64)
    y = x @ torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64) + 0.1 * torch.randn(
        N, generator=g, dtype=torch.float64
    )
    return x, y


def _make(
    budget: FitBudget,
    checkpoint: Path | None = None,
    val_values: list[float] | None = None,
    nan_at_step: int | None = None,
    seen: list[torch.Tensor] | None = None,
    stop_on_plateau: bool = False,
) -> Trainer:
    """Trainer on noisy least squares: the loss draws noise from its own generator, so exact
    resume needs every generator state restored."""
    x, y = _data()
    module = Toy()
    noise = torch.Generator().manual_seed(11)
    calls = {"val": 0}

    def loss_fn(idx: torch.Tensor, step: int) -> torch.Tensor:
        if seen is not None:
            seen.append(idx.clone())
        eps = 0.3 * torch.randn(len(idx), generator=noise, dtype=torch.float64)
        losses = (x[idx] @ module.w - y[idx] - eps) ** 2
        if nan_at_step is not None and step == nan_at_step:
            losses = losses * math.nan
        return losses

    def val_fn() -> float:
        calls["val"] += 1
        if val_values is not None:
            return val_values[calls["val"] - 1]
        return float(((x @ module.w - y) ** 2).mean())

    return Trainer(
        module=module,
        loss_fn=loss_fn,
        optimizer=torch.optim.Adam(module.parameters(), lr=0.05, betas=(0.5, 0.999)),
        n_train=N,
        budget=budget,
        shuffle_generator=torch.Generator().manual_seed(5),
        val_fn=val_fn,
        generators={"noise": noise},
        checkpoint_path=checkpoint,
        fingerprint={"toy": 1},
        stop_on_plateau=stop_on_plateau,
    )


def test_each_epoch_visits_every_point_once_and_train_loss_is_datapoint_mean() -> None:
    seen: list[torch.Tensor] = []
    trainer = _make(FitBudget(max_epochs=2, patience=5, batch_size=8), seen=seen)
    history = trainer.run()
    steps_per_epoch = math.ceil(N / 8)
    assert len(seen) == 2 * steps_per_epoch
    for e in range(2):
        idx = torch.cat(seen[e * steps_per_epoch : (e + 1) * steps_per_epoch])
        assert sorted(idx.tolist()) == list(range(N))
    assert not torch.equal(torch.cat(seen[:steps_per_epoch]), torch.cat(seen[steps_per_epoch:]))  # reshuffled
    assert trainer.state.step == 2 * steps_per_epoch
    assert [r.epoch for r in history] == [1, 2]


def test_train_value_is_weighted_mean_of_batch_losses() -> None:
    # Per-datapoint loss = its index (plus a zero-gradient term): mean over the epoch is (N-1)/2
    # whatever the batching, including the short last batch.
    module = Toy()
    trainer = Trainer(
        module=module,
        loss_fn=lambda idx, step: idx.to(torch.float64) + 0.0 * module.w.sum(),
        optimizer=torch.optim.SGD(module.parameters(), lr=0.1),
        n_train=N,
        budget=FitBudget(max_epochs=1, patience=1, batch_size=10),
        shuffle_generator=torch.Generator().manual_seed(0),
    )
    (record,) = trainer.run()
    assert record.train_nelbo == pytest.approx((N - 1) / 2, abs=1e-12)
    assert record.val_nelbo is None  # no val_fn: the training loss is monitored


def test_early_stopping_restores_best_state() -> None:
    snapshots: dict[int, torch.Tensor] = {}
    vals = [5.0, 4.0, 3.0, 3.5, 3.0, 3.7, 1.0, 1.0]  # best at epoch 3 (ties do not count)
    trainer = _make(FitBudget(max_epochs=8, patience=3, batch_size=8), val_values=vals)
    module = trainer.module

    def progress(r: EpochRecord) -> None:
        snapshots[r.epoch] = module.w.detach().clone()

    history = trainer.run(progress)
    assert [r.epoch for r in history] == [1, 2, 3, 4, 5, 6]
    assert [r.val_nelbo for r in history] == vals[:6]
    assert trainer.best_epoch == 3 and trainer.stop_reason == "patience"
    assert torch.equal(module.w, snapshots[3])
    assert not torch.equal(snapshots[3], snapshots[6])


def test_max_epochs_and_eval_every() -> None:
    trainer = _make(FitBudget(max_epochs=5, patience=100, batch_size=16, eval_every=2))
    history = trainer.run()
    assert len(history) == 5 and trainer.stop_reason == "max_epochs"
    evaluated = [r.epoch for r in history if r.val_nelbo is not None]
    assert evaluated == [2, 4, 5]  # every 2nd epoch and always the last
    # Validation of the restored state equals the best recorded validation value.
    x, y = _data()
    best = min(r.val_nelbo for r in history if r.val_nelbo is not None)
    assert float(((x @ trainer.module.w.detach() - y) ** 2).mean()) == best


@pytest.mark.parametrize(
    ("vals", "stop_epoch"),
    [
        # the window [3.0 .. 2.999] improves on 3.0 by 0.03% < 0.1%: stop after epoch 7
        ([10.0, 5.0, 3.0, 3.0, 2.999, 3.0, 3.0, 3.0, 1.0, 1.0], 7),
        # still falling by more than 0.1% per window: runs to max_epochs
        ([10.0 - 0.5 * i for i in range(10)], 10),
    ],
)
def test_stop_on_plateau_stops_when_the_convergence_rule_first_holds(vals, stop_epoch) -> None:
    from noisyor_bench.inference.convergence import relative_improvement

    budget = FitBudget(max_epochs=10, patience=100, batch_size=8, convergence_window=4)
    trainer = _make(budget, val_values=vals, stop_on_plateau=True)
    history = trainer.run()
    assert len(history) == stop_epoch
    # independently: the first prefix of the validation values meeting the rule
    first = next(
        (n for n in range(1, 11) if (r := relative_improvement(vals[:n], 4)[2]) is not None and r < 1e-3), 10
    )
    assert first == stop_epoch
    conv = trainer.convergence()
    if stop_epoch < 10:
        assert trainer.stop_reason == "plateau" and conv.converged and conv.rule == "plateau"
    else:
        assert trainer.stop_reason == "max_epochs" and not conv.converged
    # without the flag the same curve runs to max_epochs
    assert len(_make(budget, val_values=vals).run()) == 10


def test_training_reduces_the_loss() -> None:
    history = _make(FitBudget(max_epochs=30, patience=100, batch_size=8)).run()
    assert history[-1].val_nelbo < 0.1 * history[0].val_nelbo


def test_non_finite_loss_names_epoch_step_and_last_values() -> None:
    # 37 points, batch 16 => 3 steps per epoch; step 4 (0-based) is the 2nd step of epoch 2.
    trainer = _make(FitBudget(max_epochs=5, patience=5, batch_size=16), nan_at_step=4)
    records: list[EpochRecord] = []
    with pytest.raises(NonFiniteLossError) as info:
        trainer.run(records.append)
    assert isinstance(info.value, UserError)
    msg = str(info.value)
    assert "epoch 2" in msg and "step 4" in msg and "nan" in msg
    (first,) = records
    assert f"{first.train_nelbo:.6g}" in msg and f"{first.val_nelbo:.6g}" in msg


def test_non_finite_validation_is_detected() -> None:
    trainer = _make(FitBudget(max_epochs=5, patience=5, batch_size=16), val_values=[1.0, math.inf])
    with pytest.raises(NonFiniteLossError, match="validation loss .*epoch 2"):
        trainer.run()


def test_budget_is_validated() -> None:
    with pytest.raises(ConfigError, match="patience"):
        _make(FitBudget(patience=0))
    with pytest.raises(ConfigError, match="batch_size"):
        _make(FitBudget(batch_size=-1))


class _Interrupt(Exception):
    pass


def _interrupt_after(epoch: int):
    def progress(r: EpochRecord) -> None:
        if r.epoch == epoch:
            raise _Interrupt

    return progress


def test_resume_is_bit_identical(tmp_path: Path) -> None:
    budget = FitBudget(max_epochs=6, patience=100, batch_size=8)
    reference = _make(budget)
    ref_history = reference.run()

    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(_Interrupt):
        _make(budget, checkpoint=ckpt).run(_interrupt_after(2))
    assert load_checkpoint(ckpt)["progress"]["epoch"] == 2
    resumed = _make(budget, checkpoint=ckpt)
    epochs_run: list[int] = []
    history = resumed.run(lambda r: epochs_run.append(r.epoch))

    assert epochs_run == [3, 4, 5, 6]
    assert torch.equal(resumed.module.w, reference.module.w)
    assert [(r.train_nelbo, r.val_nelbo) for r in history] == [
        (r.train_nelbo, r.val_nelbo) for r in ref_history
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]  # atomic write leaves no temp files


def test_resume_without_generator_state_would_differ(tmp_path: Path) -> None:
    """Guards the previous test: a fresh start (no checkpoint) after 2 epochs is not identical."""
    budget = FitBudget(max_epochs=6, patience=100, batch_size=8)
    reference = _make(budget)
    reference.run()
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(_Interrupt):
        _make(budget, checkpoint=ckpt).run(_interrupt_after(2))
    payload = load_checkpoint(ckpt)
    payload["generators"]["noise"] = torch.Generator().manual_seed(11).get_state()
    torch.save(payload, ckpt)
    resumed = _make(budget, checkpoint=ckpt)
    resumed.run()
    assert not torch.equal(resumed.module.w, reference.module.w)


def test_checkpoint_is_weights_only_loadable(tmp_path: Path) -> None:
    ckpt = tmp_path / "sub" / "ckpt.pt"
    _make(FitBudget(max_epochs=2, patience=5), checkpoint=ckpt).run()
    payload = torch.load(ckpt, weights_only=True)
    assert set(payload) >= {
        "module",
        "optimizer",
        "generators",
        "best_state",
        "progress",
        "history",
        "fingerprint",
    }
    assert payload["progress"]["finished"] is True
    assert set(payload["generators"]) == {"shuffle", "noise"}


def test_finished_checkpoint_is_not_retrained(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt.pt"
    first = _make(FitBudget(max_epochs=3, patience=5), checkpoint=ckpt)
    history = first.run()
    seen: list[torch.Tensor] = []
    again = _make(FitBudget(max_epochs=3, patience=5), checkpoint=ckpt, seen=seen)
    assert again.run() == history
    assert seen == []
    assert torch.equal(again.module.w, first.module.w)


def test_checkpoint_of_another_configuration_is_refused(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt.pt"
    _make(FitBudget(max_epochs=2, patience=5), checkpoint=ckpt).run()
    with pytest.raises(ConfigError, match="budget"):
        _make(FitBudget(max_epochs=3, patience=5), checkpoint=ckpt).run()


def test_stream_seeds() -> None:
    assert stream_seed(1, "shuffle") == stream_seed(1, "shuffle")
    assert len({stream_seed(1, "shuffle"), stream_seed(1, "sample"), stream_seed(2, "shuffle")}) == 3
    a = torch.rand(3, generator=stream_generator(4, "x"))
    assert torch.equal(a, torch.rand(3, generator=stream_generator(4, "x")))
    with pytest.raises(ConfigError, match="seed"):
        stream_seed(-1, "x")


def test_min_epoch_steps_makes_whole_passes_until_enough_steps() -> None:
    # N = 37 in batches of 10: 4 steps per pass; 9 steps need 3 passes (12 steps) per epoch.
    seen: list[torch.Tensor] = []
    trainer = _make(FitBudget(max_epochs=2, patience=5, batch_size=10, min_epoch_steps=9), seen=seen)
    trainer.run()
    assert trainer.state.step == 2 * 12
    for p in range(6):  # every pass is a permutation of all points
        visited = torch.cat(seen[4 * p : 4 * (p + 1)])
        assert sorted(visited.tolist()) == list(range(N))


def test_min_epoch_steps_resume_is_bit_identical(tmp_path: Path) -> None:
    budget = FitBudget(max_epochs=3, patience=5, batch_size=16, min_epoch_steps=7)
    ref = _make(budget)
    ref.run()
    path = tmp_path / "ckpt.pt"
    with pytest.raises(_Interrupt):
        _make(budget, checkpoint=path).run(_interrupt_after(1))
    resumed = _make(budget, checkpoint=path)
    resumed.run()
    assert resumed.state.step == ref.state.step == 3 * 9  # 3 batches per pass: 7 steps take 3 passes
    assert torch.equal(resumed.module.w, ref.module.w)


def test_budget_from_mapping_names_unknown_keys() -> None:
    from noisyor_bench.inference.fitting import budget_from_mapping

    assert budget_from_mapping({"max_epochs": 3, "min_epoch_steps": 5}) == FitBudget(
        max_epochs=3, min_epoch_steps=5
    )
    with pytest.raises(ConfigError, match="unknown key.*'max_epoch'.*allowed: max_epochs"):
        budget_from_mapping({"max_epoch": 3}, "--budget")


def test_corrupt_or_foreign_checkpoint_is_a_data_error(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt.pt"
    ckpt.write_bytes(b"PK\x03\x04 truncated zip")
    with pytest.raises(
        DataError, match=r"cannot read training checkpoint .*ckpt.pt \(\w+\): it is corrupt.*--no-resume"
    ):
        _make(FitBudget(max_epochs=2), checkpoint=ckpt).run()
    torch.save({"version": 999}, ckpt)
    with pytest.raises(DataError, match="has version 999, expected 1"):
        _make(FitBudget(max_epochs=2), checkpoint=ckpt).run()
