"""CLI: ``check-cluster``, the pre-submission check of a cluster profile.

Why: a job killed at its wall-time limit after hours, a GPU job queued without a GPU, or a
thousand second-long sbatch submissions are found only after submitting.  This command runs
the Snakemake dry run a user would run (``snakemake -n --workflow-profile <profile> --config
...``), reads every job's resources from it and compares them with the cost model
(:mod:`noisyor_bench.experiments.costs`).
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

#: A job's wall-time limit must be at least this multiple of its estimate.
MIN_LIMIT_FACTOR = 1.5
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


def check(
    jobs: list[DryJob], estimates: dict[tuple[str, str], Any], compute: set[str], gpus: bool
) -> tuple[list[str], list[tuple[DryJob, Any]]]:
    """Problems of the dry run's jobs, and the submitted jobs with their estimates."""
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
        limit = float(job.resources.get("runtime", "0") or 0)
        if limit * 60 < MIN_LIMIT_FACTOR * est.cpu_seconds:
            problems.append(
                f"{job.rule} {job.bench[1]}: runtime limit {limit:.0f} min < {MIN_LIMIT_FACTOR}x its estimate "
                f"({est.cpu_seconds / 60:.0f} min)"
            )
        if gpus and est.cuda and int(float(job.resources.get("gpu", "0") or 0)) < 1:
            problems.append(f"{job.rule} {job.bench[1]}: CUDA-capable but requests no GPU")
    from noisyor_bench.experiments.costs import SHORT_SECONDS

    longest: dict[str, float] = {}
    for _job, est in submitted:
        longest[est.rule] = max(longest.get(est.rule, 0.0), est.cpu_seconds)
    for rule, seconds in sorted(longest.items()):
        if seconds < SHORT_SECONDS:
            problems.append(
                f"rule {rule}: every job takes < {SHORT_SECONDS:.0f} s but is submitted as its own cluster job"
            )
    return problems, submitted


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
    cfg = load_config(root / "config" / "config.yaml", _overrides(items))
    selected = [p.id for p in papers.selected(cfg["papers"])]
    references = costs.load_references(root, cfg.get("job_seconds"))
    estimates = costs.estimate_jobs(cfg, references, selected)
    with tempfile.TemporaryDirectory(prefix="noisyor-check-cluster-") as tmp:
        jobs = parse_dry_run(_dry_run(root, profile, items, tmp), tmp)
    problems, submitted = check(
        jobs, costs.by_job(estimates), costs.compute_rules(), _profile_counts_gpus(profile)
    )
    bound = sum(e.cell for e in estimates) + SUBMISSION_SLACK
    if len(submitted) > bound:
        problems.append(
            f"{len(submitted)} submissions > training cells + search chunks + {SUBMISSION_SLACK} = {bound}"
        )
    print(
        f"check-cluster: {len(jobs)} jobs, {len(submitted)} cluster submissions (bound {bound}), "
        f"{len(jobs) - len(submitted)} local"
    )
    short = Counter(est.rule for _, est in submitted if est.cpu_seconds < SHORT_SECONDS)
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
    for job, est in sorted(submitted, key=lambda x: -x[1].cpu_seconds)[:5]:
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
        help="pre-submission check: runtime limits >= 1.5x the cost model, GPUs for CUDA jobs, no short cluster jobs",
    )
    p.add_argument("--profile", required=True, help="the workflow profile, e.g. profiles/slurm")
    p.add_argument("--config", nargs="*", default=[], help="snakemake --config items, e.g. grid=paper")
    p.add_argument(
        "--snakefile", default="Snakefile", help="the workflow's Snakefile (its folder is the root)"
    )
    p.add_argument("--max-problems", type=int, default=30, help="problems listed (default 30)")
    p.set_defaults(func=cmd_check_cluster)
