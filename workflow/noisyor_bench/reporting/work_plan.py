"""The estimated seconds of every job a Snakemake run plans, from the cost model: what the
console's ETA counts down.  Snakemake's plan ("Job stats") names only each rule's job count, not
the jobs' wildcards, so a job not yet started counts as the mean estimate of its rule's cost-model
jobs not yet started; a started job, whose benchmark path names it, counts as its own estimate."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DEFAULT_JOB_SECONDS", "JobKey", "WorkPlan", "load_work_plan"]

#: Seconds a job no measurement or estimate names is taken to last (the local rules: tables,
#: figures, HTML views take 1-10 s).
DEFAULT_JOB_SECONDS = 5.0

JobKey = tuple[str, str]


@dataclass
class WorkPlan:
    """Estimated seconds of Snakemake's jobs from the cost model's per-job estimates.

    ``estimates``: ``{(benchmark rule, benchmark stem): seconds}`` (the cost model's compute jobs
    of the grid and the measured seconds of the other jobs, on this machine).  A Snakemake rule's
    jobs are the keys of the same rule, or for a rule defined per experiment
    (``train_cell_fig5``) the keys of its benchmark rule whose stem starts with the experiment
    (``train_cell``, ``fig5/...``)."""

    estimates: Mapping[JobKey, float]
    default_seconds: float = DEFAULT_JOB_SECONDS
    rules: frozenset[str] = frozenset()
    """Snakemake's planned rules: a key goes to the most specific of them."""
    _pools: dict[str, list[JobKey]] = field(default_factory=dict)

    def plan_rules(self, rules: Iterable[str]) -> None:
        """Assign the keys to Snakemake's planned ``rules`` (from its "Job stats")."""
        self.rules, self._pools = frozenset(rules), {}

    def rule_of(self, key: JobKey) -> str:
        """The planned Snakemake rule of a key: ``<rule>_<first stem part>`` if planned, else ``<rule>``."""
        specific = f"{key[0]}_{key[1].split('/')[0]}"
        return specific if specific in self.rules else key[0]

    def pool(self, rule: str) -> list[JobKey]:
        """The cost model's jobs of Snakemake rule ``rule`` ([] : none known)."""
        if not self._pools:
            for key in self.estimates:
                self._pools.setdefault(self.rule_of(key), []).append(key)
        return self._pools.get(rule, [])

    def job(self, rule: str, key: JobKey | None, started: set[JobKey]) -> float:
        """One started job's estimate: its own where its benchmark names it, else its rule's."""
        if key is not None and key in self.estimates:
            return float(self.estimates[key])
        return self.rule_mean(rule, started)

    def rule_mean(self, rule: str, started: set[JobKey]) -> float:
        """A job of ``rule`` not yet started: the mean of the rule's jobs not yet started (all of
        them once every one has), else the default."""
        pool = self.pool(rule)
        left = [k for k in pool if k not in started] or pool
        return sum(self.estimates[k] for k in left) / len(left) if left else self.default_seconds


def load_work_plan(grid: str, root: str | Path = ".", factor: float = 1.0) -> WorkPlan | None:
    """The cost model's estimate of every job of ``grid`` (every paper: Snakemake's plan says
    which run), and the measured seconds (``job_seconds``) of the jobs it does not model, all
    times ``factor`` (this machine's speed); None outside a checkout or when nothing loads."""
    from noisyor_bench.experiments import costs, job_seconds, papers
    from noisyor_bench.experiments.config import load_config

    root = Path(root)
    path = root / "config" / "config.yaml"
    if not path.is_file():
        return None
    try:
        cfg = load_config(path, {"grid": grid})
        measured = job_seconds.load(root / str(cfg.get("job_seconds") or "config/job_seconds.csv"))
        estimates = costs.estimate_jobs(
            cfg, costs.load_references(root, cfg.get("job_seconds")), papers.ids()
        )
    except Exception:  # noqa: BLE001 -- the console falls back to job counts, the run goes on
        return None
    # The measured table also keeps jobs of other grids (config/job_seconds.csv: extended's cells):
    # a rule the cost model prices takes only this grid's jobs, so that its mean is this run's.
    modelled = {e.rule for e in estimates}
    seconds = {key: value * factor for key, value in measured.items() if key[0] not in modelled}
    seconds.update({(e.rule, e.job): e.cpu_seconds * factor for e in estimates})
    local = sorted(v for (rule, _), v in seconds.items() if rule not in modelled)
    default = local[len(local) // 2] if local else DEFAULT_JOB_SECONDS * factor
    return WorkPlan(seconds, default_seconds=max(default, 1.0))
