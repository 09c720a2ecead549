"""docs/cluster.md's example of a failed calibration slice is the failures table's row, and the
memory it compares with is the sibling slice's peak in the slices table."""

import csv
import re

from conftest import REPO

from noisyor_bench.experiments import costs


def test_the_failed_slice_in_the_docs_is_the_tables():
    failed = costs.load_slice_failures(REPO / costs.SLICE_FAILURES)
    text = " ".join((REPO / "docs" / "cluster.md").read_text().split())
    found = re.search(
        r"the Fig\. 5 LB-CDI cell at N_train = 10,000 on SYN-RANDOM-6 \(D = K = 500\) is such a job: its "
        r"slice was killed at ([\d.]+) GB resident, where its N_train = 3,000 sibling peaked at ([\d.]+) GB",
        text,
    )
    assert found, "docs/cluster.md no longer gives the failed slice's example"
    killed, sibling = (float(x) for x in found.groups())
    reason = failed[("train_cell", "fig5/syn-random-6/lb-cdi/n10000")]
    resident_kb = int(re.search(r"at ([\d,]+) kB resident", reason).group(1).replace(",", ""))
    assert killed == round(resident_kb / 1e6, 1)
    peaks = {r["job"]: float(r["peak_mb"]) for r in csv.DictReader((REPO / costs.SLICE_TABLE).open())}
    assert sibling == round(peaks["fig5/syn-random-6/lb-cdi/n3000"] / 1000, 1)
