"""CLI: ``check-cluster``, the pre-submission check of a cluster profile.

Why: a job killed at its wall-time limit after hours, a GPU job queued without a GPU, or a
thousand second-long sbatch submissions are found only after submitting.  This command runs
the Snakemake dry run a user would run (``snakemake -n --workflow-profile <profile> --config
...``), reads every job's resources from it and compares them with the cost model
(:mod:`noisyor_bench.experiments.costs`).  Where the cluster is known (``sinfo``, or its captured
output in ``--sinfo-file``), each job's limits are also compared with its partition's ``MaxTime``,
GPUs and node memory (:mod:`noisyor_bench.infra.slurm_partitions`).  A CPU-only cluster
(``--cpu-only``, or a cluster profile with the grid's ``gpus_per_job: 0``) runs the CUDA-capable
jobs on CPU cores, so they need no GPU.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noisyor_bench.infra.slurm_partitions import SINFO_COMMAND, read_sinfo

#: A job's wall-time limit must be at least this multiple of its estimate.
MIN_LIMIT_FACTOR = 1.5
#: The grid at the papers' scale: a rule whose jobs take under a minute even there should be local.
FULL_SCALE_GRID = "paper"
#: Submissions allowed beyond the training cells and search chunks.
SUBMISSION_SLACK = 20
_RULE = re.compile(r"^(?:local)?rule (\S+):$")


@dataclass
class DryJob:
    """One job of a dry run: its rule, benchmark (rule, stem) and resources."""

    rule: str
    bench: tuple[str, str] | None = None
    resources: dict[str, str] = field(default_factory=dict)


def parse_dry_run(text: str, results_dir: str) -> list[DryJob]:
    """The jobs of ``snakemake -n`` output (rule blocks with ``benchmark:`` and ``resources:`` lines)."""
    jobs: list[DryJob] = []
    prefix = f"{results_dir.rstrip('/')}/benchmarks/"
    for line in text.splitlines():
        match = _RULE.match(line)
        if match:
            jobs.append(DryJob(match.group(1)))
            continue
        if not jobs:
            continue
        stripped = line.strip()
        if stripped.startswith("benchmark: ") and stripped[len("benchmark: ") :].startswith(prefix):
            rest = stripped[len("benchmark: ") + len(prefix) :]
            rule, _, stem = rest.partition("/")
            jobs[-1].bench = (rule, stem[: -len(".tsv")] if stem.endswith(".tsv") else stem)
        elif stripped.startswith("resources: "):
            jobs[-1].resources = dict(re.findall(r"(\w+)=([^,]+)", stripped[len("resources: ") :]))
    return jobs


def _profile_counts_gpus(profile: Path) -> bool:
    """A profile under which CUDA-capable jobs must hold a GPU: a cluster executor or counted GPUs."""
    import yaml

    data = yaml.safe_load((profile / "config.yaml").read_text(encoding="utf-8")) or {}
    return bool(
        data.get("executor") not in (None, "local", "dryrun") or (data.get("resources") or {}).get("gpu")
    )


def _overrides(items: list[str]) -> dict[str, Any]:
    import yaml

    from noisyor_bench.infra.errors import ConfigError

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--config: expected KEY=VALUE, got {item!r}")
        out[key] = yaml.safe_load(value)
    return out


def _dry_run(root: Path, profile: Path, items: list[str], results_dir: str) -> str:
    from noisyor_bench.infra.errors import DataError

    cmd = [sys.executable, "-m", "snakemake", "-n", "--workflow-profile", str(profile), "--config", *items]
    cmd.append(f"results_dir={results_dir}")
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise DataError(f"the dry run failed (exit {proc.returncode}): {tail}")
    return proc.stdout + proc.stderr


def _slowest(estimates: dict[tuple[str, str], Any], rule: str) -> Any:
    """A job the cost model does not list takes its rule's slowest estimate (as rules/common.smk does)."""
    same = [e for (r, _), e in estimates.items() if r == rule]
    return max(same, key=lambda e: e.cpu_seconds) if same else None


def requests_gpu(job: DryJob) -> bool:
    """The job asks SLURM for a GPU: ``gpu`` >= 1 (``--gpus``) or a GPU ``gres`` (``--gres=gpu:1``)."""
    gres = job.resources.get("gres", "")
    return int(float(job.resources.get("gpu", "0") or 0)) >= 1 or bool(re.search(r"(^|,)\s*gpu\b", gres))


