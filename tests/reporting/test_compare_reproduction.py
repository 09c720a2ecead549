"""The run as a reproduction check: reference cells shared with the run (same settings, common
seeds) and whether the run reproduces them (reporting.compare.reproduction_line)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from noisyor_bench.reporting.compare import (
    NOT_COMPARED,
    NOT_REPRODUCED,
    REPRODUCED,
    compare_many,
    read_reproduction_line,
    reproduction_line,
    write_comparison,
)


def _values(values: dict[int, float]) -> str:
    return ";".join(f"{s}:{v!r}" for s, v in values.items())


def _row(method: str, values: dict[int, float]) -> dict:
    import numpy as np

    x = np.array(list(values.values()))
    ci = 0.0 if len(x) < 2 else float(2.776 * x.std(ddof=1) / np.sqrt(len(x)))
    return {
        "artifact": "fig3a",
        "dataset": "syn-pattern",
        "n_train": 20,
        "method": method,
        "seeds": ";".join(map(str, values)),
        "nelbo_mean": float(x.mean()),
        "nelbo_ci95": ci,
        "nelbo_n": len(x),
        "nelbo_values": _values(values),
    }


def _result_set(root: Path, grid: str, rows: list[dict], readme: bool) -> Path:
    (root / "tables").mkdir(parents=True)
    pd.DataFrame(rows).to_csv(root / "tables" / "fig3a.csv", index=False)
    if readme:  # a published reference names its grid in its README's command
        (root / "README.md").write_text(f"| command | `snakemake --config grid={grid}` |\n")
    else:  # a results directory records it
        (root / ".noisyor-bench-results.json").write_text(json.dumps({"grid": grid}))
    return root


REFERENCE = {
    "avi": {0: 17.1, 1: 17.3, 2: 16.9, 3: 17.0, 4: 17.2},
    "svi": {0: 9.8},  # deterministic: one run
}


@pytest.mark.parametrize(
    ("ours", "grid", "expected", "line"),
    [
        # the same seeds 0, 1 give the reference's per-seed numbers: reproduced over the common seeds
        ({"avi": {0: 17.1, 1: 17.3}, "svi": {0: 9.8}}, "g", REPRODUCED, "reproduces 2 of 2"),
        # 3 nats off on both seeds: outside the 95% interval of the difference over the common seeds
        ({"avi": {0: 20.1, 1: 20.3}, "svi": {0: 9.8}}, "g", NOT_REPRODUCED, "reproduces 1 of 2"),
        # a deterministic cell is reproduced exactly or not at all
        ({"avi": {0: 17.1, 1: 17.3}, "svi": {0: 9.801}}, "g", None, "reproduces 1 of 2"),
        # another grid: its budget and search are not in the tables, nothing is shared
        ({"avi": {0: 17.1, 1: 17.3}, "svi": {0: 9.8}}, "other", "not shared", "reproduces 0 of 0"),
        # no common seed
        ({"avi": {7: 17.1, 8: 17.3}, "svi": {0: 9.8}}, "g", "not shared", "reproduces 1 of 1"),
    ],
)
def test_shared_cells_reproduce_over_common_seeds(tmp_path, ours, grid, expected, line) -> None:
    reference = _result_set(tmp_path / "ref", "g", [_row(m, v) for m, v in REFERENCE.items()], readme=True)
    results = _result_set(tmp_path / "run", grid, [_row(m, v) for m, v in ours.items()], readme=False)
    cells, claims = compare_many(results, [reference])
    by_method = {c.key.split("method=")[1]: c.reproduction for c in cells}
    if expected is not None:
        assert by_method["avi"].startswith(expected), by_method
    else:
        assert by_method["svi"] == NOT_REPRODUCED and by_method["avi"] == REPRODUCED
    assert f"this run {line} shared reference cells (ref: " in reproduction_line(cells)

    csv, md = tmp_path / "comparison.csv", tmp_path / "comparison.md"
    summary = write_comparison(cells, claims, csv, md, "ref")
    assert reproduction_line(cells) in summary and reproduction_line(cells) in md.read_text()
    assert read_reproduction_line(csv) == reproduction_line(cells)  # what run-summary prints


def test_a_comparison_written_before_the_check_has_no_line(tmp_path) -> None:
    path = tmp_path / "comparison.csv"
    pd.DataFrame([{"table": "t", "key": "k", "status": "agree"}]).to_csv(path, index=False)
    assert read_reproduction_line(path) is None
    assert read_reproduction_line(tmp_path / "absent.csv") is None


@pytest.mark.parametrize(
    ("ours_settings", "expected", "line"),
    [
        # the same settings fingerprint in another grid: shared, and reproduced over seeds 0, 1
        ("aaaa11112222", REPRODUCED, "reproduces 1 of 1"),
        # another fingerprint (e.g. more search draws chose other hyperparameters): not shared
        ("bbbb11112222", "not shared: settings bbbb11112222 vs aaaa11112222", "reproduces 0 of 0"),
        # a table without fingerprints on our side: the grid rule (another grid: not shared)
        ("", "not shared: grid quick vs extended", "reproduces 0 of 0"),
    ],
)
def test_settings_fingerprints_decide_what_another_grid_shares(
    tmp_path, ours_settings, expected, line
) -> None:
    """A quick run shares with an extended-grid reference the cells both made the same way: the
    tables' settings fingerprints (reporting.collect.run_settings) decide, not the grids' names."""
    ref_row = {**_row("avi", REFERENCE["avi"]), "settings": "aaaa11112222"}
    our_row = {**_row("avi", {0: 17.1, 1: 17.3}), "settings": ours_settings}
    reference = _result_set(tmp_path / "ref", "extended", [ref_row], readme=True)
    results = _result_set(tmp_path / "run", "quick", [our_row], readme=False)
    cells, _ = compare_many(results, [reference])
    assert [c.reproduction for c in cells][0].startswith(expected)
    assert f"this run {line} shared reference cells" in reproduction_line(cells)


def test_a_runs_settings_fingerprint_ignores_its_seed_and_paths_not_its_budget() -> None:
    from noisyor_bench.reporting.collect import run_settings

    base = {
        "seed": 0,
        "mode": "learning",
        "budget": {"max_epochs": 60},
        "hparams_resolved": {"lr": 0.01},
        "dataset_sha256": "ab",
        "provenance": {"command": {"argv": ["x", "--evaluation", '{"samples":50}', "--out-dir", "/a/seed0"]}},
    }
    same = {
        **base,
        "seed": 3,
        "provenance": {"command": {"argv": ["x", "--evaluation", '{"samples":50}', "--out-dir", "/b/seed3"]}},
    }
    assert run_settings(base) == run_settings(same)
    for changed in (
        {"budget": {"max_epochs": 100}},
        {"hparams_resolved": {"lr": 0.02}},
        {"dataset_sha256": "cd"},
        {"provenance": {"command": {"argv": ["x", "--evaluation", '{"samples":10}']}}},
    ):
        assert run_settings({**base, **changed}) != run_settings(base), changed


def _nll_row(values: dict[int, float], nll: dict[int, float], rows: int, digest: str | None) -> dict:
    x = list(nll.values())
    row = {
        **_row("acp", values),
        "settings": "aaaa11112222",
        "nll_mean": sum(x) / len(x),
        "nll_ci95": 0.05,
        "nll_n": len(x),
        "nll_values": _values(nll),
        "nll_rows": rows,
    }
    if digest is not None:
        row["nll_rows_digest"] = digest
    return row


@pytest.mark.parametrize(
    ("ours_rows", "ours_digest", "ref_digest", "nll_expected"),
    [
        # all 999 exactly computable rows against a reference's 100-row subset: other rows
        (999, "d999", None, "not compared: different NLL rows (999 vs 100)"),
        (999, "d999", "d100", "not compared: different NLL rows (999 vs 100)"),
        # as many rows, but other ones (the digests differ): still not compared
        (100, "dOTHER", "d100", "not compared: different NLL rows (100 vs 100)"),
        # the same rows: the NLL is compared like any metric
        (100, "d100", "d100", REPRODUCED),
        (100, None, None, REPRODUCED),
    ],
)
def test_nll_metrics_are_compared_only_on_the_same_rows(
    tmp_path, ours_rows, ours_digest, ref_digest, nll_expected
) -> None:
    """Cells whose settings fingerprints match (the NLL row cap is not part of them) compare their
    training metrics whatever rows scored the NLL; the NLL itself only on the same rows."""
    # on other rows the NLL reads 0.4 nats above the reference's: compared, it would not reproduce
    shift = 0.4 if nll_expected.startswith("not compared") else 0.0
    ref = _nll_row(REFERENCE["avi"], {s: 11.0 + 0.01 * s for s in range(5)}, 100, ref_digest)
    ours = _nll_row(
        {0: 17.1, 1: 17.3}, {s: 11.0 + 0.01 * s + shift for s in range(2)}, ours_rows, ours_digest
    )
    reference = _result_set(tmp_path / "ref", "extended", [ref], readme=True)
    results = _result_set(tmp_path / "run", "quick", [ours], readme=False)
    cells, claims = compare_many(results, [reference])
    by_metric = {c.metric: c for c in cells}
    assert by_metric["nelbo"].reproduction == REPRODUCED
    assert by_metric["nll"].reproduction == nll_expected
    assert (by_metric["nll"].status == NOT_COMPARED) == nll_expected.startswith("not compared")
    # the cell counts as shared and reproduced on what it compares
    assert "this run reproduces 1 of 1 shared reference cells" in reproduction_line(cells)
    summary = write_comparison(cells, claims, tmp_path / "c.csv", tmp_path / "c.md", "ref")
    assert ("1 not compared (other NLL rows)" in summary) == nll_expected.startswith("not compared")


def _record(evaluation: dict, **changed) -> dict:
    base = {
        "seed": 0,
        "mode": "learning",
        "budget": {"max_epochs": 60},
        "hparams_resolved": {"lr": 0.01},
        "dataset_sha256": "ab",
        "provenance": {
            "command": {
                "argv": ["x", "--evaluation", json.dumps(evaluation, sort_keys=True, separators=(",", ":"))]
            }
        },
    }
    return {**base, **changed}


QUICK_EVALUATION = {
    "samples": 50,
    "iw_samples": 0,
    "exact_max_k": 12,
    "nll": {"use_ais": False, "max_rows": 100, "min_rows": 30, "exact_elements": 131072},
}


def test_the_nll_row_cap_is_not_in_the_settings_fingerprint() -> None:
    """Runs differing only in the NLL row cap share their fingerprint -- the one the old rule gave
    the 100-row cap, which the published references recorded -- while any training or other
    evaluation setting still changes it."""
    import hashlib

    from noisyor_bench.reporting.collect import run_settings

    every_row = {**QUICK_EVALUATION, "nll": {**QUICK_EVALUATION["nll"], "max_rows": 100000}}
    subset = run_settings(_record(QUICK_EVALUATION))
    assert run_settings(_record(every_row)) == subset
    # the old rule hashed the evaluation argument as given: a 100-row run's fingerprint is unchanged
    record = _record(QUICK_EVALUATION)
    picked = {k: record.get(k) for k in collect_settings_keys()}
    picked["evaluation"] = record["provenance"]["command"]["argv"][2]
    old = hashlib.sha256(json.dumps(picked, sort_keys=True, default=str).encode()).hexdigest()[:12]
    assert subset == old
    for changed in (
        {"budget": {"max_epochs": 100}},
        {"hparams_resolved": {"lr": 0.02}},
        {"dataset_sha256": "cd"},
        {"mode": "inference"},
    ):
        assert run_settings(_record(every_row, **changed)) != subset, changed
    other_eval = [
        {**QUICK_EVALUATION, "samples": 100},
        {**QUICK_EVALUATION, "nll": {**QUICK_EVALUATION["nll"], "use_ais": True}},
    ]
    for evaluation in other_eval:
        assert run_settings(_record(evaluation)) != subset, evaluation


def collect_settings_keys() -> tuple[str, ...]:
    from noisyor_bench.reporting.collect import SETTINGS_KEYS

    return SETTINGS_KEYS


def test_cells_differing_in_a_training_setting_are_not_shared(tmp_path) -> None:
    """Another budget gives another fingerprint: neither NELBO nor NLL is a reproduction check."""
    from noisyor_bench.reporting.collect import run_settings

    every_row = {**QUICK_EVALUATION, "nll": {**QUICK_EVALUATION["nll"], "max_rows": 100000}}
    ref = {**_nll_row(REFERENCE["avi"], {0: 11.0, 1: 11.0}, 100, None)}
    ref["settings"] = run_settings(_record(QUICK_EVALUATION))
    ours = _nll_row({0: 17.1, 1: 17.3}, {0: 11.0, 1: 11.0}, 999, "d999")
    ours["settings"] = run_settings(_record(every_row, budget={"max_epochs": 100}))
    reference = _result_set(tmp_path / "ref", "extended", [ref], readme=True)
    results = _result_set(tmp_path / "run", "quick", [ours], readme=False)
    cells, _ = compare_many(results, [reference])
    by_metric = {c.metric: c.reproduction for c in cells}
    assert by_metric["nelbo"].startswith("not shared: settings")
    assert by_metric["nll"].startswith("not shared: settings")
    assert "this run reproduces 0 of 0 shared reference cells" in reproduction_line(cells)
