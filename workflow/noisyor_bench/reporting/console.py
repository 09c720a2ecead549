"""A console a person can follow: Snakemake's output in, one short line per finished job out.

``make reproduce`` pipes Snakemake through ``noisyor-bench console``: the full output goes to a
log file (its path is printed first), the terminal gets the plan (jobs per paper), then one line
per finished job with the paper's progress and an ETA, a heartbeat line naming the running jobs
when nothing finished for a minute, every failure in full (Snakemake's error block and the tail of
the job's log), and nothing else (the quick grid's 5,000 lines become ~330).

The ETA comes from the cost model, not from job counts (one job of the quick grid takes 1 s,
another 4 min): :class:`WorkPlan` gives every planned job its estimated seconds, and the predicted
finish is elapsed + (remaining estimated work x the ratio of measured to estimated seconds of the
jobs finished so far) / cores, at least the longest remaining job.  The ratio weighs recent jobs
most (half-life :data:`HALF_LIFE_SECONDS`: other work on the machine comes and goes), counts a
running job already past its estimate, and starts at 1 (:data:`PRIOR_SECONDS`, a guess made at the
start that ages with the same half-life, so a model off by a constant factor is learnt); the estimates are
on this machine (``--speed-factor``, by default the calibration of ``estimate-time``).  Snakemake's plan ("Job stats")
names only each rule's job count, not the jobs' wildcards, so a job not yet started counts as the
mean estimate of its rule's cost-model jobs not yet started; a started job, whose benchmark path
names it, counts as its own estimate.

The parsing reads only Snakemake's stable, human-facing lines ("rule X:", "jobid:", "wildcards:",
"benchmark:", "Finished jobid: N (Rule: X)", "k of N steps (p%) done", "Provided cores: N",
"Error in rule X:"), so a line it does not know is simply kept for the log file.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from noisyor_bench.infra.progress import duration
from noisyor_bench.infra.results_lock import LOCKED_LINE
from noisyor_bench.reporting.work_plan import JobKey, WorkPlan

SHARED = "shared"
"""The label of rules no paper owns (raw data, claims merge, report pages, runtime)."""

_RULE = re.compile(r"^(?:local)?rule (\w+):$")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")
_WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")
_LOG = re.compile(r"^\s+log: (.*)$")
_FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)")
_STEPS = re.compile(r"^(\d+) of (\d+) steps \(([\d.]+)%\) done")  # Snakemake writes 0.3%, 99.7% near the ends
_STATS_ROW = re.compile(r"^(\w+)\s+(\d+)$")
_CORES = re.compile(r"^Provided cores: (\d+)")
_BENCHMARK = re.compile(r"^\s+benchmark: (?:.*/)?benchmarks/([^/]+)/(.+)\.tsv$")
# A job log's progress: "epoch 12/60" (ACP cells), "1598/1600 steps" or "step 40/400" (the others).
_JOB_PROGRESS = re.compile(r"\bepoch (\d+)/(\d+)|\b(\d+)/(\d+) steps\b|\bstep (\d+)/(\d+)")
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


#: Weight, in estimated seconds, of the prior ratio (1: the cost model is right) in the ratio of
#: measured to estimated seconds at the start: the first short jobs do not swing the ETA.  It
#: halves every HALF_LIFE_SECONDS, as a finished job's weight does: a prior that kept its weight
#: would outweigh the jobs of the last half-lives for ever (a model 2x off read 1.33 at best).
PRIOR_SECONDS = 300.0
#: Half-life, in seconds of wall time, of a finished job's weight in that ratio: the machine's
#: load changes during a run (other work starts and ends), so recent jobs count most; 5 minutes
#: learns a model 2x off by a quarter of the default run and follows a changing load
#: (tests/workflow/test_console_eta.py replays both).
HALF_LIFE_SECONDS = 300.0
#: A heartbeat line at least this often while jobs run and nothing else was printed.
HEARTBEAT_SECONDS = 60.0


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
    plan: WorkPlan | None = None
    """Per-job estimates (None: the ETA extrapolates the time per finished job)."""
    cores: int = 1
    """Jobs at once (Snakemake's "Provided cores: N")."""
    heartbeat_seconds: float = HEARTBEAT_SECONDS
    half_life_seconds: float = HALF_LIFE_SECONDS
    last_finish: float = 0.0
    running: dict[str, dict[str, str]] = field(default_factory=dict)
    started: set[JobKey] = field(default_factory=set)
    started_per_rule: Counter[str] = field(default_factory=Counter)
    done_estimated: float = 0.0
    """Estimated seconds of the finished jobs ..."""
    done_measured: float = 0.0
    """... and their measured seconds (both weighted by recency): their ratio corrects the
    remaining estimate."""
    etas: list[tuple[float, float]] = field(default_factory=list)
    """(elapsed, ETA) of every line that printed one."""
    last_said: float = 0.0
    """When :meth:`tick` last saw a printed line (it reads the clock; printing does not)."""
    said: int = 0
    _said_seen: int = 0

    def __post_init__(self) -> None:
        self.start = self.clock()
        self.last_said = self.last_finish = self.start
        raw = self.out

        def say(text: str) -> None:
            self.said += 1
            raw(text)

        self.out = say

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
        cores = _CORES.match(text)
        if cores:
            self.cores = max(int(cores.group(1)), 1)
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
                if self.plan is not None:
                    self.plan.plan_rules(self.planned)
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
                self.running[jobid.group(1)] = self.current
                if self.current["rule"] != "all":
                    self.started_per_rule[self.current["rule"]] += 1
                return
            bench = _BENCHMARK.match(text)
            if bench:
                self.current["key"] = f"{bench.group(1)}\t{bench.group(2)}"
                self.started.add((bench.group(1), bench.group(2)))
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
            self.running.pop(done.group(1), None)
            job = self.jobs.pop(done.group(1), {"rule": done.group(2), "wildcards": ""})
            if self.plan is not None and "started" in job and job["rule"] != "all":
                now = self.clock()
                estimated = self._estimate(job)
                measured = max(now - float(job["started"]), 0.0)
                keep = 0.5 ** (max(now - self.last_finish, 0.0) / self.half_life_seconds)
                self.last_finish = now
                self.done_estimated = keep * self.done_estimated + estimated
                self.done_measured = keep * self.done_measured + measured
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
        eta = self.eta(now) if self.plan is not None else (elapsed / k * (n - k) if k else 0.0)
        self.etas.append((elapsed, eta))
        planned = sum(v for r, v in self.planned.items() if self._paper(r) == paper and r != "all")
        what = job["rule"] + (f" [{job['wildcards']}]" if job["wildcards"] else "")
        self.out(
            f"[{k}/{n} {100 * k // max(n, 1)}%] {paper} {self.finished[paper]}/{planned or '?'}: {what} "
            f"done in {duration(took)}; elapsed {duration(elapsed)}, ETA {duration(eta)}"
        )

    @staticmethod
    def _key(job: Mapping[str, str]) -> JobKey | None:
        key = job.get("key")
        if not key:
            return None
        rule, _, stem = key.partition("\t")
        return rule, stem

    def _estimate(self, job: Mapping[str, str]) -> float:
        assert self.plan is not None
        return self.plan.job(job["rule"], self._key(job), self.started)

    def ratio(self, now: float | None = None) -> float:
        """Measured over estimated seconds of the finished jobs (recent ones weigh most) and of
        the running jobs already past their estimate at ``now`` (they take at least that long),
        drawn towards 1 (the cost model on this machine is right) while few have run."""
        measured, estimated = self.done_measured, self.done_estimated
        if now is not None and self.plan is not None:
            for job in self.running.values():
                if job["rule"] == "all":
                    continue
                age, estimate = now - float(job["started"]), self._estimate(job)
                if age > estimate:
                    measured, estimated = measured + age, estimated + estimate
        prior = PRIOR_SECONDS * 0.5 ** (
            max((self.clock() if now is None else now) - self.start, 0.0) / self.half_life_seconds
        )
        return (measured + prior) / (estimated + prior)

    def eta(self, now: float) -> float:
        """Seconds to the predicted finish: the remaining estimated work (jobs not started at
        their rule's mean, running jobs' estimate less their time so far), times :meth:`ratio`,
        over the cores; at least the longest remaining job."""
        if self.plan is None:
            return 0.0
        ratio = self.ratio(now)
        work = longest = 0.0
        for rule, count in self.planned.items():
            left = count - self.started_per_rule[rule]
            if rule == "all" or left <= 0:
                continue
            each = ratio * self.plan.rule_mean(rule, self.started)
            work += left * each
            longest = max(longest, each)
        for job in self.running.values():
            if job["rule"] == "all":
                continue
            left = max(ratio * self._estimate(job) - (now - float(job["started"])), 0.0)
            work += left
            longest = max(longest, left)
        return max(work / self.cores, longest)

    def tick(self) -> None:
        """A heartbeat line when jobs run and nothing was printed for ``heartbeat_seconds``: the
        running jobs, how long each has run and its progress where its log says it."""
        now = self.clock()
        if self.said != self._said_seen:  # printed since the last tick
            self._said_seen, self.last_said = self.said, now
        jobs = [j for j in self.running.values() if j["rule"] != "all"]
        if not jobs or now - self.last_said < self.heartbeat_seconds:
            return
        parts = []
        for job in sorted(jobs, key=lambda j: float(j["started"])):
            what = job["rule"] + (f" [{job['wildcards']}]" if job["wildcards"] else "")
            progress = log_progress(job.get("log", ""))
            parts.append(
                f"{what} {duration(now - float(job['started']))}{f' ({progress})' if progress else ''}"
            )
        elapsed = now - self.start
        eta = f", ETA {duration(self.eta(now))}" if self.plan is not None else ""
        self.out(f"... running {len(jobs)}: {'; '.join(parts)}; elapsed {duration(elapsed)}{eta}")
        self._said_seen, self.last_said = self.said, now


def log_progress(path: str, tail_bytes: int = 4096) -> str:
    """The last progress a job's log states ("epoch 12/60", "1598/1600 steps"), '' if none."""
    path = path.split(" (")[0].strip()
    if not path:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(fh.tell() - tail_bytes, 0))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    found = list(_JOB_PROGRESS.finditer(text))
    if not found:
        return ""
    g = found[-1].groups()
    if g[0] is not None:
        return f"epoch {g[0]}/{g[1]}"
    if g[2] is not None:
        return f"{g[2]}/{g[3]} steps"
    return f"step {g[4]}/{g[5]}"


