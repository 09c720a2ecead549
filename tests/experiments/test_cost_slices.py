"""Calibration slices (noisyor_bench.experiments.cost_slices): which jobs are sliced, how a slice
and its reference's become the job's estimate, the table, and the cost model pricing from it."""

from __future__ import annotations

import copy
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
    # as calibrate-costs plans them: whole trainings and searches, as slices record them
    estimates = costs.estimate_jobs(paper_cfg, REFERENCES, ["acp", "ape"], whole=True)
    jobs = {p: costs.paper_jobs(paper_cfg, p, reference=True) for p in ("acp", "ape")}
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
    assert big.reference is None  # APE's slices price their job alone (ape.slices.PRICED_ALONE)
    scaled = [p for p in plan if p.reference is not None]
    assert scaled and all(p.paper != "ape" for p in scaled)
    svi = next(p for p in plan if p.bench == ("train_cell", "fig5/syn-random-1/svi/n10000"))
    assert svi.reference is not None and svi.reference[1].job == "fig5/syn-random-1/svi/n30"
    assert svi.reference[0]["grid"] == "quick"


def test_an_unknown_job_is_refused(paper_cfg, planned):
    estimates, jobs, _ = planned
    with pytest.raises(ConfigError, match="--job: no slice for train_cell/nope"):
        cost_slices.plan(paper_cfg, estimates, jobs, ["train_cell/nope"])


def test_a_slice_scales_the_former_estimate_by_the_ratio_of_the_rates(planned, paper_cfg):
    """Slice at the job's size 6 s for 2 units (3 s a unit), the reference 1 s for 4 (0.25 s):
    12 x the former estimate; without a reference, 3 s a unit x the job's work."""
    _, _, plan = planned
    big = next(p for p in plan if p.bench == ("train_cell", "fig5/syn-random-1/svi/n10000"))
    times = {big.job.job: (6.0, 2.0), big.reference[1].job: (1.0, 4.0)}

    def runner(paper, cfg, job, raw):
        assert paper == "acp" and raw is None
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
    # the whole training, as calibrate-costs records it (the paper grid runs it as segment jobs)
    job = next(j for j in costs.paper_jobs(paper_cfg, "ape", reference=True) if (j.rule, j.job) == BIG)
    path = tmp_path / "slices.csv"
    cost_slices.write([_row(job, 500_000.0)], path)
    sliced = [*REFERENCES, costs.load_reference("paper", path)]
    before = {(e.rule, e.job): e for e in costs.estimate_jobs(paper_cfg, REFERENCES, ["ape"])}
    after = {(e.rule, e.job): e for e in costs.estimate_jobs(paper_cfg, sliced, ["ape"])}
    for seed in range(5):
        stem = f"mdreviews_ape-model-aware_n50000_seed{seed}"
        parts = [e for (rule, name), e in after.items() if rule == "ape_train" and name.startswith(stem)]
        assert parts and all(e.basis == costs.SLICED for e in parts)
        assert sum(e.cpu_seconds for e in parts) == pytest.approx(500_000.0)  # its segments together
        assert {e.reference for e in parts} == {f"paper slice: {BIG[0]}/{BIG[1]}"}
    other = ("ape_train", "toybars_ape-model-aware_n50000_seed0")
    assert after[other] == before[other]


@pytest.fixture(scope="module")
def planned_topics(paper_cfg):
    ids = ("avipam", "ape_noisyor")
    estimates = costs.estimate_jobs(paper_cfg, REFERENCES, ids)
    jobs = {p: costs.paper_jobs(paper_cfg, p) for p in ids}
    return estimates, cost_slices.plan(paper_cfg, estimates, jobs)


def test_every_family_no_run_measured_is_sliced_without_a_reference(planned_topics):
    """Batch LDA, NVLDA and ACP model-aware have no measured run: each gets a slice priced alone;
    the large 4-PAM chain is sliced beside the same slice of the quick chain it is scaled from."""
    estimates, plan = planned_topics
    unmeasured = {(e.paper, e.family) for e in estimates if not e.measured}
    sliced = {(p.paper, p.job.method_family): p for p in plan}
    assert {("avipam", "lda-batch"), ("avipam", "nvlda"), ("ape_noisyor", "acp-model-aware")} <= unmeasured
    assert unmeasured <= set(sliced) and all(sliced[k].reference is None for k in unmeasured)
    pam = sliced[("avipam", "pam4-gibbs")]
    assert pam.job.job == "large-20news-pam4-gibbs-n0-seed0"
    assert pam.reference[0]["grid"] == "quick"
    assert pam.reference[1].job.startswith("small-20news-pam4-gibbs-n0-seed")
    assert ("avipam", "avitm-published") not in sliced  # published topics: nothing to time
    assert not any(p.job.rule == "ape_noisyor_baseline" for p in plan)


