"""Time APE's training-model draws: the vectorised pool against the former per-model path.

Why: a training pool too large to hold (the paper's 50,000 models at V = 3,000: 18 GB) is drawn
batch by batch, and those draws cost ~0.59 s per training step of 100 models.  The pool's
recipe (model m = ``default_rng([seed, m]).dirichlet(alpha, size=K)``, row-normalised) is kept
bit for bit; what changed is how it is computed (:meth:`ThetaPool.draw`: one vectorised
``standard_gamma`` per model written in place, against numpy's Dirichlet + stack + cast).

Both paths draw the same ``--batch`` models, alternating ``--repeats`` times in one process
(machine noise hits both); CPU seconds (``time.process_time``) and wall seconds are recorded.
The output is checked equal before timing.  Example (reviews' shape)::

    python benchmarks/ape_theta_draws.py --topics 30 --vocab 3000 --batch 100 --repeats 5 \
        --out benchmarks/results/ape_theta_draws.csv

``--mode held``: a training step's theta batch from the two sources ``training_models`` hands
to training (:mod:`noisyor_bench.experiments.ape.pairs`): (i) the per-batch numpy draw and
(ii) indexing the pool materialised once (``HeldPool``, here on the CPU), on a block of
``--held-models`` models of the reviews' shape (2,000 x 30 x 3,000 float32: 0.67 GiB), side by
side in one process; the batches are checked equal bit for bit first, and the materialisation's
own time is reported.  No GPU timing comes from here::

    python benchmarks/ape_theta_draws.py --mode held --held-models 2000 --repeats 20 \
        --out benchmarks/results/ape_theta_held.csv
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

from noisyor_bench.data.synthetic.theta_pool import ThetaPool
from noisyor_bench.infra.io import write_csv_atomic


def former_draw(pool: ThetaPool, indices: np.ndarray) -> np.ndarray:
    """The former per-model path: numpy's Dirichlet per model, stacked, cast."""

    def model(m: int) -> np.ndarray:
        rng = np.random.default_rng([pool.seed, int(m)])
        theta = rng.dirichlet(np.full(pool.vocab_size, pool.alpha), size=pool.n_topics)
        return theta / theta.sum(axis=1, keepdims=True)

    return np.stack([model(m) for m in indices]).astype(np.float32)


