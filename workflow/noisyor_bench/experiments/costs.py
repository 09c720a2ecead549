"""The cost model of the workflow: expected seconds, memory and GPU use of every compute job of a
grid, scaled from measured runs.

Why: a cluster needs a wall-time and memory limit per job before it runs, and a user needs the
core-hours and the longest job before submitting a grid.  Both come from here, from one place:
the workflow's ``resources:`` (rules/common.smk), ``noisyor-bench estimate-time`` and
``noisyor-bench check-cluster``.

Method.  :data:`REFERENCE_TABLES` are the measured runs: ``config/job_seconds.csv`` (every job
of the quick grid) and ``reference/paper-synpattern`` (the paper's protocol on SYN-PATTERN, with
peak memory).  Each paper describes its compute jobs in its own cost module (its registry
entry's ``costs``, :attr:`~noisyor_bench.experiments.papers.Paper.costs`): ``jobs(cfg) -> list[Job]``
gives every compute job of the active grid of ``cfg`` with its benchmark name (``rule``, ``job``),
the measured rule it scales from, a matching ``key`` and its ``work`` (a size in the paper's own
unit: rows x epochs x fits, optimiser steps, Gibbs sweeps x topics x documents, ...);
``COMPUTE_RULES`` names its compute rules.  A job measured as itself at its work keeps that run
(a slice of another grid's job of the same key never replaces it); any other takes the measured
seconds of the reference job of its measured rule whose key matches best (then the nearest size,
then the nearest work per fit: a run at the same budgets wins) and scales them by
``work / reference work``; its memory is the larger of the paper's estimate and the reference's measured peak, scaled by the
data size.  The reference work is the one its table recorded with the measurement (the work of
the config that ran; a table without it: the work at today's config of the measured grid).  A
job is *measured* when it is that very job at the same work, *extrapolated* otherwise: raising a
cell's seeds scales its measured seconds and says so.  Estimates are seconds on the measuring
CPU (the table's ``cpu`` column); ``estimate-time`` scales them to this machine
(:mod:`noisyor_bench.experiments.calibration`), the workflow's limits do not.  No GPU timing
exists yet: GPU time is "not measured".

Rules that no paper lists as compute are short (tables, figures, HTML views, claims, data
steps): the workflow runs them as ``localrules``.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import importlib
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The grid of config/job_seconds.csv (the config key ``job_seconds``), measured for every job.
REFERENCE_GRID = "quick"
#: Wall-time limit / estimate of a first attempt (>= 1.5: check-cluster's bound).
SAFETY = 2.0
#: Minimum wall-time limit of a compute job, minutes (start-up, a slow shared file system).
MIN_RUNTIME_MIN = 10
#: Environment variable that lowers :data:`MIN_RUNTIME_MIN`, for tests only (the real-SLURM test
#: makes a job time out within a minute): a whole number of minutes below the floor.  The workflow
#: warns on every run where it is set and ``check-cluster`` fails (:func:`runtime_floor`).
RUNTIME_FLOOR_ENV = "NOISYOR_TEST_RUNTIME_FLOOR_MIN"
#: Memory of a compute job without a larger estimate, MB.
BASE_MEM_MB = 2000
#: A submitted job whose estimate is below this many seconds should not be its own cluster job.
SHORT_SECONDS = 60.0
#: Basis of a job without a measurement of its own family: no estimate, ``check-cluster`` refuses it.
UNMEASURED = "unmeasured"
#: Placeholder seconds of an unmeasured job, only for the limits of a local run (never summed).
UNMEASURED_SECONDS = 3600.0


@dataclass(frozen=True)
class Job:
    """One compute job of a grid, as a paper's cost module describes it."""

    rule: str
    """Benchmark name of its rule (``<results>/benchmarks/<rule>/<job>.tsv``)."""
    job: str
    """Its benchmark stem."""
    work: float
    """Its size in the paper's unit for ``measured_rule``; seconds scale with it."""
    key: tuple[str, ...] = ()
    """Matching key, most important first: a reference job sharing a longer prefix wins."""
    size: float = 1.0
    """Tie-break among equal keys: the reference of nearest log size wins."""
    measured_rule: str | None = None
    """The measured rule it scales from (default: ``rule``; a search chunk scales from ``search``)."""
    cuda: bool = False
    """It can use a GPU (declares ``gpu`` under the gpu and slurm profiles)."""
    mem_mb: int = BASE_MEM_MB
    cell: bool = True
    """A training cell or search chunk (counts towards the submissions bound of check-cluster)."""
    unit: float = 0.0
    """Work of one fit (0: ``work``): among references of the same key and size, the one run at
    the nearest budget per fit wins (a paper-protocol run over a quick one), whatever the fit count."""

    chain: str = ""
    """Jobs of one chain run stage after stage (a cell's search chunks, then its training);
    the wall time is at least the longest chain ('' : a chain of its own)."""
    stage: int = 0
    family: str = ""
    """The method family whose measurements may price it ('': its measured rule): a job is never
    priced from another family's time (a batch LDA from a Gibbs chain), only "not measured"."""

    @property
    def per_fit(self) -> float:
        return self.unit or self.work

    @property
    def method_family(self) -> str:
        return self.family or self.measured_rule or self.rule


