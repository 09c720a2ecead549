"""Learning curves of the aviPAM quick grid's methods: where each run meets the convergence rule.

Why: the quick grid's budgets (``grids.quick.avipam`` in config/config.yaml) must let the runs
converge by the project's rule (``noisyor_bench.inference.convergence``), within the grid's
15-minute target.  This script trains one method on one corpus per seed far past its quick
budget and records, per epoch / traced Gibbs iteration / scikit-learn pass, the value the rule
monitors and the CPU seconds (``time.process_time``: the machine is shared, wall time is not
the cost).  ``summarize`` then finds, per run, the first budget at which the rule says
"converged" (``first``), the first from which it says so at every later point measured
(``stable``), and where patience would have stopped an aviPAM run.

Monitored values (as the workflow records them):

* aviPAM: the training NELBO per document of each epoch (no validation split; docs/avipam.md);
* collapsed Gibbs (tomotopy): minus the log-likelihood per word, traced every ``--trace-every``
  iterations (``summarize --trace-every`` judges at coarser strides too);
* scikit-learn LDA: the log of scikit-learn's training perplexity after every pass (its own
  bound, ``evaluate_every=1``), i.e. its NELBO per word.

Usage (corpora are the workflow's ``results/data/avipam-<corpus>.npz``)::

    python benchmarks/avipam_curves.py run --data DIR --method avipam-pam4 --corpus 20news \
        --seeds 0 1 --epochs 120 --out benchmarks/results/avipam_curves
    python benchmarks/avipam_curves.py summarize --out benchmarks/results/avipam_curves \
        --csv benchmarks/results/avipam_curves.csv

``run`` writes one ``<method>_<corpus>_n<N>[_lr<lr>]_seed<s>.csv`` per run (columns ``step``,
``value``, ``cpu_seconds`` cumulative); ``summarize`` writes one row per run.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import math
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from noisyor_bench.data.corpora.bow import load_corpus
from noisyor_bench.experiments.avipam import cells
from noisyor_bench.inference.convergence import relative_improvement
from noisyor_bench.infra.io import write_csv_atomic

WINDOW, REL_TOL, PATIENCE = 5, 1e-3, 10
CURVE_COLUMNS = ("step", "value", "cpu_seconds")  # of each run's <name>.csv


def quick_section() -> dict[str, Any]:
    config = yaml.safe_load(Path("config/config.yaml").read_text())
    return dict(config["grids"]["quick"]["avipam"])


def run_name(method: str, corpus: str, n: int, seed: int, lr: float | None) -> str:
    lr_part = "" if lr is None else f"_lr{lr:g}"
    return f"{method}_{corpus}_n{n}{lr_part}_seed{seed}"


def curve_avipam(
    counts: Any, settings: dict[str, Any], seed: int, epochs: int, partial: Path | None = None
) -> list[tuple[int, float, float]]:
    from noisyor_bench.experiments.avipam.methods import AVIPAM_STRUCTURES, avipam_config
    from noisyor_bench.inference.topics import avipam
    from noisyor_bench.models.topics.pam import make_structure

    kind, sizes = AVIPAM_STRUCTURES[settings["method"]](settings["sizes"])
    config = avipam.with_overrides(avipam_config(settings), max_epochs=epochs, patience=10**6)
    rows: list[tuple[int, float, float]] = []
    start = time.process_time()

    def progress(record: Any) -> None:
        rows.append((int(record.epoch), float(record.train_nelbo), time.process_time() - start))
        if partial is not None:  # the curve so far, readable while the run goes on
            with open(partial, "a") as handle:
                handle.write(",".join(str(x) for x in rows[-1]) + "\n")

    try:
        avipam.fit_avipam(counts, None, make_structure(kind, sizes), config, seed=seed, progress=progress)
    except Exception as err:  # a diverged collapse-study run: keep the curve so far
        print(f"  stopped: {err}")
    return rows


def curve_gibbs(
    counts: Any, settings: dict[str, Any], seed: int, iterations: int, trace: int
) -> list[tuple[int, float, float]]:
    from noisyor_bench.inference.topics import gibbs, pam_gibbs

    sizes = settings["sizes"]
    start = time.process_time()
    if settings["method"] == "lda-gibbs":
        k = int(sizes["sub"])
        fit = gibbs.fit_lda_gibbs(counts, k, 50.0 / k, 0.01, iterations, seed, trace_interval=trace)
    else:
        fit = pam_gibbs.fit_pam_gibbs(
            counts, int(sizes["super"]), int(sizes["sub"]), iterations, seed, trace_interval=trace
        )
    cpu = time.process_time() - start
    wall = fit.train_seconds
    # the trace's seconds are wall seconds of training: scale them to the run's CPU seconds
    return [(int(it), -float(ll), float(sec) * cpu / max(wall, 1e-9)) for it, ll, sec in fit.trace]


def curve_sklearn(
    counts: Any, settings: dict[str, Any], seed: int, passes: int
) -> list[tuple[int, float, float]]:
    from sklearn.decomposition import LatentDirichletAllocation
    from threadpoolctl import threadpool_limits

    k = int(settings["sizes"]["sub"])
    model = LatentDirichletAllocation(
        n_components=k,
        learning_method="online" if settings["method"] == "lda-online" else "batch",
        max_iter=passes,
        evaluate_every=1,
        perp_tol=0.0,
        verbose=1,
        n_jobs=1,
        random_state=seed,
    )
    buf = io.StringIO()
    start = time.process_time()
    with threadpool_limits(limits=1), contextlib.redirect_stdout(buf):
        model.fit(counts.astype(np.float64))
    cpu = time.process_time() - start
    values = [float(m) for m in re.findall(r"perplexity: ([0-9.eE+-]+)", buf.getvalue())]
    # evaluation included in the CPU time (the workflow evaluates every pass as well)
    return [(i + 1, math.log(v), cpu * (i + 1) / len(values)) for i, v in enumerate(values)]


def cmd_run(args: argparse.Namespace) -> None:
    from noisyor_bench.infra.device import set_threads

    set_threads(1)
    sec = quick_section()
    corpus = load_corpus(Path(args.data) / f"avipam-{args.corpus}.npz")
    counts = corpus.train
    if args.max_train_docs:
        counts = counts[: args.max_train_docs]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        if args.method.startswith("collapse:"):
            _, variant, lr = args.method.split(":")
            cell = cells.RunCell(
                "collapse",
                args.corpus,
                cells.collapse_method(variant, float(lr)),
                seed,
                args.max_train_docs or 0,
            )
            sec_c = {**sec, "collapse": {**sec["collapse"], "max_train_docs": args.max_train_docs}}
            settings = cells.cell_settings(sec_c, cell)
            settings["method"] = cells.COLLAPSE_METHOD
            name = run_name(f"collapse-{variant}", args.corpus, args.max_train_docs or 0, seed, float(lr))
        else:
            cell = cells.RunCell("small", args.corpus, args.method, seed, args.max_train_docs or 0)
            settings = cells.cell_settings(sec, cell)
            if args.lr is not None:
                settings["avi"] = {**settings["avi"], "lr": args.lr}
            name = run_name(args.method, args.corpus, args.max_train_docs or 0, seed, args.lr)
        method = settings["method"]
        if method.startswith("avipam"):
            partial = out / f"{name}.partial"
            partial.write_text(",".join(CURVE_COLUMNS) + "\n")
            rows = curve_avipam(counts, settings, seed, args.epochs, partial)
            partial.unlink()
        elif method.endswith("gibbs"):
            rows = curve_gibbs(counts, settings, seed, args.epochs, args.trace_every)
        else:
            rows = curve_sklearn(counts, settings, seed, args.epochs)
        write_csv_atomic(out / f"{name}.csv", [dict(zip(CURVE_COLUMNS, row, strict=True)) for row in rows])
        last = rows[-1] if rows else (0, math.nan, 0.0)
        print(f"{name}: {len(rows)} points, last step {last[0]} value {last[1]:.5g}, {last[2]:.1f} CPU s")


def verdicts(values: list[float], window: int) -> list[bool | None]:
    """The plateau verdict if the run had stopped after each point (None: too few points)."""
    out: list[bool | None] = []
    for n in range(1, len(values) + 1):
        _, _, rel = relative_improvement(values[:n], window)
        out.append(None if rel is None else rel < REL_TOL)
    return out


def patience_stop(values: list[float], patience: int) -> int | None:
    best, bad = math.inf, 0
    for i, v in enumerate(values):
        if v < best:
            best, bad = v, 0
        else:
            bad += 1
            if bad >= patience:
                return i
    return None


def summarize_one(path: Path, stride: int) -> dict[str, Any]:
    rows = list(csv.DictReader(open(path)))
    steps = [int(r["step"]) for r in rows]
    values = [float(r["value"]) for r in rows]
    cpu = [float(r["cpu_seconds"]) for r in rows]
    if stride > 1:  # judge a Gibbs trace at a coarser trace interval
        keep = [i for i, s in enumerate(steps) if s % stride == 0]
        steps, values, cpu = [steps[i] for i in keep], [values[i] for i in keep], [cpu[i] for i in keep]
    finite = [i for i, v in enumerate(values) if math.isfinite(v)]
    steps, values, cpu = [steps[i] for i in finite], [values[i] for i in finite], [cpu[i] for i in finite]
    v = verdicts(values, WINDOW)
    first = next((steps[i] for i, ok in enumerate(v) if ok), None)
    stable = None
    for i in range(len(v) - 1, -1, -1):
        if not v[i]:
            break
        stable = steps[i]
    stop = patience_stop(values, PATIENCE)
    per_step = (cpu[-1] - cpu[0]) / max(steps[-1] - steps[0], 1) if len(steps) > 1 else math.nan
    return {
        "run": path.stem,
        "trace_every": stride if stride > 1 else "",
        "points": len(steps),
        "last_step": steps[-1] if steps else 0,
        "final_value": round(values[-1], 5) if values else "",
        "first_converged": first if first is not None else "",
        "stable_converged": stable if stable is not None else "",
        "patience_stop": steps[stop] if stop is not None else "",
        "cpu_s_per_step": round(per_step, 4),
        "cpu_s_total": round(cpu[-1], 1) if cpu else "",
    }


def cmd_summarize(args: argparse.Namespace) -> None:
    rows = []
    for path in sorted(Path(args.out).glob("*.csv")):
        strides = [1] if "gibbs" not in path.stem else [int(s) for s in args.trace_every]
        rows += [summarize_one(path, s) for s in strides]
    write_csv_atomic(args.csv, rows)
    for r in rows:
        print(" | ".join(str(x) for x in r.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--data", required=True)
    run.add_argument("--method", required=True, help="a table method, or collapse:<variant>:<lr>")
    run.add_argument("--corpus", required=True)
    run.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    run.add_argument("--epochs", type=int, required=True, help="epochs / Gibbs iterations / passes")
    run.add_argument("--trace-every", type=int, default=5)
    run.add_argument("--max-train-docs", type=int, default=0)
    run.add_argument("--lr", type=float, default=None)
    run.add_argument("--out", required=True)
    run.set_defaults(fn=cmd_run)
    summ = sub.add_parser("summarize")
    summ.add_argument("--out", required=True)
    summ.add_argument("--csv", required=True)
    summ.add_argument("--trace-every", nargs="+", default=["5", "10", "20"])
    summ.set_defaults(fn=cmd_summarize)
    args = parser.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
