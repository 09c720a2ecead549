"""The stop-epochs block of docs/cluster.md: per method, where the references' fits stopped under
a grid's max_epochs (the epochs ACP's sliced estimates rest on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from noisyor_bench.infra.errors import UserError
from noisyor_bench.reporting.acp.stop_epochs import stop_epochs

HEADER = "experiment,dataset,method,mode,n_train,seed,epochs,max_epochs,stop_reason\n"


def _root(tmp_path: Path, rows: str) -> Path:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(
        "grids:\n  paper:\n    acp:\n      budget: {max_epochs: 500}\n"
    )
    tables = tmp_path / "reference" / "paper-synpattern" / "tables"
    tables.mkdir(parents=True)
    (tables / "convergence_fig4.csv").write_text(HEADER + rows)
    return tmp_path


def test_each_methods_stop_epochs_and_the_spread_of_its_cells(tmp_path):
    rows = (
        "fig4,syn-pattern,avi,learning,200,0,40,500,patience\n"
        "fig4,syn-pattern,avi,learning,200,1,60,500,patience\n"  # cell median 50
        "fig4,syn-pattern,avi,learning,1000,0,150,500,patience\n"  # cell median 150
        "fig4,syn-pattern,svi,learning,1000,0,500,500,max_epochs\n"
        "fig4,syn-pattern,avi,learning,1000,1,9,60,patience\n"  # another budget: left out
    )
    body = stop_epochs(_root(tmp_path, rows))
    assert "| avi | 2 | 3 | 40 / 60 / 150 | 50 - 150 (3.0x) | 0 |" in body
    assert "| svi | 1 | 1 | 500 / 500 / 500 | 500 - 500 (1.0x) | 1 |" in body
    assert "stopped at 40-500 epochs, 100% of the cap at most" in body


def test_no_run_under_the_budget_is_an_error_naming_it(tmp_path):
    root = _root(tmp_path, "fig4,syn-pattern,avi,learning,200,0,40,60,patience\n")
    with pytest.raises(UserError, match="max_epochs = 500"):
        stop_epochs(root)
    with pytest.raises(UserError, match="grids.nope.acp.budget.max_epochs"):
        stop_epochs(root, "nope")