_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")


def replay(lines: Iterable[str], console: Callable[[Callable[[], float]], Console]) -> Console:
    """Feed a finished run's Snakemake log to a console whose clock is the log's own time (each
    "[Sat Nov 28 21:56:41 2026]" line moves it), with a heartbeat check at each step; what a
    person would have seen, replayed in a moment.  ``console(clock)`` makes the console."""
    from datetime import datetime

    lines = list(lines)
    stamps = [_STAMP.match(t.rstrip("\n")) for t in lines]
    first = next((m for m in stamps if m), None)
    now = [datetime.strptime(first.group(1), "%a %b %d %H:%M:%S %Y").timestamp() if first else 0.0]
    con = console(lambda: now[0])
    for text, stamp in zip(lines, stamps, strict=True):
        if stamp:
            now[0] = datetime.strptime(stamp.group(1), "%a %b %d %H:%M:%S %Y").timestamp()
            con.tick()
        con.line(text)
    return con


def stdin_lines(stream: Iterable[str], console: Console, poll: float = 5.0) -> Iterator[str]:
    """The lines of ``stream`` (read by a thread), calling ``console.tick()`` every ``poll``
    seconds while none arrives: the heartbeat reaches the terminal while Snakemake is silent."""
    box: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for text in stream:
            box.put(text)
        box.put(None)

    threading.Thread(target=read, daemon=True).start()
    last = time.monotonic()
    while True:
        try:
            text = box.get(timeout=poll)
        except queue.Empty:
            text = ""
        if time.monotonic() - last >= poll:
            last = time.monotonic()
            console.tick()
        if text is None:
            return
        if text:
            yield text


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