def cpu_model() -> str:
    """The CPU's name as ``lscpu``'s ``Model name`` (from /proc/cpuinfo), else platform's."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{platform.machine()} {platform.processor() or platform.platform()}"


def timed(fn, *args) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=30)
    ap.add_argument("--vocab", type=int, default=3000)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--batch", type=int, default=100, help="models per training step")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--mode",
        choices=["former", "held"],
        default="former",
        help="former: vectorised draw vs the former per-model path; held: per-batch draw vs a held pool",
    )
    ap.add_argument("--held-models", type=int, default=2000, help="--mode held: models of the held block")
    ap.add_argument(
        "--out",
        default=None,
        help="default benchmarks/results/ape_theta_draws.csv (former), ape_theta_held.csv (held)",
    )
    args = ap.parse_args(argv)
    if args.mode == "held":
        return held_main(args)
    args.out = args.out or "benchmarks/results/ape_theta_draws.csv"

    pool = ThetaPool(
        seed=20190612, size=50_000, n_topics=args.topics, vocab_size=args.vocab, alpha=args.alpha
    )
    rng = np.random.default_rng(0)
    if not np.array_equal(former_draw(pool, np.arange(3)), pool.draw(np.arange(3))):
        raise SystemExit("the vectorised draw differs from the former recipe")
    rows = []
    for r in range(args.repeats):
        indices = rng.integers(pool.size, size=args.batch)  # a training step's models
        for path, fn in (("former", former_draw), ("vectorised", lambda p, i: p.draw(i))):
            wall, cpu = timed(fn, pool, indices)
            rows.append({"repeat": r, "path": path, "wall_s": wall, "cpu_s": cpu})
            print(f"repeat {r} {path:>10}: {wall:.3f} s wall, {cpu:.3f} s CPU", flush=True)
    frame = pd.DataFrame(rows)
    med = frame.groupby("path")[["wall_s", "cpu_s"]].median()
    ratios = [
        a / b
        for a, b in zip(
            frame[frame.path == "former"]["cpu_s"], frame[frame.path == "vectorised"]["cpu_s"], strict=True
        )
    ]
    summary = {
        "K": args.topics,
        "V": args.vocab,
        "alpha": args.alpha,
        "batch": args.batch,
        "repeats": args.repeats,
        "former_cpu_s_median": float(med.loc["former", "cpu_s"]),
        "vectorised_cpu_s_median": float(med.loc["vectorised", "cpu_s"]),
        "ratio_cpu_median": float(statistics.median(ratios)),
        "ratio_cpu_min": float(min(ratios)),
        "ratio_cpu_max": float(max(ratios)),
        "machine": f"{platform.machine()} {platform.processor() or platform.platform()}",
    }
    print(
        f"per step of {args.batch} models (K = {args.topics}, V = {args.vocab}): former "
        f"{summary['former_cpu_s_median']:.3f} s CPU, vectorised {summary['vectorised_cpu_s_median']:.3f} s; "
        f"ratio {summary['ratio_cpu_median']:.2f} (min {summary['ratio_cpu_min']:.2f}, max {summary['ratio_cpu_max']:.2f})"
    )
    out = Path(args.out)
    write_csv_atomic(out, [summary])
    write_csv_atomic(out.with_suffix(".runs.csv"), frame.to_dict("records"))
    return 0


def held_main(args: argparse.Namespace) -> int:
    """``--mode held`` (module docstring): per-batch draw vs indexing the materialised pool."""
    import torch

    from noisyor_bench.experiments.ape import pairs

    pool = ThetaPool(
        seed=20190612, size=args.held_models, n_topics=args.topics, vocab_size=args.vocab, alpha=args.alpha
    )
    drawn, _ = pairs.training_models(pool, "cpu", hold=False)
    wall, cpu = time.perf_counter(), time.process_time()
    held = pairs.HeldPool(pairs.materialise_pool(pool, "cpu"))
    build_wall, build_cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"materialised {pool.size} models ({pool.nbytes() / (1 << 30):.2f} GiB) in {build_wall:.1f} s wall, "
        f"{build_cpu:.1f} s CPU ({1000 * build_cpu / pool.size:.2f} ms CPU a model)",
        flush=True,
    )
    gen = torch.Generator().manual_seed(0)
    check = torch.randint(pool.size, (args.batch,), generator=gen)
    if not torch.equal(drawn(check), held(check)):
        raise SystemExit("the held pool's batch differs from the per-batch draw")
    rows = []
    for r in range(args.repeats):
        indices = torch.randint(pool.size, (args.batch,), generator=gen)  # a training step's models
        for path, fn in (("drawn", drawn), ("held", held)):
            wall, cpu = timed(fn, indices)
            rows.append({"repeat": r, "path": path, "wall_s": wall, "cpu_s": cpu})
    frame = pd.DataFrame(rows)
    med = frame.groupby("path")[["wall_s", "cpu_s"]].median()
    walls = {p: frame[frame.path == p]["wall_s"].to_numpy() for p in ("drawn", "held")}
    ratios = walls["drawn"] / walls["held"]
    summary = {
        "K": args.topics,
        "V": args.vocab,
        "alpha": args.alpha,
        "batch": args.batch,
        "held_models": pool.size,
        "repeats": args.repeats,
        "drawn_wall_s_median": float(med.loc["drawn", "wall_s"]),
        "held_wall_s_median": float(med.loc["held", "wall_s"]),
        "drawn_cpu_s_median": float(med.loc["drawn", "cpu_s"]),
        "held_cpu_s_median": float(med.loc["held", "cpu_s"]),
        "ratio_wall_median": float(statistics.median(ratios)),
        "ratio_wall_min": float(min(ratios)),
        "ratio_wall_max": float(max(ratios)),
        "materialise_wall_s": build_wall,
        "materialise_cpu_s": build_cpu,
        "torch_threads": torch.get_num_threads(),
        "cpu": cpu_model(),
    }
    print(
        f"per step of {args.batch} models (K = {args.topics}, V = {args.vocab}), CPU {summary['cpu']}: "
        f"per-batch draw {1000 * summary['drawn_wall_s_median']:.1f} ms wall, held pool "
        f"{1000 * summary['held_wall_s_median']:.2f} ms; ratio {summary['ratio_wall_median']:.0f} "
        f"(min {summary['ratio_wall_min']:.0f}, max {summary['ratio_wall_max']:.0f}), {args.repeats} repeats"
    )
    out = Path(args.out or "benchmarks/results/ape_theta_held.csv")
    write_csv_atomic(out, [summary])
    write_csv_atomic(out.with_suffix(".runs.csv"), frame.to_dict("records"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
