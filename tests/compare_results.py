"""Compare two results directories of one config (a manual check, e.g. before/after a refactor).

    python tests/compare_results.py RESULTS_BEFORE RESULTS_AFTER

Every file both hold is compared byte for byte; a file that differs counts as equal when it
differs only by what two executions legitimately do: the results directory's own path, wall
times (keys and columns named ``*seconds``), provenance records and sidecars. Logs, Snakemake
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
    "runtime.png",
    "runtime.pdf",
    "runtime.csv",
    "runtime.md",
    "runtime_jobs.csv",
    "runtime_jobs.md",
}


def sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def strip(obj):
    if isinstance(obj, dict):
        return {k: strip(v) for k, v in obj.items() if k not in TIME_KEYS and not k.endswith("_seconds")}
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
            drop = {i for i, c in enumerate(ra[0]) if "seconds" in c or c in TIME_KEYS}
            if [[v for i, v in enumerate(r) if i not in drop] for r in ra] == [
                [v for i, v in enumerate(r) if i not in drop] for r in rb
            ]:
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
npz = [r for r in set(fa) & set(fb) if r.endswith(".npz")]
print(f"npz files: {len(npz)}, byte-identical: {sum(sha(fa[r]) == sha(fb[r]) for r in npz)}")
