"""Failure handling end to end: divergence, kills, unsafe loaders, non-atomic writes.

* A non-finite loss stops the run with a message naming the run, the epoch and the last
  finite values; the partial directory (with the last good checkpoint) is kept and, in
  ``acp-train-cell``, the other seeds' run directories too.
* A training process killed with SIGKILL and started again completes with the metrics of
  an uninterrupted run (AVI through ``training.Trainer``, LB-CDI through ``methods.fitloop``).
* A scan of the package source: every ``torch.load`` passes ``weights_only=True``, YAML is
  only read with the safe loader, and artifacts are only written through ``noisyor_bench.infra.io``
  (the few exceptions are listed below with the reason).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import REPO

from noisyor_bench.cli import main
from noisyor_bench.experiments.rundir import partial_dir
from noisyor_bench.infra.io import read_json

PACKAGE = REPO / "workflow" / "noisyor_bench"
# The installed console script, as Snakemake calls it (``python -m noisyor_bench`` without the venv's bin/).
_SCRIPT = Path(sys.executable).with_name("noisyor-bench")
CLI = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "noisyor_bench"]
TIMING_KEYS = {"train_seconds", "val_seconds", "posterior_seconds", "eval_seconds"}
# Differ legitimately between a resumed and an uninterrupted run.
NOT_COMPARED = TIMING_KEYS | {"resumed", "provenance"}


def train_argv(dataset: Path, out: Path, method: str, *extra: str) -> list[str]:
    return [
        "acp-train",
        "--dataset",
        str(dataset),
        "--method",
        method,
        "--mode",
        "learning",
        "--n-train",
        "60",
        "--seed",
        "0",
        "--eval-samples",
        "10",
        "--iw-samples",
        "10",
        "--threads",
        "1",
        "--device",
        "cpu",
        "--out",
        str(out),
        *extra,
    ]


def checkpoint_epoch(path: Path) -> int | None:
    """Completed epochs recorded in a checkpoint (Trainer or classical format); None if unreadable."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # not there yet
        return None
    return int((payload.get("progress") or payload.get("loop"))["epoch"])


def comparable(run: Path) -> dict[str, Any]:
    return {k: v for k, v in read_json(run / "metrics.json").items() if k not in NOT_COMPARED}


def curve_without_seconds(run: Path) -> list[list[str]]:
    """The curve without its times (wall ``seconds``, ``cpu_seconds``): what a rerun must repeat."""
    rows = [line.split(",") for line in (run / "curve.csv").read_text().splitlines()]
    drop = {i for i, name in enumerate(rows[0]) if name in ("seconds", "cpu_seconds")}
    return [[v for i, v in enumerate(row) if i not in drop] for row in rows]


# ---------------------------------------------------------------------------------- divergence
def _poison_avi_from_epoch_3(monkeypatch: pytest.MonkeyPatch, steps_per_epoch: int) -> None:
    """Training losses become NaN from the first step of epoch 3 (validation is untouched)."""
    from noisyor_bench.inference.noisyor.amortized import AmortizedMethod

    original = AmortizedMethod.batch_nelbo
    calls = {"train": 0}

    def poisoned(self, x, n_samples, temperature, generator, active=None):
        out = original(self, x, n_samples, temperature, generator, active)
        if temperature is not None:  # a training step (the held-out NELBO passes None)
            calls["train"] += 1
            if calls["train"] > 2 * steps_per_epoch:
                return out * math.nan
        return out

    monkeypatch.setattr(AmortizedMethod, "batch_nelbo", poisoned)


def _poison_lbcdi_from_epoch_3(monkeypatch: pytest.MonkeyPatch, seeds: tuple[int, ...] = (0,)) -> None:
    """LB-CDI's M-step objective becomes NaN in epoch 3 for the given seeds."""
    from noisyor_bench.inference.noisyor.lbcdi import LBCDI

    original = LBCDI._m_step

    def poisoned(self, n_total):
        value = original(self, n_total)
        return math.nan if self.seed in seeds and self.epoch + 1 >= 3 else value

    monkeypatch.setattr(LBCDI, "_m_step", poisoned)


def _assert_divergence_report(err: str, run_name: str, work: Path) -> None:
    """The CLI message names the run, epoch 3 and the last finite values (from the checkpoint)."""
    assert "Traceback" not in err
    assert f"run {run_name} " in err
    assert "at epoch 3" in err and "nan" in err
    payload = torch.load(work / "checkpoint.pt", map_location="cpu", weights_only=True)
    history = payload.get("history") or payload.get("records")
    last = history[-1]
    assert last["epoch"] == 2  # the checkpoint of the last finite epoch is kept
    assert f"last finite train loss {last['train_nelbo']:.6g}" in err
    assert f"last finite validation loss {last['val_nelbo']:.6g}" in err
    assert str(work) in err and "lower the learning rate" in err


