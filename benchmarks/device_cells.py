"""What a paper-grid AVI/ACP training cell costs on a GPU, beside the CPU, in one process.

The paper grid's most expensive AVI/ACP cells (``grids.paper`` of ``config/config.yaml``) are
trained with the project's own trainers on the accelerator that
:func:`noisyor_bench.infra.device.resolve_device` selects (the function every CUDA job of the
workflow goes through: on a machine with several GPUs it claims one through the GPU lock,
:mod:`noisyor_bench.infra.gpulock`) and on the CPU with 1 torch thread (as the workflow's jobs
run) and with all cores, measurement after measurement in the same process:

* ``R = 1``: one run, :meth:`AmortizedMethod.fit` (a job of a grid with ``batched: false``);
* ``R = 5``: the cell's 5 seeds trained as one computation,
  :func:`noisyor_bench.inference.noisyor.batched.fit_batched` (the paper grid's ``batched: true``).

One measurement: a fit of ``--epochs + 2`` epochs of ``--steps`` minibatches (the first
``steps * batch`` rows of the cell's N_train rows; fewer when N_train is smaller), validating
only at its last epoch: epoch 1 is the warm-up (kernels, cuSPARSE/cuBLAS handles, allocator),
epochs 2..E+1 are pure training (median = the steady epoch of ``steps`` steps), and the last
epoch's time beyond that median is the validation (the full validation split, as the workflow).
Epochs are timed in the trainer's progress callback after ``torch.cuda.synchronize``; one
step of AVI and ACP on every device before the first measurement takes the process's first-use
costs (CUDA context, lazy imports) out of the warm-up column.  A
paper-grid epoch at N_train is then extrapolated as

    epoch(N) = steps(N) * step_seconds + validation_seconds,
    steps(N) = ceil(N / batch) * passes (the trainer's min_epoch_steps rule),

and a run as ``max_epochs`` such epochs (the grid's cap: 500; runs stopped early by patience
cost less; checkpoint writes and the final test evaluation are not included).

Datasets are read from ``--data-dir`` (``results/data/<name>.npz``) when they hold enough
training rows; otherwise they are built in memory (a temporary cache directory) by the
function behind ``noisyor-bench acp-make-dataset`` from the config's ``datasets`` entry, with the
training pool enlarged to the cell's N_train when it is larger (smaller training sets are
prefixes of larger ones, validation and test do not change: ``data/synthetic/build.py``).

``--budget-s`` (default 300) bounds the wall time since the start: a measurement that the
ones before it predict to end past it is skipped, one running past it stops after its
current epoch (its step time is kept, its epoch is left blank), and the table is written with
what was measured.  Order: every cell at R = 1 (GPU, CPU 1 thread, CPU all threads), then the
GPU at R = 5, then the CPU at R = 5.

    PYTHONPATH=workflow python benchmarks/device_cells.py --out-dir "$OUT"     # on the GPU machine
    python benchmarks/device_cells.py --smoke --out-dir /tmp/devcells          # seconds, CPU

Writes ``device_cells.md`` and ``device_cells.csv`` (one row per measurement and N_train) to
``--out-dir`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

try:
    from _common import int_list, write_results
except ImportError:  # _common loads the config validator (jsonschema), absent on a bare GPU machine

    def int_list(text: str) -> list[int]:
        """``"1,16"`` -> ``[1, 16]`` (as ``_common.int_list``)."""
        try:
            return [int(item) for item in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None

    def write_results(out: str | Path, rows: Sequence[Mapping[str, Any]], lines: Sequence[str]) -> None:
        """The CSV ``out`` and the Markdown beside it, atomically (as ``_common.write_results``)."""
        from noisyor_bench.infra.io import write_csv_atomic, write_text_atomic

        write_csv_atomic(out, rows)
        write_text_atomic(Path(out).with_suffix(".md"), "\n".join(lines) + "\n")


DEFAULT_CELLS = "syn-random-7:40000,syn-random-4:10000/40000,syn-random-1:10000"
INIT_KEY = "device-cells"


# ------------------------------------------------------------------------------ inputs
@dataclass(frozen=True)
class Cell:
    """A dataset and the N_train values whose epochs are extrapolated from its measurements."""

    dataset: str
    n_train: tuple[int, ...]


def cell_list(text: str) -> list[Cell]:
    """``"syn-random-7:40000,syn-random-4:10000/40000"`` -> cells (an argparse ``type``)."""
    cells = []
    for item in text.split(","):
        name, _, sizes = item.partition(":")
        try:
            n = tuple(int(s) for s in sizes.split("/"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected dataset:N[/N...], got {item!r}") from None
        if not name or not n or min(n) < 1:
            raise argparse.ArgumentTypeError(f"expected dataset:N[/N...], got {item!r}")
        cells.append(Cell(name, n))
    return cells


def read_config(path: Path, grid_name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(datasets, ACP's grid section)`` of the config, read as YAML (the schema validator,
    jsonschema, is not needed to read two sections and may be absent on the GPU machine)."""
    import yaml

    with open(path) as fh:
        cfg = yaml.safe_load(fh)
    grids = cfg.get("grids") or {}
    if grid_name not in grids:
        raise SystemExit(f"{path}: no grids.{grid_name}; grids: {sorted(grids)}")
    grid = grids[grid_name]
    return dict(cfg["datasets"]), dict(grid.get("acp") or grid)  # ACP's section (older configs: the grid)


