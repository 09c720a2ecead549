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
from noisyor_bench.infra.results_lock import LOCKED_LINE

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
# A shell that lost its command to a signal exits 128 + the signal's number (137: SIGKILL).
_KILLED = re.compile(r"exit status (1[3-5]\d)\b|died with <Signals\.(SIG\w+): (\d+)>")


def killed_line(text: str) -> str | None:
    """One line saying what a failed job's exit status means when a signal killed it, else None."""
    import signal

    found = _KILLED.search(text)
    if found is None:
        return None
    number = int(found.group(3)) if found.group(3) else int(found.group(1)) - 128
    try:
        name = signal.Signals(number).name
    except ValueError:
        return None
    if number == signal.SIGKILL:
        why = (
            "out of memory? (the kernel's OOM killer: dmesg | grep -i oom); run fewer jobs at once "
            "(--cores N) and the same command again"
        )
    elif number == signal.SIGABRT:
        why = "aborted, e.g. a failed memory allocation (bad_alloc): see the log below"
    else:
        why = "stopped from outside (kill, a time limit)"
    return f"    killed (signal {number}, {name}): {why}"


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
            killed = killed_line(text)
            if killed is not None:
                self.out(killed)
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


class LockedLog:
    """The log file of one Snakemake invocation, opened only once that invocation holds the
    results lock (its guard prints :data:`~noisyor_bench.infra.results_lock.LOCKED_LINE`), and
    then appended to: a second invocation, refused because another one writes the results
    directory, never reopens (so never truncates) the log the first one is writing. The lines
    before the lock are kept in memory and written first; an invocation that never takes the
    lock (refused, or nothing to do) writes no log and returns its lines from :meth:`close`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.pending: list[str] = []
        self.file: TextIO | None = None

    def write(self, text: str) -> None:
        if self.file is None:
            self.pending.append(text)
            if text.startswith(LOCKED_LINE):
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 -- open while the run goes on
                self.file.writelines(self.pending)
                self.pending = []
        else:
            self.file.write(text)
        if self.file is not None:
            self.file.flush()

    def close(self) -> list[str]:
        """Close the log; the lines never written to it (the lock was never taken)."""
        if self.file is not None:
            self.file.close()
        return self.pending


def follow(lines: Iterable[str], log: LockedLog, console: Console) -> None:
    """Write every line to ``log`` and feed it to ``console``."""
    for text in lines:
        log.write(text)
        console.line(text)
