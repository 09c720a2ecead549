"""Provenance records: environment, run/dataset/table records, `verify`, `provenance`.

The runs are real (SVI, two epochs, on a tiny dataset) so the records checked here are the
ones the workflow writes; the chain test builds a small MULTI-MNIST from the raw-data mirror
to reach the raw inputs and their pinned checksums.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import cli
from toydata import write_toy_dataset

from noisyor_bench.cli import main
from noisyor_bench.data.rawdata import REGISTRY
from noisyor_bench.experiments.acp.runs import RunSpec, execute_run
from noisyor_bench.experiments.rundir import run_dir
from noisyor_bench.inference.fitting import FitBudget
from noisyor_bench.infra import provenance as P
from noisyor_bench.infra.io import load_npz, read_json, write_json_atomic, write_npz_atomic

HAS_GIT = shutil.which("git") is not None


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------- code version
def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_git_state_clean_then_dirty(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    _git(repo, "add", "code.py")
    _git(repo, "commit", "-q", "-m", "one")
    head = _git(repo, "rev-parse", "HEAD").strip()

    clean = P.git_state(repo, tracked_file=repo / "code.py")
    assert (clean["source"], clean["commit"], clean["dirty"], clean["reason"]) == ("git", head, False, None)
    assert Path(clean["repository"]).resolve() == repo.resolve() and clean["changes"] == []

    (repo / "code.py").write_text("x = 2\n")
    dirty = P.git_state(repo)
    assert dirty["commit"] == head and dirty["dirty"] is True and dirty["changes"] == [" M code.py"]

    _git(repo, "checkout", "-q", "--", "code.py")
    (repo / "new_module.py").write_text("")
    assert P.git_state(repo)["dirty"] is True  # an uncommitted new file changes the code too

    (repo / "untracked.py").write_text("")
    installed = P.git_state(repo, tracked_file=repo / "untracked.py")  # a copy inside some checkout
    assert installed["commit"] is None and "not a git checkout" in installed["reason"]

    outside = tmp_path / "plain"
    outside.mkdir()
    missing = P.git_state(outside)
    assert missing["commit"] is None and missing["dirty"] is None and P.CODE_VERSION_ENV in missing["reason"]


def test_git_absent_and_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on PATH
    record = P.git_state(tmp_path)
    assert record["commit"] is None and "git is not installed" in record["reason"]

    P.code_version.cache_clear()
    monkeypatch.setenv(P.CODE_VERSION_ENV, "0123abc+dirty")
    try:
        assert P.code_version()["commit"] == "0123abc" and P.code_version()["dirty"] is True
        assert P.code_version()["source"] == f"${P.CODE_VERSION_ENV}"
        P.code_version.cache_clear()
        monkeypatch.setenv(P.CODE_VERSION_ENV, "0123abc")
        assert P.code_version()["dirty"] is False
    finally:
        P.code_version.cache_clear()


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_code_version_of_this_checkout(repo: Path) -> None:
    if not (repo / ".git").exists() or os.environ.get(P.CODE_VERSION_ENV):
        pytest.skip("not a git checkout")
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert P.code_version()["commit"] == head and isinstance(P.code_version()["dirty"], bool)


# ---------------------------------------------------------------------------------- environment
def test_pinned_requirements_parsing(tmp_path: Path) -> None:
    req = tmp_path / "r.txt"
    req.write_text(
        "# pins\n-r other.txt\ntorch==2.13.0  # cpu\nPyYAML==6.0.3\nfoo[extra]==1.0 ; python_version>'3'\nbar\n\n"
    )
    assert P.pinned_requirements(req) == {"torch": "2.13.0", "PyYAML": "6.0.3", "foo": "1.0", "bar": None}
    assert P._same_version("2.13.0+cpu", "2.13.0") and not P._same_version("2.12.0", "2.13.0")
    assert not P._same_version(None, "1.0")


def test_environment_record() -> None:
    import numpy
    import scipy

    env = P.environment("cpu", 1)
    versions = env["packages"]["versions"]
    assert versions["numpy"] == numpy.__version__ and versions["scipy"] == scipy.__version__
    assert versions["torch"] == torch.__version__
    for name in ("pandas", "scikit-learn", "snakemake", "nltk", "matplotlib", "seaborn"):
        assert versions[name], name
    if env["packages"]["requirements"]:  # the checkout's pins: the venv must match them
        assert env["packages"]["differ_from_pins"] == {}
    assert env["python"]["version"].count(".") == 2 and env["platform"]["hostname"]
    assert (
        env["device"]["cpu_model"]
        and env["device"]["torch_threads"] == 1
        and env["device"]["gpu_name"] is None
    )
    json.dumps(env)  # plain JSON

    clock = P.Stopwatch()
    t = clock.record()
    start, end = datetime.fromisoformat(t["start"]), datetime.fromisoformat(t["end"])
    assert start.utcoffset().total_seconds() == 0 and start <= end and t["wall_seconds"] >= 0


def test_argument_inputs_and_directories(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for name in ("metrics.json", "posterior_test.npz", "curve.csv"):
        (run / name).write_text(name)
    (tmp_path / "hp.json").write_text("{}")
    (tmp_path / "d.npz").write_text("npz")
    (tmp_path / "d.json").write_text("{}")
    args = argparse.Namespace(
        runs=[str(run)],
        hparams=f"@{tmp_path / 'hp.json'}",
        dataset=str(tmp_path / "d.npz"),
        draws="[" + "{}," * 5000 + "{}]",
        out_csv=str(tmp_path / "t.csv"),
        func=print,
        verbose=False,
    )
    found = {(p.name, role) for p, role in P.argument_inputs(args)}
    assert found == {
        ("metrics.json", "--runs"),
        ("posterior_test.npz", "--runs (run file)"),
        ("curve.csv", "--runs (run file)"),
        ("hp.json", "--hparams"),
        ("d.npz", "--dataset"),
    }  # d.json: only if the command notes it
    assert P.declared_outputs(args) == []  # t.csv was not written
    digest, n = P.directory_sha256(run)
    assert n == 3 and digest == P.file_entry(run, "x")["sha256"]
    (run / "curve.csv").write_text("changed")
    assert P.directory_sha256(run)[0] != digest


# ---------------------------------------------------------------------------------- runs
@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results tree with a tiny synthetic dataset (no sidecar) under data/."""
    root = tmp_path_factory.mktemp("prov") / "results"
    (root / "data").mkdir(parents=True)
    write_toy_dataset(root / "data" / "toy.npz", n_train=40, n_val=20, n_test=30)
    return root


