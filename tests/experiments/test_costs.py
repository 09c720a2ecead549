"""The cost model (noisyor_bench.experiments.costs): per-job estimates of every paper, chunked
searches, limits with a safety factor and retries, list scheduling."""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest
from conftest import REPO

from noisyor_bench.experiments import costs, papers
from noisyor_bench.experiments.acp import costs as acp_costs
from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.config import load_config
from noisyor_bench.infra.errors import ConfigError

REFERENCES = costs.load_references(REPO)
QUICK = next(r for r in REFERENCES if r.grid == costs.REFERENCE_GRID)


@pytest.fixture(scope="module")
def paper_cfg():
    return load_config(REPO / "config" / "config.yaml", {"grid": "paper"})


def test_every_paper_with_rules_gets_estimates_for_the_paper_grid(paper_cfg):
    est = costs.estimate_jobs(paper_cfg, REFERENCES, papers.ids())
    assert {e.paper for e in est} == {"acp", "ape", "ape_noisyor", "avipam"}
    assert all(e.cpu_seconds > 0 for e in est)
    assert {e.basis for e in est} <= {"measured", "extrapolated", costs.SLICED, costs.UNMEASURED}


def _measured_families(cfg, pid):
    """(measured rule, family) of every job some reference table measured, as the model sees them."""
    import functools

    refs = costs.measured_candidates(
        cfg, REFERENCES, functools.partial(costs.paper_jobs, paper_id=pid, reference=True)
    )
    return {(ref.measured_rule or ref.rule, ref.method_family) for ref, _, _ in refs}


def test_a_job_is_not_measured_exactly_when_no_job_of_its_family_was(paper_cfg):
    """A job is priced only from its own method family: without a measured job of its family it is
    'not measured' (batch LDA was priced from a Gibbs chain, an APE naive encoder from the Standard
    one); with one, it is priced from that family and none other, unless its own calibration
    slice failed (killed for memory, say) and nothing at its own size measured it."""
    est = costs.estimate_jobs(paper_cfg, REFERENCES, papers.ids())
    failed = {k: why for r in REFERENCES if r.grid == "paper" for k, why in r.failed.items()}
    for pid in papers.ids():
        families = _measured_families(paper_cfg, pid)
        for job, e in zip(costs.paper_jobs(paper_cfg, pid), [e for e in est if e.paper == pid], strict=True):
            measured = (job.measured_rule or job.rule, job.method_family) in families
            if costs._failed_slice(job, failed) is not None:
                assert not e.measured and e.reference.startswith("its calibration slice failed: ")
                continue
            assert e.measured == measured, (e.rule, e.job, e.family, e.reference)
            assert e.family == job.method_family


def test_another_family_never_prices_a_job():
    gibbs = costs.Job("avipam_run", "a", 100.0, key=("lda-gibbs", "20news"), family="lda-gibbs")
    batch = costs.Job("avipam_run", "b", 100.0, key=("lda-batch", "20news"), family="lda-batch")
    candidates = [(gibbs, costs.Measurement(50.0), "quick")]
    e = costs.estimate_job("avipam", batch, candidates, [])
    assert not e.measured and e.basis == costs.UNMEASURED
    assert e.reference == "no measured avipam_run job of family lda-batch"
    same = costs.estimate_job("avipam", dataclasses.replace(gibbs, job="c", work=300.0), candidates, [])
    assert same.measured and same.cpu_seconds == pytest.approx(150.0) and same.basis == "extrapolated"


def test_unmeasured_jobs_are_counted_apart_not_summed():
    """The summary leaves a job without a measurement of its family out of the core-hours, the
    longest job and the wall time, and counts it with its family."""

    def est(job: str, seconds: float, basis: str, family: str) -> costs.Estimate:
        return costs.Estimate("acp", "train_cell", job, seconds, basis, "", False, 2000, True, family=family)

    rows = costs.summary_rows(
        [est("a", 7200, "extrapolated", "svi"), est("b", 3600, costs.UNMEASURED, "ub-cdi")], slots=4
    )
    total = rows[-1]
    assert total["core_hours"] == pytest.approx(2.0) and total["longest"].job == "a"
    assert total["wall_seconds"] == pytest.approx(7200) and total["jobs"] == 2
    assert total["unmeasured"] == 1 and costs.not_measured_text(total) == "1 (train_cell ub-cdi)"


