"""The memory docs/performance.md and docs/cluster.md quote for the largest LB-CDI cells is their
calibration slices' peak in the slices table."""

import csv
import re

from conftest import REPO

from noisyor_bench.experiments import costs


def _peaks() -> dict[str, float]:
    return {r["job"]: float(r["peak_mb"]) for r in csv.DictReader((REPO / costs.SLICE_TABLE).open())}


def test_the_lbcdi_peaks_in_the_docs_are_the_slices():
    peaks = _peaks()
    text = " ".join((REPO / "docs" / "performance.md").read_text().split())
    found = re.search(r"now peak at ([\d.]+) GB at N_train = 3,000 and ([\d.]+) GB at 10,000", text)
    assert found, "docs/performance.md no longer gives the LB-CDI slices' peaks"
    n3000, n10000 = (float(x) for x in found.groups())
    assert n3000 == round(peaks["fig5/syn-random-6/lb-cdi/n3000"] / 1000, 1)
    assert n10000 == round(peaks["fig5/syn-random-6/lb-cdi/n10000"] / 1000, 1)
    cluster = " ".join((REPO / "docs" / "cluster.md").read_text().split())
    quoted = re.search(r"could not hold, peaks at ([\d.]+) GB", cluster)
    assert quoted and float(quoted.group(1)) == n10000