def test_a_gibbs_chain_is_charged_its_sweeps_whatever_its_hyperparameter_burn_in(paper_cfg):
    """tomotopy's burn_in delays the hyperparameter re-estimation within the iterations."""
    from noisyor_bench.experiments.avipam import cells as avipam_cells
    from noisyor_bench.experiments.avipam import costs as avipam_costs

    sec = copy.deepcopy(avipam_cells.section(paper_cfg))
    cell = next(c for c in avipam_cells.table_cells(sec, "large") if c.method == "pam4-gibbs")
    gibbs = sec["tables"]["large"]["gibbs"]
    steps, per_sweep = avipam_costs.run_steps(sec, cell)
    assert gibbs["burn_in"] > 0 and steps == gibbs["iterations"]
    gibbs["burn_in"] = 0
    assert avipam_costs.run_steps(sec, cell) == (steps, per_sweep)
    assert avipam_costs._work(sec, cell) == pytest.approx(steps * per_sweep)


def test_an_avipam_slice_runs_the_runs_own_settings_cut_to_a_few_steps(paper_cfg):
    from noisyor_bench.experiments.avipam import cells as avipam_cells
    from noisyor_bench.experiments.avipam import methods
    from noisyor_bench.experiments.avipam import slices as avipam_slices

    sec = avipam_cells.section(paper_cfg)
    cells = {(c.experiment, c.corpus, c.method): c for c in avipam_cells.all_cells(sec) if c.seed == 0}
    run = avipam_cells.cell_settings(sec, cells[("large", "20news", "pam4-gibbs")])
    cut, kind = avipam_slices.slice_settings(run)
    assert kind == "sweeps" and cut["sizes"] == run["sizes"]
    assert cut["gibbs"] == {**run["gibbs"], "iterations": avipam_slices.GIBBS_SWEEPS, "trace_every": 1,
                            "stop_on_rule": False}  # fmt: skip
    cut, kind = avipam_slices.slice_settings(
        avipam_cells.cell_settings(sec, cells[("small", "20news", "lda-batch")])
    )
    every = sec["mean_field"]["evaluate_every"]
    assert kind == "passes" and cut["mean_field"]["max_iter"] == max(
        2, every
    )  # one perplexity check at least
    cut, kind = avipam_slices.slice_settings(
        avipam_cells.cell_settings(sec, cells[("small", "20news", "nvlda")])
    )
    assert kind == "epochs" and cut["prodlda"]["epochs"] == avipam_slices.EPOCHS
    nips = avipam_cells.cell_settings(sec, cells[("small", "nips", "avipam-pam4")])
    cut, kind = avipam_slices.slice_settings(nips)
    assert methods.avipam_config(nips).max_epochs != avipam_slices.EPOCHS  # the corpus's own epochs ...
    assert methods.avipam_config(cut).max_epochs == avipam_slices.EPOCHS  # ... cut too


def _tiny_corpus(*_args):
    import numpy as np
    import scipy.sparse as sp

    from noisyor_bench.data.corpora.bow import Corpus

    rng = np.random.default_rng(0)
    train, test = (sp.csr_matrix(rng.poisson(0.5, (n, 40)).astype(np.int32)) for n in (60, 20))
    return Corpus(train, test, [f"w{i}" for i in range(40)])