def check(
    jobs: list[DryJob],
    estimates: dict[tuple[str, str], Any],
    compute: set[str],
    gpus: bool,
    cpu_only: bool = False,
    full_scale: dict[str, float] | None = None,
) -> tuple[list[str], list[tuple[DryJob, Any]]]:
    """Problems of the dry run's jobs, and the submitted jobs with their estimates.  ``gpus``: the
    profile holds GPUs for CUDA-capable jobs; ``cpu_only``: the cluster has none, so a job asking
    for one is a problem and a CUDA-capable job without one is not.  ``full_scale``: each rule's
    longest job at the papers' scale; a rule is reported as short only when its jobs are short
    there too (a small grid's jobs are short because the grid is small, not the rule)."""
    problems: list[str] = []
    submitted: list[tuple[DryJob, Any]] = []
    for job in jobs:
        if job.bench is None or job.bench[0] not in compute:
            continue  # a local rule (rules/common.smk, mark_local_rules)
        est = estimates.get(job.bench) or _slowest(estimates, job.bench[0])
        if est is None:
            problems.append(f"{job.rule} {job.bench[1]}: no cost estimate (not a job of the cost model)")
            continue
        submitted.append((job, est))
        if not est.measured:  # its limit would be a guess: never submitted on another family's time
            problems.append(
                f"{job.rule} {job.bench[1]}: not measured ({est.reference}); measure it first: "
                "noisyor-bench calibrate-costs"
            )
            continue
        limit = float(job.resources.get("runtime", "0") or 0)
        if limit * 60 < MIN_LIMIT_FACTOR * est.cpu_seconds:
            problems.append(
                f"{job.rule} {job.bench[1]}: runtime limit {limit:.0f} min < {MIN_LIMIT_FACTOR}x its estimate "
                f"({est.cpu_seconds / 60:.0f} min)"
            )
        if cpu_only and requests_gpu(job):
            problems.append(f"{job.rule} {job.bench[1]}: requests a GPU on a CPU-only cluster (--cpu-only)")
        elif gpus and not cpu_only and est.cuda and not requests_gpu(job):
            problems.append(f"{job.rule} {job.bench[1]}: CUDA-capable but requests no GPU")
    from noisyor_bench.experiments.costs import SHORT_SECONDS

    longest: dict[str, float] = {}
    for _job, est in (item for item in submitted if item[1].measured):
        longest[est.rule] = max(
            longest.get(est.rule, 0.0), est.cpu_seconds, (full_scale or {}).get(est.rule, 0.0)
        )
    for rule, seconds in sorted(longest.items()):
        if seconds < SHORT_SECONDS:
            problems.append(
                f"rule {rule}: every job takes < {SHORT_SECONDS:.0f} s but is submitted as its own cluster job"
            )
    return problems, submitted


def _hours(minutes: float) -> str:
    return f"{minutes / 60:.1f} h"


def check_partitions(
    submitted: list[DryJob], partitions: dict[str, Any], max_names: int = 3
) -> tuple[list[str], list[str]]:
    """Problems and notes of the submitted jobs against their partitions (``slurm_partition``,
    else the default one): a time limit above ``MaxTime`` (SLURM leaves the job PENDING with
    PartitionTimeLimit), a GPU job where no node has a GPU, more memory than any node has.  Notes:
    jobs whose retry (twice the limits) would exceed the partition, up to ``max_names`` named."""
    problems: list[str] = []
    retry_time: list[str] = []
    retry_mem: list[str] = []
    default = next((p for p in partitions.values() if p.default), None)
    for job in submitted:
        name = f"{job.rule} {job.bench[1] if job.bench else ''}"
        wanted = job.resources.get("slurm_partition", "").strip().strip("'\"")
        part = partitions.get(wanted) if wanted else default
        if part is None:
            problems.append(
                f"{name}: partition {wanted!r} is not in sinfo"
                if wanted
                else f"{name}: names no partition (slurm_partition) and sinfo shows no default partition"
            )
            continue
        limit = float(job.resources.get("runtime", "0") or 0)
        if part.max_minutes is not None and limit > part.max_minutes:
            problems.append(
                f"{name}: runtime limit {_hours(limit)} > partition {part.name} MaxTime "
                f"{_hours(part.max_minutes)} (SLURM leaves it PENDING (PartitionTimeLimit))"
            )
        elif part.max_minutes is not None and 2 * limit > part.max_minutes:
            retry_time.append(name)
        gpu = requests_gpu(job)
        if gpu and not part.has_gpus:
            problems.append(f"{name}: requests a GPU but partition {part.name} has no GPU nodes (GRES)")
            continue
        mem = float(job.resources.get("mem_mb", "0") or 0)
        largest = part.largest_memory(gpu)
        if mem > largest:
            problems.append(
                f"{name}: mem_mb {mem:.0f} > the largest {'GPU ' if gpu else ''}node of partition "
                f"{part.name} ({largest} MB)"
            )
        elif 2 * mem > largest:
            retry_mem.append(name)
    notes = [
        f"{len(names)} job(s) whose retry ({what} doubled) would exceed their partition, so a retry "
        f"after a {kill} would not run: {', '.join(names[:max_names])}"
        f"{f' ... and {len(names) - max_names} more' if len(names) > max_names else ''}"
        for names, what, kill in (
            (retry_time, "time limit", "TIMEOUT"),
            (retry_mem, "memory", "memory kill"),
        )
        if names
    ]
    return problems, notes


