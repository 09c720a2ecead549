"""Compare two results directories of one config (a manual check, e.g. before/after a refactor, or
the gate of a cluster run against a local one).

    python tests/compare_results.py RESULTS_BEFORE RESULTS_AFTER [--ignore-timing]

Every file both hold is compared byte for byte; a file that differs counts as equal when it
differs only by what two executions legitimately do: the results directory's own path, wall
times (keys and columns named ``*seconds``, ``*_time``, ``time_s``, ``*time_to_quality``,
``train_minutes``, their ``_median``/``_low``/``_high`` and ``timing``, and their table statistics; ``.npz`` arrays named ``seconds``), provenance
records and sidecars (the results directory's grid record and SLURM run record), and ``torch.save``'s random serialization id (``.pt`` files compare their
tensors).  A claims table compares its verdicts and ids; ``numbers`` that differ are listed
(a claim on wall time quotes the times). Logs, Snakemake
benchmarks, ``params/`` (argument files named by a hash of paths), HTML views (they embed the
compared CSVs) and the runtime tables are left out. Prints the counts, the differing files and
how many ``.npz`` files (datasets, posteriors) are byte-identical.

``--ignore-timing`` also ignores every other timing field, for runs on different machines or
schedulers (a cluster against a local run): keys and columns of any wall or CPU time, duration
or timestamp (:func:`is_timing`: ``total_s``, ``cpu_time_s_std``, ``*minutes``, ``elapsed``,
``started_at``, ...), Markdown table columns of that name, and timestamps and durations
(``2024-05-01T12:00:00``, ``12.3 s``, ``4 min``) written in text.

Exit status: 0 when every common file is equal and neither directory holds a file the other
lacks, 1 otherwise (so it can gate a comparison).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import re
import sys
from pathlib import Path

TIME_KEYS = {
    "train_seconds",
    "eval_seconds",
    "posterior_seconds",
    "val_seconds",
    "provenance",
    "seconds",
    "created",
    "wall_seconds",
    "dataset_file",
    "noisyor_bench_version",
}
SKIP_DIRS = {"logs", "benchmarks", "params"}  # params/: argument files named by a hash of paths
# Views and timing pages: HTML views embed the CSVs (compared) with paths; runtime is wall time.
SKIP_NAMES = {
    "software.html",
    ".noisyor-bench.lock",
    ".noisyor-bench-results.json",  # the directory's grid record: times and commit
    ".noisyor-bench-slurm-runs",  # the SLURM driver's run ID (noisyor_bench.infra.slurm_runs)
    "runtime.png",
    "runtime.pdf",
    "runtime.csv",
    "runtime.md",
    "runtime_jobs.csv",
    "runtime_jobs.md",
}
# --ignore-timing: the quantity word (the last word of a snake_case or spaced name that is no
# statistic) of a duration or a point in time, alone or after other words.
TIMING_WORDS = {
    "sec",
    "secs",
    "second",
    "seconds",
    "ms",
    "mins",
    "minute",
    "minutes",
    "hour",
    "hours",
    "time",
    "timing",
    "timings",
    "elapsed",
    "duration",
    "walltime",
    "wall",
    "runtime",
    "timestamp",
    "started",
    "finished",
    "start",
    "end",
    "created",
    "updated",
    "date",
}
# A unit or time suffix after other words only: total_s, wall_h, started_at (a lone "s" or "h" is
# a metric's name).
TIMING_SUFFIXES = {"s", "h", "at"}
# Statistics after the quantity: time_s_mean, cpu_time_s_std.
STAT_WORDS = {
    "mean",
    "median",
    "low",
    "high",
    "std",
    "values",
    "ci95",
    "n",
    "max",
    "min",
    "total",
    "p50",
    "p95",
}
TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\b\d{1,2}:\d{2}:\d{2}\b"
)
DURATION = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?\s?(?:ms|s|sec|secs|seconds|min|mins|minutes|h|hours)\b", re.I
)


def unroot(text: str, root: Path) -> str:
    """``text`` with the results directory ``root`` replaced by ``<R>``: its absolute and resolved
    paths, and, given relative (as a run's ``results_dir`` may be), that path where it starts a
    path (``results-slurm/data/...``, not inside another word)."""
    for name in sorted({str(root.absolute()), str(root.resolve())}, key=len, reverse=True):
        text = text.replace(name, "<R>")
    if not root.is_absolute():
        text = re.sub(rf"(?<![\w./-]){re.escape(str(root))}(?=/)", "<R>", text)
    return text


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def is_time(name: str) -> bool:
    """A key or column holding a wall time (or a statistic of one: ``time_s_mean``)."""
    base = name.removesuffix("_mean").removesuffix("_values").removesuffix("_ci95").removesuffix("_n")
    return (
        name in TIME_KEYS
        or "seconds" in name
        or base in ("time_s", "time_cpu_s", "train_minutes", "train_cpu_minutes", "timing", "cpu_timing")
        or base.startswith(
            ("time_s_", "time_cpu_s_", "train_minutes_", "train_cpu_minutes_")
        )  # _median, _low
        or base.endswith(("_time", "time_to_quality"))
        or "time_to_quality_" in base
    )


def is_timing(name: str) -> bool:
    """--ignore-timing: a key or column of a wall or CPU time, a duration or a timestamp:
    :func:`is_time`, a time to some quality (``vi_time_to_ape_elbo``), or a name whose quantity
    word is a timing word or, after other words, a unit (``total_s``, ``cpu_time_s_std``,
    ``started_at``, ``wall time (h)``); not ``min_epoch_steps``, ``timing_repeats`` or ``s``."""
    if is_time(name):
        return True
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
    if "time" in words[:-1] and "to" in words:
        return True
    while len(words) > 1 and words[-1] in STAT_WORDS:
        words.pop()
    if not words:
        return False
    return words[-1] in TIMING_WORDS or (len(words) > 1 and words[-1] in TIMING_SUFFIXES)


class Comparer:
    """Compares files of two results directories; ``timing`` ignores every timing field."""

    def __init__(self, a: Path, b: Path, timing: bool = False):
        self.a, self.b, self.timing = a, b, timing

    def time_name(self, name: str) -> bool:
        return is_timing(name) if self.timing else is_time(name)

    def strip(self, obj):
        if isinstance(obj, dict):
            return {k: self.strip(v) for k, v in obj.items() if not self.time_name(k)}
        if isinstance(obj, list):
            return [self.strip(v) for v in obj]
        if self.timing and isinstance(obj, str):
            return self.mask(obj)
        return obj

    def mask(self, text: str) -> str:
        """Timestamps and durations in free text replaced by placeholders (--ignore-timing)."""
        return DURATION.sub("<duration>", TIMESTAMP.sub("<timestamp>", text))

    def csv_equal(self, rel: str, ta: str, tb: str) -> bool:
        ra, rb = list(csv.reader(io.StringIO(ta))), list(csv.reader(io.StringIO(tb)))
        if not (ra and rb and ra[0] == rb[0]):
            return False
        drop = {i for i, c in enumerate(ra[0]) if self.time_name(c)}
        if rel.rsplit("/", 1)[-1].startswith("claims"):
            drop |= {ra[0].index("numbers")} if "numbers" in ra[0] else set()

        def kept(rows):
            return [
                [self.mask(v) if self.timing else v for i, v in enumerate(r) if i not in drop] for r in rows
            ]

        return kept(ra) == kept(rb)

    def markdown(self, text: str) -> str:
        """Text with the timing columns of its pipe tables dropped and timings masked."""
        out, drop = [], set()
        for line in text.splitlines():
            if not line.lstrip().startswith("|"):
                drop = set()
                out.append(self.mask(line))
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not drop and not re.fullmatch(r"[\s|:-]+", line):  # a header row starts a table
                drop = {i for i, c in enumerate(cells) if is_timing(c)} or {-1}
            out.append("|".join(self.mask(c) for i, c in enumerate(cells) if i not in drop))
        return "\n".join(out)

    def equal(self, rel: str, pa: Path, pb: Path) -> bool:
        """``pa`` and ``pb`` hold the same results up to paths, timings and provenance."""
        if sha(pa) == sha(pb):
            return True
        try:
            ta, tb = unroot(pa.read_text(), self.a), unroot(pb.read_text(), self.b)
        except UnicodeDecodeError:
            ta = tb = None
        if ta is not None:
            if ta == tb:
                return True
            if pa.suffix == ".json":
                try:
                    return self.strip(json.loads(ta)) == self.strip(json.loads(tb))
                except ValueError:
                    pass
            if pa.suffix == ".csv" and self.csv_equal(rel, ta, tb):
                return True
            if self.timing and pa.suffix in (".md", ".txt", ".tex", ".log"):
                return self.markdown(ta) == self.markdown(tb)
        if pa.suffix == ".npz":
            import numpy as np

            xa, xb = np.load(pa, allow_pickle=False), np.load(pb, allow_pickle=False)
            return set(xa.files) == set(xb.files) and all(
                (self.timing and is_timing(k))
                or k == "seconds"
                or np.array_equal(xa[k], xb[k], equal_nan=True)
                for k in xa.files
            )
        if pa.suffix == ".pt":
            import torch

            def _equal(u, v):
                if isinstance(u, dict):
                    return isinstance(v, dict) and set(u) == set(v) and all(_equal(u[k], v[k]) for k in u)
                return torch.equal(u, v) if torch.is_tensor(u) else u == v

            return _equal(torch.load(pa, weights_only=False), torch.load(pb, weights_only=False))
        return False


def files(root: Path) -> dict[str, Path]:
    out = {}
    for p in root.rglob("*"):
        if (
            p.is_file()
            and not (set(p.relative_to(root).parts) & SKIP_DIRS)
            and not p.name.endswith(".prov.json")
            and p.suffix != ".html"
            and p.name not in SKIP_NAMES
        ):
            out[str(p.relative_to(root))] = p
    return out


def compare(a: Path, b: Path, timing: bool = False) -> dict[str, list[str] | int]:
    """``same`` (count), ``diffs``, ``only_a`` and ``only_b`` (relative paths) of two directories."""
    fa, fb = files(a), files(b)
    comparer = Comparer(a, b, timing)
    common = sorted(set(fa) & set(fb))
    diffs = [rel for rel in common if not comparer.equal(rel, fa[rel], fb[rel])]
    return {
        "same": len(common) - len(diffs),
        "diffs": diffs,
        "only_a": sorted(set(fa) - set(fb)),
        "only_b": sorted(set(fb) - set(fa)),
    }


def report(a: Path, b: Path, result: dict) -> None:
    fa, fb = files(a), files(b)
    common = set(fa) & set(fb)
    print(
        f"compared {len(common)} files: {result['same']} equal (bytes, or up to timings/provenance), "
        f"{len(result['diffs'])} differ"
    )
    print("only in before:", result["only_a"][:30])
    print("only in after:", result["only_b"][:30])
    for d in result["diffs"][:60]:
        print("DIFF", d)
    claims = [r for r in common if r.endswith(".csv") and r.rsplit("/", 1)[-1].startswith("claims")]
    for rel in sorted(claims):
        with open(fa[rel], newline="") as fh_a, open(fb[rel], newline="") as fh_b:
            rows_a = {r.get("claim_id"): r for r in csv.DictReader(fh_a)}
            rows_b = {r.get("claim_id"): r for r in csv.DictReader(fh_b)}
        for cid in sorted(set(rows_a) & set(rows_b), key=str):
            if rows_a[cid].get("numbers") != rows_b[cid].get("numbers"):
                print(
                    f"NUMBERS {rel} {cid}: the claim quotes other numbers (same verdict if not listed as DIFF)"
                )
    npz = [r for r in common if r.endswith(".npz")]
    print(f"npz files: {len(npz)}, byte-identical: {sum(sha(fa[r]) == sha(fb[r]) for r in npz)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument(
        "--ignore-timing",
        action="store_true",
        help="also ignore every other wall/CPU time, duration and timestamp (runs on different machines)",
    )
    args = parser.parse_args(argv)
    for path in (args.before, args.after):
        if not path.is_dir():
            parser.error(f"{path}: not a directory")
    result = compare(args.before, args.after, args.ignore_timing)
    report(args.before, args.after, result)
    return 1 if result["diffs"] or result["only_a"] or result["only_b"] else 0


if __name__ == "__main__":
    sys.exit(main())