def test_an_avipam_slice_times_its_later_steps_in_the_cost_models_unit(monkeypatch):
    """Each kind of fit on a tiny corpus: the timed steps' work is their count x a step's work."""
    from noisyor_bench.experiments.avipam import cells as avipam_cells
    from noisyor_bench.experiments.avipam import costs as avipam_costs
    from noisyor_bench.experiments.avipam import slices as avipam_slices

    cfg = copy.deepcopy(load_config(REPO / "config" / "config.yaml", {"grid": "smoke"}))
    small = cfg["grids"]["smoke"]["avipam"]["tables"]["small"]
    small["corpora"], small["methods"] = (
        ["20news"],
        {"20news": ["pam4-gibbs", "lda-batch", "nvlda", "avipam-pam4"]},
    )
    monkeypatch.setattr(avipam_slices, "_corpus", _tiny_corpus)
    sec = avipam_cells.section(cfg)
    timed = {"pam4-gibbs": 2, "lda-batch": 2, "nvlda": 2, "avipam-pam4": 2}
    for job in costs.paper_jobs(cfg, "avipam"):
        cell = next(c for c in avipam_cells.all_cells(sec) if avipam_costs.job_name(c) == job.job)
        if cell.experiment != "small":
            continue
        assert avipam_slices.bench_name(cfg, job) == (job.rule, job.job)
        seconds, work, what = avipam_slices.run(cfg, job, None)
        assert seconds > 0 and work == pytest.approx(
            timed[cell.method] * avipam_costs.run_steps(sec, cell)[1]
        )
        assert "60 documents x 40 words" in what, what


def test_an_ape_noisyor_slice_trains_the_jobs_encoder_for_two_epochs():
    from noisyor_bench.experiments.ape_noisyor import slices as noisyor_slices

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    job = next(j for j in costs.paper_jobs(cfg, "ape_noisyor") if j.job == "syn-random-avi-model-aware")
    assert noisyor_slices.bench_name(cfg, job) == (job.rule, job.job)
    seconds, work, what = noisyor_slices.run(cfg, job, None)
    sec = cfg["grids"]["smoke"]["ape_noisyor"]
    assert seconds > 0 and work == sec["problems"]["train"] * sec["rows"]["train"]
    assert what.startswith(f"epoch {noisyor_slices.SLICE_EPOCHS} of syn-random avi-model-aware seed 0")


@pytest.mark.parametrize("held", [True, False])
def test_an_ape_slice_trains_the_jobs_encoder_on_the_held_path_and_adds_its_validation(
    monkeypatch, mirror, held
):
    """Steps 11-20 of the job's own training are timed (the first ten warm up), on the job's
    pool where this machine holds it, else on a held stand-in of the pool's shape; one
    validation of the job's pairs per eval_every steps is added to their seconds."""
    from noisyor_bench.experiments.ape import pairs
    from noisyor_bench.experiments.ape import slices as ape_slices

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    job = next(j for j in costs.paper_jobs(cfg, "ape") if j.job == "toybars_ape-model-aware_n20_seed0")
    assert ape_slices.bench_name(cfg, job) == (job.rule, job.job)
    monkeypatch.setattr(pairs, "hold_pool", lambda *a, **k: (held, "test"))
    seconds, work, what = ape_slices.run(cfg, job, str(mirror))
    assert seconds > 0 and work == ape_slices.SLICE_STEPS // 2
    assert what.startswith(
        f"steps {int(work) + 1}-{ape_slices.SLICE_STEPS} (toybars ape-model-aware, pool 20 "
    )
    assert ("held in memory" if held else "held: a stand-in of 20 of its 20 models") in what
    assert "+ one validation (" in what and " per " in what


@pytest.mark.parametrize("grid", ["quick", "extended"])
def test_the_paper_grids_slices_leave_the_jobs_of_other_grids_as_they_were(paper_cfg, grid):
    """A slice prices paper-grid jobs at its size: a job measured as itself keeps its run, and a job
    of another size keeps the estimate of its own grid's runs (aviPAM's and APE-on-noisy-OR's jobs
    have the same keys in every grid)."""
    with_slices = costs.load_references(REPO)
    assert any(r.source.endswith(cost_slices.TABLE) for r in with_slices)
    cfg = costs.grid_config(paper_cfg, grid)
    ids = ["acp", "ape", "ape_noisyor", "avipam"]
    assert costs.estimate_jobs(cfg, with_slices, ids) == costs.estimate_jobs(cfg, REFERENCES, ids)