def train(results: Path, seed: int, dataset: str = "toy", experiment: str = "exp") -> Path:
    spec = RunSpec(
        dataset=results / "data" / f"{dataset}.npz",
        method="svi",
        mode="inference",
        n_train=0,
        seed=seed,
        out_dir=run_dir(results, experiment, dataset, "svi", 0, seed),
        experiment=experiment,
        hparams={"lr_local": 0.3},
        budget=FitBudget(max_epochs=2),
        n_samples=5,
        iw_samples=5,
        threads=1,
    )
    return execute_run(spec)


@pytest.fixture(scope="module")
def runs(results: Path) -> list[Path]:
    return [train(results, seed) for seed in (0, 1)]


def test_run_has_provenance(results: Path, runs: list[Path]) -> None:
    m = read_json(runs[0] / "metrics.json")
    assert {"nelbo", "dataset_sha256", "device", "threads", "torch_version", "hparams", "budget"} <= set(
        m
    )  # kept
    prov = m["provenance"]
    assert prov["kind"] == "run" and prov["schema"] == P.SCHEMA
    (dataset,) = prov["inputs"]
    assert (
        dataset["role"] == "dataset"
        and dataset["sha256"] == sha(results / "data/toy.npz") == m["dataset_sha256"]
    )
    assert (runs[0] / dataset["relpath"]).resolve() == (results / "data/toy.npz").resolve()
    cfg = prov["config"]
    assert (cfg["seed"], cfg["method"], cfg["hparams"], cfg["budget"]["max_epochs"]) == (
        0,
        "svi",
        {"lr_local": 0.3},
        2,
    )
    assert (cfg["n_samples"], cfg["iw_samples"], cfg["device"], cfg["threads"]) == (5, 5, "cpu", 1)
    outputs = {o["path"]: o["sha256"] for o in prov["outputs"]}
    assert outputs == {name: sha(runs[0] / name) for name in ("posterior_test.npz", "curve.csv")}
    env = prov["environment"]
    assert env["device"]["torch_threads"] == 1 and env["packages"]["versions"]["torch"] == torch.__version__
    assert "commit" in env["code"] and "dirty" in env["code"]
    t = prov["time"]
    assert datetime.fromisoformat(t["start"]) <= datetime.fromisoformat(t["end"]) and t["wall_seconds"] > 0


