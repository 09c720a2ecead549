"""Integrity where results are consumed: the self-hash of run records, the sha256 of
tables against their sidecars, and the plausibility rules of run metrics."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import REPO

from noisyor_bench.experiments.rundir import read_metrics_record, write_metrics
from noisyor_bench.infra import integrity
from noisyor_bench.infra import provenance as P
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import read_json, write_json_atomic
from noisyor_bench.reporting.collect import read_metrics


def _record(**extra: Any) -> dict[str, Any]:
    """A run record as a writer makes it (numpy scalars and a NaN included)."""
    return {
        "experiment": "exp",
        "dataset": "toy",
        "method": "svi",
        "n_train": 60,
        "seed": 0,
        "nelbo": np.float64(38.1),
        "f1": 40.5,
        "exact_gap": float("nan"),
        "provenance": {"kind": "run", "outputs": []},
        **extra,
    }


def _sealed(tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "metrics.json"
    write_metrics(path, _record(**extra))
    return path


# ---------------------------------------------------------------------------------- self-hash
def test_sealed_record_reads_back_and_any_edit_is_caught(tmp_path: Path) -> None:
    path = _sealed(tmp_path)
    doc = read_json(path)
    assert len(doc["provenance"][integrity.SELF_HASH_KEY]) == 64
    assert integrity.self_hash_status(doc) == "ok"
    assert math.isnan(read_metrics_record(path)["exact_gap"])
    # the hash is of the content, not of the bytes: reformatting the JSON keeps it valid
    path.write_text(json.dumps(doc, indent=None, separators=(", ", ": ")))
    assert integrity.self_hash_status(read_json(path)) == "ok"
    for key, value in (("nelbo", 37.9), ("seed", 1), ("method", "acp")):
        edited = {**doc, key: value}
        assert integrity.self_hash_status(edited) == "CHANGED since recorded", key
    edited = json.loads(json.dumps(doc))
    edited["provenance"]["kind"] = "other"  # the provenance block is covered too
    assert integrity.self_hash_status(edited) == "CHANGED since recorded"


def test_edited_record_is_refused_naming_the_file_and_the_way_back(tmp_path: Path) -> None:
    path = _sealed(tmp_path)
    doc = read_json(path)
    doc["nelbo"] = 37.9  # plausible, but not what the run wrote
    write_json_atomic(path, doc)
    with pytest.raises(DataError) as err:
        read_metrics_record(tmp_path)
    msg = str(err.value)
    assert str(path) in msg and "edited after it was written" in msg and "delete" in msg
    assert "\n" not in msg


def test_record_without_self_hash_is_accepted_as_older(tmp_path: Path) -> None:
    path = tmp_path / "metrics.json"
    write_json_atomic(path, _record())  # written by code before the self-hash
    assert integrity.self_hash_status(read_json(path)) == "absent"
    assert read_metrics_record(path)["nelbo"] == pytest.approx(38.1)
    assert read_metrics(path)["nelbo"] == pytest.approx(38.1)


def test_reader_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="did the run finish"):
        read_metrics_record(tmp_path / "missing")
    bad = tmp_path / "metrics.json"
    bad.write_text("[1]")
    with pytest.raises(DataError, match="expected a JSON object"):
        integrity.read_verified_json(bad)
    bad.write_text("{oops")
    with pytest.raises(DataError, match="not valid JSON"):
        integrity.read_verified_json(bad)


# ---------------------------------------------------------------------------------- plausibility
@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"nelbo": -4.61}, "nelbo=-4.61"),
        ({"exact_nll": -0.5}, "exact_nll=-0.5"),
        ({"npmi_external": 1.2}, "npmi_external=1.2"),
        ({"npmi": -1.5}, "npmi=-1.5"),
        ({"f1": 100.5}, "f1=100.5"),
        ({"collapse_rate": 1.5}, "collapse_rate=1.5"),
        ({"recovered": 6, "n_true": 5}, "above its total n_true=5"),
        ({"best_epoch": 9, "epochs": 3}, "best_epoch=9"),
        ({"log_likelihood_per_word": 0.3}, "log_likelihood_per_word=0.3"),
    ],
)
def test_impossible_metrics_are_named(values: dict[str, Any], words: str) -> None:
    (found,) = integrity.implausible_metrics(values)
    assert words in found
    with pytest.raises(DataError, match="impossible metric") as err:
        integrity.check_plausible("x/metrics.json", values)
    assert "x/metrics.json" in str(err.value) and words in str(err.value)


def test_possible_metrics_pass() -> None:
    values = {
        "nelbo": 0.0,
        "val_nelbo": 38.1,
        "f1": 100.0,
        "em": 0.0,
        "npmi_external": -1.0,
        "npmi_internal": 1.0,
        "recovered": 5,
        "n_true": 5,
        "best_epoch": 3,
        "epochs": 3,
        "exact_gap": -0.01,  # an estimate of a gap may be below 0: not judged
        "final_elbo": -300.0,  # an ELBO, not a NELBO
        "iw_nll": None,  # not computed
        "exact_nll": float("nan"),  # diverged run: not judged here
        "recovery_rate": 1.0,
        "note": "text",
    }
    assert integrity.implausible_metrics(values) == []


def test_sealed_but_impossible_record_is_refused_by_the_run_reader(tmp_path: Path) -> None:
    path = _sealed(tmp_path, nelbo=-4.61)  # a writer bug: sealed, yet impossible
    assert integrity.self_hash_status(read_json(path)) == "ok"
    with pytest.raises(DataError, match=r"impossible metric nelbo=-4\.61"):
        read_metrics(path)
    with pytest.raises(DataError, match=r"impossible metric nelbo=-4\.61"):
        read_metrics_record(path)


# ---------------------------------------------------------------------------------- tables
def _table_with_sidecar(folder: Path) -> Path:
    """A table and its ``.prov.json`` as ``write_sidecars`` makes them (outputs with sha256)."""
    folder.mkdir(parents=True, exist_ok=True)
    csv, md = folder / "claims.csv", folder / "claims.md"
    csv.write_text("claim_id,verdict\nc1,not reproduced\n")
    md.write_text("| claim | verdict |\n")
    record = P.artifact_record("command", [], [csv, md], folder)
    for out in (csv, md):
        write_json_atomic(P.sidecar_path(out), record)
    return csv


def test_table_checked_against_its_sidecar(tmp_path: Path) -> None:
    csv = _table_with_sidecar(tmp_path / "tables")
    assert integrity.verify_recorded_file(csv) == "ok"
    assert integrity.verify_recorded_file(csv.with_suffix(".md")) == "ok"
    csv.write_text("claim_id,verdict\nc1,reproduced\n")  # a verdict changed by hand
    with pytest.raises(DataError) as err:
        integrity.verify_recorded_file(csv)
    msg = str(err.value)
    assert msg.startswith(str(csv)) and "edited after it was made" in msg and "rerun" in msg


def test_copied_table_with_its_sidecar_still_verifies(tmp_path: Path) -> None:
    """A published reference: the files and sidecars copied into another folder."""
    csv = _table_with_sidecar(tmp_path / "results" / "tables")
    ref = tmp_path / "reference" / "tables"
    shutil.copytree(csv.parent, ref)
    assert integrity.verify_recorded_file(ref / "claims.csv") == "ok"


def test_table_without_sidecar_is_accepted_and_unlisted_one_refused(tmp_path: Path) -> None:
    plain = tmp_path / "t.csv"
    plain.write_text("a\n1\n")
    assert integrity.verify_recorded_file(plain) == "no record"
    write_json_atomic(P.sidecar_path(plain), {"outputs": [{"path": "other.csv", "sha256": "0" * 64}]})
    with pytest.raises(DataError, match="does not list its sha256"):
        integrity.verify_recorded_file(plain)
    P.sidecar_path(plain).write_text("{broken")
    with pytest.raises(DataError, match="provenance record is corrupt"):
        integrity.verify_recorded_file(plain)


def test_committed_reference_verifies() -> None:
    """Every published file of the committed references matches its sidecar (compare accepts them)."""
    files = [
        p
        for p in sorted((REPO / "reference").rglob("*"))
        if p.is_file() and p.parent.name in ("tables", "figures") and not p.name.endswith(".prov.json")
    ]
    assert files
    assert {integrity.verify_recorded_file(p) for p in files} == {"ok"}
