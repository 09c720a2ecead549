"""The world the fault catalogue's cases run in, and how a case is run.

The catalogue (``tests/workflow/test_fault*.py``, one module per family of faults) lists
:class:`Case` s: an input or an action a careful user may cause, with the exit code and the
words the message must contain; data-loss cases also name the finished outputs that must still
exist, byte-identical, afterwards.  Every case runs the CLI in process on a copy of
:func:`template` (a toy dataset and one finished SVI run), through :func:`run_case`.  The
``template`` fixture itself is in ``tests/conftest.py``.
"""

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO

from noisyor_bench.cli import main
from noisyor_bench.infra.io import load_npz, read_json, write_json_atomic, write_npz_atomic

RUN = Path("results/runs/exp/toy/svi/n60/seed0")
DATA = Path("data/toy.npz")
FAST = ["--eval-samples", "10", "--iw-samples", "0", "--threads", "1", "--device", "cpu"]
RANDOM_SPEC = {
    "family": "random",
    "D": 6,
    "K": 3,
    "alpha_theta": 1,
    "beta_theta": 5,
    "alpha_mu": 1,
    "beta_mu": 5,
    "s": 0.5,
    "n_train_pool": 20,
    "n_test": 10,
    "seed": 1,
}


def train_argv(out: Path = RUN, *extra: str, dataset: Path = DATA) -> list[str]:
    return [
        "acp-train",
        "--dataset",
        str(dataset),
        "--method",
        "svi",
        "--mode",
        "learning",
        "--n-train",
        "60",
        "--seed",
        "0",
        "--experiment",
        "exp",
        "--dataset-name",
        "toy",
        "--max-epochs",
        "2",
        *FAST,
        "--out",
        str(out),
        *extra,
    ]


def cell_argv(command: str, *extra: str) -> list[str]:
    return [
        command,
        "--dataset",
        str(DATA),
        "--dataset-name",
        "toy",
        "--experiment",
        "exp",
        "--method",
        "svi",
        "--mode",
        "learning",
        "--n-train",
        "60",
        "--budget",
        '{"max_epochs": 2}',
        "--evaluation",
        '{"samples": 10, "iw_samples": 0}',
        "--device",
        "cpu",
        *extra,
    ]


# ---------------------------------------------------------------------------------- helpers
def config_with(tmp: Path, edit: Callable[[dict], None]) -> str:
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["grid"] = "smoke"
    edit(cfg)
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def damage_posterior(kind: str) -> None:
    p = RUN / "posterior_test.npz"
    if kind == "truncate":
        p.write_bytes(p.read_bytes()[:100])
    elif kind == "delete":
        p.unlink()
    elif kind == "pickle":
        p.write_bytes(pickle.dumps({"q": [1, 2]}))
    elif kind == "nan-unrecorded":  # an older run without hashes: the arrays themselves are checked
        arrays = load_npz(p)
        arrays["q"] = arrays["q"] * np.nan
        write_npz_atomic(p, **arrays)
        metrics = read_json(RUN / "metrics.json")
        metrics["provenance"]["outputs"] = []
        write_json_atomic(RUN / "metrics.json", metrics)
    elif kind == "wrong-shape-unrecorded":
        arrays = load_npz(p)
        arrays["q"] = arrays["q"][:5]
        write_npz_atomic(p, **arrays)
        metrics = read_json(RUN / "metrics.json")
        metrics["provenance"]["outputs"] = []
        write_json_atomic(RUN / "metrics.json", metrics)


def bad_dataset(kind: str) -> Path:
    """A damaged copy of the toy dataset; returns its path."""
    path = Path("data/bad.npz")
    arrays = load_npz(DATA)
    if kind == "nan-theta":
        arrays["theta"][0, 0] = np.nan
    elif kind == "negative-theta":
        arrays["theta"][0, 0] = -1.0
    elif kind == "mu-one":
        arrays["mu"][0] = 1.0
    if kind in ("nan-theta", "negative-theta", "mu-one"):
        write_npz_atomic(path, **arrays)
    elif kind == "not-npz":
        path.write_text("x,y\n1,2\n")
    elif kind == "truncated":
        path.write_bytes(DATA.read_bytes()[:200])
    elif kind == "pickled":
        np.savez(path, x_train=np.array([{"a": 1}], dtype=object))
    return path