def test_quick_grid_reproduces_its_own_measurements(paper_cfg):
    """Estimating the reference grid itself gives back the measured seconds (basis 'measured')."""
    quick = costs.grid_config(paper_cfg, costs.REFERENCE_GRID)
    est = costs.estimate_jobs(quick, [QUICK], ["ape", "avipam"])
    measured = [e for e in est if e.basis == "measured"]
    assert len(measured) >= 20
    assert all(e.cpu_seconds == pytest.approx(QUICK.jobs[(e.rule, e.job)].seconds) for e in measured)


def test_paper_protocol_run_is_preferred_where_it_measured_the_same_cell(paper_cfg):
    """Cells the paper-protocol SYN-PATTERN run measured at the paper's budgets are 'measured',
    with its seconds and peak memory; the quick grid's scaled guess does not win over them."""
    synpattern = next(r for r in REFERENCES if r.grid == "paper-synpattern")
    est = {(e.rule, e.job): e for e in costs.estimate_jobs(paper_cfg, REFERENCES, ["acp"])}
    e = est[("train_cell", "fig3a/syn-pattern/avi/n1000")]
    m = synpattern.jobs[("train_cell", "fig3a/syn-pattern/avi/n1000")]
    assert e.basis == "measured" and e.cpu_seconds == pytest.approx(m.seconds)
    assert e.reference.startswith("paper-synpattern:") and e.mem_mb >= m.rss_mb


def test_search_chunks_split_the_cost_of_a_search(paper_cfg):
    cfg = copy.deepcopy(paper_cfg)
    for exp in cfg["grids"]["paper"]["acp"]["experiments"].values():
        (exp.get("search") or {}).pop("draws_per_job", None)
    cfg["grids"]["paper"]["acp"].setdefault("search", {})["draws_per_job"] = None
    whole = [e for e in costs.estimate_jobs(cfg, REFERENCES, ["acp"]) if e.rule == "search_chunk"]
    cfg["grids"]["paper"]["acp"].setdefault("search", {})["draws_per_job"] = 10
    chunks = [e for e in costs.estimate_jobs(cfg, REFERENCES, ["acp"]) if e.rule == "search_chunk"]
    assert len(chunks) > len(whole)
    assert sum(e.cpu_seconds for e in chunks) == pytest.approx(sum(e.cpu_seconds for e in whole))
    cell = next(c for c in grid.cells(cfg) if grid.n_draws(cfg, c) == 100)
    (one,) = [e.cpu_seconds for e in whole if e.job == f"{cell.path}/0"]
    ten = [e.cpu_seconds for e in chunks if e.job.startswith(f"{cell.path}/")]
    assert len(ten) == 10 and ten == pytest.approx([one / 10] * 10)


def test_cuda_flags_follow_the_methods(paper_cfg):
    """Amortized training can use a GPU; Gibbs, NUTS, VI, mean-field and the per-datapoint
    methods (SVI, LB-CDI, UB-CDI) cannot."""
    est = costs.estimate_jobs(paper_cfg, REFERENCES, papers.ids())
    by_rule: dict[str, set[bool]] = {}
    for e in est:
        by_rule.setdefault(e.rule, set()).add(e.cuda)
    assert by_rule["search_chunk"] == {True} and by_rule["ape_train"] == {True}
    assert by_rule["ape_nuts"] == by_rule["ape_vi"] == by_rule["baselines"] == {False}
    acp = {e.job.split("/")[2]: e.cuda for e in est if e.rule == "train_cell"}
    assert acp["avi"] and acp["acp"] and acp["acp-sg"]
    assert not (acp["svi"] or acp["lb-cdi"] or acp.get("ub-cdi", False))
    avipam = {e.job: e.cuda for e in est if e.rule == "avipam_run"}
    assert not any(v for j, v in avipam.items() if "gibbs" in j or "-lda-" in j)
    assert all(v for j, v in avipam.items() if "-avipam-" in j)


def test_limits_have_a_safety_factor_and_grow_with_attempts():
    assert costs.runtime_minutes(3600) >= 1.5 * 60
    assert costs.runtime_minutes(3600, attempt=2) == 2 * costs.runtime_minutes(3600)
    assert costs.runtime_minutes(1) == costs.MIN_RUNTIME_MIN
    assert costs.mem_mb(4000, attempt=2) == 2 * costs.mem_mb(4000) >= 2 * 6000


