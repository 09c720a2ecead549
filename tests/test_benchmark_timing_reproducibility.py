"""benchmarks/timing_reproducibility.py: it reads the times and the speed claims' CIs as the
tables and claim tables print them (both formats), and names a folder that is not a results
directory."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
_spec = importlib.util.spec_from_file_location(
    "timing_reproducibility", REPO / "benchmarks" / "timing_reproducibility.py"
)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

AVIPAM = (
    "table1: 4-PAM Gibbs 0.548 min, aviPAM 4-PAM 0.721 min (medians); ratio {t1}, timing spread 40.9x..53.4x; "
    "margin 1.1 (ln); table3: 4-PAM Gibbs 0.086 min, aviPAM 4-PAM 0.645 min (medians); ratio {t3}, timing "
    "spread 6.51x..9.76x; hardware: AMD EPYC, one thread per run"
)
APE = "time VI 45.387 (n=3) s, APE 0.0014 (n=3) s (per-seed medians); log10(time VI / time APE) {ci} (paired, n=3)"


def _results(root: Path, gibbs: str, t1: str, t3: str, ci: str) -> Path:
    (root / "tables").mkdir(parents=True)
    pd.DataFrame(
        [
            {
                "method": "pam4-gibbs",
                "component": "sub",
                "corpus": "20news",
                "train_cpu_minutes_median_values": gibbs,
                "train_minutes_median_values": "0:1.0;1:1.2",
            },
            {
                "method": "avipam-pam4",
                "component": "sub",
                "corpus": "20news",
                "train_cpu_minutes_median_values": "0:1.0",
                "train_minutes_median_values": "0:2.0",
            },
        ]
    ).to_csv(root / "tables" / "avipam_table1.csv", index=False)
    pd.DataFrame(
        [
            {"claim_id": "avipam-speedup", "timing": AVIPAM.format(t1=t1, t3=t3)},
            {"claim_id": "avipam-table1-order", "timing": ""},
        ]
    ).to_csv(root / "tables" / "claims_avipam.csv", index=False)
    pd.DataFrame([{"claim_id": "ape-close-to-vi-faster-toybars", "timing": APE.format(ci=ci)}]).to_csv(
        root / "tables" / "claims_ape.csv", index=False
    )
    return root


def test_it_reports_per_seed_moves_and_each_claims_ci_in_both_formats(tmp_path: Path) -> None:
    a = _results(tmp_path / "a", "0:0.5;1:0.6", "46.1 [31.3, 67.8]", "8.3 [7.0, 9.9]", "+2.00 [+1.00, +3.00]")
    b = _results(
        tmp_path / "b", "0:0.5;1:0.9", "40.0 [32.0, 49.0]", "8.3 [6.4, 10.7]", "+2.00 [+1.50, +3.00]"
    )
    moves = bench.seed_moves(a, b)
    cpu = moves[moves["column"] == "train_cpu_minutes"]
    assert sorted(cpu["ln_moved"].round(4)) == [0.0, 0.0, 0.4055]  # seed 1 of Gibbs: 0.6 -> 0.9
    assert (moves[moves["column"] == "train_minutes"]["ln_moved"] == 0.0).all()
    ratios = bench.claim_ratios(a)
    assert ratios[("avipam-speedup", "table3")] == (8.3, 7.0, 9.9)
    assert ratios[("ape-close-to-vi-faster-toybars", "")] == pytest.approx((100.0, 10.0, 1000.0))
    text = bench.report(a, b)
    assert "| avipam-speedup | table1 | 46.1 [31.3, 67.8] | 40 [32, 49] | x1.38 |" in text
    assert "Largest movement of a CI edge between the two runs: x3.16" in text  # APE's lower edge 10 -> 31.6
    assert "AMD EPYC, one thread per run" in text
    ratios = bench.cpu_over_wall(a).set_index("row")  # CPU / wall per run: 0.5, 0.5 and 0.5
    assert ratios.loc["pam4-gibbs sub", "max"] == 0.5 and ratios.loc["avipam-pam4 sub", "min"] == 0.5
    assert "| avipam_table1 | avipam-pam4 sub | 1 | 0.50 | 0.50 |" in text


def test_a_folder_without_tables_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.main([str(tmp_path), str(tmp_path)])
    assert f"{tmp_path}: no tables/ folder" in capsys.readouterr().err