@dataclass(frozen=True)
class Estimate:
    """Expected cost of one job."""

    paper: str
    rule: str
    job: str
    cpu_seconds: float
    basis: str
    """``measured``, ``extrapolated`` or ``unmeasured`` (no measured job of its rule)."""
    reference: str
    """The measured job it scales from (``<grid>: <rule>/<job>``), or ''."""
    cuda: bool
    mem_mb: int
    cell: bool
    chain: str = ""
    stage: int = 0
    gpu_seconds: float | None = None
    """None: not measured (no GPU timing exists yet)."""
    family: str = ""
    """The method family of its job (:attr:`Job.method_family`)."""

    @property
    def measured(self) -> bool:
        """It has a measurement of its own family (``measured`` or ``extrapolated``)."""
        return self.basis != UNMEASURED


def _cost_module(paper_id: str) -> Any | None:
    """The paper's cost module (its registry entry's ``costs``), or None (no compute jobs)."""
    from noisyor_bench.experiments import papers

    module = papers.get(paper_id).costs
    return None if module is None else importlib.import_module(module)


def grid_config(cfg: Mapping[str, Any], grid: str) -> dict[str, Any]:
    """``cfg`` with ``grid`` active (the grids' helpers read ``cfg['grid']``)."""
    return {**cfg, "grid": grid}


def paper_jobs(cfg: Mapping[str, Any], paper_id: str, reference: bool = False) -> list[Job]:
    """The compute jobs of one paper in the active grid of ``cfg`` ([] without a cost module);
    ``reference``: as the measured grid ran them (a module's ``reference_jobs``, if it has one)."""
    module = _cost_module(paper_id)
    if module is None:
        return []
    return list((getattr(module, "reference_jobs", module.jobs) if reference else module.jobs)(cfg))


def compute_rules(paper_ids: Iterable[str] | None = None) -> set[str]:
    """Benchmark names of the compute rules (every other rule is local)."""
    from noisyor_bench.experiments import papers

    ids = list(paper_ids) if paper_ids is not None else list(papers.ids())
    rules: set[str] = set()
    for pid in ids:
        module = _cost_module(pid)
        rules |= set(getattr(module, "COMPUTE_RULES", ())) if module else set()
    return rules


@dataclass(frozen=True)
class Measurement:
    """One measured job: wall seconds, its peak memory, the work it measured and the CPU it ran
    on, each where the run recorded it."""

    seconds: float
    rss_mb: float | None = None
    work: float | None = None
    """Its size in the cost model's unit at the config that ran (None: not recorded)."""
    cpu: str = ""
    slice: bool = False
    """A calibration slice (:mod:`~noisyor_bench.experiments.cost_slices`): a few units of a
    grid's job at its own size; it prices the jobs of its key at that size before any other."""


