"""Calibration slices (noisyor_bench.experiments.cost_slices): which jobs are sliced, how a slice
and its reference's become the job's estimate, the table, and the cost model pricing from it."""

from __future__ import annotations

import dataclasses
import math

import pytest
from conftest import REPO

from noisyor_bench.experiments import cost_slices, costs
from noisyor_bench.experiments.config import load_config
from noisyor_bench.infra.errors import ConfigError, DataError

REFERENCES = [r for r in costs.load_references(REPO) if not r.source.endswith(cost_slices.TABLE)]
BIG = ("ape_train", "mdreviews_ape-model-aware_n50000_seed0")


@pytest.fixture(scope="module")
def paper_cfg():
    return load_config(REPO / "config" / "config.yaml", {"grid": "paper"})


@pytest.fixture(scope="module")
def planned(paper_cfg):
    estimates = costs.estimate_jobs(paper_cfg, REFERENCES, ["acp", "ape"])
    jobs = {p: costs.paper_jobs(paper_cfg, p) for p in ("acp", "ape")}
    return (
        estimates,
        jobs,
        cost_slices.plan(paper_cfg, estimates, jobs, ["train_cell/table4/syn-random-7/lb-cdi/n40000"]),
    )


def test_one_slice_per_rule_and_family_at_its_longest_job_plus_the_named_ones(planned):
    estimates, jobs, plan = planned
    by_job = {(e.rule, e.job): e for e in estimates}
    groups = {}
    for p in plan:
        groups.setdefault((p.paper, p.job.measured_rule or p.job.rule, p.job.method_family), []).append(p)
    for (pid, rule, family), members in groups.items():
        longest = max(
            (j for j in jobs[pid] if (j.measured_rule or j.rule, j.method_family) == (rule, family)),
            key=lambda j: by_job[(j.rule, j.job)].cpu_seconds,
        )
        assert longest.job in {m.job.job for m in members}, (rule, family)
    named = [p for p in plan if p.job.job == "table4/syn-random-7/lb-cdi/n40000"]
    assert len(named) == 1 and len(groups[("acp", "train_cell", "lb-cdi")]) == 2
    big = next(p for p in plan if p.bench == BIG)
    assert big.reference is not None and big.reference[1].job == "mdreviews_ape-model-aware_n300_seed0"
    assert big.reference[0]["grid"] == "quick"


def test_an_unknown_job_is_refused(paper_cfg, planned):
    estimates, jobs, _ = planned
    with pytest.raises(ConfigError, match="--job: no slice for train_cell/nope"):
        cost_slices.plan(paper_cfg, estimates, jobs, ["train_cell/nope"])


def test_a_slice_scales_the_former_estimate_by_the_ratio_of_the_rates(planned, paper_cfg):
    """Slice at the job's size 6 s for 2 units (3 s a unit), the reference 1 s for 4 (0.25 s):
    12 x the former estimate; without a reference, 3 s a unit x the job's work."""
    _, _, plan = planned
    big = next(p for p in plan if p.bench == BIG)
    times = {big.job.job: (6.0, 2.0), big.reference[1].job: (1.0, 4.0)}

    def runner(paper, cfg, job, raw):
        assert paper == "ape" and raw is None
        return (*times[job.job], "two steps", 100.0)

    (row,) = cost_slices.measure([big], paper_cfg, None, "cpu x", "abc", runner=runner)
    assert row.seconds == pytest.approx(12 * big.estimate.cpu_seconds) and row.ratio == pytest.approx(12)
    assert (row.rate, row.reference_rate, row.work) == (3.0, 0.25, big.job.work)
    assert row.reference == big.estimate.reference and (row.cpu, row.commit, row.peak_mb) == (
        "cpu x",
        "abc",
        100,
    )
    alone = dataclasses.replace(big, reference=None)
    (row,) = cost_slices.measure([alone], paper_cfg, None, "cpu x", "abc", runner=runner)
    assert row.seconds == pytest.approx(3.0 * big.job.work) and math.isnan(row.reference_rate)
    with pytest.raises(DataError, match="no time or work measured"):
        cost_slices.measure([alone], paper_cfg, None, "c", "x", runner=lambda *a: (0.0, 1.0, "", 1.0))


def _row(job: costs.Job, seconds: float) -> cost_slices.Slice:
    return cost_slices.Slice(job.rule, job.job, seconds, job.work, "cpu", 10.0, "w", 1.0, "", math.nan,
                             math.nan, "c", "2026-01-01")  # fmt: skip


def test_the_table_holds_what_the_cost_model_reads():
    assert cost_slices.TABLE == costs.SLICE_TABLE in dict(map(reversed, costs.REFERENCE_TABLES))
    assert set(costs.SLICE_COLUMNS) <= set(cost_slices.COLUMNS)


def test_the_table_round_trips_and_rejects_a_duplicate(tmp_path, paper_cfg):
    job = next(j for j in costs.paper_jobs(paper_cfg, "ape") if (j.rule, j.job) == BIG)
    path = tmp_path / "slices.csv"
    cost_slices.write([_row(job, 5000.0)], path)
    (back,) = cost_slices.load(path)
    assert (back.rule, back.job, back.seconds, back.work) == (*BIG, 5000.0, job.work)
    path.write_text(path.read_text() + path.read_text().splitlines()[1] + "\n")
    with pytest.raises(DataError, match="listed twice"):
        cost_slices.load(path)


def test_the_cost_model_prices_the_job_and_its_same_size_siblings_from_the_slice(tmp_path, paper_cfg):
    """The sliced job and its other seeds (same key and pool) take the slice's seconds, basis
    'sliced'; a job of another key keeps its former estimate."""
    job = next(j for j in costs.paper_jobs(paper_cfg, "ape") if (j.rule, j.job) == BIG)
    path = tmp_path / "slices.csv"
    cost_slices.write([_row(job, 500_000.0)], path)
    sliced = [*REFERENCES, costs.load_reference("paper", path)]
    before = {(e.rule, e.job): e for e in costs.estimate_jobs(paper_cfg, REFERENCES, ["ape"])}
    after = {(e.rule, e.job): e for e in costs.estimate_jobs(paper_cfg, sliced, ["ape"])}
    for seed in range(5):
        e = after[("ape_train", f"mdreviews_ape-model-aware_n50000_seed{seed}")]
        assert e.basis == costs.SLICED and e.cpu_seconds == pytest.approx(500_000.0)
        assert e.reference == f"paper slice: {BIG[0]}/{BIG[1]}"
    other = ("ape_train", "toybars_ape-model-aware_n50000_seed0")
    assert after[other] == before[other]