def grid_cells(grid: Mapping[str, Any], dataset: str, n_train: int, method: str) -> str:
    """The grid's experiments holding (dataset, method, N_train), e.g. ``table4``; ``-`` if none."""
    hits = [
        name
        for name, exp in (grid.get("experiments") or {}).items()
        if dataset in (exp.get("datasets") or []) and n_train in ((exp.get("runs") or {}).get(method) or [])
    ]
    return "+".join(hits) or "-"


def load_dataset(
    name: str, n_max: int, specs: Mapping[str, Any], data_dir: Path, cache: Path
) -> tuple[dict[str, Any], str]:
    """The dataset's arrays with at least ``n_max`` training rows, and where they came from."""
    from noisyor_bench.infra.io import load_npz

    path = data_dir / f"{name}.npz"
    if path.exists():
        data = load_npz(path)
        if data["x_train"].shape[0] >= n_max:
            return data, str(path)
    if name not in specs:
        raise SystemExit(f"dataset {name!r} is neither in {data_dir} nor a config dataset")
    spec = dict(specs[name])
    if spec.get("family") != "random" and spec.get("patterns") != "syn-pattern":
        raise SystemExit(
            f"dataset {name!r} needs raw inputs; use the synthetic SYN-RANDOM / SYN-PATTERN sets"
        )
    from noisyor_bench.data.synthetic.build import build_dataset

    pool = int(spec["n_train_pool"])
    spec["n_train_pool"] = max(pool, n_max)
    start = time.perf_counter()
    arrays, _ = build_dataset(name, spec, None, cache)
    grown = f", training pool {pool} -> {n_max}" if n_max > pool else ""
    return arrays, f"built by acp-make-dataset's build_dataset in {time.perf_counter() - start:.1f} s{grown}"


# ------------------------------------------------------------------------------ measuring
class _OutOfTime(Exception):
    """Raised from the progress callback when the budget is spent."""


@dataclass
class Measurement:
    dataset: str
    method: str
    runs: int
    device: str  # the label: GPU, CPU 1 thr, CPU 16 thr
    threads: int
    status: str = "ok"
    rows: int = 0
    steps: int = 0  # minibatch steps per measured epoch
    epoch_times: list[float] = field(default_factory=list)  # synchronised, first = warm-up
    steady_epochs: int = 0
    wall: float = 0.0

    @property
    def steady(self) -> float | None:
        times = self.epoch_times[1 : 1 + self.steady_epochs]
        return statistics.median(times) if times else None

    @property
    def step_seconds(self) -> float | None:
        return None if self.steady is None else self.steady / self.steps

    @property
    def validation_seconds(self) -> float | None:
        if self.steady is None or len(self.epoch_times) < self.steady_epochs + 2:
            return None
        return max(0.0, self.epoch_times[self.steady_epochs + 1] - self.steady)

    @property
    def warmup_seconds(self) -> float | None:
        return None if self.steady is None else max(0.0, self.epoch_times[0] - self.steady)


def sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(
    m: Measurement,
    truth: Any,
    x_train: Any,
    x_val: Any,
    device: Any,
    hparams: Mapping[str, Any],
    batch: int,
    steps: int,
    epochs: int,
    deadline: float,
) -> None:
    """Fill ``m``: ``epochs + 2`` epochs of ``steps`` steps, validating at the last one only."""
    from noisyor_bench.inference.fitting import FitBudget
    from noisyor_bench.inference.noisyor.batched import fit_batched
    from noisyor_bench.inference.noisyor.registry import get_method
    from noisyor_bench.infra.device import set_threads

    set_threads(m.threads)
    m.rows = min(int(x_train.shape[0]), steps * batch)
    m.steps = math.ceil(m.rows / batch)
    m.steady_epochs = epochs
    total = epochs + 2
    budget = FitBudget(
        max_epochs=total, patience=total + 1, batch_size=batch, eval_every=total, min_epoch_steps=1
    )
    cls = get_method(m.method)
    methods = [
        cls(truth, "learning", dict(hparams), seed, device, init_key=INIT_KEY) for seed in range(m.runs)
    ]
    marks: list[float] = []

    def tick(epoch: int) -> None:
        if epoch <= len(marks):  # fit_batched reports every run's record of an epoch
            return
        sync(device)
        marks.append(time.perf_counter())
        if time.perf_counter() > deadline and 2 <= len(marks) < total:
            raise _OutOfTime

    sync(device)
    start = time.perf_counter()
    try:
        if m.runs == 1:
            methods[0].fit(x_train[: m.rows], x_val, budget, progress=lambda r: tick(r.epoch))
        else:
            fit_batched(methods, x_train[: m.rows], x_val, budget, progress=lambda _i, r: tick(r.epoch))
    except _OutOfTime:
        m.status = "truncated (budget): validation not timed"
    m.epoch_times = [b - a for a, b in zip([start, *marks], marks)]
    m.steady_epochs = min(epochs, len(m.epoch_times) - 1)


def prime(devices: Sequence[tuple[str, Any, int]], truth: Any, x_train: Any, x_val: Any, batch: int) -> None:
    """One step of AVI and ACP on every device before the measurements, so the process's
    first-use costs (lazy imports, kernel libraries' handles) fall in no measurement's warm-up."""
    from noisyor_bench.inference.fitting import FitBudget
    from noisyor_bench.inference.noisyor.registry import get_method

    for dev in {str(d): d for _, d, _ in devices}.values():
        for method in ("avi", "acp"):
            get_method(method)(truth, "learning", {}, 0, dev, init_key=INIT_KEY).fit(
                x_train[:batch], x_val[:batch], FitBudget(max_epochs=1, batch_size=batch)
            )
        sync(dev)


def predicted_seconds(done: Sequence[Measurement], m: Measurement) -> float:
    """A measurement's wall time as the ones before it predict it: the same dataset and device
    (the other method, or R = 1 scaled: R times on a CPU, twice on the GPU); 0 if none."""
    ran = [d for d in done if d.epoch_times]  # skipped and failed ones predict nothing
    same = [d.wall for d in ran if (d.dataset, d.device, d.runs) == (m.dataset, m.device, m.runs)]
    if same:
        return max(same)
    single = [d.wall for d in ran if (d.dataset, d.device, d.runs) == (m.dataset, m.device, 1)]
    if single:
        return max(single) * (2 if m.device == "GPU" else m.runs)
    return 0.0


# ------------------------------------------------------------------------------ output
def machine(device: Any, started: float) -> str:
    import torch

    from noisyor_bench.infra.provenance import cpu_model

    cpu = cpu_model()
    gpu = "none"
    if device is not None:
        props = torch.cuda.get_device_properties(device)
        gpu = f"{props.name} ({props.total_memory / 2**30:.0f} GiB, CUDA {torch.version.cuda})"
    return (
        f"Machine: {cpu}; {os.cpu_count()} cores ({usable_cores()} usable); GPU: {gpu}; "
        f"torch {torch.__version__}; python {platform.python_version()}; "
        f"wall time {(time.perf_counter() - started) / 60:.1f} min"
    )


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity; os.cpu_count() counts the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def fmt(value: float | None, spec: str) -> str:
    return "" if value is None or not math.isfinite(value) else format(value, spec)