@dataclass(frozen=True)
class Reference:
    """A measured run: the grid it ran and its jobs' measurements."""

    grid: str
    jobs: Mapping[tuple[str, str], Measurement]
    source: str = ""
    #: jobs of ``grid`` whose calibration slice failed, with why (:data:`SLICE_FAILURES`)
    failed: Mapping[tuple[str, str], str] = dataclasses.field(default_factory=dict)


#: The measured runs the model scales from (grid, table relative to the repository): the quick
#: grid's job seconds (config key ``job_seconds``) and the paper-protocol SYN-PATTERN run, which
#: measured 100-draw searches and 5-seed cells at the paper's budgets (with peak memory).
#: The paper grid's calibration slices (:mod:`~noisyor_bench.experiments.cost_slices` writes it).
SLICE_TABLE = "benchmarks/results/cost_slices.csv"
#: Columns of :data:`SLICE_TABLE` the model reads (its other columns are the slices' provenance).
SLICE_COLUMNS = ("rule", "job", "seconds", "work", "cpu", "peak_mb", "rate")
#: The paper-grid jobs whose calibration slice failed (killed for memory, say), beside
#: :data:`SLICE_TABLE`: such a job is "not measured" until a slice of it succeeds, so that
#: ``check-cluster`` refuses it rather than trust an estimate from another size or dataset.
SLICE_FAILURES = "benchmarks/results/cost_slices_failed.csv"
FAILURE_COLUMNS = ("rule", "job", "date", "cpu", "commit", "reason")
REFERENCE_TABLES: tuple[tuple[str, str], ...] = (
    (REFERENCE_GRID, "config/job_seconds.csv"),
    ("paper-synpattern", "reference/paper-synpattern/tables/runtime_jobs.csv"),
    ("paper", SLICE_TABLE),
)
#: Basis of an estimate scaled from a calibration slice of a job of the same key and size.
SLICED = "sliced"


def load_reference(grid: str, path: str | Path) -> Reference:
    """A measured table: ``rule,job,seconds,work,cpu`` (config/job_seconds.csv) or a run's
    ``runtime_jobs.csv`` (``rule,job,s,...,max_rss_mb``)."""
    import csv

    from noisyor_bench.experiments import job_seconds
    from noisyor_bench.infra.errors import DataError

    with open(path, newline="") as fh:
        header = next(csv.reader(fh), [])
    if set(SLICE_COLUMNS) <= set(header):
        failures = Path(path).with_name(Path(SLICE_FAILURES).name)
        return Reference(grid, _slice_measurements(path), str(path), load_slice_failures(failures))
    if tuple(header) in (job_seconds.COLUMNS, job_seconds.SECONDS_ONLY):
        rows = job_seconds.load_rows(path)
        jobs = {k: Measurement(r.seconds, work=r.work, cpu=r.cpu) for k, r in rows.items()}
        return Reference(grid, jobs, str(path))
    if not {"rule", "job", "s"} <= set(header):
        raise DataError(f"{path}: expected the columns rule,job,seconds or rule,job,s; got {header}")
    jobs: dict[tuple[str, str], Measurement] = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            rss = row.get("max_rss_mb")
            try:
                jobs[(row["rule"], row["job"])] = Measurement(float(row["s"]), float(rss) if rss else None)
            except ValueError:
                raise DataError(f"{path}: job {row['rule']} {row['job']}: not a number") from None
    return Reference(grid, jobs, str(path))


def _slice_measurements(path: str | Path) -> dict[tuple[str, str], Measurement]:
    """The rows of a calibration-slice table as measurements (``slice``: at the job's own size)."""
    import csv

    from noisyor_bench.infra.errors import DataError

    out: dict[tuple[str, str], Measurement] = {}
    with open(path, newline="") as fh:
        for line, row in enumerate(csv.DictReader(fh), start=2):
            try:
                seconds, work, peak = float(row["seconds"]), float(row["work"]), float(row["peak_mb"])
            except ValueError:
                raise DataError(f"{path}, line {line}: seconds, work and peak_mb must be numbers") from None
            if not (math.isfinite(seconds) and seconds >= 0 and math.isfinite(work) and work > 0):
                raise DataError(
                    f"{path}, line {line}: seconds must be >= 0 and work > 0; got {seconds}, {work}"
                )
            out[(row["rule"], row["job"])] = Measurement(seconds, peak, work, row["cpu"], slice=True)
    return out