def _grid_gpus_per_job(cfg: dict[str, Any]) -> int:
    """The active grid's ``gpus_per_job`` (0 when the grid does not set it)."""
    return int((cfg.get("grids", {}).get(cfg.get("grid"), {}) or {}).get("gpus_per_job", 0) or 0)


def _longest_per_rule(
    costs: Any, cfg: dict[str, Any], references: Any, selected: list[str]
) -> dict[str, float]:
    """Each compute rule's longest estimate in :data:`FULL_SCALE_GRID` ({} without that grid)."""
    if FULL_SCALE_GRID not in cfg.get("grids", {}):
        return {}
    longest: dict[str, float] = {}
    for est in costs.estimate_jobs(costs.grid_config(cfg, FULL_SCALE_GRID), references, selected):
        if not est.measured:
            continue
        longest[est.rule] = max(longest.get(est.rule, 0.0), est.cpu_seconds)
    return longest


def _gpu_mode(cpu_only: bool, profile: Path, cfg: dict[str, Any]) -> str:
    """``cpu-only`` (--cpu-only: no job may ask a GPU), ``grid-cpu`` (a cluster profile and the
    grid's gpus_per_job 0: CUDA-capable jobs need no GPU, one asked by ``gres`` is allowed) or
    ``gpu`` (CUDA-capable jobs must hold one where the profile provides GPUs)."""
    import yaml

    if cpu_only:
        return "cpu-only"
    data = yaml.safe_load((profile / "config.yaml").read_text(encoding="utf-8")) or {}
    cluster = data.get("executor") not in (None, "local", "dryrun")
    counted = bool((data.get("resources") or {}).get("gpu"))
    return "grid-cpu" if cluster and not counted and _grid_gpus_per_job(cfg) == 0 else "gpu"


