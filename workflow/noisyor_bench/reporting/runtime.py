"""Measured compute per rule, from the TSV files of Snakemake's ``benchmark:`` directive.

Every rule writes ``<results>/benchmarks/<rule>/<job>.tsv`` (one row per repetition; columns
``s``, ``h:m:s``, ``max_rss`` in MB, ``cpu_time``, ...).  These tables are what the README's
compute estimate for the paper grid is extrapolated from, so they list per rule the job
count and the total, mean and largest wall time, and the slowest jobs by name.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from noisyor_bench.infra.errors import DataError

#: Columns of the per-job table (one row per benchmark file).
JOB_COLUMNS = ("rule", "job", "s", "cpu_time_s", "max_rss_mb", "repeats")


@dataclass(frozen=True)
class JobTime:
    rule: str
    job: str
    s: float
    cpu_time_s: float | None
    max_rss_mb: float | None
    repeats: int


def _number(value: str | None) -> float | None:
    """A benchmark cell as a float; ``NA``/``-``/empty (too short a job to sample) as None."""
    try:
        x = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def read_benchmark(path: Path, root: Path) -> JobTime:
    """One job's benchmark file; repetitions (``--benchmark-repeats``) are averaged."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows or "s" not in rows[0]:
        raise DataError(
            f"{path}: not a Snakemake benchmark file (expected a header with column 's' and a row)"
        )
    seconds = [_number(r.get("s")) for r in rows]
    if any(s is None for s in seconds):
        raise DataError(f"{path}: column 's' has a non-numeric value: {[r.get('s') for r in rows]}")
    rel = path.relative_to(root)
    return JobTime(
        rule=rel.parts[0],
        job="/".join(rel.parts[1:])[: -len(".tsv")],
        s=_mean(seconds) or 0.0,
        cpu_time_s=_mean([_number(r.get("cpu_time")) for r in rows]),
        max_rss_mb=max((v for v in (_number(r.get("max_rss")) for r in rows) if v is not None), default=None),
        repeats=len(rows),
    )


def collect(root: str | Path, only: list[str | Path] | None = None) -> pd.DataFrame:
    """Every ``<root>/<rule>/**/*.tsv`` as one row, slowest first; with ``only``, just those
    files (the benchmark files of the jobs of the current run), each once.

    The directory also holds the files of jobs no longer in the workflow (an earlier chunk
    layout of a search, cells of an earlier config); counted, they inflate the totals the
    compute estimates are extrapolated from.  A listed file that does not exist (a job whose
    outputs were made elsewhere) is left out and counted in :func:`missing_benchmarks`."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(
            f"benchmark directory {root} not found; it is written by the workflow's rules "
            "(results/benchmarks/<rule>/...): run snakemake first"
        )
    if only is None:
        files = sorted(p for p in root.rglob("*.tsv") if len(p.relative_to(root).parts) >= 2)
    else:
        files = sorted({Path(p) for p in only if Path(p).is_file()})
        outside = [p for p in files if not p.resolve().is_relative_to(root.resolve())]
        if outside:
            raise DataError(f"{outside[0]}: a benchmark file outside {root}; list files under it")
    if not files:
        raise DataError(f"no benchmark files (<rule>/<job>.tsv) under {root}: run snakemake first")
    files = [p if only is None else root / p.resolve().relative_to(root.resolve()) for p in files]
    jobs = pd.DataFrame([vars(read_benchmark(p, root)) for p in files], columns=list(JOB_COLUMNS))
    return jobs.sort_values(
        ["s", "rule", "job"], ascending=[False, True, True], kind="mergesort"
    ).reset_index(drop=True)


def per_rule(jobs: pd.DataFrame) -> pd.DataFrame:
    """Jobs, total/mean/max wall seconds, the slowest job and peak memory per rule, by total."""
    rows = []
    for rule, group in jobs.groupby("rule", sort=True):
        slowest = group.loc[group["s"].idxmax()]
        rss = group["max_rss_mb"].dropna()
        rows.append(
            {
                "rule": rule,
                "jobs": len(group),
                "total_s": round(float(group["s"].sum()), 2),
                "mean_s": round(float(group["s"].mean()), 2),
                "max_s": round(float(group["s"].max()), 2),
                "slowest_job": slowest["job"],
                "max_rss_mb": round(float(rss.max()), 1) if len(rss) else None,
            }
        )
    table = pd.DataFrame(
        rows, columns=["rule", "jobs", "total_s", "mean_s", "max_s", "slowest_job", "max_rss_mb"]
    )
    return table.sort_values(["total_s", "rule"], ascending=[False, True], kind="mergesort").reset_index(
        drop=True
    )


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def upstream_benchmarks(dag: Any, rule_name: str) -> list[str]:
    """The benchmark files of the jobs a ``rule_name`` job depends on, directly or not, in a
    Snakemake DAG (``workflow.dag``: complete when a job's params are evaluated), each once;
    empty when there is no DAG or no such job.  These are the jobs of the current workflow."""
    jobs = [job for job in (dag.jobs if dag is not None else ()) if job.rule.name == rule_name]
    if not jobs:
        return []
    upstream = dag.bfs(dag.dependencies, *jobs)
    return sorted({str(job.benchmark) for job in upstream if job.benchmark})


def missing_benchmarks(only: list[str | Path]) -> int:
    """How many listed benchmark files do not exist (each file once)."""
    return sum(not Path(p).is_file() for p in dict.fromkeys(map(str, only)))


def markdown(
    rules: pd.DataFrame, jobs: pd.DataFrame, top: int = 10, listed: bool = False, missing: int = 0
) -> str:
    """Per-rule totals, the ``top`` slowest jobs, and the sum over jobs (serial compute).
    ``listed``: the jobs are the current workflow's (:func:`collect` with ``only``)."""
    from noisyor_bench.reporting.tables import markdown_table

    total = float(jobs["s"].sum())
    scope = (
        "each job of the current workflow counts once (earlier invocations' jobs of the same path "
        "are replaced by their rerun; files of jobs no longer in the workflow are left out)"
        + (f"; {missing} of its jobs have no benchmark file and are not counted" if missing else "")
        if listed
        else "every benchmark file present counts, including jobs of earlier invocations"
    )
    lines = [
        "# Runtime per rule (Snakemake `benchmark:` files)\n",
        f"{len(jobs)} jobs, {total:.0f} s = {_hms(total)} of wall time summed over jobs (the compute on one "
        "core; the run's wall time is shorter when jobs ran side by side). Times are each job's wall "
        f"time; {scope}.\n",
        markdown_table(
            ["rule", "jobs", "total s", "mean s", "max s", "slowest job", "max RSS MB"],
            [
                [
                    r.rule,
                    r.jobs,
                    f"{r.total_s:.1f}",
                    f"{r.mean_s:.1f}",
                    f"{r.max_s:.1f}",
                    r.slowest_job,
                    "" if pd.isna(r.max_rss_mb) else f"{r.max_rss_mb:.0f}",
                ]
                for r in rules.itertuples()
            ],
        ),
        f"## The {min(top, len(jobs))} slowest jobs\n",
        markdown_table(
            ["rule", "job", "s", "h:m:s"],
            [[j.rule, j.job, f"{j.s:.1f}", _hms(j.s)] for j in jobs.head(top).itertuples()],
        ),
    ]
    return "\n".join(lines)


def plot(rules: pd.DataFrame, path_png: str | Path) -> None:
    """Horizontal bars of total seconds per rule (largest on top)."""
    import matplotlib.pyplot as plt

    from noisyor_bench.reporting.plots import save_figure

    order = rules.iloc[::-1]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(order) + 1.2))
    ax.barh(order["rule"], order["total_s"], color="#4C72B0")
    for y, (total, n) in enumerate(zip(order["total_s"], order["jobs"])):
        ax.text(total, y, f" {total:.0f} s ({n} job{'s' if n != 1 else ''})", va="center", fontsize=8)
    ax.set_xlabel("wall time summed over the rule's jobs (s)")
    ax.set_xlim(0, max(1.0, float(order["total_s"].max())) * 1.3)
    ax.set_title("Runtime per rule")
    save_figure(fig, path_png)
    plt.close(fig)


