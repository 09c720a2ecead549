"""A SLURM cluster's partitions as ``sinfo`` reports them: time limit, GPUs and memory of the nodes.

Why: SLURM accepts a job whose time limit exceeds its partition's ``MaxTime`` and leaves it
``PENDING (PartitionTimeLimit)`` for ever, queues a GPU job where no node has a GPU only to
reject it, and never starts a job asking more memory than any node has.  ``check-cluster``
compares every job's limits with these numbers before anything is submitted.

The text is the output of :data:`SINFO_COMMAND` (a format requested explicitly, one line per
partition and node configuration; ``--exact`` keeps nodes of different memory on lines of their
own), read either from ``sinfo`` itself or from a file holding its captured output.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from noisyor_bench.infra.errors import DataError

#: Partition (``*`` marks the default), time limit, GRES, memory per node (MB), node count.
SINFO_FORMAT = "%P|%l|%G|%m|%D"
SINFO_COMMAND = ("sinfo", "--noheader", "--exact", f"--format={SINFO_FORMAT}")
_UNLIMITED = {"infinite", "unlimited", "n/a", "none"}
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


@dataclass(frozen=True)
class NodeGroup:
    """Nodes of one partition with the same configuration."""

    gpus: int
    """GPUs per node from the GRES (0: none)."""
    mem_mb: int
    nodes: int


@dataclass(frozen=True)
class Partition:
    name: str
    max_minutes: float | None
    """``MaxTime`` in minutes (None: unlimited)."""
    default: bool
    groups: tuple[NodeGroup, ...]

    @property
    def has_gpus(self) -> bool:
        return any(g.gpus > 0 for g in self.groups)

    def largest_memory(self, gpu: bool = False) -> int:
        """Memory of its largest node (among the nodes with GPUs for a GPU job), MB."""
        return max((g.mem_mb for g in self.groups if g.gpus > 0 or not gpu), default=0)


def parse_time_limit(text: str) -> float | None:
    """A SLURM time limit in minutes (``D-HH:MM:SS``, ``HH:MM:SS``, ``MM:SS``, ``D-HH``, ``MM``),
    None for an unlimited one."""
    value = text.strip()
    if value.lower() in _UNLIMITED:
        return None
    match = _TIME.match(value)
    if not match:
        raise DataError(f"sinfo: time limit {text!r} is not [D-]HH:MM:SS or 'infinite'")
    days, a, b, c = match.groups()
    fields = [int(x) for x in (a, b, c) if x is not None]
    if days is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = (fields + [0, 0])[:3]
        return int(days) * 1440 + hours * 60 + minutes + seconds / 60
    if len(fields) == 3:
        return fields[0] * 60 + fields[1] + fields[2] / 60
    if len(fields) == 2:  # MM:SS
        return fields[0] + fields[1] / 60
    return float(fields[0])  # MM


def gres_gpus(text: str) -> int:
    """GPUs per node of a GRES string (``gpu:4``, ``gpu:a100:2(S:0-1),mps:100``; ``(null)``: 0)."""
    total = 0
    for item in re.split(r",(?![^()]*\))", text.strip()):
        item = re.sub(r"\(.*?\)", "", item).strip()
        parts = item.split(":")
        if parts[0] != "gpu":
            continue
        count = parts[-1] if len(parts) > 1 else "1"
        if not count.isdigit():  # gpu:<model> without a count: one
            count = "1"
        total += int(count)
    return total


def parse_sinfo(text: str) -> dict[str, Partition]:
    """Partitions of :data:`SINFO_COMMAND`'s output, by name (lines of one partition merged)."""
    rows: dict[str, list] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = line.strip().split("|")
        if len(cells) != 5:
            raise DataError(
                f"sinfo line {number}: expected 5 fields of {SINFO_FORMAT!r} "
                f"({' '.join(SINFO_COMMAND)}), got {line.strip()!r}"
            )
        name, limit, gres, mem, nodes = (c.strip() for c in cells)
        default = name.endswith("*")
        name = name.rstrip("*")
        mem_digits, nodes_digits = mem.rstrip("+"), nodes
        if not mem_digits.isdigit() or not nodes_digits.isdigit():
            raise DataError(f"sinfo line {number}: memory {mem!r} or node count {nodes!r} is not a number")
        minutes = parse_time_limit(limit)
        entry = rows.setdefault(name, [minutes, default, []])
        if entry[0] != minutes:  # one partition, one MaxTime: keep the stricter
            entry[0] = (
                minutes if entry[0] is None else entry[0] if minutes is None else min(entry[0], minutes)
            )
        entry[1] = entry[1] or default
        entry[2].append(NodeGroup(gres_gpus(gres), int(mem_digits), int(nodes_digits)))
    return {name: Partition(name, m, d, tuple(g)) for name, (m, d, g) in rows.items()}


def read_sinfo(path: str | None) -> tuple[dict[str, Partition] | None, str]:
    """The partitions from the captured output in ``path``, else from running ``sinfo`` where it
    is installed; (None, why) when neither is available."""
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                return parse_sinfo(fh.read()), f"sinfo output from {path}"
        except OSError as exc:
            raise DataError(f"--sinfo-file {path}: {exc.strerror}") from None
    if shutil.which("sinfo") is None:
        return None, "sinfo not found: partition limits (MaxTime, GPUs, memory) not checked"
    proc = subprocess.run(SINFO_COMMAND, capture_output=True, text=True, check=False, timeout=60)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        raise DataError(
            f"{' '.join(SINFO_COMMAND)} failed (exit {proc.returncode}): {tail[0]}; run check-cluster "
            "where sinfo reaches the cluster, give its captured output (--sinfo-file), or check the "
            "profile's limits alone (--no-sinfo)"
        )
    return parse_sinfo(proc.stdout), "sinfo"


__all__ = [
    "NodeGroup",
    "Partition",
    "SINFO_COMMAND",
    "SINFO_FORMAT",
    "gres_gpus",
    "parse_sinfo",
    "parse_time_limit",
    "read_sinfo",
]
