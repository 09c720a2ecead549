"""One row of aviPAM's per-run table (the input of ``reporting.avipam.tables.build_table``) for
the small 20 Newsgroups experiment, with the columns a test does not care about filled in."""

from __future__ import annotations

from typing import Any


def small_run_row(method: str, seed: int, **columns: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "experiment": "avipam-small",
        "table_experiment": "small",
        "corpus": "20news",
        "method": method,
        "component": "sub",
        "n_topics": 50,
        "seed": seed,
        "npmi_external": 0.2,
        "npmi_internal": 0.1,
        "train_minutes": 1.0,
        "train_seconds": 60.0,
        "threads": 1,
        "converged": True,
        "gibbs_iterations": None,
        "avi_max_epochs": None,
        "epochs": 10,
        "run_dir": f"r/{method}/{seed}",
    }
    row.update(columns)
    return row
