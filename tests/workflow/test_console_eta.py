"""The console's ETA from the cost model, replayed over a finished run's Snakemake log with the
log's own clock; its heartbeat; and the machine calibration that scales every estimate."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import REPO

from noisyor_bench.experiments import calibration, costs
from noisyor_bench.experiments.config import load_config
from noisyor_bench.reporting import console, summary, work_plan

QUICK_RUN = REPO / "tests" / "data" / "quick_run_snakemake.log"
TABLE = REPO / "config" / "runtime_estimates.yaml"


def replayed(plan: work_plan.WorkPlan | None) -> tuple[console.Console, list[str], list[float]]:
    """The console after the whole quick run, what it printed, and each finished job's seconds
    (in the order of the lines that printed an ETA)."""
    shown: list[str] = []
    took: list[float] = []

    class Recording(console.Console):
        def _finished_line(self, k: int, n: int) -> None:
            job = self._pending
            if job is not None and job["rule"] != "all":
                took.append(self.clock() - float(job["started"]))
            super()._finished_line(k, n)

    con = console.replay(
        QUICK_RUN.read_text(encoding="utf-8").splitlines(),
        lambda clock: Recording({}, shown.append, clock=clock, plan=plan),
    )
    return con, shown, took


def eta_errors(con: console.Console, took: list[float]) -> list[tuple[float, float]]:
    """(share of the run's job seconds finished, predicted over true wall time - 1) per line."""
    total = con.etas[-1][0]  # the last job's line: the true finish
    work, done, out = sum(took), 0.0, []
    for (elapsed, eta), seconds in zip(con.etas, took, strict=True):
        done += seconds
        out.append((done / work, (elapsed + eta) / total - 1))
    return out


@pytest.fixture(scope="module")
def quick_plan() -> work_plan.WorkPlan:
    plan = work_plan.load_work_plan("quick", REPO)
    assert plan is not None
    return plan


def test_replay_eta_from_the_cost_model_tracks_the_true_finish(quick_plan, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the log's job logs are not here: no progress read from this checkout
    con, shown, took = replayed(quick_plan)
    assert con.cores == 2 and len(took) == 109 == len(con.etas)  # 110 steps, "all" printed no line
    errors = eta_errors(con, took)
    at = {q: next(e for share, e in errors if share >= q) for q in (0.10, 0.25, 0.50, 0.75)}
    print("ETA error (predicted / true wall time - 1) at 10/25/50/75% of the work:", at)
    # The run shared the machine with other work (its jobs got 20-70% of a core, so took 1.5-6x
    # the cost model's seconds, the most at first): from a quarter of the work on, the corrected
    # ETA is within 25% of the true finish.
    late = [e for share, e in errors if share >= 0.25]
    assert late and max(abs(e) for e in late) <= 0.25, at
    # the job-count ETA this replaces was further off over the same stretch
    counts, _, counts_took = replayed(None)
    by_count = [e for share, e in eta_errors(counts, counts_took) if share >= 0.25]
    print("job-count ETA, worst error from 25% of the work on:", max(abs(e) for e in by_count))
    assert max(abs(e) for e in by_count) > max(abs(e) for e in late)
    heartbeats = [line for line in shown if line.startswith("... running")]
    assert heartbeats and all(", ETA " in line for line in heartbeats)


def test_work_plan_gives_each_rule_its_cost_model_jobs(quick_plan):
    quick_plan.plan_rules(["train_cell", "train_cell_fig5", "search_chunk"])
    fig5 = quick_plan.pool("train_cell_fig5")
    assert fig5 and all(k[0] == "train_cell" and k[1].startswith("fig5/") for k in fig5)
    assert not any(k[1].startswith("fig5/") for k in quick_plan.pool("train_cell"))
    started = set(fig5[:-1])  # every job but one started: the mean is the last one's estimate
    assert quick_plan.rule_mean("train_cell_fig5", started) == pytest.approx(quick_plan.estimates[fig5[-1]])
    assert quick_plan.rule_mean("no_such_rule", set()) == quick_plan.default_seconds
    key = fig5[0]
    assert quick_plan.job("train_cell_fig5", key, set()) == quick_plan.estimates[key]


def test_heartbeat_names_the_running_jobs_and_their_progress(tmp_path: Path):
    log = tmp_path / "cell.log"
    log.write_text("12:00:00 INFO acp n10 s0: epoch 3/60, train NELBO 5.1\n12:00:05 INFO epoch 4/60\n")
    now = [0.0]
    shown: list[str] = []
    plan = work_plan.WorkPlan({("train_cell", "fig5/x"): 100.0})
    con = console.Console({}, shown.append, clock=lambda: now[0], plan=plan)
    for text in ["Provided cores: 2", "Job stats:", "train_cell_fig5  2", "total  2", ""]:
        con.line(text)
    now[0] = 5.0
    for text in [
        "rule train_cell_fig5:",
        f"    log: {log}",
        "    jobid: 7",
        "    benchmark: results/benchmarks/train_cell/fig5/x.tsv",
    ]:
        con.line(text)
    con.tick()  # sees the plan line printed
    now[0] = 60.0
    con.tick()
    assert not any(line.startswith("...") for line in shown)  # 55 s since the plan line
    now[0] = 66.0
    con.tick()
    beat = shown[-1]
    assert beat.startswith("... running 1: train_cell_fig5 1:01 (epoch 4/60)")
    # one job of 100 s running for 61 s, one of the rule's mean (100 s) not started: 39 + 100 s
    # on 2 cores, at least the longest (100 s); the ratio is still 1 (nothing finished)
    assert beat.endswith("elapsed 1:06, ETA 1:40")
    now[0] = 100.0
    con.tick()
    assert shown[-1] == beat  # the next one a minute after this one
    now[0] = 127.0
    con.tick()
    assert shown[-1] != beat and shown[-1].startswith("... running 1: train_cell_fig5 2:02")


def test_a_slower_machine_doubles_the_estimates_and_is_named(quick_plan):
    """An injected timer plays a machine twice as slow as the measuring CPU."""
    recorded = calibration.recorded(yaml.safe_load(TABLE.read_text()))
    assert recorded is not None
    clock = [0.0]

    def timer() -> float:  # each run of the workload takes twice the recorded seconds
        return clock[0]

    def workload() -> None:
        clock[0] += 2 * recorded.seconds

    here = calibration.measure(timer=timer, workload=workload, cpu="Intel(R) Xeon(R) CPU @ 2.50GHz")
    speed = calibration.Speed(here, recorded)
    assert speed.factor == pytest.approx(2.0)
    text = " ".join(speed.lines())
    assert here.cpu in text and f"differs from the measuring CPU ({recorded.cpu})" in text
    # every cost-model estimate doubles ...
    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "quick"})
    base = costs.estimate_jobs(cfg, costs.load_references(REPO), ["ape"])
    scaled = costs.on_this_machine(base, speed.factor)
    assert base and all(s.cpu_seconds == pytest.approx(2 * b.cpu_seconds) for b, s in zip(base, scaled))
    # ... and so do the console's per-job estimates and estimate-time's measured wall time
    slow = work_plan.load_work_plan("quick", REPO, speed.factor)
    assert slow is not None
    assert all(slow.estimates[k] == pytest.approx(2 * v) for k, v in quick_plan.estimates.items())
    table = {"grids": {"quick": {"paper": "acp", "wall_seconds": 600, "cores": 2, "how": "m"}}}
    out = summary.estimate_time(table, "quick", 2, ["acp"], speed=speed)
    assert "about 20 min" in out and here.cpu in out
    same = calibration.Speed(calibration.measure(timer=timer, workload=workload, cpu=recorded.cpu), recorded)
    assert same.factor == 1.0 and "times as measured" in " ".join(same.lines())


def test_stdin_lines_ticks_while_the_stream_is_silent():
    import time as clock

    ticks: list[int] = []

    class Counting:
        def tick(self) -> None:
            ticks.append(1)

    def slow() -> object:
        yield "a\n"
        clock.sleep(0.2)  # Snakemake silent while a job runs
        yield "b\n"

    lines = list(console.stdin_lines(slow(), Counting(), poll=0.02))  # type: ignore[arg-type]
    assert lines == ["a\n", "b\n"] and len(ticks) >= 3
