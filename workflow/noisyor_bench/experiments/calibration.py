"""How fast this machine is against the CPU that measured the time tables.

Why: the measured seconds (``config/job_seconds.csv``, ``config/runtime_estimates.yaml``) hold
on the measuring CPU; the same grid took 60 min on a 2-core Intel Xeon where the AMD EPYC's
table said 42.  ``estimate-time`` runs a fixed benchmark here once (a fraction of a second:
single-threaded array arithmetic and interpreter work, like the jobs' one-thread training), and
scales every estimate by its seconds over the seconds recorded for the measuring CPU
(``calibration:`` of ``runtime_estimates.yaml``).  Only the printed estimates scale: the
workflow's limits and plans do not depend on the machine that plans them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from noisyor_bench.infra.provenance import cpu_model

#: Repetitions of the benchmark; the fastest counts (the one least slowed by other work).
REPEATS = 10


def _workload() -> float:
    """The fixed benchmark: ~0.1 s on the measuring CPU; never change it without re-recording."""
    import numpy as np

    x = np.linspace(-3.0, 3.0, 200_000, dtype=np.float32)
    total = 0.0
    for _ in range(20):
        total += float((np.tanh(x) * np.exp(-x * x)).sum())
    count = 0
    for i in range(400_000):
        count += i * i % 7
    return total + count


def benchmark_seconds(
    repeats: int = REPEATS,
    timer: Callable[[], float] = time.process_time,
    workload: Callable[[], object] = _workload,
) -> float:
    """The fastest of ``repeats`` runs of the benchmark, in CPU seconds of this process (the
    speed of a core, not how busy the machine is).  ``timer`` and ``workload`` are injectable:
    a test replaces them to play a machine of known speed."""
    best = float("inf")
    for _ in range(max(int(repeats), 1)):
        start = timer()  # CPU time by default: other processes' load does not count
        workload()
        best = min(best, timer() - start)
    return best


@dataclass(frozen=True)
class Machine:
    """A CPU model and the benchmark's seconds on it."""

    cpu: str
    seconds: float


@functools.cache
def this_machine() -> Machine:
    """This machine, benchmarked once per process."""
    return measure()


def measure(
    timer: Callable[[], float] = time.process_time,
    workload: Callable[[], object] = _workload,
    cpu: str | None = None,
    repeats: int = REPEATS,
) -> Machine:
    """This machine (``cpu``: its CPU model, default :func:`cpu_model`) benchmarked now with
    ``timer`` and ``workload`` (injectable, as in :func:`benchmark_seconds`)."""
    return Machine(cpu or cpu_model(), benchmark_seconds(repeats, timer, workload))


@dataclass(frozen=True)
class Speed:
    """This machine against the measuring CPU: ``factor`` x the measured seconds are its seconds."""

    here: Machine
    measured: Machine | None
    """The measuring CPU with its recorded benchmark (None: none recorded: no scaling)."""

    @property
    def same_cpu(self) -> bool:
        return self.measured is not None and self.here.cpu == self.measured.cpu

    @property
    def factor(self) -> float:
        """1 on the measuring CPU's model (there the benchmark measures only the machine's load,
        10-20% on a busy 2-core machine, which would make the same estimate drift between calls);
        elsewhere the benchmark's ratio."""
        if self.same_cpu or self.measured is None or self.measured.seconds <= 0 or self.here.seconds <= 0:
            return 1.0
        return self.here.seconds / self.measured.seconds

    def lines(self) -> list[str]:
        """What the console says about the machine (one or two lines)."""
        if self.measured is None:
            return [
                f"machine: {self.here.cpu}; no calibration recorded for the measuring CPU: times as measured"
            ]
        if self.same_cpu:
            return [
                f"machine: this machine's CPU ({self.here.cpu}) is the measuring CPU's model: times as measured"
            ]
        return [
            f"machine: this machine's CPU ({self.here.cpu}) differs from the measuring CPU "
            f"({self.measured.cpu}); calibration {self.here.seconds:.3f} s here against "
            f"{self.measured.seconds:.3f} s there: times x {self.factor:.2f}"
        ]


def recorded(table: Mapping[str, Any]) -> Machine | None:
    """The measuring CPU and its benchmark seconds (``calibration:`` of the time table), or None."""
    entry = table.get("calibration") or {}
    if not entry.get("cpu") or not entry.get("seconds"):
        return None
    return Machine(str(entry["cpu"]), float(entry["seconds"]))


def speed(table: Mapping[str, Any], here: Machine | None = None) -> Speed:
    """This machine (benchmarked now unless given) against the table's measuring CPU."""
    return Speed(here or this_machine(), recorded(table))


__all__ = ["REPEATS", "Machine", "Speed", "benchmark_seconds", "measure", "recorded", "speed", "this_machine"]