def test_each_paper_names_its_slices_module_in_its_registry_entry(monkeypatch) -> None:
    """The slicer is the registry's (Paper.cost_slices), not a module found by its name; an entry
    without one has no slices."""

    from noisyor_bench.experiments import papers

    for entry in papers.papers():
        module = cost_slices.slicer(entry.id)
        assert module is not None and module.__name__ == entry.cost_slices
    bare = dataclasses.replace(papers.get("acp"), cost_slices=None)
    monkeypatch.setattr(papers, "get", lambda paper_id: bare)
    assert cost_slices.slicer("acp") is None


def _starved_child(paper, cfg, job, raw):
    """A slice's process that got a fifth of a core (runs in a spawned process)."""
    return 6.0, 2.0, "two steps", 100.0, 0.2


def _fed_child(paper, cfg, job, raw):
    return 6.0, 2.0, "two steps", 100.0, 0.99


def test_a_slice_starved_by_other_work_runs_again_and_is_marked(paper_cfg, capsys):
    """Wall-clock slices read high on a busy machine: a run with under MIN_CPU_SHARE of a core is
    repeated once, and a second starved run is recorded with the warning in its description."""
    job = costs.Job("ape_train", "x", 1.0)
    seconds, work, what, peak = cost_slices.run_slice("ape", paper_cfg, job, None, child=_starved_child)
    assert (seconds, work, peak) == (6.0, 2.0, 100.0) and "starved: 20% of a core" in what
    assert capsys.readouterr().out.count("had 20% of a core") == 2
    assert "starved" not in cost_slices.run_slice("ape", paper_cfg, job, None, child=_fed_child)[2]


def test_a_reference_slice_shared_by_several_cells_runs_once(planned, paper_cfg):
    """Many cells scale from one quick cell: with one ``reference_rates`` across calls, its slice
    runs once and every row uses its rate."""
    _, _, plan = planned
    shared = [p for p in plan if p.reference is not None]
    ref_job = shared[0].reference[1]
    pair = [p for p in shared if p.reference[1] == ref_job][:1] * 2
    ran = []

    def runner(paper, cfg, job, raw):
        ran.append(job.job)
        return 2.0, 1.0, "w", 1.0

    rates: dict = {}
    rows = [
        cost_slices.measure([p], paper_cfg, None, "c", "x", runner=runner, reference_rates=rates)[0]
        for p in pair
    ]
    assert ran.count(ref_job.job) == 1 and len(ran) == 3
    assert rows[0].reference_rate == rows[1].reference_rate == 2.0


def test_an_acp_cells_search_and_training_share_one_slice(planned, paper_cfg):
    """Both fit the cell's draw 0 at its budget: the second row reuses the first run."""
    _, _, plan = planned
    search = next(p for p in plan if p.paper == "acp" and p.bench[0] == "search")
    cell = search.bench[1]
    train_job = dataclasses.replace(search.job, rule="train_cell", job=cell, chain="")
    train = dataclasses.replace(search, job=train_job, bench=("train_cell", cell), reference=None)
    ran = []

    def runner(paper, cfg, job, raw):
        ran.append((job.rule, job.job))
        return 2.0, 1.0, "w", 1.0

    shared: dict = {}
    for p in (dataclasses.replace(search, reference=None), train):
        cost_slices.measure([p], paper_cfg, None, "c", "x", runner=runner, slices_run=shared)
    assert len(ran) == 1 and list(shared) == [("acp", cell)]


def _killed_child(paper, cfg, job, raw):
    """A slice's process killed as the out-of-memory killer kills it."""
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_slice_is_named_as_such(paper_cfg):
    job = next(j for j in costs.paper_jobs(paper_cfg, "acp", reference=True) if j.rule == "train_cell")
    with pytest.raises(DataError, match=r"its process was killed while running.*out-of-memory killer.*MB\)"):
        cost_slices.run_slice("acp", paper_cfg, job, None, child=_killed_child)