def cost_model_table(
    grid: str,
    paper_ids: list[str] | None,
    slots: int,
    gpu: bool = False,
    root: Path | None = None,
    unit: str = "slot",
    factor: float = 1.0,
) -> str | None:
    """``estimate-time``'s table from the cost model (noisyor_bench.experiments.costs) for ``grid``:
    per paper and in total, every estimate x ``factor`` (this machine's speed against the
    measuring CPU); None when the grid has no compute job for the papers."""
    from noisyor_bench.experiments import costs, papers
    from noisyor_bench.experiments.config import load_config

    root = root or Path.cwd()
    cfg = load_config(root / "config" / "config.yaml", {"grid": grid})
    ids = paper_ids or list(papers.ids())
    estimates = costs.estimate_jobs(cfg, costs.load_references(root, cfg.get("job_seconds")), ids)
    estimates = costs.on_this_machine(estimates, factor)
    return costs.format_table(estimates, grid, slots, gpu, unit) if estimates else None


def config_check(
    table: dict, grid: str, paper_ids: list[str] | None, cores: int, root: Path | None = None
) -> tuple[dict[str, str | None], dict[str, float]]:
    """Today's config hash of each paper in ``grid`` and, for a paper whose measured row
    (``table``, runtime_estimates.yaml) was recorded at another hash, the cost model's wall seconds
    on ``cores`` cores (scaled by work from the measured jobs).  Empty outside a checkout or for a
    grid the config does not define: nothing to compare."""
    from noisyor_bench.experiments import costs, papers
    from noisyor_bench.experiments.config import load_config
    from noisyor_bench.experiments.config_hash import config_hash
    from noisyor_bench.reporting.summary import paper_rows

    root = root or Path.cwd()
    path = root / "config" / "config.yaml"
    if not path.is_file():
        return {}, {}
    cfg = load_config(path)
    if grid not in (cfg.get("grids") or {}):
        return {}, {}
    cfg = load_config(path, {"grid": grid})
    rows = paper_rows((table.get("grids") or {}).get(grid) or {}, grid)
    ids = paper_ids or list(papers.ids())
    hashes = {pid: config_hash(cfg, grid, pid) for pid in ids}
    changed = [
        p
        for p in ids
        if p in rows and rows[p].get("config_hash") and hashes[p] not in (None, rows[p]["config_hash"])
    ]
    modelled = {}
    if changed:
        references = costs.load_references(root, cfg.get("job_seconds"))
        for pid in changed:
            modelled[pid] = costs.wall_seconds(costs.estimate_jobs(cfg, references, [pid]), cores)
    return hashes, modelled
