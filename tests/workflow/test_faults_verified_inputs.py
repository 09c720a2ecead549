"""Fault catalogue: a run file is checked against the sha256 its run recorded before it is loaded.

A posterior copied in from another method's run is a valid archive with valid arrays, and an
encoder with one flipped byte still loads: only the hash each run records in its
``metrics.json`` (``provenance.outputs``) tells them from the files the run wrote.  Each case
runs on a copy of a world with the template's SVI run plus an ACP, an ACP-SG and an AVI run of
the same cell (the ablation table's three methods), or builds a tiny APE run set itself.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from faultworld import DATA, RUN, Case, run_case, train_argv

from noisyor_bench.cli import main

METHODS = ("acp", "acp-sg", "avi")
CHANGED = "changed or replaced after its run wrote it"
FIX = "delete the run directory"


def run_of(method: str) -> Path:
    return Path(str(RUN).replace("/svi/", f"/{method}/"))


def posterior(method: str) -> Path:
    return run_of(method) / "posterior_test.npz"


@pytest.fixture(scope="module")
def methods_world(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The template world with an ACP, ACP-SG and AVI run of its cell, trained by the CLI."""
    import os

    root = tmp_path_factory.mktemp("methods") / "world"
    shutil.copytree(template, root, symlinks=True)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for method in METHODS:
            assert main(train_argv(run_of(method), "--method", method)) == 0
    finally:
        os.chdir(cwd)
    return root


def swapped(into: str, source: str = "avi") -> None:
    """A valid posterior of another method's run copied over ``into``'s own."""
    shutil.copyfile(posterior(source), posterior(into))


def ablation_argv() -> list[str]:
    runs = [str(run_of(m)) for m in METHODS]
    return ["acp-ablation-table", "--runs", *runs, "--datasets", str(DATA), "--out-csv", "ablation.csv"]


def patterns_argv() -> list[str]:
    """Fig. 4's recovery table and pattern figure of the SVI run (the toy data as 2 x 5 images)."""
    DATA.with_suffix(".json").write_text(json.dumps({"name": "toy", "image_shape": [2, 5]}))
    return [
        "acp-figure-patterns",
        *("--runs", str(RUN), "--dataset", str(DATA), "--out-png", "patterns.png"),
        *("--out-csv", "recovery.csv"),
    ]


def _absent(*paths: str) -> None:
    for path in paths:
        assert not Path(path).exists(), path


# ---------------------------------------------------------------------------------- APE
APE_DATA = Path("data/ape-toybars.npz")
ENCODER_RUN = Path("results/runs/ape-train/toybars/standard/n1/seed0")
VI_RUN = Path("results/runs/ape-vi/toybars/vi/n0/seed0")
EVAL_RUN = Path("results/runs/ape-eval/toybars/all/n0/seed0")


def ape_settings() -> str:
    from test_faults_cli_labels import APE_SETTINGS

    return json.dumps(APE_SETTINGS)


def ape_argv(command: str, out: Path, *extra: str) -> list[str]:
    base = ["--dataset", "toybars", "--dataset-file", str(APE_DATA), "--seed", "0"]
    return [command, *base, "--settings", ape_settings(), "--out-dir", str(out), *extra]