@pytest.mark.parametrize(
    ("seconds", "first", "retry"),
    [
        (1, 10, 20),  # the 10-min floor, then doubled: a retry after a time-out never gets 10 min again
        (60, 10, 20),  # 2 x 1 min = 2 min < the floor
        (299, 10, 20),  # 2 x 4.98 min = 9.97 min -> ceil 10
        (301, 11, 22),  # 2 x 5.02 min = 10.03 min -> ceil 11
        (3600, 120, 240),
    ],
)
def test_runtime_limit_is_floored_before_the_attempt_multiplies_it(seconds, first, retry):
    assert costs.runtime_minutes(seconds, attempt=1) == first
    assert costs.runtime_minutes(seconds, attempt=2) == retry


def test_a_test_may_lower_the_runtime_floor_and_only_lower_it():
    """NOISYOR_TEST_RUNTIME_FLOOR_MIN (the real-SLURM test's 1-minute job): a whole number of
    minutes below the 10-minute floor, else a ConfigError naming the variable; a lowered floor
    still doubles on the retry, and is announced."""
    env = costs.RUNTIME_FLOOR_ENV
    assert costs.runtime_floor({}) == costs.runtime_floor({env: " "}) == costs.MIN_RUNTIME_MIN
    assert costs.runtime_floor({env: "1"}) == 1 and costs.runtime_floor({env: "9"}) == 9
    for bad in ("0", "10", "60", "-1", "1.5", "one"):
        with pytest.raises(ConfigError, match=f"{env}='{re.escape(bad)}'.*from 1 to 9"):
            costs.runtime_floor({env: bad})
    assert costs.runtime_minutes(1, 1, floor=1) == 1 and costs.runtime_minutes(1, 2, floor=1) == 2
    assert costs.runtime_minutes(3600, 1, floor=1) == costs.runtime_minutes(3600) == 120
    assert costs.runtime_floor_message(costs.MIN_RUNTIME_MIN) is None
    assert costs.runtime_floor_message(1).startswith(f"{env}=1: every compute job's wall-time floor is 1 min")


@pytest.mark.parametrize(
    ("estimate", "first", "retry"), [(100, 3000, 6000), (2001, 3002, 6004), (4000, 6000, 12000)]
)
def test_memory_limit_is_rounded_before_the_attempt_multiplies_it(estimate, first, retry):
    """1.5 x 2001 MB = 3001.5 -> 3002; the retry gets 2 x 3002, not ceil(3 x 2001) = 6003."""
    assert costs.mem_mb(estimate, attempt=1) == first
    assert costs.mem_mb(estimate, attempt=2) == retry


@pytest.mark.parametrize("grid_name", ["smoke", "quick", "paper"])
def test_every_compute_job_gets_at_least_twice_its_limits_on_a_retry(grid_name):
    """Every compute job of the grid, as rules/common.smk plans them (the selected papers' estimates
    from the config's measured tables; a job without one takes 3600 s and BASE_MEM_MB): the second
    attempt's time and memory are at least twice the first's, and the first is at least SAFETY x the
    estimate and the floor."""
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": grid_name})
    selected = [p.id for p in papers.selected(cfg["papers"])]
    estimates = costs.estimate_jobs(cfg, costs.load_references(REPO, cfg.get("job_seconds")), selected)
    assert len(estimates) > 0
    pairs = [(e.cpu_seconds, e.mem_mb) for e in estimates] + [(3600.0, costs.BASE_MEM_MB)]
    short = []
    for seconds, memory in pairs:
        t1, t2 = costs.runtime_minutes(seconds, 1), costs.runtime_minutes(seconds, 2)
        m1, m2 = costs.mem_mb(memory, 1), costs.mem_mb(memory, 2)
        assert t1 >= max(10, 2 * seconds / 60) and m1 >= 1.5 * max(memory, 2000)
        if t2 < 2 * t1 or m2 < 2 * m1:
            short.append((seconds, memory, t1, t2, m1, m2))
    assert short == []


def test_list_schedule_is_longest_first():
    assert costs.list_schedule([5, 4, 3, 3, 3], 2) == 10  # LPT: 5+3 | 4+3+3 (the optimum, 9, is not LPT's)
    assert costs.list_schedule([10, 1, 1], 5) == 10
    assert costs.list_schedule([], 3) == 0


