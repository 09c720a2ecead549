"""Every published reference was made on the datasets today's config builds.

A reference's verdicts are re-judged by today's claim code and ranked above a quick run, so a
reference made on another draw of a synthetic dataset (a changed seed, seed rule or generator)
would answer for data the workflow no longer builds.  The evidence ladder leaves such rows out
(:func:`noisyor_bench.reporting.reference_data.stale_datasets`); for the committed references
that is a failure here instead: re-run the reference named (reference/README.md), do not edit
its table.
"""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO

from noisyor_bench.reporting.reference_data import stale_datasets

FOLDERS = sorted(p.parent.parent.name for p in (REPO / "reference").glob("*/tables/datasets.csv"))


def test_references_record_their_datasets() -> None:
    assert set(FOLDERS) >= {"paper-synpattern", "paper-fig5-table4", "extended-fig5", "extended-acp"}


@pytest.mark.parametrize("folder", FOLDERS)
def test_reference_was_made_on_todays_datasets(folder: str) -> None:
    datasets = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["datasets"]
    stale = stale_datasets(REPO / "reference" / folder / "tables", datasets)
    assert not stale, (
        f"reference/{folder} was made on other data ({stale}): re-run it (its README names the command)"
    )