def slice_failure_rows(path: str | Path) -> dict[tuple[str, str], dict[str, str]]:
    """The rows of a failed-slice table by ``(rule, job)`` ({} when it does not exist)."""
    import csv

    from noisyor_bench.infra.errors import DataError

    path = Path(path)
    if not path.is_file():
        return {}
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != FAILURE_COLUMNS:
            raise DataError(
                f"{path}: expected the header {','.join(FAILURE_COLUMNS)}; got {reader.fieldnames}"
            )
        return {(r["rule"], r["job"]): r for r in reader}


def load_slice_failures(path: str | Path) -> dict[tuple[str, str], str]:
    """``{(rule, job): why, with the CPU and date}`` of a failed-slice table."""
    return {k: f"{r['reason']} ({r['cpu']}, {r['date']})" for k, r in slice_failure_rows(path).items()}


def load_references(
    root: str | Path, job_seconds_path: str | None = "config/job_seconds.csv"
) -> list[Reference]:
    """The measured runs of :data:`REFERENCE_TABLES` under ``root`` that exist; ``job_seconds_path``
    replaces the quick grid's table (the config key ``job_seconds``; None: none)."""
    refs = []
    for grid, rel in REFERENCE_TABLES:
        if grid == REFERENCE_GRID:
            if job_seconds_path is None:
                continue
            rel = job_seconds_path
        path = Path(root) / rel
        if path.is_file():
            refs.append(load_reference(grid, path))
    return refs


def checkout_root() -> Path | None:
    """The source checkout whose measured tables plan the grid (the one this package runs from,
    else the working directory); None outside a checkout."""
    for candidate in (Path(__file__).resolve().parents[3], Path.cwd()):
        if (candidate / "Snakefile").is_file() and (candidate / "config").is_dir():
            return candidate
    return None


@functools.lru_cache(maxsize=4)
def checkout_references(job_seconds_path: str | None = "config/job_seconds.csv") -> tuple[Reference, ...]:
    """:func:`load_references` of :func:`checkout_root`, loaded once per process: what the grid's
    cost-sized search chunks (``search.max_job_hours``) are planned from, whoever asks."""
    root = checkout_root()
    return tuple(load_references(root, job_seconds_path)) if root is not None else ()


_Candidate = tuple[Job, Measurement, str]


def measured_candidates(
    cfg: Mapping[str, Any],
    references: Sequence[Reference],
    reference_jobs: Callable[[Mapping[str, Any]], Iterable[Job]],
) -> list[_Candidate]:
    """(reference job, measurement, grid) of every measured job of ``reference_jobs(cfg of each
    reference grid)``, at the work its table recorded (the config that ran), where recorded."""
    out: list[_Candidate] = []
    for reference in references:
        for ref in reference_jobs(grid_config(cfg, reference.grid)):
            m = reference.jobs.get((ref.rule, ref.job))
            if m is None:
                continue
            if m.work is not None:
                ref = dataclasses.replace(ref, work=m.work)
            if ref.work > 0:
                out.append((ref, m, reference.grid))
    return out


