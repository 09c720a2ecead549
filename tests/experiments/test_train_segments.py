"""A seed's training run as segment jobs (acp-train-segment, then acp-train-cell --previous).

Each segment fits until its time is used, pauses at an epoch end with an exact checkpoint and
hands it on; the last job resumes it and evaluates.  The claim tested here: whatever the cuts,
the run directory is bit-identical to one uninterrupted job, for the minibatch trainer (AVI) and
the classical fit loop (LB-CDI, SVI); and a segment never silently starts from the wrong state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import cli

from noisyor_bench.experiments.acp.runs import RunSpec, execute_run, execute_segment
from noisyor_bench.experiments.rundir import CHECKPOINT_FILE, METRICS_FILE, POSTERIOR_FILE, partial_dir
from noisyor_bench.inference import deadline
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor.fitloop import FitLoop
from noisyor_bench.inference.training import checkpoint_epoch
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import read_json

# timings and provenance (start/end times, curve.csv's sha256: its `seconds` column is a timing)
TIMING_KEYS = {"train_seconds", "val_seconds", "posterior_seconds", "eval_seconds", "provenance", "resumed"}

METHODS = [
    ("avi", "learning", {"hidden_dim": 8}),
    ("lb-cdi", "learning", {}),
    ("svi", "learning", {"posterior_steps": 20}),
]


def _spec(
    dataset: Path, out: Path, method: str, mode: str, hparams: dict[str, Any], seed: int = 0
) -> RunSpec:
    return RunSpec(
        dataset=dataset,
        method=method,
        mode=mode,
        n_train=60,
        seed=seed,
        out_dir=out,
        hparams=hparams,
        budget=FitBudget(max_epochs=4, batch_size=32, patience=100),
        n_samples=20,
        iw_samples=20,
    )


def _same_run(a: Path, b: Path) -> None:
    ma, mb = read_json(a / METRICS_FILE), read_json(b / METRICS_FILE)
    assert {k: v for k, v in ma.items() if k not in TIMING_KEYS} == {
        k: v for k, v in mb.items() if k not in TIMING_KEYS
    }
    assert (a / POSTERIOR_FILE).read_bytes() == (b / POSTERIOR_FILE).read_bytes()


@pytest.mark.parametrize(("method", "mode", "hparams"), METHODS)
def test_a_training_run_as_segments_ends_bit_identical_to_one_job(dataset, tmp_path, method, mode, hparams):
    """Three segments of one epoch each (a deadline of 0 s pauses after every epoch), each on a
    fresh working folder as on another node, then the training job: the same run as one job."""
    whole = execute_run(_spec(dataset, tmp_path / "whole", method, mode, hparams))

    out = tmp_path / "segmented"
    spec = _spec(dataset, out, method, mode, hparams)
    previous = None
    for k in range(3):
        state = tmp_path / f"segment{k}.pt"
        assert execute_segment(spec, 0, state, previous) == k + 1
        assert checkpoint_epoch(state) == k + 1 and not out.exists()
        (partial_dir(out) / CHECKPOINT_FILE).unlink()  # the next job starts from `state` alone
        previous = state
    execute_run(spec, previous)
    assert read_json(out / METRICS_FILE)["epochs"] == 4
    _same_run(out, whole)


def test_a_segment_whose_fit_finishes_hands_on_the_finished_state(dataset, tmp_path):
    """Time to spare: the first segment ends the fit, the next passes it on, the job evaluates."""
    whole = execute_run(_spec(dataset, tmp_path / "whole", "lb-cdi", "learning", {}))
    out = tmp_path / "segmented"
    spec = _spec(dataset, out, "lb-cdi", "learning", {})
    assert execute_segment(spec, 3600, tmp_path / "s0.pt") == 4
    assert execute_segment(spec, 3600, tmp_path / "s1.pt", tmp_path / "s0.pt") == 4
    execute_run(spec, tmp_path / "s1.pt")
    _same_run(out, whole)


def test_a_retried_segment_keeps_its_own_further_checkpoint(dataset, tmp_path):
    """A segment killed and retried finds its own checkpoint past --previous and goes on from it
    (any checkpoint of the run lies on the same trajectory; the further one loses nothing)."""
    whole = execute_run(_spec(dataset, tmp_path / "whole", "lb-cdi", "learning", {}))
    out = tmp_path / "segmented"
    spec = _spec(dataset, out, "lb-cdi", "learning", {})
    assert execute_segment(spec, 0, tmp_path / "s0.pt") == 1
    assert execute_segment(spec, 0, tmp_path / "s1.pt", tmp_path / "s0.pt") == 2
    # the retry of segment 1: its working folder is at epoch 2, its --previous at epoch 1
    assert execute_segment(spec, 0, tmp_path / "s1.pt", tmp_path / "s0.pt") == 3
    execute_run(spec, tmp_path / "s1.pt")
    _same_run(out, whole)


def test_the_state_of_another_run_is_refused(dataset, tmp_path):
    spec0 = _spec(dataset, tmp_path / "seed0", "lb-cdi", "learning", {}, seed=0)
    execute_segment(spec0, 0, tmp_path / "s0.pt")
    spec1 = _spec(dataset, tmp_path / "seed1", "lb-cdi", "learning", {}, seed=1)
    with pytest.raises(ConfigError, match="different run configuration"):
        execute_run(spec1, tmp_path / "s0.pt")
    with pytest.raises(DataError, match="no such file"):
        execute_run(spec1, tmp_path / "missing.pt")


def test_a_pause_writes_the_epoch_a_costly_checkpoint_would_skip(tmp_path):
    """The fit loop skips writes that cost too much; the epoch it pauses at is always written."""
    path = tmp_path / "ckpt.pt"
    loop = FitLoop({"run": 1}, path, {}, hint="")
    now = [0.0]
    loop.clock = lambda: now[0]
    state = {"x": torch.zeros(2)}

    def record(epoch: int) -> EpochRecord:
        return EpochRecord(epoch=epoch, train_nelbo=1.0, val_nelbo=None, seconds=0.0)

    loop.end_epoch(record(1), lambda: state)  # the first write: always
    loop._write_seconds = 100.0  # a write of 100 s: the next ones are skipped for 1000 s
    now[0] = 1.0
    loop.end_epoch(record(2), lambda: state)
    assert checkpoint_epoch(path) == 1
    now[0] = 2.0
    with deadline.pause_after(0), pytest.raises(deadline.Paused) as paused:
        loop.end_epoch(record(3), lambda: state)
    assert paused.value.epoch == 3 and checkpoint_epoch(path) == 3
    loop.end_epoch(record(4), lambda: state, max_epochs=4)  # finished: written, no pause
    assert loop.finished and checkpoint_epoch(path) == 4


def _cell(dataset: Path) -> list[Any]:
    """The cell options acp-train-segment and acp-train-cell share (LB-CDI on the toy data)."""
    return ["--dataset", dataset, "--dataset-name", "toy", "--experiment", "default", "--method", "lb-cdi",
            "--mode", "learning", "--n-train", "60"]  # fmt: skip


def test_the_segment_command_checks_its_place_and_time(dataset, tmp_path, capsys):
    run = tmp_path / "runs" / "default" / "toy" / "lb-cdi" / "n60" / "seed0"
    base = ["acp-train-segment", *_cell(dataset), "--seed", "0", "--out-dir", run, "--out", tmp_path / "s.pt"]
    cases = [
        (["--segment", "0", "--segments", "3", "--seconds", "10", "--previous", tmp_path / "x.pt"], "first"),
        (["--segment", "1", "--segments", "3", "--seconds", "10"], "--previous"),
        (["--segment", "2", "--segments", "3", "--seconds", "10"], "0..1"),
        (["--segment", "0", "--segments", "3", "--seconds", "-1"], "--seconds"),
    ]
    for extra, message in cases:
        code, _, err = cli(base + extra, capsys)
        assert code != 0 and message in err, (extra, err)
    code, out, err = cli(base + ["--segment", "0", "--segments", "2", "--seconds", "0.001"], capsys)
    assert code == 0, err
    assert "segment 1 of 2: epoch 1" in out and checkpoint_epoch(tmp_path / "s.pt") == 1


def test_train_cell_continues_one_seed_only(dataset, tmp_path, capsys):
    argv = ["acp-train-cell", *_cell(dataset), "--seeds", "0", "1", "--previous", tmp_path / "s.pt"]
    code, _, err = cli(argv, capsys)
    assert code != 0 and "one --seeds value" in err
