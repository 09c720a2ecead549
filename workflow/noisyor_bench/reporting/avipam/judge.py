"""The aviPAM paper's claims re-judged from a folder of tables (``Paper.judge`` of aviPAM): the
same claims as a run's ``avipam-claims`` step (:func:`~noisyor_bench.reporting.avipam.claims.check_all`)
from the tables of :data:`CLAIM_TABLES` the folder holds.  The speed-up claims name the machine
the timings were measured on: the step names the one it runs on; a re-judged folder names the
one its tables' provenance sidecars record."""

from __future__ import annotations

from pathlib import Path

from noisyor_bench.reporting.avipam.claims import check_all
from noisyor_bench.reporting.claims import Claim
from noisyor_bench.reporting.judge import present, recorded_machines
from noisyor_bench.reporting.tables import read_tables

CLAIM_TABLES = (
    "avipam_table1.csv",
    "avipam_table2.csv",
    "avipam_table3.csv",
    "avipam_table4.csv",
    "avipam_collapse.csv",
)
"""The tables the claims read, in the order the workflow hands them to the claims step."""

THREADS = "one thread per run (tomotopy workers=1, torch threads=1)"
"""How the runs use the machine (the workflow's aviPAM runs: one thread each)."""

NOT_RECORDED = "machine not recorded (no provenance sidecar)"


def hardware_note(machine: str) -> str:
    """The speed-up claims' hardware note for runs on ``machine``."""
    return f"{machine}, {THREADS}"


def judge(tables_dir: str | Path) -> list[Claim]:
    """Every aviPAM claim judged from ``tables_dir``; none when it holds no aviPAM claim table."""
    paths = present(tables_dir, CLAIM_TABLES)
    if not paths:
        return []
    machine = " + ".join(recorded_machines(paths)) or NOT_RECORDED
    return check_all(read_tables(paths), hardware_note(machine))


__all__ = ["CLAIM_TABLES", "THREADS", "hardware_note", "judge"]