def test_wall_time_is_at_least_the_longest_chain():
    """A cell's training waits for its search chunks: with slots to spare, the wall time is the
    longest chunk plus the training, not the longest job alone."""

    def est(rule: str, seconds: float, chain: str, stage: int) -> costs.Estimate:
        return costs.Estimate(
            "acp", rule, f"{chain}/{rule}{seconds}", seconds, "measured", "", True, 2000, True, chain, stage
        )

    jobs = [est("search_chunk", 10, "a", 0), est("search_chunk", 30, "a", 0), est("train_cell", 20, "a", 1)]
    jobs.append(est("train_cell", 45, "b", 1))
    assert costs.critical_path(jobs) == 50  # max(30 + 20, 45)
    assert costs.wall_seconds(jobs, 100) == 50
    assert costs.wall_seconds(jobs, 1) == 105  # one slot: everything in sequence


def test_training_over_max_job_hours_splits_by_seed(paper_cfg):
    """A cell whose seeds together the model puts over search.max_job_hours (here a bound under
    the paper grid's longest training cell, whatever the measurements make it) trains one job per
    seed, each one seed's share of the whole cell; every other cell is one job, and no ACP job of
    the grid is then estimated over the bound."""
    cfg = copy.deepcopy(paper_cfg)
    cfg["grids"]["paper"]["acp"]["search"]["max_job_hours"] = 10_000.0
    whole = {e.job: e for e in costs.estimate_jobs(cfg, REFERENCES, ["acp"]) if e.rule == "train_cell"}
    several = [c for c in grid.cells(cfg) if len(grid.seeds(cfg, c.experiment, c.dataset, c.method)) > 1]
    hours = 0.6 * max(whole[c.path].cpu_seconds for c in several) / 3600
    paper_cfg = copy.deepcopy(paper_cfg)
    paper_cfg["grids"]["paper"]["acp"]["search"]["max_job_hours"] = hours
    est = [e for e in costs.estimate_jobs(paper_cfg, REFERENCES, ["acp"]) if e.rule == "train_cell"]
    split = acp_costs.per_seed_cells(paper_cfg)
    assert split and not acp_costs.per_seed_cells(cfg)
    for cell in split:
        seeds = grid.seeds(paper_cfg, cell.experiment, cell.dataset, cell.method)
        jobs = [e for e in est if e.job.startswith(f"{cell.path}/seed")]
        assert sorted(e.job for e in jobs) == sorted(f"{cell.path}/seed{s}" for s in seeds)
        assert whole[cell.path].cpu_seconds > hours * 3600
        assert all(e.cpu_seconds == pytest.approx(whole[cell.path].cpu_seconds / len(seeds)) for e in jobs)
        assert {e.chain for e in jobs} == {cell.path} and cell.path not in {e.job for e in est}
    assert {e.job for e in est if "/seed" not in e.job} == set(whole) - {c.path for c in split}
    splittable = {c.path for c in several}  # a single seed's training cannot split
    assert max(e.cpu_seconds for e in est if (e.chain or e.job) in splittable) <= hours * 3600


def test_an_avipam_corpus_setting_overrides_the_epochs_the_cost_model_charges(paper_cfg):
    """A corpus's `corpus_settings` override `avi` in a run (NIPS trains to its own plateau), so
    the cost model charges the corpus's epochs, not the grid-wide `avi.max_epochs`."""
    from noisyor_bench.experiments.avipam import cells as avipam_cells
    from noisyor_bench.experiments.avipam import costs as avipam_costs

    quick = costs.grid_config(paper_cfg, "quick")
    sec = copy.deepcopy(avipam_cells.section(quick))
    cell = next(
        c for c in avipam_cells.table_cells(sec, "small") if c.corpus == "nips" and c.method == "avipam-pam4"
    )
    sec["corpus_settings"]["nips"]["max_epochs"] = 30
    thirty = avipam_costs._work(sec, cell)
    sec["corpus_settings"]["nips"]["max_epochs"] = 90
    assert avipam_costs._work(sec, cell) == pytest.approx(3 * thirty)
    del sec["corpus_settings"]["nips"]["max_epochs"]  # the grid-wide epochs again
    assert avipam_costs._work(sec, cell) == pytest.approx(thirty * sec["avi"]["max_epochs"] / 30)