def _match(job: Job, candidates: Sequence[_Candidate]) -> _Candidate | None:
    """The job itself measured at its work, else the reference job of the longest common key
    prefix, then the nearest size, then the nearest work per fit (a run at the same budgets beats
    one scaled from another budget)."""

    def score(item: _Candidate) -> tuple[int, int, int, int, float, float]:
        ref = item[0]
        itself = (ref.rule, ref.job) == (job.rule, job.job) and math.isclose(ref.work, job.work)
        whole = 0 if itself and not item[1].slice else 1  # a whole measured run beats any slice
        prefix = 0
        for a, b in zip(job.key, ref.key, strict=False):
            if a != b:
                break
            prefix += 1
        size = abs(math.log(max(job.size, 1e-9)) - math.log(max(ref.size, 1e-9)))
        # a slice at its size and budget first, a measured run next, a slice of another budget last
        # (another grid running the same cell keeps its own runs)
        own = 0 if _slice_of(job, ref, item[1]) else 2 if item[1].slice else 1
        foreign = int(own == 2)
        return (
            whole,
            foreign,
            -prefix,
            own,
            size,
            abs(math.log(max(job.per_fit, 1e-9) / max(ref.per_fit, 1e-9))),
        )

    return min(candidates, key=score) if candidates else None


def _slice_of(job: Job, ref: Job, m: Measurement) -> bool:
    """``m`` is a calibration slice of ``job``'s own cell: its size and its work per fit (a grid
    that runs the same cell at another budget keeps its own measured runs)."""
    return m.slice and math.isclose(job.size, ref.size) and math.isclose(job.per_fit, ref.per_fit)


def estimate_jobs(
    cfg: Mapping[str, Any], references: Sequence[Reference], paper_ids: Iterable[str], whole: bool = False
) -> list[Estimate]:
    """Estimates of every compute job of the selected papers in the active grid of ``cfg``
    (``whole``: of the jobs as measured runs and slices record them, each training or search
    one job: :func:`paper_jobs` with ``reference``)."""
    out: list[Estimate] = []
    for pid in paper_ids:
        if _cost_module(pid) is not None:
            measured = functools.partial(paper_jobs, paper_id=pid, reference=True)
            out += _estimates(pid, cfg, references, measured, paper_jobs(cfg, pid, reference=whole))
    return out


def job_seconds(
    pid: str,
    cfg: Mapping[str, Any],
    references: Sequence[Reference],
    reference_jobs: Callable[[Mapping[str, Any]], Iterable[Job]],
    rule: str | None = None,
) -> dict[str, float]:
    """One-core seconds of each job of ``reference_jobs(cfg)`` (of ``rule``, when given), priced
    from the measured jobs of ``reference_jobs`` in each reference grid: how a paper sizes the
    jobs it splits (search chunks, per-seed trainings, training segments) from its whole jobs,
    before the split jobs exist (no recursion through :func:`paper_jobs`)."""
    jobs = [j for j in reference_jobs(cfg) if rule is None or j.rule == rule]
    return {e.job: e.cpu_seconds for e in _estimates(pid, cfg, references, reference_jobs, jobs)}


def estimate_job(
    pid: str, job: Job, candidates: Sequence[_Candidate], references: Sequence[Reference]
) -> Estimate:
    """The estimate of one job of paper ``pid`` from ``candidates`` (reference job, measurement,
    grid) of its measured rule: what :func:`estimate_jobs` does per job."""
    return _estimate(pid, job, candidates, references)


def _estimates(
    pid: str,
    cfg: Mapping[str, Any],
    references: Sequence[Reference],
    reference_jobs: Callable[[Mapping[str, Any]], Iterable[Job]],
    jobs: Iterable[Job],
) -> list[Estimate]:
    """The estimates of ``jobs``, each from the measured jobs of its measured rule."""
    candidates: dict[str, list[_Candidate]] = {}
    for ref, m, grid in measured_candidates(cfg, references, reference_jobs):
        candidates.setdefault(ref.measured_rule or ref.rule, []).append((ref, m, grid))
    failed = {k: why for r in references if r.grid == cfg.get("grid") for k, why in r.failed.items()}
    out = []
    for job in jobs:
        estimate = _estimate(pid, job, candidates.get(job.measured_rule or job.rule, []), references)
        why = _failed_slice(job, failed)
        if why is not None and estimate.basis not in (SLICED, "measured"):
            estimate = dataclasses.replace(
                estimate,
                cpu_seconds=UNMEASURED_SECONDS,
                basis=UNMEASURED,
                reference=f"its calibration slice failed: {why}",
            )
        out.append(estimate)
    return out


