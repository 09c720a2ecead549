"""Provenance records (issue 6): environment, run/dataset/table records, `verify`, `provenance`.

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
    assert code == 0 and "all 14 metrics reproduced" in out and "posterior_test.npz: ok" in out
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
            "search",
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
    assert prov["command"]["argv"][:2] == ["noisyor-bench", "search"]
    hashes = {e["role"]: e["sha256"] for e in prov["inputs"]}
    assert hashes == {
        "dataset": sha(results / "data/toy.npz"),
        "draw0": sha(out / "draw0/metrics.json"),
        "draw1": sha(out / "draw1/metrics.json"),
    }
    draw = read_json(out / "draw1/metrics.json")["provenance"]
    assert draw["config"]["hparams"] == {"lr_local": 0.2} and draw["config"]["evaluate_test"] is False
    assert draw["command"]["argv"][1] == "search"
    code, text, _ = cli(["provenance", out / "best.json"], capsys)
    assert code == 0 and "draw1/metrics.json" in text


# ---------------------------------------------------------------------------------- tables
def test_table_sidecars_record_inputs_and_outputs(
    results: Path, runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv, md = tmp_path / "tables" / "fig3a.csv", tmp_path / "tables" / "fig3a.md"
    assert cli(["table-fig3a", "--runs", *runs, "--out-csv", csv, "--out-md", md], capsys)[0] == 0
    for out in (csv, md):
        record = read_json(P.sidecar_path(out))
        assert record["kind"] == "command" and record["command"]["argv"][:2] == [
            "noisyor-bench",
            "table-fig3a",
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
                "table-fig3a",
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
                "make-dataset",
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
                "table-fig3a",
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
                "dataset-table",
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
                "make-dataset",
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
    assert lines[0].endswith("fig3a.csv  [ok]") and "command: noisyor-bench table-fig3a" in text
    for run in chain["runs"]:
        shown = run.relative_to(chain["root"]) / "metrics.json"
        assert f"- {shown}  (--runs; sha256 {sha(run / 'metrics.json')[:12]})  [ok]" in text
    assert "run experiment=exp dataset_name=mm method=svi mode=inference n_train=0 seed=0" in text
    assert (
        text.count("command: noisyor-bench make-dataset --name mm") == 1
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
                "pmi-counts",
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
            ["ingest-neurips", "--raw-data-dir", mirror, "--seed", "0", "--no-variants", "--out", out], capsys
        )[0]
        == 0
    )
    side = read_json(out.with_suffix(".json"))
    prov = side["provenance"]
    assert prov["kind"] == "corpus" and prov["command"]["argv"][1] == "ingest-neurips"
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
