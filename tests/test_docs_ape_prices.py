"""docs/ape.md's one-core hours of a reviews training seed are those of the calibration slices the
cost model reads (benchmarks/results/cost_slices.csv), rounded as the page prints them."""

import csv
import re

from conftest import REPO


def test_the_reviews_training_prices_in_the_docs_are_the_slices():
    rows = {
        r["job"]: float(r["seconds"]) / 3600
        for r in csv.DictReader((REPO / "benchmarks/results/cost_slices.csv").open())
    }
    text = " ".join((REPO / "docs" / "ape.md").read_text().split())
    found = re.search(r"a reviews seed is about (\d+) h \(model-aware\) and (\d+) h \(naive\)", text)
    assert found, "docs/ape.md no longer states the reviews seed's hours"
    model_aware, naive = (int(x) for x in found.groups())
    assert model_aware == round(rows["mdreviews_ape-model-aware_n50000_seed0"])
    assert naive == round(rows["mdreviews_ape-naive_n50000_seed0"])
    for job in ("mdreviews_ape-model-aware_n50000_seed0", "mdreviews_ape-naive_n50000_seed0"):
        assert "held" in next(
            r["what"]
            for r in csv.DictReader((REPO / "benchmarks/results/cost_slices.csv").open())
            if r["job"] == job
        )