def result_rows(
    done: Sequence[Measurement],
    cells: Sequence[Cell],
    grid: Mapping[str, Any],
    device_names: Mapping[str, str],
) -> list[dict[str, Any]]:
    """One row per measurement and N_train, with the extrapolated epoch and run."""
    from noisyor_bench.inference.fitting import FitBudget
    from noisyor_bench.inference.training import passes_per_epoch

    gb = grid.get("budget") or {}
    paper = FitBudget(
        max_epochs=int(gb.get("max_epochs", 500)),
        batch_size=int(gb.get("batch_size", 128)),
        min_epoch_steps=int(gb.get("min_epoch_steps", 1)),
    )
    sizes = {c.dataset: c.n_train for c in cells}
    rows = []
    for m in done:
        for n in sizes[m.dataset]:
            steps = math.ceil(n / paper.batch_size) * passes_per_epoch(n, paper)
            epoch = None
            if m.step_seconds is not None and m.validation_seconds is not None:
                epoch = steps * m.step_seconds + m.validation_seconds
            rows.append(
                {
                    "cell": grid_cells(grid, m.dataset, n, m.method),
                    "dataset": m.dataset,
                    "n_train": n,
                    "method": m.method,
                    "runs": m.runs,
                    "device": m.device,
                    "device_name": device_names[m.device],
                    "threads": m.threads,
                    "status": m.status,
                    "rows_measured": m.rows,
                    "steps_measured": m.steps,
                    "epochs_timed": m.steady_epochs,
                    "step_ms": fmt(None if m.step_seconds is None else 1000 * m.step_seconds, ".3f"),
                    "validation_s": fmt(m.validation_seconds, ".4f"),
                    "warmup_s": fmt(m.warmup_seconds, ".3f"),
                    "steps_per_epoch": steps,
                    "epoch_scaled": "no" if steps == m.steps else f"from {m.steps} steps",
                    "epoch_s": fmt(epoch, ".4f"),
                    "max_epochs": paper.max_epochs,
                    "run_h_at_max_epochs": fmt(
                        None if epoch is None else epoch * paper.max_epochs / 3600, ".3f"
                    ),
                    "gpu_speedup": "",
                    "measure_wall_s": fmt(m.wall, ".1f"),
                }
            )
    for row in rows:  # CPU epoch / GPU epoch of the same cell, method and R
        gpu = next(
            (
                r
                for r in rows
                if r["device"] == "GPU"
                and (r["dataset"], r["n_train"], r["method"], r["runs"])
                == (row["dataset"], row["n_train"], row["method"], row["runs"])
            ),
            None,
        )
        if gpu is not None and row["device"] != "GPU" and gpu["epoch_s"] and row["epoch_s"]:
            row["gpu_speedup"] = f"{float(row['epoch_s']) / float(gpu['epoch_s']):.2f}"
    return rows


def markdown(rows: Sequence[Mapping[str, Any]], labels: Sequence[str], header: Sequence[str]) -> list[str]:
    """A wide table (one row per cell, method and R; a column group per device) and the
    measurements behind it."""
    keys = list(dict.fromkeys((r["cell"], r["dataset"], r["n_train"], r["method"], r["runs"]) for r in rows))
    cpu = [d for d in labels if d != "GPU"]
    cols = ["cell", "dataset", "N_train", "method", "R", "steps/epoch"]
    cols += [f"{d} s/epoch" for d in labels] + [f"{d} h/run" for d in labels]
    cols += [f"GPU speed-up vs {d}" for d in cpu] if "GPU" in labels else []
    lines = [*header, "", "| " + " | ".join(cols) + " |", "|" + "---|" * 5 + "---:|" * (len(cols) - 5)]
    for key in keys:
        by = {
            r["device"]: r
            for r in rows
            if (r["cell"], r["dataset"], r["n_train"], r["method"], r["runs"]) == key
        }
        any_row = next(iter(by.values()))
        cells = [*map(str, key), str(any_row["steps_per_epoch"])]
        cells += [by[d]["epoch_s"] if d in by else "" for d in labels]
        cells += [by[d]["run_h_at_max_epochs"] if d in by else "" for d in labels]
        cells += (
            [f"{by[d]['gpu_speedup']}x" if d in by and by[d]["gpu_speedup"] else "" for d in cpu]
            if "GPU" in labels
            else []
        )
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Measurements (per dataset, method, R and device; the epoch columns above = steps/epoch x step + validation):",
        "",
        "| dataset | method | R | device | rows | steps timed | epochs timed | ms/step | validation s | warm-up s | wall s | status |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    seen = set()
    for r in rows:
        key = (r["dataset"], r["method"], r["runs"], r["device"])
        if key in seen:
            continue
        seen.add(key)
        lines.append(
            f"| {r['dataset']} | {r['method']} | {r['runs']} | {r['device']} | {r['rows_measured']} | "
            f"{r['steps_measured']} | {r['epochs_timed']} | {r['step_ms']} | {r['validation_s']} | "
            f"{r['warmup_s']} | {r['measure_wall_s']} | {r['status']} |"
        )
    return lines


