"""The APE benchmarks' shared helper (benchmarks/_common.py): its errors name the bad input, and
its result files are the CSV and the Markdown beside it."""

from __future__ import annotations

import argparse
import csv
import importlib.util
from pathlib import Path

import pytest
from conftest import REPO

_spec = importlib.util.spec_from_file_location("_common", REPO / "benchmarks" / "_common.py")
common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(common)


def test_comma_lists_parse_and_a_bad_item_is_named():
    assert common.int_list("300,3000,10000") == [300, 3000, 10000]
    with pytest.raises(argparse.ArgumentTypeError, match="'0,x'"):
        common.int_list("0,x")


def test_the_parser_parses_string_defaults_as_lists():
    args = common.ape_parser("d", "toybars", "0,1", "o.csv").parse_args(["--seeds", "2,5"])
    assert (args.dataset, args.seeds, args.out) == ("toybars", [2, 5], "o.csv")
    assert common.ape_parser("d", "mdreviews", "0,1,2", "o.csv").parse_args([]).seeds == [0, 1, 2]


def test_a_grid_without_the_ape_dataset_names_the_missing_key():
    args = argparse.Namespace(
        config=str(REPO / "config" / "config.yaml"), grid="no-such-grid", dataset="toybars", data_dir="."
    )
    with pytest.raises(SystemExit, match=r"grids\.no-such-grid\.ape\.datasets\.toybars"):
        common.ape_inputs(args)


def test_results_are_the_csv_and_the_markdown_beside_it(tmp_path: Path):
    rows = [{"seed": 0, "agree": 40}, {"seed": 1, "agree": 42}]
    common.write_results(tmp_path / "sweep.csv", rows, ["# title", "", "| a |"])
    with open(tmp_path / "sweep.csv", newline="") as fh:
        assert list(csv.DictReader(fh)) == [{"seed": "0", "agree": "40"}, {"seed": "1", "agree": "42"}]
    assert (tmp_path / "sweep.md").read_text() == "# title\n\n| a |\n"
    assert common.machine_line(0.0).startswith("Machine: ")
