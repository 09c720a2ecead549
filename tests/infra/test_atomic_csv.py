"""write_csv_atomic: the CSV tables of the benchmark scripts, read back with the csv module."""

from __future__ import annotations

import csv

import pytest

from noisyor_bench.infra.io import write_csv_atomic


def test_rows_read_back_with_header_of_first_row(tmp_path):
    path = tmp_path / "sub" / "table.csv"
    rows = [{"cell": "a", "seed": 0, "value": 1.5}, {"cell": "b,c", "seed": 1, "value": -2.0}]
    write_csv_atomic(path, rows)
    raw = path.read_bytes()
    assert b"\r" not in raw and raw.endswith(b"\n")
    with open(path, newline="") as fh:
        back = list(csv.DictReader(fh))
    assert back == [{"cell": "a", "seed": "0", "value": "1.5"}, {"cell": "b,c", "seed": "1", "value": "-2.0"}]
    assert [p.name for p in path.parent.iterdir()] == ["table.csv"]  # no temporary file left


def test_fieldnames_select_columns_and_a_stray_key_fails_without_them(tmp_path):
    rows = [{"a": 1, "b": 2}, {"a": 3, "b": 4, "c": 5}]
    write_csv_atomic(tmp_path / "t.csv", rows, ["b", "a"])
    assert (tmp_path / "t.csv").read_text() == "b,a\n2,1\n4,3\n"
    with pytest.raises(ValueError):
        write_csv_atomic(tmp_path / "u.csv", rows)
    assert not (tmp_path / "u.csv").exists()