# ------------------------------------------------------------------------------ driver
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--cells", type=cell_list, default=DEFAULT_CELLS, help="dataset:N[/N...],... (default %(default)s)"
    )
    ap.add_argument("--methods", default="avi,acp")
    ap.add_argument(
        "--runs", type=int_list, default="1,5", help="R: 1 = method.fit, >1 = fit_batched of R seeds"
    )
    ap.add_argument(
        "--device", default="auto", help="auto, cuda, cuda:N or cpu (resolve_device; cpu = CPU only)"
    )
    ap.add_argument(
        "--cpu-threads",
        type=int_list,
        default=None,
        help="torch threads of the CPU measurements (default: 1 and the usable cores)",
    )
    ap.add_argument("--steps", type=int, default=40, help="minibatch steps per timed epoch")
    ap.add_argument("--epochs", type=int, default=3, help="steady epochs timed (after one warm-up epoch)")
    ap.add_argument(
        "--n-val", type=int, default=None, help="validation rows (default: the whole split, as the workflow)"
    )
    ap.add_argument(
        "--hparams", default="{}", help="AVI/ACP hyperparameters as JSON (default: the search's draw 0)"
    )
    ap.add_argument("--budget-s", type=float, default=300.0, help="no new measurement past this wall time")
    ap.add_argument("--grid", default="paper")
    ap.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    ap.add_argument("--data-dir", type=Path, default=ROOT / "results" / "data")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument(
        "--smoke", action="store_true", help="syn-random-1 at N_train 512, 2 steps, 256 validation rows"
    )
    args = ap.parse_args(argv)
    started = time.perf_counter()
    deadline = started + args.budget_s
    if args.smoke:
        args.cells, args.steps, args.epochs, args.n_val = [Cell("syn-random-1", (512,))], 2, 2, 256
        args.runs = [1, 2]
        args.cpu_threads = args.cpu_threads or [1]

    import numpy as np
    import torch

    from noisyor_bench.infra.device import describe, resolve_device, set_threads
    from noisyor_bench.models.noisyor.model import NoisyOR

    set_threads(1)
    specs, grid = read_config(args.config, args.grid)
    batch = int((grid.get("budget") or {}).get("batch_size", 128))
    hparams = json.loads(args.hparams)
    accel = resolve_device(args.device)  # claims a GPU through the lock on a multi-GPU machine
    accel = accel if accel.type == "cuda" else None
    devices: list[tuple[str, Any, int]] = []
    names: dict[str, str] = {}
    if accel is not None:
        torch.zeros(1, device=accel)  # the CUDA context, outside every measurement
        sync(accel)
        devices.append(("GPU", accel, 1))
        names["GPU"] = describe(accel)
    cpu = torch.device("cpu")
    for t in dict.fromkeys(args.cpu_threads or [1, usable_cores()]):
        devices.append((f"CPU {t} thr", cpu, t))
        names[f"CPU {t} thr"] = describe(cpu)
    labels = [d[0] for d in devices]
    print(
        f"devices: {', '.join(f'{lab} ({names[lab]})' for lab in labels)}; budget {args.budget_s:.0f} s",
        flush=True,
    )

    data: dict[str, tuple[Any, Any, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="device-cells-") as cache:
        for c in args.cells:
            arrays, source = load_dataset(c.dataset, max(c.n_train), specs, args.data_dir, Path(cache))
            truth = NoisyOR.from_numpy(arrays["theta"], arrays["theta0"], arrays["mu"])
            x_train = torch.as_tensor(np.asarray(arrays["x_train"][: max(c.n_train)]))
            x_val = torch.as_tensor(np.asarray(arrays["x_val"][: args.n_val]))
            data[c.dataset] = (truth, x_train, x_val)
            print(f"{c.dataset}: D={truth.D} K={truth.K} N_val={x_val.shape[0]} ({source})", flush=True)

    first = data[args.cells[0].dataset]
    prime(devices, *first, batch)
    print(f"primed in {time.perf_counter() - started:.1f} s since the start", flush=True)

    plan: list[tuple[Measurement, Any]] = []  # R = 1 everywhere, then the GPU at R > 1, then the CPU
    for r in args.runs:
        for on_gpu in [True, False] if r > 1 else [None]:
            for c in args.cells:
                for method in args.methods.split(","):
                    for label, dev, threads in devices:
                        if on_gpu is None or on_gpu == (label == "GPU"):
                            plan.append((Measurement(c.dataset, method, r, label, threads), dev))
    done: list[Measurement] = []
    for m, dev in plan:
        left = deadline - time.perf_counter()
        need = predicted_seconds(done, m)
        if left <= 0 or need > left:
            m.status = f"skipped (budget: {max(left, 0):.0f} s left, ~{need:.0f} s needed)"
            print(f"{m.dataset} {m.method} R={m.runs} {m.device}: {m.status}", flush=True)
            done.append(m)
            continue
        truth, x_train, x_val = data[m.dataset]
        t0 = time.perf_counter()
        try:
            measure(m, truth, x_train, x_val, dev, hparams, batch, args.steps, args.epochs, deadline)
        except Exception as err:  # a failing device must not lose the other measurements
            traceback.print_exc()
            m.status = f"error: {type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}"
        finally:
            set_threads(1)
        m.wall = time.perf_counter() - t0
        done.append(m)
        print(
            f"{m.dataset} {m.method} R={m.runs} {m.device}: {fmt(m.step_seconds and 1000 * m.step_seconds, '.2f')} ms/step, "
            f"validation {fmt(m.validation_seconds, '.3f')} s, warm-up {fmt(m.warmup_seconds, '.2f')} s, "
            f"{m.wall:.1f} s [{m.status}]",
            flush=True,
        )

    rows = result_rows(done, args.cells, grid, names)
    gb = grid.get("budget") or {}
    header = [
        f"# Paper-grid AVI/ACP cells by device (benchmarks/device_cells.py), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "",
        machine(accel, started),
        "",
        f"Grid `{args.grid}`: batch {batch}, max_epochs {gb.get('max_epochs')}, min_epoch_steps "
        f"{gb.get('min_epoch_steps')}; hyperparameters {json.dumps(hparams) if hparams else 'the defaults (search draw 0)'}; "
        f"learning mode, float32. Per measurement: 1 warm-up epoch, the median of {args.epochs} epochs of "
        f"{args.steps} steps (one process, devices alternating per cell), validation on "
        f"{'all' if args.n_val is None else args.n_val} validation rows timed at the last epoch. "
        "s/epoch = steps/epoch x the measured step + the validation (scaled from the steps timed); "
        "h/run = max_epochs such epochs (a cap: patience stops most runs earlier; no checkpoints, no test "
        "evaluation). R = 1: one run (`method.fit`); R > 1: R seeds as one computation (`fit_batched`, "
        "the paper grid's `batched: true`), the times are for all R runs. GPU speed-up = CPU s/epoch / "
        "GPU s/epoch. GPU at 1 torch thread; cell `-`: not in the grid (pool enlarged for the timing).",
    ]
    lines = markdown(rows, labels, header)
    print("\n".join(lines), flush=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_results(args.out_dir / "device_cells.csv", rows, lines)
    print(f"wrote {args.out_dir / 'device_cells.md'} and {args.out_dir / 'device_cells.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