def _failed_slice(job: Job, failed: Mapping[tuple[str, str], str]) -> str | None:
    """Why the slice of ``job``, or of the whole job it is a part of (a seed ``<job>/seed<s>``,
    a segment ``<job>_segment<k>``), failed; None when none did."""
    rule = job.measured_rule or job.rule
    for (failed_rule, name), why in failed.items():
        if failed_rule == rule and (
            job.job == name or job.job.startswith(f"{name}/") or job.job.startswith(f"{name}_segment")
        ):
            return why
    return None


def _estimate(
    pid: str, job: Job, candidates: Sequence[_Candidate], references: Sequence[Reference]
) -> Estimate:
    family = job.method_family
    best = _match(job, [c for c in candidates if c[0].method_family == family])
    if best is None:  # no measured job of its own family: not measured, never another family's time
        rule = job.measured_rule or job.rule
        return Estimate(
            pid,
            job.rule,
            job.job,
            UNMEASURED_SECONDS,
            UNMEASURED,
            f"no measured {rule} job of family {family}",
            job.cuda,
            job.mem_mb,
            job.cell,
            job.chain,
            job.stage,
            family=family,
        )
    ref, m, grid = best
    seconds = m.seconds * job.work / ref.work
    same = (ref.rule, ref.job) == (job.rule, job.job) and math.isclose(ref.work, job.work)
    sliced = _slice_of(job, ref, m) and ref.key == job.key
    mem = job.mem_mb
    if m.rss_mb is not None:  # measured peak memory, scaled by the data size
        mem = max(mem, int(math.ceil(m.rss_mb * max(1.0, job.size / max(ref.size, 1e-9)))))
    return Estimate(
        pid,
        job.rule,
        job.job,
        float(seconds),
        SLICED if sliced else "measured" if same and not m.slice else "extrapolated",
        f"{grid}{' slice' if m.slice else ''}: {ref.rule}/{ref.job}",
        job.cuda,
        mem,
        job.cell,
        job.chain,
        job.stage,
        family=family,
    )


def on_this_machine(estimates: Iterable[Estimate], factor: float) -> list[Estimate]:
    """The estimates scaled by ``factor`` (this machine's seconds per measuring-CPU second)."""
    return [dataclasses.replace(e, cpu_seconds=e.cpu_seconds * factor) for e in estimates]


def by_job(estimates: Iterable[Estimate]) -> dict[tuple[str, str], Estimate]:
    """``{(rule, job): estimate}``: the workflow's resource callables look jobs up here."""
    return {(e.rule, e.job): e for e in estimates}


def _attempt(attempt: int) -> int:
    """A retry's attempt number (1 for the first submission); anything below 1 is a first attempt."""
    return max(int(attempt), 1)


def runtime_minutes(seconds: float, attempt: int = 1, floor: int = MIN_RUNTIME_MIN) -> int:
    """Wall-time limit in minutes: attempt x max(floor, SAFETY x the estimate).

    The floor applies to the first attempt's limit before the attempt multiplies it, so a retry
    after a time-out always gets at least twice the limit that ran out (a floored short job too)."""
    return _attempt(attempt) * max(floor, math.ceil(SAFETY * seconds / 60.0))


def runtime_floor(environ: Mapping[str, str] | None = None) -> int:
    """The wall-time floor of compute jobs in minutes: :data:`MIN_RUNTIME_MIN`, or the lower one
    of :data:`RUNTIME_FLOOR_ENV` (tests only).  ConfigError for anything but a whole number of
    minutes from 1 to ``MIN_RUNTIME_MIN - 1``."""
    from noisyor_bench.infra.errors import ConfigError

    value = (os.environ if environ is None else environ).get(RUNTIME_FLOOR_ENV, "").strip()
    if not value:
        return MIN_RUNTIME_MIN
    if not value.isdigit() or not 1 <= int(value) < MIN_RUNTIME_MIN:
        raise ConfigError(
            f"{RUNTIME_FLOOR_ENV}={value!r}: this test setting lowers the {MIN_RUNTIME_MIN}-minute "
            f"wall-time floor of compute jobs; expected a whole number of minutes from 1 to "
            f"{MIN_RUNTIME_MIN - 1}, or unset it"
        )
    return int(value)