@pytest.mark.parametrize("method", ["avi", "lb-cdi"])
def test_cli_non_finite_loss_names_run_epoch_and_last_values(
    dataset: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    method: str,
) -> None:
    if method == "avi":
        _poison_avi_from_epoch_3(monkeypatch, steps_per_epoch=2)  # 60 rows, batch 32
        extra = ["--hparams", '{"hidden_dim": 8}', "--batch-size", "32"]
    else:
        _poison_lbcdi_from_epoch_3(monkeypatch)
        extra = []
    out = tmp_path / "runs" / "exp" / "toy" / method / "n60" / "seed0"
    code = main(
        train_argv(
            dataset, out, method, "--experiment", "exp", "--max-epochs", "5", "--patience", "100", *extra
        )
    )
    err = capsys.readouterr().err
    assert code == 2
    work = partial_dir(out)
    _assert_divergence_report(err, f"exp/toy/{method}/n60/seed0", work)
    kept = {p.name for p in work.iterdir()}
    assert not out.exists() and {"checkpoint.pt", "spec.json"} <= kept and "metrics.json" not in kept


def test_cli_real_divergence_of_svi(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No injection: an absurd global learning rate makes SVI's objective NaN in epoch 1."""
    out = tmp_path / "run"
    code = main(train_argv(dataset, out, "svi", "--max-epochs", "3", "--hparams", '{"lr_global": 1000}'))
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "run default/toy/svi/n60/seed0 (mode learning" in err and '"lr_global": 1000' in err
    assert "at epoch 1; last finite train loss none yet" in err and "'lr_global'" in err
    assert partial_dir(out).is_dir() and not out.exists()


def test_train_cell_keeps_finished_seeds_and_the_failing_partial(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 1 of three diverges: seeds 0 and 2 finish and are kept, seed 1 keeps its partial directory."""
    _poison_lbcdi_from_epoch_3(monkeypatch, seeds=(1,))
    argv = [
        "acp-train-cell",
        "--dataset",
        str(dataset),
        "--dataset-name",
        "toy",
        "--experiment",
        "exp",
        "--method",
        "lb-cdi",
        "--mode",
        "learning",
        "--n-train",
        "60",
        "--seeds",
        "0",
        "1",
        "2",
        "--out-dir",
        *(str(tmp_path / f"runs/exp/toy/lb-cdi/n60/seed{s}") for s in (0, 1, 2)),
        "--budget",
        json.dumps({"max_epochs": 4, "patience": 100}),
        "--evaluation",
        json.dumps({"samples": 10, "iw_samples": 10}),
        "--device",
        "cpu",
    ]
    code = main(argv)
    captured = capsys.readouterr()
    cell = tmp_path / "runs" / "exp" / "toy" / "lb-cdi" / "n60"
    assert code == 2
    assert sorted(p.name for p in cell.iterdir()) == ["seed0", "seed1.partial", "seed2"]
    for seed in (0, 2):
        assert read_json(cell / f"seed{seed}" / "metrics.json")["epochs"] == 4
        assert str(cell / f"seed{seed}") in captured.out
    assert "1 of 3 seeds diverged (2 finished and kept)" in captured.err
    _assert_divergence_report(captured.err, "exp/toy/lb-cdi/n60/seed1", cell / "seed1.partial")


# ---------------------------------------------------------------------------------- SIGKILL
# An epoch of these runs takes ~0.5 s (AVI: 300 optimiser steps; LB-CDI: 400 M-step steps),
# so the poller sees epoch 2 long before the 8th epoch ends.
KILL_CASES = {
    "avi": ["--hparams", '{"hidden_dim": 8}', "--batch-size", "32", "--min-epoch-steps", "300"],
    "lb-cdi": ["--hparams", '{"m_steps": 400}'],
}


def _run_cli(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=600)


def _kill_after_epoch_2(argv: list[str], work: Path, log: Path) -> None:
    with open(log, "w") as err:  # a file, not a pipe nobody reads while the run goes on
        proc = subprocess.Popen([*CLI, *argv], stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 300
            while (checkpoint_epoch(work / "checkpoint.pt") or 0) < 2:
                assert proc.poll() is None, f"the run ended before it could be killed: {log.read_text()}"
                assert time.monotonic() < deadline, "no checkpoint of epoch 2 within 300 s"
                time.sleep(0.02)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(KILL_CASES))
def test_sigkill_then_rerun_matches_an_uninterrupted_run(dataset: Path, tmp_path: Path, method: str) -> None:
    budget = ["--max-epochs", "8", "--patience", "100"]
    whole, killed = tmp_path / "whole" / "run", tmp_path / "killed" / "run"
    argv_killed = train_argv(dataset, killed, method, *budget, *KILL_CASES[method])

    _kill_after_epoch_2(argv_killed, partial_dir(killed), tmp_path / "killed.log")
    epoch_at_kill = checkpoint_epoch(partial_dir(killed) / "checkpoint.pt")
    assert epoch_at_kill is not None and 2 <= epoch_at_kill < 8
    assert not killed.exists()

    done = _run_cli(argv_killed)  # the same command again
    assert done.returncode == 0, done.stderr
    assert "resuming from checkpoint" in done.stderr
    reference = _run_cli(train_argv(dataset, whole, method, *budget, *KILL_CASES[method]))
    assert reference.returncode == 0, reference.stderr

    assert read_json(killed / "metrics.json")["resumed"] is True
    assert read_json(whole / "metrics.json")["resumed"] is False
    assert comparable(killed) == comparable(whole)
    assert comparable(whole)["epochs"] == 8
    assert curve_without_seconds(killed) == curve_without_seconds(whole)
    assert (killed / "posterior_test.npz").read_bytes() == (whole / "posterior_test.npz").read_bytes()
    assert not partial_dir(killed).exists()


# ---------------------------------------------------------------------------------- source scan
# Artifact writes outside noisyor_bench/infra/io.py, each with the reason it is still atomic.
ALLOWED_WRITES = {
    ("data/rawdata.py", "_download_to"): "writes the temp path that _download gets from io.atomic_path",
    ("data/rawdata.py", "_assemble_tar_xz"): "writes the temp path that _download gets from io.atomic_path",
    ("reporting/plots.py", "save_figure"): "savefig into the temp path of io.atomic_path",
}
APPENDED_LOGS = {
    ("reporting/console.py", "write"): "the console's log, appended line by line while the run goes on",
}
"""Logs, not artifacts: opened for appending only (mode 'a'), never replaced or truncated."""
WRITE_METHODS = {
    "write_text",
    "write_bytes",
    "savefig",
    "tofile",
    "to_parquet",
    "to_pickle",
    "savez",
    "savez_compressed",
}
SAFE_YAML = {"safe_load", "safe_load_all", "SafeLoader", "CSafeLoader", "YAMLError", "safe_dump"}


def _package_sources() -> list[tuple[str, ast.Module]]:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 20
    return [
        (p.relative_to(PACKAGE).as_posix(), ast.parse(p.read_text(encoding="utf-8"), str(p))) for p in files
    ]


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _calls_with_function(tree: ast.Module):
    """(call, enclosing function name or '<module>', enclosing with-items) for every call."""

    def walk(node: ast.AST, func: str, withs: tuple[ast.withitem, ...]):
        for child in ast.iter_child_nodes(node):
            f, w = func, withs
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                f = child.name
            if isinstance(child, (ast.With, ast.AsyncWith)):
                w = withs + tuple(child.items)
            if isinstance(child, ast.Call):
                yield child, f, w
            yield from walk(child, f, w)

    yield from walk(tree, "<module>", ())


def _kw(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_write(call: ast.Call) -> bool:
    name = _dotted(call.func)
    last = name.rsplit(".", 1)[-1]
    if last == "open" and not name.startswith("os."):
        mode = call.args[1] if len(call.args) > 1 else _kw(call, "mode")
        return (
            isinstance(mode, ast.Constant)
            and isinstance(mode.value, str)
            and bool(set(mode.value) & set("wax+"))
        )
    if name == "os.open":
        flags = ast.unparse(call.args[1]) if len(call.args) > 1 else ""
        return bool(re.search(r"O_(WRONLY|RDWR|TRUNC|APPEND)", flags))
    if name in (
        "torch.save",
        "np.save",
        "numpy.save",
        "np.savez",
        "np.savez_compressed",
        "json.dump",
        "pickle.dump",
    ):
        return True
    if name.startswith("shutil.copy") or name == "shutil.move":
        return True
    if last == "to_csv":  # with no path it returns the text, which io writes
        return bool(call.args) or _kw(call, "path_or_buf") is not None
    return last in WRITE_METHODS


def test_torch_load_is_always_weights_only() -> None:
    found = []
    for rel, tree in _package_sources():
        for call, func, _ in _calls_with_function(tree):
            if _dotted(call.func) == "torch.load":
                flag = _kw(call, "weights_only")
                assert isinstance(flag, ast.Constant) and flag.value is True, f"{rel}:{call.lineno} ({func})"
                found.append(rel)
    assert "inference/training.py" in found  # the scan sees the checkpoint loader


def test_yaml_is_only_read_with_the_safe_loader() -> None:
    uses = []
    for rel, tree in _package_sources():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "yaml"
            ):
                assert node.attr in SAFE_YAML, f"{rel}:{node.lineno}: yaml.{node.attr}"
                uses.append(node.attr)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names]
                module = getattr(node, "module", None) or ""
                assert "pickle" not in names and "dill" not in names and not module.startswith("pickle"), (
                    f"{rel}:{node.lineno}"
                )
                if module == "yaml":
                    assert set(names) <= SAFE_YAML, f"{rel}:{node.lineno}: from yaml import {names}"
    assert "safe_load" in uses
    for smk in [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]:
        text = smk.read_text(encoding="utf-8")
        assert not re.search(r"yaml\.(load|unsafe_load|full_load)\(", text), smk
        assert not re.search(r"torch\.load\((?![^)]*weights_only=True)", text), smk


def test_numpy_loads_refuse_pickles() -> None:
    for rel, tree in _package_sources():
        for call, func, _ in _calls_with_function(tree):
            if _dotted(call.func) in ("np.load", "numpy.load"):
                flag = _kw(call, "allow_pickle")
                assert isinstance(flag, ast.Constant) and flag.value is False, f"{rel}:{call.lineno} ({func})"


def test_artifacts_are_written_atomically() -> None:
    """Outside io.py, a file is written only by the listed functions, each into an atomic temp path."""
    used, appended = set(), set()
    for rel, tree in _package_sources():
        if rel == "infra/io.py":
            continue
        for call, func, withs in _calls_with_function(tree):
            if not _is_write(call):
                continue
            where = f"{rel}:{call.lineno} in {func}: {ast.unparse(call)[:80]}"
            if (rel, func) in APPENDED_LOGS:
                mode = call.args[1] if len(call.args) > 1 else _kw(call, "mode")
                assert isinstance(mode, ast.Constant) and mode.value == "a", (
                    f"a log opened not for appending: {where}"
                )
                appended.add((rel, func))
                continue
            assert (rel, func) in ALLOWED_WRITES, (
                f"non-atomic write of an artifact: {where}; use noisyor_bench.infra.io"
            )
            used.add((rel, func))
            if rel != "data/rawdata.py":  # the rawdata helpers are handed the temp path (checked below)
                assert any(
                    _dotted(w.context_expr.func) == "atomic_path"
                    for w in withs
                    if isinstance(w.context_expr, ast.Call)
                ), where
    assert used == set(ALLOWED_WRITES), f"stale exceptions: {set(ALLOWED_WRITES) - used}"
    assert appended == set(APPENDED_LOGS), f"stale exceptions: {set(APPENDED_LOGS) - appended}"
    download = next(t for r, t in _package_sources() if r == "data/rawdata.py")
    body = ast.unparse(
        next(n for n in ast.walk(download) if isinstance(n, ast.FunctionDef) and n.name == "_download")
    )
    assert (
        "with atomic_path(dest) as tmp" in body
        and "_download_to(url, tmp)" in body
        and "_assemble_tar_xz(f.parts, tmp)" in body
    )


def test_scan_detects_the_patterns_it_forbids() -> None:
    """Guards the scans: each forbidden pattern, in a snippet, is recognised."""
    calls = [
        n
        for n in ast.walk(
            ast.parse(
                "open(p, 'w')\nPath(p).write_text(s)\ntorch.save(x, p)\nframe.to_csv(p)\nfig.savefig(p)\n"
                "os.open(p, os.O_WRONLY | os.O_CREAT)\nshutil.copyfile(a, b)\n"
            )
        )
        if isinstance(n, ast.Call) and _dotted(n.func) not in ("Path",)
    ]
    assert all(_is_write(c) for c in calls) and len(calls) == 7
    harmless = [
        n
        for n in ast.walk(
            ast.parse(
                "open(p)\nopen(p, 'rb')\nframe.to_csv(index=False)\nos.open(p, os.O_RDONLY | os.O_CREAT)\ntarfile.open(p, 'r:*')\n"
            )
        )
        if isinstance(n, ast.Call)
    ]
    assert not any(_is_write(c) for c in harmless)
