"""The headline answer is a function of the tables: every published reference re-judged by
today's claim code and merged with a run's claims by the evidence ladder gives byte-identical
``claims.csv`` and ``claims_sources.csv`` in two processes with different string hashing (any
set or dict order reaching a file would show). Wall-clock times, which differ between runs of
one commit, live in ``claims_timing.csv`` and are not compared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from noisyor_bench.experiments import papers

REFERENCES = sorted({REPO / r for p in papers.papers() for r in p.references})


def _cli(args: list[str], hash_seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    code = "import sys; from noisyor_bench.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def _answer(out: Path, hash_seed: str) -> dict[str, bytes]:
    """This run = the extended-acp reference judged as a run; the ladder over every reference."""
    out.mkdir(parents=True)
    _cli(
        ["judge", "--tables", str(REPO / "reference" / "extended-acp"), "--out-csv", str(out / "run.csv")],
        hash_seed,
    )
    _cli(
        [
            "claims-evidence",
            "--claims",
            str(out / "run.csv"),
            "--grid",
            "quick",
            "--reference",
            *map(str, REFERENCES),
            "--papers",
            *papers.ids(),
            "--out-csv",
            str(out / "claims.csv"),
            "--out-md",
            str(out / "claims.md"),
            "--out-sources-csv",
            str(out / "claims_sources.csv"),
        ],
        hash_seed,
    )
    return {name: (out / name).read_bytes() for name in ("run.csv", "claims.csv", "claims_sources.csv")}


@pytest.mark.skipif(not all(r.is_dir() for r in REFERENCES), reason="a published reference is absent")
def test_the_headline_is_byte_identical_across_two_processes(tmp_path: Path) -> None:
    first = _answer(tmp_path / "a", "1")
    second = _answer(tmp_path / "b", "2")
    for name in first:
        assert first[name] == second[name], name
    assert b"timing" not in first["claims.csv"].splitlines()[0]  # wall clock kept out of the answer
