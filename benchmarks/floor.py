"""Floor benchmark: each heavy unit of the product beside a minimal implementation of the same mathematics.

For every heavy unit -- a noisy-OR (AVI/ACP) training step on SYN-RANDOM-7, an ACP Fig. 5 cell's
epoch, an aviPAM 4-PAM epoch, an APE training step and evaluation, a 4-PAM Gibbs sweep -- the
product's own code path and a short hand-written floor (``floor_<family>.py``: plain PyTorch /
numpy, no product import apart from data loading; for the Gibbs chain tomotopy called directly,
``floor_gibbs.py`` says why) are timed side by side in this one process: ``--repeats``
interleaved measurements (product, floor, product, floor, ...), so load from other jobs on the
machine hits both sides alike; the ratio is the median of the per-repeat ratios.  Before timing, every floor is
checked to compute the product's numbers on a small case (``check`` of each module, float64):
the ratio compares the same mathematics.

    python benchmarks/floor.py [--quick] [--repeats N] [--data-dir results/data] [--write-doc docs/performance.md]

Prints the table (unit, size, product ms, floor ms, ratio product/floor, CPU, threads), writes
``benchmarks/results/floor.json`` and ``floor.md``, and with ``--write-doc`` rewrites the
generated block of that page from the JSON (``floor_table.render_block``).
One torch thread, one tomotopy worker: as the workflow's jobs run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import floor_table  # noqa: E402

FAMILIES = ("floor_noisyor", "floor_avipam", "floor_ape", "floor_gibbs")
DATASETS = ("syn-random-1", "syn-random-7", "avipam-20news", "ape-mdreviews")


def cpu_name() -> str:
    """``lscpu``'s model name (the project's provenance helper reads the same)."""
    from noisyor_bench.infra.provenance import cpu_model

    return cpu_model()


def measure(unit: floor_table.Unit, repeats: int) -> dict:
    """``repeats`` interleaved measurements of both sides.  Times: medians in milliseconds; the
    ratio: the median of the per-repeat ratios, each of two neighbouring measurements, so a load
    that drifts over the run (other jobs starting and ending) cancels within each pair."""
    product, floor = [], []
    for _ in range(repeats):
        product.append(unit.product())
        floor.append(unit.floor_fn())
    ratios = [p / f for p, f in zip(product, floor, strict=True)]
    return {
        "unit": unit.name,
        "size": unit.size,
        "floor": unit.floor,
        "product_ms": 1e3 * statistics.median(product),
        "floor_ms": 1e3 * statistics.median(floor),
        "ratio": statistics.median(ratios),
        "ratio_range": [min(ratios), max(ratios)],
        "target": unit.target,
        "product_runs_ms": [1e3 * s for s in product],
        "floor_runs_ms": [1e3 * s for s in floor],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller units and 3 repeats (~2-3 minutes)")
    ap.add_argument(
        "--repeats", type=int, default=None, help="interleaved measurements per side (default 5; quick 3)"
    )
    ap.add_argument(
        "--data-dir", default=str(ROOT / "results" / "data"), help="holds the datasets (results/data)"
    )
    ap.add_argument(
        "--only", nargs="+", choices=FAMILIES, default=list(FAMILIES), help="unit families to run"
    )
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--write-doc", metavar="PAGE", help="rewrite PAGE's generated block from the results")
    args = ap.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 5)
    data = Path(args.data_dir)
    missing = [name for name in DATASETS if not (data / f"{name}.npz").exists()]
    if missing:
        raise SystemExit(
            f"floor: {', '.join(missing)} missing in {data}: build them (snakemake --cores 2 results/data/<name>.npz) "
            "or pass --data-dir of a finished run's results/data"
        )

    import torch

    torch.set_num_threads(1)
    start, load_start = time.perf_counter(), os.getloadavg()[0]
    cpu = cpu_name()
    print(
        f"floor benchmark on {cpu}, {os.cpu_count()} cores, torch {torch.__version__}, 1 thread", flush=True
    )
    modules = [__import__(name) for name in args.only]
    checks = []
    for module in modules:
        for c in module.check(data):
            print(f"check: {c['name']}: max abs diff {c['max_abs_diff']:.1e} <= {c['tol']:.1e}", flush=True)
            checks.append(c)
    rows = []
    for module in modules:
        for unit in module.units(data, args.quick):
            row = measure(unit, repeats)
            rows.append(row)
            print(
                f"{row['unit']}: product {row['product_ms']:.2f} ms, floor {row['floor_ms']:.2f} ms, "
                f"ratio {floor_table.ratio_text(row)}  [{cpu}, 1 thread]",
                flush=True,
            )
    result = {
        "date": datetime.date.today().isoformat(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "threads": 1,
        "torch": torch.__version__,
        "repeats": repeats,
        "quick": bool(args.quick),
        "checks": checks,
        "rows": rows,
        "wall_s": time.perf_counter() - start,
        "load": [load_start, os.getloadavg()[0]],  # 1-minute load average: how shared the cores were
    }
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "floor.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "floor.md").write_text(floor_table.render_block(result) + "\n")
    print("\n" + floor_table.console_table(result))
    print(f"\nwrote {out / 'floor.json'} and floor.md in {result['wall_s'] / 60:.1f} min")
    if args.write_doc:
        page = Path(args.write_doc)
        page.write_text(floor_table.replace_block(page.read_text(), floor_table.render_block(result)))
        print(f"rewrote the floor block of {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
