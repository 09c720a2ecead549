"""A console a person can follow: Snakemake's output in, one short line per finished job out.

``make reproduce`` pipes Snakemake through ``noisyor-bench console``: the full output goes to a
log file (its path is printed first), the terminal gets the plan (jobs per paper), then one line
per finished job with the paper's progress and an ETA, every failure in full (Snakemake's error
block and the tail of the job's log), and nothing else (the quick grid's 5,000 lines become ~330).

The parsing reads only Snakemake's stable, human-facing lines ("rule X:", "jobid:", "wildcards:",
"Finished jobid: N (Rule: X)", "k of N steps (p%) done", "Error in rule X:"), so a line it does
not know is simply kept for the log file.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from noisyor_bench.infra.progress import duration

SHARED = "shared"
"""The label of rules no paper owns (raw data, claims merge, report pages, runtime)."""

_RULE = re.compile(r"^(?:local)?rule (\w+):$")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")
_WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")
_LOG = re.compile(r"^\s+log: (.*)$")
_FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)")
_STEPS = re.compile(r"^(\d+) of (\d+) steps \((\d+)%\) done")
_STATS_ROW = re.compile(r"^(\w+)\s+(\d+)$")
_ERROR = re.compile(
    r"^(Error in rule \w+:|RuleException|WorkflowError|MissingOutputException|Exiting because)"
)


def rule_papers(repo: str | Path) -> dict[str, str]:
    """Rule name (or the name prefix of a rule defined in a loop) -> paper name, from each
    registered paper's rules files (``Paper.rules``); rules elsewhere are :data:`SHARED`."""
    from noisyor_bench.experiments import papers

    out: dict[str, str] = {}
    for paper in papers.papers():
        label = f"{paper.name} (beyond the papers)" if paper.beyond_the_papers else paper.name
        for name in paper.rules:
            path = Path(repo) / "rules" / name
            if not path.is_file():
                continue
            text = path.read_text(encoding="utf-8")
            for rule in re.findall(r"^\s*rule (\w+):", text, flags=re.M):
                out[rule] = label
            for prefix in re.findall(r"\n\s+name:\n\s+f?\"(\w+)", text):
                out[prefix] = label
    return out


def paper_of_rule(rule: str, owners: Mapping[str, str]) -> str:
    """The paper of ``rule``: exact name, else the longest owned name prefix, else shared."""
    if rule in owners:
        return owners[rule]
    best = max((p for p in owners if rule.startswith(p)), key=len, default=None)
    return owners[best] if best else SHARED


@dataclass
class Console:
    """Turns Snakemake's lines into the compact console; feed it every line with :meth:`line`."""

    owners: Mapping[str, str]
    out: Callable[[str], None]
    clock: Callable[[], float] = time.monotonic
    start: float = field(default=0.0)
    planned: Counter[str] = field(default_factory=Counter)
    finished: Counter[str] = field(default_factory=Counter)
    jobs: dict[str, dict[str, str]] = field(default_factory=dict)
    current: dict[str, str] | None = None
    in_stats: bool = False
    in_error: bool = False
    failures: int = 0
    error_log: str | None = None
    _pending: dict[str, str] | None = None
    log_tail_lines: int = 25

    def __post_init__(self) -> None:
        self.start = self.clock()

    def _paper(self, rule: str) -> str:
        return paper_of_rule(rule, self.owners)

    def _plan(self) -> None:
        per = Counter()
        for rule, n in self.planned.items():
            if rule != "all":
                per[self._paper(rule)] += n
        total = sum(per.values())
        parts = ", ".join(f"{p} {n}" for p, n in sorted(per.items(), key=lambda kv: (kv[0] == SHARED, kv[0])))
        self.out(f"Plan: {total} jobs ({parts})")

    def line(self, text: str) -> None:
        text = text.rstrip("\n")
        if self.in_error:  # an error block runs to the next blank line: shown in full
            self.out(text)
            log = _LOG.match(text)
            if log:
                self.error_log = log.group(1).split(" (")[0].strip()
            if not text.strip():
                self.in_error = False
                self._log_tail()
            return
        if _ERROR.match(text):
            self.failures += 1
            self.in_error = True
            self.out(text)
            return
        if text.startswith("Job stats:"):
            self.in_stats, self.planned = True, Counter()
            return
        if self.in_stats:
            row = _STATS_ROW.match(text)
            if row and row.group(1) != "total":
                self.planned[row.group(1)] += int(row.group(2))
            elif text.startswith("total"):
                self.in_stats = False
                self._plan()
            return
        rule = _RULE.match(text)
        if rule:
            self.current = {"rule": rule.group(1), "wildcards": "", "started": str(self.clock())}
            return
        if self.current is not None:
            jobid = _JOBID.match(text)
            if jobid:
                self.jobs[jobid.group(1)] = self.current
                return
            wildcards = _WILDCARDS.match(text)
            if wildcards:
                self.current["wildcards"] = wildcards.group(1)
                return
            log = _LOG.match(text)
            if log:
                self.current["log"] = log.group(1)
                return
        done = _FINISHED.match(text)
        if done:
            job = self.jobs.pop(done.group(1), {"rule": done.group(2), "wildcards": ""})
            job["finished_rule"] = done.group(2)
            self.current = None
            self._pending = job
            return
        steps = _STEPS.match(text)
        if steps:
            self._finished_line(int(steps.group(1)), int(steps.group(2)))

    def _log_tail(self) -> None:
        """The last lines of a failed job's log file, after Snakemake's error block."""
        path, self.error_log = self.error_log, None
        if not path:
            return
        try:
            tail = (
                Path(path).read_text(encoding="utf-8", errors="replace").splitlines()[-self.log_tail_lines :]
            )
        except OSError:
            return
        self.out(f"--- last {len(tail)} lines of {path}:")
        for text in tail:
            self.out(f"    {text}")

    def _finished_line(self, k: int, n: int) -> None:
        job = self._pending
        self._pending = None
        if job is None or job["rule"] == "all":
            return
        paper = self._paper(job["rule"])
        self.finished[paper] += 1
        now = self.clock()
        took = now - float(job.get("started", now))
        elapsed = now - self.start
        eta = elapsed / k * (n - k) if k else 0.0
        planned = sum(v for r, v in self.planned.items() if self._paper(r) == paper and r != "all")
        what = job["rule"] + (f" [{job['wildcards']}]" if job["wildcards"] else "")
        self.out(
            f"[{k}/{n} {100 * k // max(n, 1)}%] {paper} {self.finished[paper]}/{planned or '?'}: {what} "
            f"done in {duration(took)}; elapsed {duration(elapsed)}, ETA {duration(eta)}"
        )


def follow(lines: Iterable[str], log: TextIO, console: Console) -> None:
    """Write every line to ``log`` and feed it to ``console``."""
    for text in lines:
        log.write(text)
        log.flush()
        console.line(text)