def runtime_floor_message(floor: int) -> str | None:
    """What a lowered floor means for a run (None at :data:`MIN_RUNTIME_MIN`)."""
    if floor == MIN_RUNTIME_MIN:
        return None
    return (
        f"{RUNTIME_FLOOR_ENV}={floor}: every compute job's wall-time floor is {floor} min instead of "
        f"{MIN_RUNTIME_MIN} (a test setting: a short job may be killed at its limit); unset it for real runs"
    )


def mem_mb(estimate_mb: int, attempt: int = 1) -> int:
    """Memory limit in MB: attempt x 1.5 x the estimate (at least BASE_MEM_MB); rounded up before
    the attempt multiplies it, so a retry after an out-of-memory kill gets at least twice as much."""
    return _attempt(attempt) * int(math.ceil(1.5 * max(estimate_mb, BASE_MEM_MB)))


def list_schedule(seconds: Sequence[float], slots: int) -> float:
    """Makespan of the jobs on ``slots`` slots, longest first onto the least loaded slot (LPT)."""
    loads = [0.0] * max(int(slots), 1)
    heapq.heapify(loads)
    for s in sorted(seconds, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + s)
    return max(loads) if loads else 0.0


def critical_path(estimates: Sequence[Estimate]) -> float:
    """The longest chain: per chain, the sum over its stages of the stage's longest job."""
    stages: dict[tuple[str, int], float] = {}
    for i, e in enumerate(estimates):
        key = (e.chain or f"#{i}", e.stage)
        stages[key] = max(stages.get(key, 0.0), e.cpu_seconds)
    chains: dict[str, float] = {}
    for (chain, _), seconds in stages.items():
        chains[chain] = chains.get(chain, 0.0) + seconds
    return max(chains.values(), default=0.0)


def wall_seconds(estimates: Sequence[Estimate], slots: int) -> float:
    """Wall time on ``slots`` slots: list scheduling of the jobs, at least the longest chain."""
    return max(list_schedule([e.cpu_seconds for e in estimates], slots), critical_path(estimates))


def summary_rows(estimates: Sequence[Estimate], slots: int) -> list[dict[str, Any]]:
    """Per paper and in total: jobs, core-hours, GPU-hours, extrapolated share, longest job, wall,
    over the measured families; the jobs not measured (no time of their family) counted apart."""
    from noisyor_bench.experiments import papers

    rows = []
    groups = [(p, [e for e in estimates if e.paper == p]) for p in dict.fromkeys(e.paper for e in estimates)]
    groups.append(("total", list(estimates)))
    for pid, every in groups:
        if not every:
            continue
        ests = [e for e in every if e.measured]
        missing = [e for e in every if not e.measured]
        extrapolated = sum(e.cpu_seconds for e in ests if e.basis not in ("measured", SLICED))
        total = sum(e.cpu_seconds for e in ests)
        rows.append(
            dict(
                paper=pid if pid == "total" else papers.get(pid).name,
                jobs=len(every),
                core_hours=total / 3600,
                gpu_jobs=sum(e.cuda for e in every),
                extrapolated=extrapolated / total if total else 0.0,
                own_size=sum(e.basis in ("measured", SLICED) for e in every) / len(every),
                longest=max(ests, key=lambda e: e.cpu_seconds) if ests else None,
                wall_seconds=wall_seconds(ests, slots),
                unmeasured=len(missing),
                unmeasured_families=sorted({f"{e.rule} {e.family}" for e in missing}),
            )
        )
    return rows


def not_measured_text(row: Mapping[str, Any]) -> str:
    """A summary row's jobs without a measurement of their family ('-' : none)."""
    if not row["unmeasured"]:
        return "-"
    return f"{row['unmeasured']} ({', '.join(row['unmeasured_families'])})"