def test_a_failed_slice_leaves_its_job_and_its_parts_not_measured_until_one_succeeds(tmp_path, paper_cfg):
    """The failures table beside the slices: the job, its seeds and its segments are "not
    measured" on the slice's grid (check-cluster refuses them), other grids keep their estimates,
    and a successful slice of the job clears the failure."""
    table = tmp_path / "cost_slices.csv"
    cost_slices.write([], table)
    failures = tmp_path / "cost_slices_failed.csv"
    cell = "fig5/syn-random-6/lb-cdi/n10000"
    cost_slices.record_failure(failures, "train_cell", cell, "cpu x", "abc", "killed\n (12 MB)", "2026-01-01")
    sliced = costs.load_reference("paper", table)
    assert sliced.failed == {("train_cell", cell): "killed (12 MB) (cpu x, 2026-01-01)"}
    references = [*REFERENCES, sliced]
    after = costs.estimate_jobs(paper_cfg, references, ["acp"])
    failed = [e for e in after if e.job == cell or e.job.startswith(f"{cell}/")]
    assert failed and all(not e.measured for e in failed)
    assert all(
        e.reference == "its calibration slice failed: killed (12 MB) (cpu x, 2026-01-01)" for e in failed
    )
    before = {(e.rule, e.job): e for e in costs.estimate_jobs(paper_cfg, REFERENCES, ["acp"])}
    assert all(before[(e.rule, e.job)] == e for e in after if e not in failed)
    quick = costs.grid_config(paper_cfg, "quick")
    assert costs.estimate_jobs(quick, references, ["acp"]) == costs.estimate_jobs(quick, REFERENCES, ["acp"])
    segment = costs.Job("ape_train", "mdreviews_x_segment0", 1.0)
    whole = {("ape_train", "mdreviews_x"): "killed"}
    assert costs._failed_slice(segment, whole) == "killed"
    assert costs._failed_slice(dataclasses.replace(segment, job="mdreviews_xy"), whole) is None
    cost_slices.clear_failures(failures, [("train_cell", "other")])
    assert failures.is_file()
    cost_slices.clear_failures(failures, [("train_cell", cell)])
    assert not failures.exists() and costs.load_slice_failures(failures) == {}


class _Timings:
    """A paper's slices module whose runs time the given seconds, one after another."""

    def __init__(self, seconds):
        self.seconds = list(seconds)
        self.calls = 0

    def run(self, cfg, job, raw):
        self.calls += 1
        return self.seconds.pop(0), 2.0, "two epochs"


def test_a_short_slice_runs_again_in_its_process_and_keeps_its_fastest_run(paper_cfg, monkeypatch):
    """A reference cell's epoch of 0.1-0.2 s is timed by the fastest of SHORT_SLICE_RUNS runs; a
    slice timing at least SHORT_SLICE_SECONDS runs once."""
    job = costs.Job("train_cell", "x", 1.0)
    short = _Timings([0.17, 0.11, 0.12, 0.13, 0.10, 0.01])
    monkeypatch.setattr(cost_slices, "slicer", lambda paper: short)
    seconds, work, what, _, _ = cost_slices._child("acp", paper_cfg, job, None)
    assert short.calls == cost_slices.SHORT_SLICE_RUNS == 5
    assert (seconds, work) == (0.10, 2.0) and what == "two epochs; fastest of 5 runs (0.1-0.17 s)"
    long = _Timings([3.0, 0.5])
    monkeypatch.setattr(cost_slices, "slicer", lambda paper: long)
    assert cost_slices._child("acp", paper_cfg, job, None)[:3] == (3.0, 2.0, "two epochs")
    assert long.calls == 1


def test_retimed_references_rescale_every_row_that_scales_from_them(planned, paper_cfg):
    """A row's estimate is the former one x (rate / reference rate): re-timing the reference at
    twice its rows' rate halves them, once per reference, and says so in each row once."""
    _, _, plan = planned
    scaled = [p for p in plan if p.reference is not None][:2]
    ref_jobs = {p.reference[1].job for p in scaled}

    def slicing(ref_seconds):
        def runner(paper, cfg, job, raw):
            return (ref_seconds if job.job in ref_jobs else 6.0), 2.0, "w", 1.0

        return runner

    rows = [cost_slices.measure([p], paper_cfg, None, "c", "x", runner=slicing(1.0))[0] for p in scaled]
    ran = []

    def faster(paper, cfg, job, raw):
        ran.append(job.job)
        return 0.5, 2.0, "w", 1.0

    new = {
        (r.rule, r.job): r for r in cost_slices.retime_references(rows, paper_cfg, None, "abc", runner=faster)
    }
    assert sorted(ran) == sorted(ref_jobs)
    for old in rows:
        row = new[(old.rule, old.job)]
        assert row.reference_rate == 0.25 and row.seconds == pytest.approx(2 * old.seconds)
        assert "x12 the same slice of the reference" in row.what and row.what.count("re-timed") == 1
    again = cost_slices.retime_references(list(new.values()), paper_cfg, None, "abc", runner=faster)
    assert all(r.what.count("re-timed") == 1 for r in again)
    unknown = dataclasses.replace(rows[0], reference="quick: train_cell/nope")
    with pytest.raises(DataError, match="is no job a slice can run"):
        cost_slices.retime_references([unknown], paper_cfg, None, "abc", runner=faster)


