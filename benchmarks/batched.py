"""Runs per hour: one AVI/ACP run per process (today's path) against R runs batched in one.

For every (dataset, method) this times, in alternation and each in a fresh subprocess:

* ``single``: one process trains one run with :meth:`AmortizedMethod.fit` (what a workflow job
  does, without its I/O);
* ``batched R``: one process trains R runs (seeds 0..R-1, identical hyperparameters) with
  :func:`noisyor_bench.inference.noisyor.batched.fit_batched`;
* ``import``: a process that only imports torch and the package (the interpreter and import
  cost every job pays).

All runs train exactly ``--epochs`` epochs (patience > epochs), so the work is equal.  From
each measurement: the steady epoch time (median over epochs 2..E of the epoch records), the
fit's warm-up (its wall time beyond E steady epochs: set-up and the slower first epoch) and
the process overhead (wall time of the process minus its fit: interpreter, imports, data), hence

    runs/hour(E) = 3600 * R / (overhead + warm-up + E * epoch_seconds)

at the length ``E = --run-epochs`` of a real run (default 100: a converged SYN-PATTERN run);
examples per second per run = N_train / epoch_seconds (each of the R runs sees its
N_train rows per epoch) and in total R times that.  The best
of ``--repeats`` is reported.  Prints a table and writes ``benchmarks/results/batched.{md,csv}``.

    python benchmarks/batched.py --data-dir /tmp/data               # datasets built there if missing
    python benchmarks/batched.py --quick                            # syn-pattern, ACP, R = 1, 8
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

IMPORTS = "import torch; import noisyor_bench.inference.noisyor.acp, noisyor_bench.inference.noisyor.avi, noisyor_bench.inference.noisyor.batched"


# ------------------------------------------------------------------------------ worker
def worker(spec: dict) -> dict:
    """Train ``spec['runs']`` runs (0 = one single-run fit) and time the fit only."""
    import numpy as np
    import torch

    from noisyor_bench.inference.fitting import FitBudget
    from noisyor_bench.inference.noisyor.batched import fit_batched
    from noisyor_bench.inference.noisyor.registry import get_method
    from noisyor_bench.infra.io import load_npz
    from noisyor_bench.models.noisyor.model import NoisyOR

    torch.set_num_threads(spec["threads"])
    data = load_npz(Path(spec["data_dir"]) / f"{spec['dataset']}.npz")
    truth = NoisyOR.from_numpy(data["theta"], data["theta0"], data["mu"])
    x_train = np.asarray(data["x_train"])[: spec["n_train"]]
    x_val = np.asarray(data["x_val"])[: spec["n_val"]]
    budget = FitBudget(max_epochs=spec["epochs"], patience=spec["epochs"] + 1, batch_size=spec["batch_size"])
    cls = get_method(spec["method"])
    n = max(1, spec["runs"])
    methods = [cls(truth, "learning", {}, seed, init_key="bench") for seed in range(n)]
    start = time.perf_counter()
    if spec["runs"] == 0:
        history = methods[0].fit(x_train, x_val, budget)
    else:
        history = fit_batched(methods, x_train, x_val, budget)[0].history
    fit = time.perf_counter() - start
    return {"fit_seconds": fit, "epoch_seconds": [r.seconds for r in history]}


def _subprocess(args: list[str]) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow"), "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, *args], check=True, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, out.stdout


def measure(spec: dict) -> dict:
    wall, out = _subprocess([__file__, "--worker", json.dumps(spec)])
    result = json.loads(out.strip().splitlines()[-1])
    steady = sorted(result["epoch_seconds"][1:] or result["epoch_seconds"])
    return {"wall_seconds": wall, "fit_seconds": result["fit_seconds"], "steady": steady[len(steady) // 2]}


def measure_import() -> float:
    wall, _ = _subprocess(["-c", IMPORTS])
    return wall


# ------------------------------------------------------------------------------ driver
def ensure_datasets(data_dir: Path, names: list[str]) -> None:
    for name in names:
        path = data_dir / f"{name}.npz"
        if not path.exists():
            print(f"building {path} (noisyor-bench acp-make-dataset)", flush=True)
            _subprocess(
                [
                    "-m",
                    "noisyor_bench",
                    "acp-make-dataset",
                    "--name",
                    name,
                    "--config",
                    str(ROOT / "config" / "config.yaml"),
                    "--out",
                    str(path),
                ]
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--data-dir", type=Path, default=ROOT / "results" / "data")
    ap.add_argument("--datasets", default="syn-pattern")
    ap.add_argument("--methods", default="acp,avi")
    ap.add_argument("--sizes", default="1,8,32,100", help="batch sizes R")
    ap.add_argument("--epochs", type=int, default=4, help="epochs measured per process")
    ap.add_argument("--run-epochs", type=int, default=100, help="epochs of a real run (for runs/hour)")
    ap.add_argument("--n-train", type=int, default=1000)
    ap.add_argument("--n-val", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="syn-pattern, ACP, R = 1, 8, 3 epochs, one repeat")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "batched")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    if args.quick:
        args.datasets, args.methods, args.sizes, args.epochs, args.repeats = "syn-pattern", "acp", "1,8", 3, 1
    datasets = args.datasets.split(",")
    sizes = [int(s) for s in args.sizes.split(",")]
    args.data_dir.mkdir(parents=True, exist_ok=True)
    ensure_datasets(args.data_dir, datasets)

    imports = []
    best: dict[tuple, dict] = {}
    for repeat in range(args.repeats):
        imports.append(measure_import())
        for dataset in datasets:
            for method in args.methods.split(","):
                for runs in [0, *sizes]:  # alternating: single, R1, R8, ... per repeat
                    spec = {
                        "dataset": dataset,
                        "method": method,
                        "runs": runs,
                        "data_dir": str(args.data_dir),
                        "n_train": args.n_train,
                        "n_val": args.n_val,
                        "epochs": args.epochs,
                        "batch_size": args.batch_size,
                        "threads": args.threads,
                    }
                    m = measure(spec)
                    key = (dataset, method, runs)
                    print(
                        f"repeat {repeat}: {key} fit {m['fit_seconds']:.2f}s wall {m['wall_seconds']:.2f}s",
                        flush=True,
                    )
                    if key not in best or m["steady"] < best[key]["steady"]:
                        best[key] = m

    import_s = min(imports)
    rows = []
    for (dataset, method, runs), m in best.items():
        r = max(1, runs)
        epoch_s = m["steady"]
        warmup = max(0.0, m["fit_seconds"] - args.epochs * epoch_s)
        overhead = m["wall_seconds"] - m["fit_seconds"]
        per_hour = 3600.0 * r / (overhead + warmup + args.run_epochs * epoch_s)
        rows.append(
            {
                "dataset": dataset,
                "method": method,
                "path": "single" if runs == 0 else "batched",
                "R": r,
                "epoch_seconds": round(epoch_s, 4),
                "run_epoch_seconds": round(epoch_s / r, 4),
                "process_overhead_seconds": round(overhead, 2),
                "fit_warmup_seconds": round(warmup, 2),
                "examples_per_second_per_run": round(args.n_train / epoch_s, 1),
                "examples_per_second_total": round(args.n_train * r / epoch_s, 1),
                "runs_per_hour": round(per_hour, 1),
            }
        )
    for row in rows:
        single = next(
            x
            for x in rows
            if (x["dataset"], x["method"], x["path"]) == (row["dataset"], row["method"], "single")
        )
        row["speedup_runs_per_hour"] = round(row["runs_per_hour"] / single["runs_per_hour"], 2)

    header = list(rows[0])
    lines = [
        f"# Batched training (benchmarks/batched.py), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads "
        f"{args.threads}; N_train {args.n_train}, N_val {args.n_val}, batch {args.batch_size}, "
        f"{args.epochs} epochs measured, runs/hour at {args.run_epochs} epochs per run; "
        f"interpreter + torch + package import: {import_s:.2f} s.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(str(row[h]) for h in header) + " |" for row in rows),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(text)
    from noisyor_bench.infra.io import write_csv_atomic

    write_csv_atomic(args.out.with_suffix(".csv"), rows, header)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