def built_then_truncated() -> None:
    """data/x.npz built by acp-make-dataset (with its sidecar), then truncated."""
    assert (
        main(["acp-make-dataset", "--name", "x", "--spec", json.dumps(RANDOM_SPEC), "--out", "data/x.npz"])
        == 0
    )
    Path("data/x.npz").write_bytes(Path("data/x.npz").read_bytes()[:300])


def simulate_os_error(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """The output location is read-only (EROFS) or full (ENOSPC): creating the temp file fails.
    (The tests run as root, for whom permission bits do not apply; the OS error is injected.)"""

    def refuse(*args, dir=None, **kwargs):
        raise OSError(code, os.strerror(code), str(dir))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)


def interrupt_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C arrives during the fit (after the working directory exists)."""
    import noisyor_bench.experiments.acp.runs as runs

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "_fit", stop)


def fail_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after training (e.g. in the test evaluation) of a rerun."""
    import noisyor_bench.experiments.acp.runs as runs
    from noisyor_bench.infra.errors import DataError

    def fail(*args, **kwargs):
        raise DataError("injected failure after training")

    monkeypatch.setattr(runs, "evaluate_posterior", fail)


def table_argv() -> list[str]:
    return ["acp-table-fig3a", "--runs", str(RUN), "--out-csv", "t.csv", "--out-md", "t.md"]


def write(path: str, text: str) -> str:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)
    return path


# ---------------------------------------------------------------------------------- the catalogue
@dataclass
class Case:
    id: str
    argv: Callable[[Path, pytest.MonkeyPatch], list[str]]  # prepares the fault (cwd = a world copy)
    code: int
    words: tuple[str, ...]
    keep: tuple[Path, ...] = ()  # finished outputs that must survive unchanged
    after: Callable[[], None] | None = None  # extra checks of the files afterwards
    out_words: tuple[str, ...] = field(default=())  # words of stdout


FINISHED = (RUN / "metrics.json", RUN / "posterior_test.npz", RUN / "curve.csv")


def run_case(
    case: Case,
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Run one case on a copy of the template world and check its exit code, words and survivors."""
    world = tmp_path / "world"
    shutil.copytree(template, world, symlinks=True)
    monkeypatch.chdir(world)
    before = {p: p.read_bytes() for p in case.keep}
    argv = case.argv(tmp_path, monkeypatch)
    code = main(argv)
    captured = capsys.readouterr()
    assert code == case.code, captured.err[-2000:]
    assert "Traceback" not in captured.err
    for word in case.words:
        assert word in captured.err, f"{word!r} not in: {captured.err[-2000:]}"
    for word in case.out_words:
        assert word in captured.out, f"{word!r} not in: {captured.out[-2000:]}"
    for path, content in before.items():
        assert path.is_file() and path.read_bytes() == content, f"finished output lost or changed: {path}"
    if case.after is not None:
        case.after()


def _as_spelled(target: str, workdir: Path) -> str:
    """A target file as the workflow spells its outputs: results_dir is normalised relative to the
    working directory when inside it (``noisyor_bench.experiments.config.normalise_results_dir``),
    and Snakemake matches targets by their spelling."""
    inside = os.path.relpath(target, workdir) if os.path.isabs(target) else None
    return inside if inside is not None and not inside.startswith("..") else target


def smoke_snakemake(
    workdir: Path, results: Path | str, mirror: Path | None, *targets: str, config: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """One real Snakemake invocation of the smoke grid from ``workdir`` into ``results``: options
    (``-n``, ``--no-hooks``...) and targets mixed in ``targets``, more ``--config`` items in ``config``."""
    settings = [f"results_dir={results}", "grid=smoke", *config]
    settings += [f"raw_data_dir={mirror}"] if mirror else []
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(REPO / "config" / "config.yaml"),
        "--cores",
        "1",
        "--config",
        *settings,
        *[t for t in targets if t.startswith("-")],
        "--",
        *[_as_spelled(t, workdir) for t in targets if not t.startswith("-")],
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # the jobs' noisyor-bench
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=workdir)