def test_a_remeasured_reference_moves_its_rows_to_the_estimate_the_new_table_gives(tmp_path, paper_cfg):
    """``job-seconds --rebase-slices``: when the quick table is re-measured, a row that scales from
    one of its jobs takes the estimate the cost model gives from the new table (computed here by
    the cost model itself, from a copy of the table with that job twice as slow per unit of work)
    x its unchanged slice ratio; the rows of other references stay as they are."""
    from noisyor_bench.experiments import job_seconds

    rows = cost_slices.load(REPO / cost_slices.TABLE)
    old = job_seconds.load_rows(REPO / "config" / "job_seconds.csv")
    unsliced = {(e.rule, e.job): e for e in costs.estimate_jobs(paper_cfg, REFERENCES, ["acp"], whole=True)}

    def agrees(row):  # rows priced from today's table (their stored estimate is the model's)
        e = unsliced.get((row.rule, row.job))
        return (
            e is not None
            and e.reference == row.reference
            and math.isclose(e.cpu_seconds, row.estimate_seconds, rel_tol=2e-3)
        )

    reference = max(
        {r.reference for r in rows if r.reference.startswith("quick: ") and agrees(r)},
        key=lambda ref: sum(r.reference == ref for r in rows),
    )
    rule, _, job = reference.removeprefix("quick: ").partition("/")
    before = old[(rule, job)]
    new = dict(old)
    new[(rule, job)] = job_seconds.Row(before.seconds * 3, before.work * 1.5, before.cpu)  # 2x per unit
    table = tmp_path / "job_seconds.csv"
    job_seconds.write([(r, j, row) for (r, j), row in new.items()], table)
    refs = [r for r in costs.load_references(REPO, str(table)) if not r.source.endswith(cost_slices.TABLE)]
    remodelled = {(e.rule, e.job): e for e in costs.estimate_jobs(paper_cfg, refs, ["acp"], whole=True)}

    rebased, moved = cost_slices.rebase_references(rows, "quick", old, new, "2026-11-30 (test)")
    assert moved == {reference: (pytest.approx(2.0), sum(r.reference == reference for r in rows))}
    for was, now in zip(rows, rebased, strict=True):
        if was.reference != reference:
            assert now == was
            continue
        assert now.seconds == pytest.approx(2 * was.seconds) and now.rate == was.rate
        if agrees(was):
            assert now.estimate_seconds == pytest.approx(
                remodelled[(was.rule, was.job)].cpu_seconds, rel=2e-3
            )
        assert now.what.endswith("; reference re-measured 2026-11-30 (test)")
    again, _ = cost_slices.rebase_references(rebased, "quick", old, new, "2026-11-30 (test)")
    assert all(r.what.count("re-measured") <= 1 for r in again)


def test_calibrate_costs_lists_the_tables_references_to_retime(capsys):
    """``calibrate-costs --retime-references --dry-run``: each reference of the table once, with
    the number of rows that scale from it."""
    from noisyor_bench.cli import main

    rows = cost_slices.load(REPO / cost_slices.TABLE)
    counts: dict = {}
    for r in rows:
        if r.reference and math.isfinite(r.reference_rate):
            counts[r.reference] = counts.get(r.reference, 0) + 1
    snakefile = str(REPO / "Snakefile")
    assert main(["calibrate-costs", "--retime-references", "--dry-run", "--snakefile", snakefile]) == 0
    out = capsys.readouterr().out
    assert f"calibrate-costs: {len(counts)} reference slices of" in out
    for name, n in counts.items():
        assert f"  {name} ({n} rows)" in out
