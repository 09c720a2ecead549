"""Compare two results directories of one config (a manual check, e.g. before/after a refactor).

    python tests/compare_results.py RESULTS_BEFORE RESULTS_AFTER

Every file both hold is compared byte for byte; a file that differs counts as equal when it
differs only by what two executions legitimately do: the results directory's own path, wall
times (keys and columns named ``*seconds``, ``*_time``, ``time_s``, ``*time_to_quality``,
``train_minutes``, their ``_median``/``_low``/``_high`` and ``timing``, and their table statistics; ``.npz`` arrays named ``seconds``), provenance
records and sidecars, and ``torch.save``'s random serialization id (``.pt`` files compare their
tensors).  A claims table compares its verdicts and ids; ``numbers`` that differ are listed
(a claim on wall time quotes the times). Logs, Snakemake
benchmarks, ``params/`` (argument files named by a hash of paths), HTML views (they embed the
compared CSVs) and the runtime tables are left out. Prints the counts, the differing files and
how many ``.npz`` files (datasets, posteriors) are byte-identical.
"""

import csv
import hashlib
import json
import sys
from pathlib import Path

A, B = Path(sys.argv[1]), Path(sys.argv[2])
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
    "runtime.png",
    "runtime.pdf",
    "runtime.csv",
    "runtime.md",
    "runtime_jobs.csv",
    "runtime_jobs.md",
}


def sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def is_time(name: str) -> bool:
    """A key or column holding a wall time (or a statistic of one: ``time_s_mean``)."""
    base = name.removesuffix("_mean").removesuffix("_values").removesuffix("_ci95").removesuffix("_n")
    return (
        name in TIME_KEYS
        or "seconds" in name
        or base in ("time_s", "train_minutes", "timing")  # timing: a time's median and spread
        or base.startswith(("time_s_", "train_minutes_"))  # ..._median, _low, _high
        or base.endswith(("_time", "time_to_quality"))
        or "time_to_quality_" in base
    )


def strip(obj):
    if isinstance(obj, dict):
        return {k: strip(v) for k, v in obj.items() if not is_time(k)}
    if isinstance(obj, list):
        return [strip(v) for v in obj]
    return obj


def files(root):
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


fa, fb = files(A), files(B)
only_a, only_b = sorted(set(fa) - set(fb)), sorted(set(fb) - set(fa))
same = diff = 0
diffs = []
for rel in sorted(set(fa) & set(fb)):
    pa, pb = fa[rel], fb[rel]
    if sha(pa) == sha(pb):
        same += 1
        continue
    try:
        ta = pa.read_text().replace(str(A), "<R>")
        tb = pb.read_text().replace(str(B), "<R>")
        if ta == tb:
            same += 1
            continue
    except UnicodeDecodeError:
        ta = tb = None
    if pa.suffix == ".json" and ta is not None:
        try:
            if strip(json.loads(ta)) == strip(json.loads(tb)):
                same += 1
                continue
        except Exception:
            pass
    if pa.suffix == ".csv":
        import io as _io

        ra, rb = list(csv.reader(_io.StringIO(ta))), list(csv.reader(_io.StringIO(tb)))
        if ra and rb and ra[0] == rb[0]:
            drop = {i for i, c in enumerate(ra[0]) if is_time(c)}
            if rel.rsplit("/", 1)[-1].startswith("claims"):
                drop |= {ra[0].index("numbers")} if "numbers" in ra[0] else set()
            if [[v for i, v in enumerate(r) if i not in drop] for r in ra] == [
                [v for i, v in enumerate(r) if i not in drop] for r in rb
            ]:
                same += 1
                continue
    if pa.suffix == ".npz":
        import numpy as np

        xa, xb = np.load(pa, allow_pickle=False), np.load(pb, allow_pickle=False)
        if set(xa.files) == set(xb.files) and all(
            k == "seconds" or np.array_equal(xa[k], xb[k], equal_nan=True) for k in xa.files
        ):
            same += 1
            continue
    if pa.suffix == ".pt":
        import torch

        def _equal(u, v):
            if isinstance(u, dict):
                return isinstance(v, dict) and set(u) == set(v) and all(_equal(u[k], v[k]) for k in u)
            return torch.equal(u, v) if torch.is_tensor(u) else u == v

        if _equal(torch.load(pa, weights_only=False), torch.load(pb, weights_only=False)):
            same += 1
            continue
    diff += 1
    diffs.append(rel)
print(
    f"compared {len(set(fa) & set(fb))} files: {same} equal (bytes, or up to timings/provenance), {diff} differ"
)
print("only in before:", only_a[:30])
print("only in after:", only_b[:30])
for d in diffs[:60]:
    print("DIFF", d)
claims = [r for r in set(fa) & set(fb) if r.endswith(".csv") and r.rsplit("/", 1)[-1].startswith("claims")]
for rel in sorted(claims):
    with open(fa[rel], newline="") as fh_a, open(fb[rel], newline="") as fh_b:
        rows_a = {r["claim_id"]: r for r in csv.DictReader(fh_a)}
        rows_b = {r["claim_id"]: r for r in csv.DictReader(fh_b)}
    for cid in sorted(set(rows_a) & set(rows_b)):
        if rows_a[cid].get("numbers") != rows_b[cid].get("numbers"):
            print(f"NUMBERS {rel} {cid}: the claim quotes other numbers (same verdict if not listed as DIFF)")
npz = [r for r in set(fa) & set(fb) if r.endswith(".npz")]
print(f"npz files: {len(npz)}, byte-identical: {sum(sha(fa[r]) == sha(fb[r]) for r in npz)}")