def share_text(fraction: float) -> str:
    """A percentage that never rounds a remainder away (99.96% is not 100%)."""
    pct = 100 * fraction
    return (
        f"{pct:.0f}%"
        if pct in (0.0, 100.0) or 1 <= pct <= 99
        else f"{pct:.2g}%"
        if pct < 1
        else f"{min(pct, 99.9):.1f}%"
    )


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:,.1f} h" if seconds >= 360 else f"{seconds / 60:,.1f} min"


def format_table(
    estimates: Sequence[Estimate], grid: str, slots: int, gpu: bool = False, unit: str = "slot"
) -> str:
    """The ``estimate-time`` table of the cost model (Markdown), after a one-line total."""
    total = wall_seconds(estimates, slots)
    plural = f"{unit}{'s' if slots != 1 else ''}"
    lines = [
        f"Time estimate ({grid} grid, {slots} {plural}): about {_hours(total)} for the compute jobs "
        "(cost model; the local short rules add minutes)",
        "",
        f"Cost model ({grid} grid, {slots} {plural}, one CPU core per job; "
        f"scaled from the measured runs {', '.join(f'{g} ({p})' for g, p in REFERENCE_TABLES)}):",
        "",
        "| paper | jobs | at own size | core-hours | GPU-hours | extrapolated | longest job (1 core) | wall time "
        "| not measured |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary_rows(estimates, slots):
        gpu_h = f"not measured ({r['gpu_jobs']} CUDA jobs)" if r["gpu_jobs"] else "-"
        lo = r["longest"]
        longest = f"{_hours(lo.cpu_seconds)}: {lo.rule} {lo.job}" if lo else "-"
        lines.append(
            f"| {r['paper']} | {r['jobs']} | {share_text(r['own_size'])} | {r['core_hours']:,.1f} | {gpu_h} "
            f"| {share_text(r['extrapolated'])} "
            f"| {longest} | {_hours(r['wall_seconds'])} | {not_measured_text(r)} |"
        )
    lines.append("")
    lines.append(
        "Wall time: list scheduling (longest first) of the jobs' estimates on the slots, at least the "
        "longest chain of dependent jobs (a cell's search chunks, then its training), without the local "
        "short rules. 'at own size': share of the jobs priced from a measurement of themselves or a "
        "calibration slice at their own size. 'extrapolated': share of the core-hours scaled from a "
        "different job or size "
        "(rows x epochs x draws x seeds, sweeps x topics, ...), not measured as such; a job priced from a "
        "calibration slice at its own size (its key and size) is not. 'not measured': "
        "jobs without a measured job of their own method family, left out of the core-hours and wall "
        "time (never priced from another family's time); `noisyor-bench calibrate-costs` measures them "
        "and `check-cluster` refuses them until then."
    )
    if gpu:
        lines.append(
            "GPU: no GPU timing is measured yet; the CUDA jobs' GPU time is not estimated (measure one "
            "cell first: docs/cluster.md)."
        )
    return "\n".join(lines)


__all__ = [
    "Estimate",
    "Job",
    "Measurement",
    "REFERENCE_TABLES",
    "Reference",
    "REFERENCE_GRID",
    "SAFETY",
    "SLICE_COLUMNS",
    "SLICE_FAILURES",
    "SLICE_TABLE",
    "SLICED",
    "UNMEASURED",
    "UNMEASURED_SECONDS",
    "by_job",
    "checkout_references",
    "checkout_root",
    "compute_rules",
    "critical_path",
    "estimate_job",
    "estimate_jobs",
    "job_seconds",
    "format_table",
    "grid_config",
    "list_schedule",
    "load_reference",
    "load_references",
    "load_slice_failures",
    "slice_failure_rows",
    "measured_candidates",
    "mem_mb",
    "not_measured_text",
    "on_this_machine",
    "paper_jobs",
    "runtime_floor",
    "runtime_floor_message",
    "runtime_minutes",
    "summary_rows",
    "wall_seconds",
]
