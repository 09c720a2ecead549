"""`ape-train-segment` then `ape-train --previous`, as the workflow runs a training that is longer
than one job: the run directory equals that of one `ape-train` (the same encoder weights, curve
and metrics but for timings), on a tiny toy-bars dataset; bad segment arguments are refused."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import REPO

from noisyor_bench.cli import main
from noisyor_bench.experiments.ape.steps import step_settings
from noisyor_bench.experiments.config import load_config

TIMING = {"train_seconds", "provenance"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    section = cfg["grids"]["smoke"]["ape"]["datasets"]["toybars"]
    out = tmp_path_factory.mktemp("ape") / "ape-toybars.npz"
    settings = json.dumps(step_settings(section, "ape-data"))
    assert main(["ape-data", "--dataset", "toybars", "--settings", settings, "--out", str(out)]) == 0
    return out, section


def _args(dataset, method, *extra):
    path, section = dataset
    settings = json.dumps(step_settings(section, "ape-train", method))
    return ["--dataset", "toybars", "--dataset-file", str(path), "--method", method, "--seed", "3",
            "--settings", settings, *extra]  # fmt: skip


def _metrics(run):
    data = json.loads((run / "metrics.json").read_text())
    return {k: v for k, v in data.items() if k not in TIMING | {"segmented"}}


@pytest.mark.parametrize("method", ["ape-model-aware", "ape-naive"])
def test_a_training_in_three_jobs_equals_one_job(tmp_path, dataset, method):
    whole = tmp_path / "whole"
    assert main(["ape-train", *_args(dataset, method), "--out-dir", str(whole)]) == 0
    seg = [tmp_path / "segments" / f"segment{k}.pt" for k in range(2)]
    assert main(["ape-train-segment", *_args(dataset, method), "--segment", "0", "--segments", "3",
                 "--out", str(seg[0])]) == 0  # fmt: skip
    assert main(["ape-train-segment", *_args(dataset, method), "--segment", "1", "--segments", "3",
                 "--previous", str(seg[0]), "--out", str(seg[1])]) == 0  # fmt: skip
    parts = tmp_path / "parts"
    assert (
        main(["ape-train", *_args(dataset, method), "--previous", str(seg[1]), "--out-dir", str(parts)]) == 0
    )
    assert _metrics(parts) == _metrics(whole)
    assert json.loads((parts / "metrics.json").read_text())["segmented"] is True
    assert (parts / "curve.csv").read_text().splitlines()[0] == (
        whole / "curve.csv"
    ).read_text().splitlines()[0]
    a = torch.load(whole / "encoder.pt", weights_only=True)
    b = torch.load(parts / "encoder.pt", weights_only=True)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not list((tmp_path / "segments").glob("*.partial"))  # each segment's output published


def test_bad_segment_arguments_name_the_problem(tmp_path, dataset, capsys):
    out = str(tmp_path / "s.pt")
    (tmp_path / "s.pt").write_bytes(b"")  # exists: the segment number is what is wrong
    assert main(["ape-train-segment", *_args(dataset, "ape-model-aware"), "--segment", "2", "--segments", "3",
                 "--previous", out, "--out", out]) != 0  # fmt: skip
    assert "the last segment is the training job" in capsys.readouterr().err
    assert main(["ape-train-segment", *_args(dataset, "ape-model-aware"), "--segment", "1", "--segments", "3",
                 "--out", out]) != 0  # fmt: skip
    assert "--previous" in capsys.readouterr().err
    assert main(["ape-train", *_args(dataset, "ape-model-aware"), "--previous", str(tmp_path / "missing.pt"),
                 "--out-dir", str(tmp_path / "run")]) != 0  # fmt: skip
    assert "no such segment checkpoint" in capsys.readouterr().err