def test_verify_finds_dataset_and_detects_tampering(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    shutil.copytree(results / "data", tmp_path / "a/results/data")
    train(tmp_path / "a/results", 0)
    (tmp_path / "a").rename(tmp_path / "b")  # the recorded path is gone: found through the relative one
    monkeypatch.chdir(tmp_path)
    run = Path("b/results/runs/exp/toy/svi/n0/seed0")
    data = Path("b/results/data/toy.npz")

    code, out, _ = cli(["verify", run], capsys)
    assert code == 0 and "all 18 values recomputable from the run's files reproduced" in out
    assert (
        "posterior_test.npz: ok" in out and "(experiment exp, paper acp)" in out
    )  # recognised by its posterior
    assert cli(["evaluate", run, "--dataset", data], capsys)[0] == 0  # the old name still works

    m = read_json(run / "metrics.json")
    m["nelbo"] *= 1.0001
    write_json_atomic(run / "metrics.json", m)
    code, out, _ = cli(["verify", run], capsys)
    assert code == 1 and "MISMATCH" in out and "nelbo" in out

    arrays = load_npz(data)
    arrays["x_test"] = 1 - arrays["x_test"]
    write_npz_atomic(data, **arrays)
    code, _, err = cli(["verify", run], capsys)
    assert code == 2 and "has changed" in err and str(run) in err and "--dataset" in err

    data.unlink()
    code, _, err = cli(["verify", run], capsys)
    assert code == 2 and "was not found" in err and "toy.npz" in err and "--dataset PATH" in err


def test_verify_flags_a_changed_run_file(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "seed1"
    shutil.copytree(results / "runs/exp/toy/svi/n0/seed1", run)
    with open(run / "curve.csv", "a") as fh:
        fh.write("99,1.0,,0.0\n")
    code, out, _ = cli(["verify", run, "--dataset", results / "data/toy.npz"], capsys)
    assert code == 1 and "curve.csv: CHANGED since recorded" in out


def test_search_best_json_has_provenance(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "search"
    code, _, _ = cli(
        [
            "acp-search",
            "--dataset",
            results / "data/toy.npz",
            "--dataset-name",
            "toy",
            "--experiment",
            "exp",
            "--method",
            "svi",
            "--mode",
            "inference",
            "--n-train",
            "0",
            "--seed",
            "0",
            "--budget",
            '{"max_epochs": 2}',
            "--evaluation",
            '{"samples": 5}',
            "--draws",
            '[{}, {"lr_local": 0.2}]',
            "--out-dir",
            out,
        ],
        capsys,
    )
    assert code == 0
    prov = read_json(out / "best.json")["provenance"]
    assert prov["kind"] == "search" and prov["config"]["draws"] == [{}, {"lr_local": 0.2}]
    assert prov["command"]["argv"][:2] == ["noisyor-bench", "acp-search"]
    hashes = {e["role"]: e["sha256"] for e in prov["inputs"]}
    assert hashes == {
        "dataset": sha(results / "data/toy.npz"),
        "draw0": sha(out / "draw0/metrics.json"),
        "draw0-init1": sha(out / "draw0-init1/metrics.json"),
        "draw1": sha(out / "draw1/metrics.json"),
        "draw1-init1": sha(out / "draw1-init1/metrics.json"),
    }  # search.inits_per_draw defaults to 2: init j > 0 trains in draw<d>-init<j>/
    assert read_json(out / "best.json")["provenance"]["config"]["inits_per_draw"] == 2
    draw = read_json(out / "draw1/metrics.json")["provenance"]
    assert draw["config"]["hparams"] == {"lr_local": 0.2} and draw["config"]["evaluate_test"] is False
    assert draw["command"]["argv"][1] == "acp-search"
    code, text, _ = cli(["provenance", out / "best.json"], capsys)
    assert code == 0 and "draw1/metrics.json" in text


# ---------------------------------------------------------------------------------- tables
def test_table_sidecars_record_inputs_and_outputs(
    results: Path, runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv, md = tmp_path / "tables" / "fig3a.csv", tmp_path / "tables" / "fig3a.md"
    assert cli(["acp-table-fig3a", "--runs", *runs, "--out-csv", csv, "--out-md", md], capsys)[0] == 0
    for out in (csv, md):
        record = read_json(P.sidecar_path(out))
        assert record["kind"] == "command" and record["command"]["argv"][:2] == [
            "noisyor-bench",
            "acp-table-fig3a",
        ]
        assert record["command"]["cwd"] == os.getcwd()
        assert {o["path"]: o["sha256"] for o in record["outputs"]} == {str(csv): sha(csv), str(md): sha(md)}
        inputs = {e["path"]: e for e in record["inputs"]}
        expected = {
            str(r / name) for r in runs for name in ("metrics.json", "posterior_test.npz", "curve.csv")
        }
        assert set(inputs) == expected
        assert all(e["sha256"] == sha(Path(p)) for p, e in inputs.items())
        assert all((out.parent / e["relpath"]).resolve() == Path(p).resolve() for p, e in inputs.items())
        assert record["environment"]["code"] == P.code_version()
    # a failed command writes no sidecar
    assert (
        cli(
            [
                "acp-table-fig3a",
                "--runs",
                tmp_path / "nope",
                "--out-csv",
                tmp_path / "x.csv",
                "--out-md",
                tmp_path / "x.md",
            ],
            capsys,
        )[0]
        == 2
    )
    assert not P.sidecar_path(tmp_path / "x.csv").exists()


def test_no_record_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "hand.csv").write_text("a\n1\n")
    code, _, err = cli(["provenance", tmp_path / "hand.csv"], capsys)
    assert code == 2 and "hand.csv has no provenance record" in err and "snakemake" in err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def chain(results: Path) -> dict[str, Any]:
    """A MULTI-MNIST dataset from the mirror, two runs on it, the fig3a and dataset tables."""
    from conftest import MIRROR

    if MIRROR is None:
        pytest.skip("raw-data mirror not found")
    spec = {
        "family": "pattern",
        "patterns": "mnist",
        "mu": 0.2,
        "weight_prob": 0.8,
        "leak_prob": 0.01,
        "mnist_threshold": 0.8,
        "n_train_pool": 30,
        "n_test": 12,
        "seed": 7,
    }
    root = results.parent / "chain"
    npz = root / "data" / "mm.npz"
    assert (
        main(
            [
                "acp-make-dataset",
                "--name",
                "mm",
                "--spec",
                json.dumps(spec),
                "--raw-data-dir",
                str(MIRROR),
                "--cache-dir",
                str(root / "raw"),
                "--out",
                str(npz),
            ]
        )
        == 0
    )
    first = npz.read_bytes()
    runs_ = [train(root, seed, dataset="mm") for seed in (0, 1)]
    tables = root / "tables"
    assert (
        main(
            [
                "acp-table-fig3a",
                "--runs",
                *map(str, runs_),
                "--out-csv",
                str(tables / "fig3a.csv"),
                "--out-md",
                str(tables / "fig3a.md"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "acp-dataset-table",
                str(npz),
                "--out-csv",
                str(tables / "datasets.csv"),
                "--out-md",
                str(tables / "datasets.md"),
            ]
        )
        == 0
    )
    return {
        "root": root,
        "npz": npz,
        "first_bytes": first,
        "runs": runs_,
        "tables": tables,
        "spec": spec,
        "mirror": MIRROR,
    }


def test_dataset_sidecar_provenance(chain: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    npz = chain["npz"]
    side = read_json(npz.with_suffix(".json"))
    assert side["name"] == "mm" and side["D"] == 784  # existing keys kept
    prov = side["provenance"]
    assert prov["kind"] == "dataset" and prov["config"] == {
        "name": "mm",
        "source": "--spec",
        "entry": chain["spec"],
    }
    raw = {e["role"]: e for e in prov["inputs"]}
    assert set(raw) == {"raw:mnist-test-images", "raw:mnist-test-labels"}
    for role, e in raw.items():
        key = role.removeprefix("raw:")
        assert (
            e["sha256"]
            == sha(chain["mirror"] / REGISTRY[key].relpath)
            == e["pinned_sha256"]
            == REGISTRY[key].sha256
        )
    assert prov["outputs"][0]["sha256"] == sha(npz)
    # same config: byte-identical .npz (only the sidecar has timestamps)
    again = npz.with_name("again.npz")
    assert (
        main(
            [
                "acp-make-dataset",
                "--name",
                "mm",
                "--spec",
                json.dumps(chain["spec"]),
                "--raw-data-dir",
                str(chain["mirror"]),
                "--out",
                str(again),
            ]
        )
        == 0
    )
    assert again.read_bytes() == chain["first_bytes"] == npz.read_bytes()


def test_provenance_chain_from_table_to_raw_inputs(
    chain: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(chain["root"])
    table = Path("tables/fig3a.csv")
    code, text, _ = cli(["provenance", table], capsys)
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0].endswith("fig3a.csv  [ok]") and "command: noisyor-bench acp-table-fig3a" in text
    for run in chain["runs"]:
        shown = run.relative_to(chain["root"]) / "metrics.json"
        assert f"- {shown}  (--runs; sha256 {sha(run / 'metrics.json')[:12]})  [ok]" in text
    assert "run experiment=exp dataset_name=mm method=svi mode=inference n_train=0 seed=0" in text
    assert (
        text.count("command: noisyor-bench acp-make-dataset --name mm") == 1
    )  # the dataset's record, shown once
    images = REGISTRY["mnist-test-images"]
    assert f"(raw:mnist-test-images; sha256 {images.sha256[:12]}, pinned)  [ok]" in text
    assert "every recorded sha256 matches the current files" in text
    # indentation: table > run > dataset > raw input
    depth = {
        key: next(len(line) - len(line.lstrip()) for line in lines if key in line)
        for key in ("(--runs;", "(dataset;", "(raw:mnist-test-images;")
    }
    assert depth["(--runs;"] < depth["(dataset;"] < depth["(raw:mnist-test-images;"]

    code, js, _ = cli(["provenance", table, "--json"], capsys)
    tree = json.loads(js)["tree"]
    run_node = tree["inputs"][0]["node"]
    dataset_item = next(i for i in run_node["inputs"] if i["role"] == "dataset")
    assert dataset_item["node"]["kind"] == "dataset"
    assert {i["role"] for i in dataset_item["node"]["inputs"]} == {
        "raw:mnist-test-images",
        "raw:mnist-test-labels",
    }

    code, js, _ = cli(["provenance", table, "--json", "--depth", "0"], capsys)
    assert code == 0 and all("node" not in i for i in json.loads(js)["tree"]["inputs"])

    code, text, _ = cli(["provenance", "tables/datasets.md"], capsys)
    assert code == 0 and "mm.json  (dataset sidecar; sha256" in text and "raw:mnist-test-labels" in text


def test_provenance_flags_changed_inputs(
    chain: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(chain["root"], tmp_path / "copy")  # relative paths in the records keep working in a copy
    monkeypatch.chdir(tmp_path)
    root = Path("copy")
    table = root / "tables" / "fig3a.csv"
    assert cli(["provenance", table], capsys)[0] == 0

    run0 = root / "runs/exp/mm/svi/n0/seed0"
    m = read_json(run0 / "metrics.json")
    m["nelbo"] = 0.0  # a run re-written after the table was made
    write_json_atomic(run0 / "metrics.json", m)
    code, text, _ = cli(["provenance", table], capsys)
    assert code == 1
    assert f"- {run0 / 'metrics.json'}  (--runs; sha256" in text and "CHANGED since recorded" in text
    assert "1 file(s) differ from their provenance record" in text

    table.write_text("edited by hand\n")  # the output itself no longer matches its sidecar
    code, text, _ = cli(["provenance", table], capsys)
    assert code == 1 and text.splitlines()[0].endswith("fig3a.csv  [CHANGED since recorded]")

    arrays = load_npz(root / "data/mm.npz")
    arrays["x_test"][0] = 1 - arrays["x_test"][0]  # dataset rebuilt after the runs
    write_npz_atomic(root / "data/mm.npz", **arrays)
    code, text, _ = cli(["provenance", root / "runs/exp/mm/svi/n0/seed1"], capsys)
    assert code == 1 and "(dataset; sha256" in text and "CHANGED since recorded" in text


def test_pmi_counts_sidecar_provenance(
    tmp_path: Path, mirror: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "toy.vocab.txt").write_text("kernel\nnetwork\n")
    (tmp_path / "toy.json").write_text(
        json.dumps(
            {"preprocessing": {"lemmatizer": "noun-verb", "stopwords": "both", "token_pattern": "[a-z]+"}}
        )
    )
    (tmp_path / "ref.txt").write_text("kernel networks\nnetwork kernel\n")
    out = tmp_path / "pmi" / "cooc.npz"
    assert (
        cli(
            [
                "acp-pmi-counts",
                "--reference",
                tmp_path / "ref.txt",
                "--vocab",
                tmp_path / "toy.vocab.txt",
                "--raw-data-dir",
                mirror,
                "--cache-dir",
                tmp_path / "raw",
                "--window",
                "2",
                "--out",
                out,
            ],
            capsys,
        )[0]
        == 0
    )
    prov = read_json(out.with_suffix(".json"))["provenance"]
    hashes = {e["role"]: e["sha256"] for e in prov["inputs"]}
    assert hashes["reference"] == sha(tmp_path / "ref.txt") and hashes["--vocab"] == sha(
        tmp_path / "toy.vocab.txt"
    )
    assert hashes["corpus-sidecar"] == sha(tmp_path / "toy.json")
    assert {r for r in hashes if r.startswith("raw:")} == {"raw:nltk-stopwords", "raw:nltk-wordnet"}
    assert hashes["raw:nltk-wordnet"] == sha(mirror / REGISTRY["nltk-wordnet"].relpath)
    assert prov["outputs"][0]["sha256"] == sha(out)
    code, text, _ = cli(["provenance", out], capsys)
    assert code == 0 and "(reference; sha256" in text


def test_corpus_sidecar_provenance(tmp_path: Path, mirror: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "data" / "neurips-titles.npz"
    assert (
        cli(
            ["acp-ingest-neurips", "--raw-data-dir", mirror, "--seed", "0", "--no-variants", "--out", out],
            capsys,
        )[0]
        == 0
    )
    side = read_json(out.with_suffix(".json"))
    prov = side["provenance"]
    assert prov["kind"] == "corpus" and prov["command"]["argv"][1] == "acp-ingest-neurips"
    raw = {e["role"]: e["sha256"] for e in prov["inputs"]}
    assert raw == {
        f"raw:{r['key']}": r["sha256"] for r in side["inputs"]
    }  # the sidecar's own list, with paths
    assert (
        raw["raw:neurips-titles-tsv"]
        == REGISTRY["neurips-titles-tsv"].sha256
        == sha(mirror / "neurips/nips_titles_1987_2017.tsv")
    )
    assert {Path(o["path"]).name: o["sha256"] for o in prov["outputs"]} == {
        "neurips-titles.npz": sha(out),
        "neurips-titles.vocab.txt": sha(out.with_suffix(".vocab.txt")),
    }
    code, text, _ = cli(["provenance", out.with_suffix(".vocab.txt")], capsys)
    assert code == 0 and "(raw:neurips-titles-tsv; sha256 e34e6b054a28, pinned)  [ok]" in text


# ---------------------------------------------------------------------------------- other run kinds
# verify and provenance on the runs of APE, APE on noisy-OR and aviPAM: every run
# record hashes the run's files; verify recomputes what the files determine or exits 3.
NOT_SUPPORTED = 3


def test_run_outputs_name_every_file_but_the_record(tmp_path: Path) -> None:
    for name in ("metrics.json", "checkpoint.pt", "spec.json", ".hidden", "scores.npz", "curve.csv"):
        (tmp_path / name).write_text(name)
    outputs = P.run_outputs(tmp_path)
    assert [o["path"] for o in outputs] == ["curve.csv", "scores.npz"]
    assert all(o["relpath"] == o["path"] and o["sha256"] == sha(tmp_path / o["path"]) for o in outputs)
    assert [o["path"] for o in P.run_outputs(tmp_path, ["scores.npz", "absent.csv"])] == ["scores.npz"]


def fabricated_run(
    root: Path, experiment: str, files: dict[str, dict[str, Any] | str], metrics: dict[str, Any]
) -> Path:
    """A run directory ``root/runs/<experiment>/d/m/n0/seed0`` written as the run writers do:
    its files, then metrics.json with a record hashing them."""
    run = root / "runs" / experiment / "d" / "m" / "n0" / "seed0"
    run.mkdir(parents=True)
    for name, content in files.items():
        if isinstance(content, dict):
            write_npz_atomic(run / name, **content)
        else:
            (run / name).write_text(content)
    record = P.artifact_record("run", [], [], run, {"seed": 0})
    record["outputs"] = P.run_outputs(run)
    write_json_atomic(run / "metrics.json", {"experiment": experiment, **metrics, "provenance": record})
    return run


@pytest.mark.parametrize("experiment", ["ape-train", "ape-vi", "ape-nuts"])
def test_verify_says_not_supported_for_training_runs(
    experiment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = fabricated_run(tmp_path, experiment, {"encoder.pt": "w", "curve.csv": "step\n1\n"}, {"seed": 0})
    code, out, _ = cli(["verify", run], capsys)
    assert code == NOT_SUPPORTED
    assert "curve.csv: ok" in out and "encoder.pt: ok" in out and "all 2 run file(s) match" in out
    assert "not supported for this run kind: " in out and f"noisyor-bench {experiment}" in out
    assert cli(["provenance", run], capsys)[0] == 0
    code, out, _ = cli(["provenance", run / "encoder.pt"], capsys)
    assert code == 0 and "every recorded sha256 matches" in out

    (run / "encoder.pt").write_text("other weights")  # a changed file is a failure, not "not supported"
    code, out, _ = cli(["verify", run], capsys)
    assert code == 1 and "encoder.pt: CHANGED since recorded" in out and "not supported" not in out
    assert cli(["provenance", run], capsys)[0] == 1
    (run / "curve.csv").unlink()
    code, out, _ = cli(["verify", run], capsys)
    assert code == 1 and "curve.csv: MISSING" in out


def test_verify_of_a_run_without_file_hashes_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = fabricated_run(tmp_path, "ape-vi", {"posterior.npz": {"mu": np.zeros(2)}}, {"seed": 0})
    m = read_json(run / "metrics.json")
    m["provenance"]["outputs"] = []  # a record written before runs hashed their files
    write_json_atomic(run / "metrics.json", m)
    code, _, err = cli(["verify", run], capsys)
    assert code == 2 and "records no sha256 of the run's files" in err and "rerun" in err


def test_verify_says_not_supported_for_a_search_draw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = fabricated_run(
        tmp_path, "fig3a", {"curve.csv": "epoch\n1\n"}, {"test_evaluated": False, "val_nelbo": 3.0}
    )
    code, out, _ = cli(["verify", run], capsys)
    assert code == NOT_SUPPORTED and "not supported for this run kind: a run scored on validation" in out


def test_verify_recomputes_an_ape_eval_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from noisyor_bench.evaluation.ranking import pairwise_agreement

    rng = np.random.default_rng(0)
    arrays, methods = {}, {}
    vi_model, is_model = rng.normal(size=4), rng.normal(size=4)
    for m in ("vi", "ape-model-aware"):
        pair = rng.normal(size=12)
        model = vi_model if m == "vi" else rng.normal(size=4)
        arrays.update({f"elbo_pair_{m}": pair, f"elbo_model_{m}": model, f"is_model_{m}": is_model})
        agree_vi, agree_is = pairwise_agreement(model, vi_model), pairwise_agreement(model, is_model)
        methods[m] = {
            "elbo_pair": float(pair.mean()),
            "elbo_per_word": float(pair.sum()) / 50.0,
            "agree_vi": agree_vi.agree,
            "agree_is": agree_is.agree,
            "pairs": agree_vi.pairs,
            "ll_paper": -7.0,
        }
    run = fabricated_run(tmp_path, "ape-eval", {"scores.npz": arrays}, {"tokens": 50.0, "methods": methods})
    code, out, _ = cli(["verify", run], capsys)
    assert code == 0 and "scores.npz: ok" in out and "all 10 values recomputable" in out
    assert "ll_paper" in out  # named among what is not recomputed

    m = read_json(run / "metrics.json")
    m["methods"]["ape-model-aware"]["agree_is"] += 1
    write_json_atomic(run / "metrics.json", m)
    code, out, _ = cli(["verify", run], capsys)
    assert code == 1 and "ape-model-aware.agree_is" in out and "MISMATCH" in out


def _fit(topics: np.ndarray, kl: np.ndarray | None) -> Any:
    from noisyor_bench.experiments.avipam.methods import TopicFit

    extra = {} if kl is None else {"kl_total": float(kl.sum()), "n_collapsed": int((kl < 0.1).sum()),
                                   "collapse_threshold": 0.1, "latent_dims": int(kl.size)}  # fmt: skip
    return TopicFit(
        topics={"sub": topics},
        train_seconds=0.5,
        curve=[{"epoch": 1, "train_nelbo": 9.0}],
        convergence={"converged": False, "rule": "r", "stop_reason": "max-epochs", "epochs": 1},
        extra_metrics=extra,
        arrays={} if kl is None else {"kl_per_dim": kl},
    )


@pytest.mark.parametrize("collapse", [False, True])
def test_avipam_run_records_its_files_and_verifies(
    collapse: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import scipy.sparse as sp

    from noisyor_bench.data.corpora.bow import Corpus, save_corpus
    from noisyor_bench.experiments.avipam import runs as avipam_runs

    rng = np.random.default_rng(1)
    counts = sp.csr_matrix(rng.poisson(1.0, size=(6, 15)).astype(np.int64))
    corpus = tmp_path / "data" / "avipam-toy.npz"
    corpus.parent.mkdir()
    save_corpus(corpus, Corpus(counts, counts, [f"w{i}" for i in range(15)]))
    topics = rng.dirichlet(np.ones(15), size=3)
    kl = np.array([0.01, 0.5, 2.0]) if collapse else None
    monkeypatch.setattr(avipam_runs, "fit", lambda method, c, settings, seed, *, vocabulary: _fit(topics, kl))
    experiment = "collapse" if collapse else "small"
    cell = {"experiment": experiment, "corpus": "toy", "method": "m"}
    out = tmp_path / "runs" / f"avipam-{experiment}" / "toy" / "m" / "n0" / "seed0"
    run = avipam_runs.execute(corpus, cell, {"method": "m", "threads": 1}, 0, out)

    m = read_json(run / "metrics.json")
    outputs = {o["path"]: o["sha256"] for o in m["provenance"]["outputs"]}
    assert outputs == {name: sha(run / name) for name in ("curve.csv", "topics.npz")}
    code, out_text, _ = cli(["verify", run], capsys)
    assert code == 0 and "topics.npz: ok" in out_text and "top_sub (topics.npz)" in out_text
    assert ("n_collapsed" in out_text) == collapse
    code, text, _ = cli(["provenance", run / "topics.npz"], capsys)
    assert code == 0 and "(dataset; sha256" in text

    # topics.npz rewritten with other top words and re-recorded (a writer bug): MISMATCH
    arrays = load_npz(run / "topics.npz")
    arrays["top_sub"] = arrays["top_sub"][::-1].copy()
    write_npz_atomic(run / "topics.npz", **arrays)
    m["provenance"]["outputs"] = P.run_outputs(run)
    write_json_atomic(run / "metrics.json", m)
    code, out_text, _ = cli(["verify", run], capsys)
    assert code == 1 and "top_sub (topics.npz)" in out_text and "MISMATCH" in out_text


@pytest.fixture(scope="module")
def ape_noisyor_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """One baseline (LB-CDI) and one encoder (AVI, one epoch) run of a tiny APE-on-noisy-OR family."""
    from noisyor_bench.experiments.ape_noisyor.problems import build_problems, read_problems, write_problems
    from noisyor_bench.experiments.ape_noisyor.runs import run_baseline, run_path, train_encoder
    from noisyor_bench.experiments.ape_noisyor.settings import parse_settings

    root = tmp_path_factory.mktemp("ape_noisyor") / "results"
    settings = parse_settings(
        {
            "seed": 3,
            "families": {
                "syn-random": {
                    "family": "random",
                    "D": 8,
                    "K": 3,
                    "alpha_theta": 2,
                    "beta_theta": 3,
                    "alpha_mu": 1,
                    "beta_mu": 1,
                    "s": 0.7,
                    "mu": 0.2,
                    "leak_prob": 0.01,
                    "perturbation": 1.0,
                }
            },  # fmt: skip
            "problems": {"train": 2, "val": 1, "test": 2},
            "rows": {"train": 6, "val": 4, "test": 4},
            "candidates": 3,
            "encoders": {"avi": {"method": "avi", "input": "x"}},
            "baselines": ["lb-cdi"],
            "baseline_hparams": {"lb-cdi": {"max_rounds": 2}},
            "seeds": [0],
            "hparams": {"hidden_layers": 1, "hidden_dim": 4},
            "budget": {"max_epochs": 1, "patience": 1, "batch_size": 2, "min_epoch_steps": 1},
            "rows_per_model": 3,
        }
    )
    problems = root / "data" / "ape-noisyor-syn-random.npz"
    problems.parent.mkdir(parents=True)
    write_problems(problems, build_problems(settings, "syn-random"))
    arrays = read_problems(problems)
    torch.set_num_threads(1)
    runs = [
        run_baseline(
            arrays,
            settings,
            "syn-random",
            "lb-cdi",
            run_path(root / "runs", "syn-random", "lb-cdi", 2, 0),
            problems,
        ),
        train_encoder(
            arrays,
            settings,
            "syn-random",
            settings.encoders["avi"],
            0,
            run_path(root / "runs", "syn-random", "avi", 2, 0),
            problems,
        ),
    ]
    return problems, runs


def test_ape_noisyor_runs_record_problems_and_files(
    ape_noisyor_runs: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    problems, runs = ape_noisyor_runs
    for run, files in zip(runs, (("scores.npz",), ("curve.csv", "scores.npz")), strict=True):
        prov = read_json(run / "metrics.json")["provenance"]
        assert prov["kind"] == "run" and prov["config"]["family"] == "syn-random"
        (dataset,) = prov["inputs"]
        assert dataset["role"] == "dataset" and dataset["sha256"] == sha(problems)
        assert (run / dataset["relpath"]).resolve() == problems.resolve()
        assert {o["path"]: o["sha256"] for o in prov["outputs"]} == {f: sha(run / f) for f in files}
        code, out, _ = cli(["verify", run], capsys)
        assert code == 0, out
        assert "agreement_exact" in out and "gap_exact" in out and "all 3 values recomputable" in out
        code, out, _ = cli(["provenance", run], capsys)
        assert code == 0 and "every recorded sha256 matches" in out and "ape-noisyor-syn-random.npz" in out


def test_ape_noisyor_verify_catches_changes(
    ape_noisyor_runs: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problems, runs = ape_noisyor_runs
    root = tmp_path / "results"
    shutil.copytree(problems.parent.parent, root)  # a copied results tree: found by relative paths
    run = root / runs[0].relative_to(problems.parent.parent)
    m = read_json(run / "metrics.json")
    m["gap_exact"] += 0.01
    write_json_atomic(run / "metrics.json", m)
    code, out, _ = cli(["verify", run], capsys)
    assert code == 1 and "gap_exact" in out and "MISMATCH" in out

    arrays = load_npz(run / "scores.npz")
    write_npz_atomic(run / "scores.npz", **{**arrays, "elbo": arrays["elbo"] - 1.0})
    code, out, _ = cli(["verify", run], capsys)
    assert code == 1 and "scores.npz: CHANGED since recorded" in out
    assert cli(["provenance", run], capsys)[0] == 1

    data = root / "data" / problems.name
    arrays = load_npz(data)
    write_npz_atomic(data, **{**arrays, "test_log_px": arrays["test_log_px"] + 1.0})
    run = root / runs[1].relative_to(problems.parent.parent)
    code, _, err = cli(["verify", run, "--dataset", data], capsys)
    assert code == 2 and "is not the file the run used" in err
    aside = problems.with_name("aside.npz")
    problems.rename(aside)  # the recorded path is gone: the copy's is found, and it has changed
    try:
        code, _, err = cli(["verify", run], capsys)
    finally:
        aside.rename(problems)
    assert code == 2 and "has changed" in err


def test_noted_outputs_get_sidecars(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Files of an --out-dir (aviPAM's Tables 1-4) declared with note_output get sidecars."""
    out_csv, table = tmp_path / "runs.csv", tmp_path / "avipam_table1.csv"
    out_csv.write_text("a\n1\n")
    table.write_text("b\n2\n")
    P.note_output(table)  # outside the CLI: nothing
    with P.command_context(["avipam-tables"], "avipam-tables") as ctx:
        P.note_output(table)
        P.note_output(tmp_path / "never-written.md")  # not a file: no sidecar
        written = P.write_sidecars(argparse.Namespace(out_runs=str(out_csv)), ctx)
    assert sorted(p.name for p in written) == ["avipam_table1.csv.prov.json", "runs.csv.prov.json"]
    record = read_json(P.sidecar_path(table))
    assert {Path(o["path"]).name: o["sha256"] for o in record["outputs"]} == {
        "runs.csv": sha(out_csv),
        "avipam_table1.csv": sha(table),
    }
    code, text, _ = cli(["provenance", table], capsys)
    assert code == 0 and "every recorded sha256 matches" in text


def test_a_directory_input_holding_the_outputs_is_not_hashed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare --results R`` writes R/tables/comparison.csv: a digest of R would change as soon
    as the outputs' sidecars are written (and with every later step), so R is recorded unhashed."""
    results, reference = tmp_path / "results", tmp_path / "reference"
    (results / "tables").mkdir(parents=True)
    reference.mkdir()
    (reference / "t.csv").write_text("a\n1\n")
    out = results / "tables" / "comparison.csv"
    out.write_text("x\n1\n")
    args = argparse.Namespace(results=str(results), reference=str(reference), out_csv=str(out))
    with P.command_context(["compare"], "compare") as ctx:
        P.write_sidecars(args, ctx)
    inputs = {e["role"]: e for e in read_json(P.sidecar_path(out))["inputs"]}
    assert inputs["--results"]["sha256"] is None and inputs["--results"]["not_hashed"]
    assert inputs["--reference"]["sha256"] == P.directory_sha256(reference)[0]  # not enclosing: hashed
    (results / "later.log").write_text("a later step")
    code, text, _ = cli(["provenance", out], capsys)
    assert code == 0 and "(--results; sha256 -)  [no sha256 recorded]" in text
    (reference / "t.csv").write_text("a\n2\n")
    assert cli(["provenance", out], capsys)[0] == 1
