"""The fault catalogue (docs/faults.md), run as tests.

Each case is an input or an action a careful user may cause, with the exit code and the words
the message must contain; data-loss cases also name the finished outputs that must still exist,
byte-identical, afterwards.  The CLI runs in process (``noisyor_bench.cli.main``) on a copy of a
small world -- a toy dataset (``tests/toydata.py``) and one finished SVI run -- so the whole
catalogue takes seconds.  The two Snakemake scenarios (a corrupted raw input, a truncated
derived dataset) run real, small Snakemake invocations at the end of this module.

Classes covered: data loss (rerun of a finished run that diverges, is interrupted or fails;
diverging search draws), silently wrong (names escaping results_dir, provenance of a run with
damaged files), and clear messages (every kind of damaged file argument, invalid generative
parameters, corrupt JSON records, bad --spec / --best, OS errors on output locations, Ctrl-C,
invalid config names/numbers/YAML, absurd budgets).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from faultworld import (
    DATA,
    FINISHED,
    RANDOM_SPEC,
    RUN,
    Case,
    bad_dataset,
    built_then_truncated,
    cell_argv,
    config_with,
    damage_posterior,
    fail_evaluation,
    interrupt_training,
    run_case,
    simulate_os_error,
    smoke_snakemake,
    table_argv,
    train_argv,
    write,
)
from toydata import write_toy_dataset

from noisyor_bench.infra.io import read_json, write_json_atomic


def _search_one_diverged() -> None:
    table = (Path("search") / "search.csv").read_text()
    assert "diverged:" in table and ",inf," in table
    assert read_json(Path("search") / "best.json")["draw"] == 0


CASES = [
    # ---- data loss
    Case(
        "rerun-diverges-keeps-finished-run",
        lambda t, m: train_argv(RUN, "--hparams", '{"lr_global": 1000}'),
        2,
        ("lower the learning rate", "seed0.partial"),
        keep=FINISHED,
    ),
    Case(
        "rerun-interrupted-keeps-finished-run",
        lambda t, m: (interrupt_training(m), train_argv())[1],
        130,
        ("interrupted; the same command resumes from", "seed0.partial"),
        keep=FINISHED,
    ),
    Case(
        "rerun-fails-keeps-finished-run",
        lambda t, m: (fail_evaluation(m), train_argv(RUN, "--max-epochs", "3"))[1],
        2,
        ("injected failure",),
        keep=FINISHED,
    ),
    Case(
        "train-cell-rerun-diverges-keeps-finished-run",
        lambda t, m: cell_argv(
            "acp-train-cell",
            "--seeds",
            "0",
            "--out-dir",
            "results/runs/exp/toy/svi/n60/seed0",
            "--best",
            write("best.json", '{"hparams": {"lr_global": 1000}}'),
        ),
        2,
        ("1 of 1 seeds diverged",),
        keep=FINISHED,
    ),
    Case(
        "search-diverging-draw-recorded",
        lambda t, m: cell_argv(
            "acp-search", "--seed", "0", "--out-dir", "search", "--draws", '[{}, {"lr_global": 1000}]'
        ),
        0,
        (),
        after=_search_one_diverged,
        out_words=("best draw 0 of 2",),
    ),
    Case(
        "search-every-draw-diverges",
        lambda t, m: cell_argv(
            "acp-search",
            "--seed",
            "0",
            "--out-dir",
            "search",
            "--draws",
            '[{"lr_global": 1000}, {"lr_global": 2000}]',
        ),
        2,
        ("every draw of the search", "draw 0", "draw 1", "lr_global"),
    ),
    # ---- silently wrong
    Case(
        "config-dataset-name-escapes",
        lambda t, m: [
            "check-config",
            config_with(t, lambda c: c["datasets"].__setitem__("../../etc", c["datasets"]["syn-random-1"])),
        ],
        2,
        ("datasets.../../etc", "must match"),
    ),
    Case(
        "config-experiment-name-escapes",
        lambda t, m: [
            "check-config",
            config_with(
                t,
                lambda c: c["grids"]["smoke"]["acp"]["experiments"].__setitem__(
                    "a/b", c["grids"]["smoke"]["acp"]["experiments"]["fig3a"]
                ),
            ),
        ],
        2,
        ("grids.smoke.acp.experiments.a/b", "must match"),
    ),
    Case(
        "cli-dataset-name-escapes",
        lambda t, m: [
            "acp-train-cell",
            *cell_argv("x")[1:4],
            "../../x",
            *cell_argv("x")[5:],
            "--seeds",
            "0",
            "--out-dir",
            "results/runs/exp/x/svi/n60/seed0",
        ],
        2,
        ("dataset name", "'../../x'", "must match"),
    ),
    Case(
        "make-dataset-name-escapes",
        lambda t, m: [
            "acp-make-dataset",
            "--name",
            "../x",
            "--spec",
            json.dumps(RANDOM_SPEC),
            "--out",
            "data/x.npz",
        ],
        2,
        ("--name", "must match"),
    ),
    Case(
        "provenance-run-posterior-truncated",
        lambda t, m: (damage_posterior("truncate"), ["provenance", str(RUN)])[1],
        1,
        (),
        out_words=("posterior_test.npz (output): CHANGED since recorded",),
    ),
    Case(
        "provenance-run-posterior-deleted",
        lambda t, m: (damage_posterior("delete"), ["provenance", str(RUN)])[1],
        1,
        (),
        out_words=("posterior_test.npz (output): MISSING",),
    ),
    Case(
        "provenance-run-posterior-pickled",
        lambda t, m: (damage_posterior("pickle"), ["provenance", str(RUN)])[1],
        1,
        (),
        out_words=("posterior_test.npz (output): CHANGED since recorded",),
    ),
    Case(
        "provenance-run-curve-changed",
        lambda t, m: ((RUN / "curve.csv").write_text("epoch\n"), ["provenance", str(RUN)])[1],
        1,
        (),
        out_words=("curve.csv (output): CHANGED",),
    ),
    # ---- clear messages: verify on damaged run files
    Case(
        "verify-posterior-truncated",
        lambda t, m: (damage_posterior("truncate"), ["verify", str(RUN)])[1],
        1,
        (),
        out_words=("posterior_test.npz: CHANGED since recorded", "truncated, replaced or deleted"),
    ),
    Case(
        "verify-posterior-pickled",
        lambda t, m: (damage_posterior("pickle"), ["verify", str(RUN)])[1],
        1,
        (),
        out_words=("posterior_test.npz: CHANGED since recorded",),
    ),
    Case(
        "verify-posterior-deleted",
        lambda t, m: (damage_posterior("delete"), ["verify", str(RUN)])[1],
        1,
        (),
        out_words=("posterior_test.npz: MISSING",),
    ),
    Case(
        "verify-posterior-nan",
        lambda t, m: (damage_posterior("nan-unrecorded"), ["verify", str(RUN)])[1],
        2,
        ("posterior_test.npz", "q must hold finite probabilities"),
    ),
    Case(
        "verify-posterior-wrong-shape",
        lambda t, m: (damage_posterior("wrong-shape-unrecorded"), ["verify", str(RUN)])[1],
        2,
        ("posterior_test.npz", "wrong shapes", "q has shape (5, 3)"),
    ),
    Case(
        "verify-metrics-corrupt",
        lambda t, m: ((RUN / "metrics.json").write_text("{oops"), ["verify", str(RUN)])[1],
        2,
        ("metrics.json is corrupt", "not valid JSON"),
    ),
    Case(
        "provenance-metrics-corrupt",
        lambda t, m: ((RUN / "metrics.json").write_text("{oops"), ["provenance", str(RUN)])[1],
        2,
        ("metrics.json is corrupt", "Expecting property name"),
    ),
    Case(
        "provenance-sidecar-corrupt",
        lambda t, m: (write("t.csv", "a\n1\n"), write("t.csv.prov.json", "[1,"), ["provenance", "t.csv"])[2],
        2,
        ("t.csv.prov.json is corrupt",),
    ),
    # ---- clear messages: damaged dataset arguments
    *[
        Case(
            f"train-dataset-{kind}",
            lambda t, m, kind=kind: train_argv(Path("out/run"), dataset=bad_dataset(kind)),
            2,
            words,
        )
        for kind, words in (
            ("nan-theta", ("bad.npz", "theta has 1 non-finite")),
            ("negative-theta", ("bad.npz", "theta has negative")),
            ("mu-one", ("bad.npz", "mu must lie in (0, 1)")),
            ("not-npz", ("bad.npz", "is not an npz archive")),
            ("truncated", ("bad.npz", "is not an npz archive")),
            ("pickled", ("bad.npz", "pickled")),
        )
    ],
    Case(
        "train-dataset-missing",
        lambda t, m: train_argv(Path("out/run"), dataset=Path("data/none.npz")),
        2,
        ("data/none.npz does not exist",),
    ),
    Case(
        "plot-patterns-not-npz",
        lambda t, m: [
            "acp-plot-patterns",
            "--dataset",
            str(bad_dataset("not-npz")),
            "--out-png",
            "p.png",
            "--out-pdf",
            "p.pdf",
        ],
        2,
        ("bad.npz", "not an npz archive"),
    ),
    Case(
        "dataset-table-truncated",
        lambda t, m: (
            built_then_truncated(),
            ["acp-dataset-table", "data/x.npz", "--out-csv", "t.csv", "--out-md", "t.md"],
        )[1],
        2,
        ("data/x.npz", "differs from the", "truncated, overwritten or replaced"),
    ),
    Case(
        "dataset-table-sidecar-corrupt",
        lambda t, m: (
            built_then_truncated(),
            write("data/x.json", "{}"),
            ["acp-dataset-table", "data/x.npz", "--out-csv", "t.csv", "--out-md", "t.md"],
        )[2],
        2,
        ("data/x.json is corrupt",),
    ),
    Case(
        "dataset-table-no-sidecar",
        lambda t, m: ["acp-dataset-table", str(DATA), "--out-csv", "t.csv", "--out-md", "t.md"],
        2,
        ("data/toy.json is missing",),
    ),
    # ---- clear messages: aggregation inputs
    Case(
        "table-run-metrics-corrupt",
        lambda t, m: ((RUN / "metrics.json").write_text("{oops"), table_argv())[1],
        2,
        ("metrics.json: not valid JSON",),
    ),
    Case(
        "table-run-metrics-missing",
        lambda t, m: ((RUN / "metrics.json").unlink(), table_argv())[1],
        2,
        ("metrics.json not found",),
    ),
    Case(
        "table-run-metrics-not-object",
        lambda t, m: ((RUN / "metrics.json").write_text("[1]"), table_argv())[1],
        2,
        ("expected a JSON object",),
    ),
    Case(
        "figure-run-curve-wrong-format",
        lambda t, m: (
            (RUN / "curve.csv").write_text("epoch\n"),
            ["acp-figure-fig3b", "--runs", str(RUN), "--out-png", "f.png", "--out-csv", "f.csv"],
        )[1],
        2,
        ("curve.csv", "changed or replaced after its run wrote it"),
    ),
    Case(
        "claims-table-not-csv",
        lambda t, m: (
            Path("g.csv").write_bytes(b"\x1f\x8b\x08binary"),
            ["acp-claims-synthetic", "--tables", "g.csv", "--out-csv", "c.csv"],
        )[1],
        2,
        ("g.csv", "not a readable CSV"),
    ),
    Case(
        "claims-table-missing",
        lambda t, m: ["acp-claims-synthetic", "--tables", "none.csv", "--out-csv", "c.csv"],
        2,
        ("none.csv", "not found"),
    ),
    # ---- clear messages: JSON arguments
    Case(
        "make-dataset-spec-missing-keys",
        lambda t, m: [
            "acp-make-dataset",
            "--name",
            "x",
            "--spec",
            '{"family": "random"}',
            "--out",
            "data/x.npz",
        ],
        2,
        ("--spec", "'seed' is a required property"),
    ),
    Case(
        "make-dataset-spec-bad-json",
        lambda t, m: ["acp-make-dataset", "--name", "x", "--spec", "{", "--out", "data/x.npz"],
        2,
        ("--spec", "not valid JSON"),
    ),
    Case(
        "train-cell-best-bad-json",
        lambda t, m: cell_argv("acp-train-cell", "--seeds", "0", "--best", write("b.json", "{")),
        2,
        ("--best", "not valid JSON"),
    ),
    Case(
        "train-cell-best-no-hparams",
        lambda t, m: cell_argv("acp-train-cell", "--seeds", "0", "--best", write("b.json", "{}")),
        2,
        ("--best", "'hparams'"),
    ),
    Case(
        "train-hparams-bad-json",
        lambda t, m: train_argv(Path("out/run"), "--hparams", "{"),
        2,
        ("--hparams", "not valid JSON"),
    ),
    # ---- clear messages: the operating system
    Case(
        "output-read-only",
        lambda t, m: (
            simulate_os_error(m, errno.EROFS),
            ["acp-make-dataset", "--name", "x", "--spec", json.dumps(RANDOM_SPEC), "--out", "data/x.npz"],
        )[1],
        2,
        ("data", "Read-only file system", "EROFS"),
    ),
    Case(
        "output-full",
        lambda t, m: (
            simulate_os_error(m, errno.ENOSPC),
            ["acp-make-dataset", "--name", "x", "--spec", json.dumps(RANDOM_SPEC), "--out", "data/x.npz"],
        )[1],
        2,
        ("data", "No space left on device", "ENOSPC"),
    ),
    Case(
        "interrupted-fresh-run",
        lambda t, m: (interrupt_training(m), train_argv(Path("out/run")))[1],
        130,
        ("interrupted; the same command resumes from out/run.partial",),
        after=lambda: Path("out/run.partial/spec.json").is_file() or pytest.fail("partial kept"),
    ),
    # ---- config: names, numbers, YAML
    Case(
        "config-text-methods-empty",
        lambda t, m: [
            "check-config",
            config_with(
                t, lambda c: c["grids"]["smoke"]["acp"].setdefault("text", {}).__setitem__("methods", [])
            ),
        ],
        2,
        ("grids.smoke.acp.text.methods", "should be non-empty"),
    ),
    Case(
        "config-experiment-unknown-dataset",
        lambda t, m: [
            "check-config",
            config_with(
                t,
                lambda c: c["grids"]["smoke"]["acp"]["experiments"]["fig3a"].__setitem__(
                    "datasets", ["nope"]
                ),
            ),
        ],
        2,
        ("grids.smoke.acp.experiments.fig3a.datasets", "unknown dataset 'nope'"),
    ),
    Case(
        "config-grid-unknown-dataset",
        lambda t, m: [
            "check-config",
            config_with(t, lambda c: c["grids"]["smoke"]["acp"]["datasets"].append("nope")),
        ],
        2,
        ("grids.smoke.acp.datasets", "unknown dataset 'nope'"),
    ),
    Case(
        "config-negative-seed",
        lambda t, m: [
            "check-config",
            config_with(t, lambda c: c["datasets"]["syn-random-1"].__setitem__("seed", -1)),
        ],
        2,
        ("datasets.syn-random-1", "-1"),
    ),
    Case(
        "config-yaml-syntax",
        lambda t, m: ["check-config", write("bad.yaml", "grid: smoke\ndatasets: [a\n")],
        2,
        ("bad.yaml:3:1", "invalid YAML"),
    ),
    Case(
        "config-yaml-python-tag",
        lambda t, m: ["check-config", write("bad.yaml", "results: !!python/object:os.system {}\n")],
        2,
        ("bad.yaml:1:10", "safe loader"),
    ),
    Case(
        "config-missing", lambda t, m: ["check-config", "none.yaml"], 2, ("config file not found: none.yaml",)
    ),
    Case(
        "config-budget-patience-absurd",
        lambda t, m: [
            "check-config",
            config_with(t, lambda c: c["grids"]["smoke"]["acp"]["budget"].update(max_epochs=5, patience=10)),
        ],
        0,
        ("warning: grids.smoke.acp.experiments.fig3a", "patience = 10", "early stopping can never trigger"),
    ),
    Case(
        "config-budget-batch-absurd",
        lambda t, m: [
            "check-config",
            config_with(t, lambda c: c["grids"]["smoke"]["acp"]["budget"].update(batch_size=100000)),
        ],
        0,
        ("warning: grids.smoke.acp.experiments.fig3a", "batch_size = 100000 exceeds N_train"),
    ),
]


def test_catalogue_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and len(CASES) >= 45


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fault(
    case: Case,
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_case(case, template, tmp_path, monkeypatch, capsys)


# ---------------------------------------------------------------------------------- real signals
@pytest.mark.slow
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_signal_during_a_rerun_keeps_the_finished_run(template: Path, tmp_path: Path, signame: str) -> None:
    """A rerun (another budget) of a finished run is stopped by a real signal after its first
    checkpoint: the finished run is intact, the partial directory keeps the checkpoint, and
    SIGINT (Ctrl-C) says how to resume and exits 130."""
    import signal
    import time

    from test_failures import CLI, checkpoint_epoch

    world = tmp_path / "world"
    shutil.copytree(template, world, symlinks=True)
    before = {p: (world / p).read_bytes() for p in FINISHED}
    argv = train_argv(RUN, "--max-epochs", "3000", "--patience", "3000")  # the last --max-epochs counts
    log = tmp_path / "err.log"
    with open(log, "w") as err:
        # SIGINT back to its default in the child: a test run started in the background of a
        # non-interactive shell inherits SIGINT ignored, and Python then installs no
        # KeyboardInterrupt handler, so Ctrl-C would never reach the CLI.
        proc = subprocess.Popen(
            [*CLI, *argv],
            cwd=world,
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            deadline = time.monotonic() + 300
            while (
                checkpoint_epoch(world / "results/runs/exp/toy/svi/n60/seed0.partial/checkpoint.pt") or 0
            ) < 1:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline
                time.sleep(0.02)
            proc.send_signal(getattr(signal, signame))
        finally:
            proc.wait(timeout=60)
    for path, content in before.items():
        assert (world / path).read_bytes() == content
    assert (world / "results/runs/exp/toy/svi/n60/seed0.partial/checkpoint.pt").is_file()
    if signame == "SIGINT":
        text = log.read_text()
        assert proc.returncode == 130 and "Traceback" not in text
        assert "interrupted; the same command resumes from results/runs/exp/toy/svi/n60/seed0.partial" in text
    else:
        assert proc.returncode == -getattr(signal, signame)


# ---------------------------------------------------------------------------------- Snakemake
_snakemake = smoke_snakemake


def _fake_dataset(results: Path, name: str) -> Path:
    """A stand-in for a built dataset: .npz and a sidecar recording its sha256, as acp-make-dataset writes."""
    from noisyor_bench.infra.hashing import sha256_file_memo

    npz = write_toy_dataset(results / "data" / f"{name}.npz")
    sidecar = {
        "provenance": {"outputs": [{"path": str(npz), "relpath": npz.name, "sha256": sha256_file_memo(npz)}]}
    }
    write_json_atomic(npz.with_suffix(".json"), sidecar)
    return npz


@pytest.mark.slow
def test_snakemake_corrupted_raw_input_keeps_the_derived_dataset(tmp_path: Path, mirror: Path) -> None:
    """A mirror file replaced by a corrupted newer copy: verify_raw fails, the valid
    data/multi-mnist.npz and its sidecar are kept (make_dataset never starts)."""
    from noisyor_bench.data.rawdata import REGISTRY, dataset_raw_keys

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    keys = dataset_raw_keys(cfg["datasets"]["multi-mnist"])
    results = tmp_path / "results"
    npz = _fake_dataset(results, "multi-mnist")
    kept = {p: p.read_bytes() for p in (npz, npz.with_suffix(".json"))}
    copy = tmp_path / "mirror"
    for key in keys:
        rel = REGISTRY[key].relpath
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).symlink_to(mirror / rel)
    bad = copy / REGISTRY[keys[0]].relpath
    bad.unlink()
    bad.write_bytes(b"corrupted")  # newer than the dataset
    done = _snakemake(tmp_path, results, copy, str(npz))
    assert done.returncode != 0
    log = (results / "logs" / "verify_raw" / f"{keys[0]}.log").read_text()
    assert "checksum mismatch" in log and keys[0] in log
    for path, content in kept.items():
        assert path.read_bytes() == content, f"{path} was removed or changed"


@pytest.mark.slow
def test_snakemake_truncated_dataset_stops_before_scheduling(tmp_path: Path) -> None:
    """A truncated results/data/syn-pattern.npz: the workflow refuses before scheduling any job,
    names the file, and no finished run file is deleted."""
    results = tmp_path / "results"
    npz = _fake_dataset(results, "syn-pattern")
    run = results / "runs" / "fig4" / "syn-pattern" / "avi" / "n200" / "seed0"
    run.mkdir(parents=True)
    (run / "metrics.json").write_text("{}")
    npz.write_bytes(npz.read_bytes()[:300])
    done = _snakemake(tmp_path, results, None, str(run / "metrics.json"))
    assert done.returncode != 0
    assert "corrupted dataset file" in done.stderr and "syn-pattern.npz" in done.stderr
    assert "--rerun-triggers" in done.stderr
    assert (run / "metrics.json").read_text() == "{}"


@pytest.mark.slow
def test_two_invocations_one_results_dir_from_different_working_directories(tmp_path: Path) -> None:
    """While one invocation (here: a process holding the results lock, as Snakemake's onstart
    does) writes a results directory, a second one from another working directory is refused
    before any job runs, naming the first; a dry run is still allowed."""
    results = tmp_path / "results"
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from noisyor_bench.infra.io import lock_results_dir; "
            f"f = lock_results_dir({str(results)!r}); print('locked', flush=True); time.sleep(120)",
        ],
        cwd=first,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "workflow")},
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        target = str(results / "data" / "syn-random-1.npz")
        dry = _snakemake(second, results, None, "--dry-run", target)
        assert dry.returncode == 0, dry.stderr[-2000:]
        done = _snakemake(second, results, None, target)
        assert done.returncode != 0
        assert "is being written by another invocation" in done.stderr and str(first) in done.stderr
        assert not (results / "data").exists()
    finally:
        holder.kill()
        holder.wait()
    again = _snakemake(second, results, None, "--dry-run", target)  # the lock died with its holder
    assert again.returncode == 0
    from noisyor_bench.infra.io import lock_results_dir

    lock = lock_results_dir(results)  # free again
    lock.close()


def _copy_mirror_files(mirror: Path, keys: list[str], dest: Path) -> Path:
    """The files ``keys`` of ``mirror`` copied to ``dest`` (a mirror at another path, with the same
    bytes and fresh mtimes)."""
    from noisyor_bench.data.rawdata import REGISTRY

    for key in keys:
        rel = REGISTRY[key].relpath
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(mirror / rel, dest / rel)
    return dest


@pytest.mark.slow
def test_snakemake_relocated_results_and_mirror_rerun_nothing(tmp_path: Path, mirror: Path) -> None:
    """The relocation case: a working directory (relative results_dir, with Snakemake's metadata in
    its .snakemake/) copied elsewhere with its mtimes (``cp -a``), and the raw-data mirror at
    another path with the same files: nothing is rerun. Snakemake keys its metadata (params, input
    paths, code) by the output paths, which stay the same relative paths, so any absolute path in a
    job's params or inputs (the mirror's, the checkout's) would rerun the dataset and all after it."""
    from noisyor_bench.data.rawdata import dataset_raw_keys

    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    keys = dataset_raw_keys(cfg["datasets"]["multi-mnist"])
    first, moved = tmp_path / "first", tmp_path / "moved"
    first.mkdir()
    target = "results/data/multi-mnist.npz"
    built = _snakemake(first, "results", _copy_mirror_files(mirror, keys, tmp_path / "mirror-a"), target)
    assert built.returncode == 0, built.stderr[-3000:]
    assert (first / ".snakemake" / "metadata").is_dir()  # the metadata travels with the directory
    shutil.copytree(first, moved, symlinks=True)  # copy2: mtimes kept, as cp -a
    other = _copy_mirror_files(mirror, keys, tmp_path / "mirror-b")
    dry = _snakemake(moved, "results", other, "--dry-run", target)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "Nothing to be done" in dry.stdout + dry.stderr, (dry.stdout + dry.stderr)[-3000:]