def cmd_check_cluster(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments import costs, papers
    from noisyor_bench.experiments.config import load_config
    from noisyor_bench.experiments.costs import SHORT_SECONDS
    from noisyor_bench.infra.errors import ConfigError

    root = Path(args.snakefile).resolve().parent
    profile = Path(args.profile).resolve()
    if not (profile / "config.yaml").is_file():
        raise ConfigError(f"--profile {args.profile}: no config.yaml in it")
    items = [i for i in args.config if not i.startswith("results_dir=")]
    # A floor lowered for tests (NOISYOR_TEST_RUNTIME_FLOOR_MIN) is never fit for submitting.
    floor = costs.runtime_floor_message(costs.runtime_floor())
    cfg = load_config(root / "config" / "config.yaml", _overrides(items))
    selected = [p.id for p in papers.selected(cfg["papers"])]
    references = costs.load_references(root, cfg.get("job_seconds"))
    estimates = costs.estimate_jobs(cfg, references, selected)
    with tempfile.TemporaryDirectory(prefix="noisyor-check-cluster-") as tmp:
        jobs = parse_dry_run(_dry_run(root, profile, items, tmp), tmp)
    mode = _gpu_mode(args.cpu_only, profile, cfg)
    problems, submitted = check(
        jobs,
        costs.by_job(estimates),
        costs.compute_rules(),
        mode == "gpu" and _profile_counts_gpus(profile),
        cpu_only=mode == "cpu-only",
        full_scale=_longest_per_rule(costs, cfg, references, selected),
    )
    if floor:
        problems.insert(0, floor)
    if args.no_sinfo:
        partitions, source = None, "--no-sinfo: partition limits (MaxTime, GPUs, memory) not checked"
    else:
        partitions, source = read_sinfo(args.sinfo_file)
    notes: list[str] = []
    if partitions is not None:
        part_problems, notes = check_partitions(
            [job for job, _ in submitted], partitions, max_names=args.max_problems
        )
        problems += part_problems
    bound = sum(e.cell for e in estimates) + SUBMISSION_SLACK
    if len(submitted) > bound:
        problems.append(
            f"{len(submitted)} submissions > training cells + search chunks + {SUBMISSION_SLACK} = {bound}"
        )
    print(
        f"check-cluster: {len(jobs)} jobs, {len(submitted)} cluster submissions (bound {bound}), "
        f"{len(jobs) - len(submitted)} local"
    )
    if mode != "gpu":
        cuda = sum(1 for job, est in submitted if est.cuda and not requests_gpu(job))
        why = "--cpu-only" if mode == "cpu-only" else "the grid's gpus_per_job is 0"
        print(f"CPU-only mode ({why}): {cuda} CUDA-capable jobs run on CPU cores")
    print(
        source
        if partitions is None
        else f"partitions ({source}): "
        + ", ".join(
            f"{p.name}{'*' if p.default else ''} (MaxTime "
            f"{'unlimited' if p.max_minutes is None else _hours(p.max_minutes)}, "
            f"{'GPUs' if p.has_gpus else 'no GPUs'}, {p.largest_memory()} MB)"
            for p in partitions.values()
        )
    )
    for note in notes:
        print(f"note: {note}")
    short = Counter(est.rule for _, est in submitted if est.measured and est.cpu_seconds < SHORT_SECONDS)
    if short:  # a warning: chunk sizes are the grid's choice (search.max_job_hours, draws_per_job)
        hint = (
            "; search.max_job_hours instead of search.draws_per_job sizes each search by its cost"
            if short.get("search_chunk")
            else ""
        )
        print(
            f"note: {sum(short.values())} submitted jobs are estimated under {SHORT_SECONDS:.0f} s "
            f"({', '.join(f'{r} {n}' for r, n in short.most_common())}){hint}"
        )
    print("five longest jobs (estimate on one CPU core -> runtime limit):")
    for job, est in sorted((x for x in submitted if x[1].measured), key=lambda x: -x[1].cpu_seconds)[:5]:
        print(
            f"  {job.rule} {job.bench[1] if job.bench else ''}: {est.cpu_seconds / 3600:.1f} h -> "
            f"{float(job.resources.get('runtime', 0)) / 60:.1f} h, gpu={job.resources.get('gpu', '0')}, "
            f"mem_mb={job.resources.get('mem_mb', '?')} ({est.basis})"
        )
    if problems:
        print(f"check-cluster: FAILED, {len(problems)} problem(s):")
        kinds: dict[str, list[str]] = {}
        for p in problems:  # each kind of problem listed, up to --max-problems of each
            kinds.setdefault(re.sub(r"^\S+ \S+: |\d+", "", p)[:30], []).append(p)
        for same in kinds.values():
            for p in same[: args.max_problems]:
                print(f"  {p}")
            if len(same) > args.max_problems:
                print(f"  ... and {len(same) - args.max_problems} more like it")
        return 1
    print("check-cluster: OK")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check-cluster",
        help="pre-submission check: runtime limits >= 1.5x the cost model, GPUs for CUDA jobs, no short "
        "cluster jobs, limits within the partitions' MaxTime, GPUs and memory (sinfo)",
    )
    p.add_argument("--profile", required=True, help="the workflow profile, e.g. profiles/slurm")
    p.add_argument("--config", nargs="*", default=[], help="snakemake --config items, e.g. grid=paper")
    p.add_argument(
        "--snakefile", default="Snakefile", help="the workflow's Snakefile (its folder is the root)"
    )
    p.add_argument(
        "--max-problems",
        type=int,
        default=30,
        help="problems of each kind listed, and jobs named in each note (default 30)",
    )
    p.add_argument(
        "--cpu-only",
        action="store_true",
        help="the cluster has no GPUs: CUDA-capable jobs run on CPU, a job asking a GPU is a problem "
        "(automatic under a cluster profile when the grid's gpus_per_job is 0)",
    )
    p.add_argument(
        "--sinfo-file",
        default=None,
        help="captured output of `" + " ".join(SINFO_COMMAND) + "` to check the jobs against "
        "(default: run sinfo where it is installed)",
    )
    p.add_argument(
        "--no-sinfo",
        action="store_true",
        help="check the profile's limits only, without asking the machine's sinfo (a login node of "
        "another cluster, or a test that must not depend on the machine)",
    )
    p.set_defaults(func=cmd_check_cluster)
