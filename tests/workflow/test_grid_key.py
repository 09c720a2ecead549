"""The experiment grid is chosen by `grid`; the old `profile` still works.

The config side (`--config grid=...` / `profile=...`, `grids:` / `profiles:`) is tested in
tests/experiments/test_config.py and, through Snakemake, in test_profiles.py; here the Makefile
and the registry-derived wildcard of the Snakefile.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from conftest import REPO


def _make_n(*args: str) -> subprocess.CompletedProcess:
    # not the variables of a calling `make test` (MAKEFLAGS carries its command-line variables)
    drop = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "GRID", "PROFILE"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return subprocess.run(
        ["make", "-n", "--no-print-directory", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_makefile_grid_variable_and_deprecated_profile():
    new = _make_n("reproduce", "GRID=paper")
    assert new.returncode == 0, new.stderr
    assert "--config grid=paper" in new.stdout and "estimate-time --grid paper" in new.stdout
    assert "deprecated" not in new.stdout + new.stderr
    old = _make_n("reproduce", "PROFILE=paper")
    assert old.returncode == 0, old.stderr
    assert "--config grid=paper" in old.stdout
    assert (old.stdout + old.stderr).count(
        "PROFILE is deprecated for the experiment grid: use GRID=paper"
    ) == 1
    default = _make_n("reproduce")
    assert "--config grid=quick" in default.stdout


def test_method_wildcard_and_corpus_methods_come_from_the_registry():
    from noisyor_bench.experiments.acp import grid
    from noisyor_bench.inference.noisyor import registry
    from noisyor_bench.inference.noisyor.registry import METHODS

    acp_rules = (REPO / "rules" / "acp.smk").read_text(encoding="utf-8")  # the ACP paper's methods
    assert "method=wildcard_pattern()," in acp_rules
    assert grid.corpora.corpus_methods() == tuple(m.name for m in METHODS if m.amortized and not m.ablates)
    assert grid.AMORTIZED is registry.AMORTIZED  # the grid's check of N_train = 0 reads the registry's
    assert registry.AMORTIZED == tuple(m.name for m in METHODS if m.amortized)