def flip_encoder_byte() -> None:
    """One bit flipped in the middle of the encoder's largest weight tensor: torch still loads it."""
    path = ENCODER_RUN / "encoder.pt"
    with zipfile.ZipFile(path) as archive:
        entry = max((i for i in archive.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    raw = bytearray(path.read_bytes())
    header = entry.header_offset
    name_len = int.from_bytes(raw[header + 26 : header + 28], "little")
    extra_len = int.from_bytes(raw[header + 28 : header + 30], "little")
    raw[header + 30 + name_len + extra_len + entry.file_size // 2 + 3] ^= 0x40
    path.write_bytes(bytes(raw))


def ape_evaluate_after(damage: str) -> list[str]:
    """A toy-bars encoder and VI run built by the CLI, then damaged; the evaluation's argv."""
    settings = ["--settings", ape_settings(), "--out", str(APE_DATA)]
    assert main(["ape-data", "--dataset", "toybars", *settings]) == 0
    assert main(ape_argv("ape-train", ENCODER_RUN, "--method", "standard")) == 0
    assert main(ape_argv("ape-vi", VI_RUN)) == 0
    if damage == "encoder-byte":
        flip_encoder_byte()
    return ape_argv("ape-evaluate", EVAL_RUN, "--vi-dir", str(VI_RUN), "--encoder", f"standard={ENCODER_RUN}")


AWARE_RUN = Path("results/runs/ape-train/toybars/ape-model-aware/n4/seed0")


def ape_figures_after_warm_curve_edit() -> list[str]:
    """A toy-bars evaluation with the model-aware encoder (so VI warm-starts from it and the run
    writes vi_warm_curve.csv), then one row of that curve edited; Figure 1's argv."""
    settings = ["--settings", ape_settings(), "--out", str(APE_DATA)]
    assert main(["ape-data", "--dataset", "toybars", *settings]) == 0
    assert main(ape_argv("ape-train", AWARE_RUN, "--method", "ape-model-aware")) == 0
    assert main(ape_argv("ape-vi", VI_RUN)) == 0
    evaluate = ape_argv(
        "ape-evaluate", EVAL_RUN, "--vi-dir", str(VI_RUN), "--encoder", f"ape-model-aware={AWARE_RUN}"
    )
    assert main(evaluate) == 0
    curve = EVAL_RUN / "vi_warm_curve.csv"
    lines = curve.read_text().splitlines()
    curve.write_text("\n".join([*lines, lines[-1]]) + "\n")  # a duplicated last row: still a valid CSV
    return [
        "ape-figures",
        "--dataset",
        "toybars",
        "--evals",
        str(EVAL_RUN / "metrics.json"),
        "--vi-dirs",
        str(VI_RUN),
        "--out-left-png",
        "left.png",
        "--out-right-png",
        "right.png",
    ]


CASES = [
    Case(
        "posterior-of-another-method-refused-by-ablation-table",
        lambda t, m: (swapped("acp-sg"), ablation_argv())[1],
        2,
        (str(posterior("acp-sg")), CHANGED, str(run_of("acp-sg") / "metrics.json"), FIX),
        after=lambda: _absent("ablation.csv"),
    ),
    Case(
        "posterior-of-another-method-refused-by-recovery-table",
        lambda t, m: (swapped("svi"), patterns_argv())[1],
        2,
        (str(posterior("svi")), CHANGED, FIX),
        after=lambda: _absent("recovery.csv", "patterns.png"),
    ),
    Case(
        "untouched-posteriors-pass-the-ablation-table",
        lambda t, m: ablation_argv(),
        0,
        (),
        after=lambda: Path("ablation.csv").is_file() or pytest.fail("no ablation.csv"),
    ),
]

APE_CASES = [
    Case(
        "encoder-byte-flipped-refused-by-ape-evaluate",
        lambda t, m: ape_evaluate_after("encoder-byte"),
        2,
        (str(ENCODER_RUN / "encoder.pt"), CHANGED, str(ENCODER_RUN / "metrics.json"), FIX),
        after=lambda: _absent(str(EVAL_RUN)),
    ),
    Case(
        "warm-start-curve-edited-refused-by-ape-figures",
        lambda t, m: ape_figures_after_warm_curve_edit(),
        2,
        (str(EVAL_RUN / "vi_warm_curve.csv"), CHANGED, str(EVAL_RUN / "metrics.json"), FIX),
        after=lambda: _absent("left.png", "right.png"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fault(
    case: Case,
    methods_world: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_case(case, methods_world, tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize("case", APE_CASES, ids=lambda c: c.id)
def test_ape_fault(
    case: Case,
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_case(case, template, tmp_path, monkeypatch, capsys)


# ---------------------------------------------------------------------------------- declared inputs
def _planned_jobs(text: str) -> list[dict[str, str]]:
    """A dry run's job blocks: ``rule``, ``input`` and ``output`` of each."""
    jobs = []
    for block in text.split("\n\n"):
        lines = [line.strip() for line in block.splitlines()]
        head = next((line for line in lines if line.startswith("rule ") and line.endswith(":")), None)
        if head is None:
            continue
        job = {"rule": head[5:-1]}
        job.update(line.split(": ", 1) for line in lines if line.startswith(("input: ", "output: ")))
        jobs.append(job)
    return jobs


@pytest.mark.slow
def test_every_file_ape_evaluate_reads_is_its_input(tmp_path: Path) -> None:
    """The APE smoke DAG: ape_evaluate's inputs name each encoder's encoder.pt, the VI run's
    posterior.npz and curve.csv and the NUTS run's samples.npz (before, a new encoder.pt reran
    nothing), ape_figures' the evaluation's scores.npz; and every output of every job but the raw
    inputs' checks is kept until its replacement exists (update)."""
    from faultworld import smoke_snakemake

    done = smoke_snakemake(tmp_path, "results", None, "--dry-run", config=("papers=[ape]",))
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    jobs = _planned_jobs(done.stdout)
    (evaluate,) = [j for j in jobs if j["rule"] == "ape_evaluate"]
    inputs = evaluate["input"].split(", ")
    trained = [i for i in inputs if "/ape-train/" in i and i.endswith("/metrics.json")]
    assert len(trained) == 3 and all(i.replace("metrics.json", "encoder.pt") in inputs for i in trained), (
        inputs
    )
    for name in ("ape-vi/toybars/vi/n0/seed0/posterior.npz", "ape-vi/toybars/vi/n0/seed0/curve.csv"):
        assert f"results/runs/{name}" in inputs, inputs
    assert any(i.endswith("/samples.npz") for i in inputs), inputs
    (figures,) = [j for j in jobs if j["rule"] == "ape_figures"]
    assert "results/runs/ape-eval/toybars/all/n0/seed0/scores.npz" in figures["input"].split(", ")
    kept = [j for j in jobs if j["rule"] not in ("fetch_raw", "verify_raw", "all") and "output" in j]
    assert len(kept) > 20, [j["rule"] for j in jobs]
    for job in kept:
        assert all(o.endswith(" (update)") for o in job["output"].split(", ")), job
