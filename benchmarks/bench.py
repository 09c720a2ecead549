"""Training throughput of noisyor-bench against a plain dense PyTorch reference.

For every (dataset, method) the project's trainer (``method.fit``, one epoch on ``steps``
minibatches of 128) and a dense reference written below -- what a straightforward PyTorch
implementation of AVI/ACP does: rates ``theta0 + z theta^T`` for all (sample, point,
observation) triples and ``x log(1 - e^-a) - (1 - x) a`` summed over all D -- are timed in
alternation (project, dense, project, dense, ...), each measurement in a fresh subprocess so
that its peak memory is its own.  Prints examples per second, the ratio and the peak memory,
and writes the table to ``benchmarks/results/bench.{md,csv}``.

    python benchmarks/bench.py                 # the full table (~10 min on 2 cores)
    python benchmarks/bench.py --quick         # a ~1 minute smoke run

Datasets are read from ``results/data/<name>.npz`` (``snakemake results/data/<name>.npz``
builds them).  Validation is made negligible for the project's trainer (128 validation rows,
one evaluation) and is absent from the reference, so both time training steps.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

BATCH = 128
N_SAMPLES = 10
DATASETS = {  # name -> latent dimension (synthetic sets use their true K)
    "syn-pattern": None,
    "syn-random-7": None,
    "multi-mnist": None,
    "neurips-titles": 20,
}
TARGETS = {
    ("syn-random-7", "avi"): 5.0,
    ("syn-random-7", "acp"): 5.0,
    ("neurips-titles", "avi"): 10.0,
    ("neurips-titles", "acp"): 10.0,
}


# ------------------------------------------------------------------------------ workers
def _load(dataset: str, n_rows: int):
    import numpy as np
    import torch

    from noisyor_bench.infra.io import load_npz

    path = ROOT / "results" / "data" / f"{dataset}.npz"
    if not path.exists():
        raise SystemExit(
            f"bench: {path} is missing; build it with: snakemake --cores 2 {path.relative_to(ROOT)}"
        )
    data = load_npz(path)
    x = data["x_train"]
    reps = math.ceil(n_rows / x.shape[0])
    x = np.concatenate([x] * reps)[:n_rows] if reps > 1 else x[:n_rows]
    k = int(data["theta"].shape[1]) if "theta" in data else DATASETS[dataset]
    return torch.as_tensor(x), torch.as_tensor(data["x_val"][:BATCH]), k


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def dense_reference_step_fn(method: str, x, k: int, seed: int = 0):
    """A plain dense AVI/ACP training step (the baseline), returned as a closure over its state."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(seed)
    d = x.shape[1]
    out = k if method == "avi" else d
    encoder = nn.Sequential(nn.Linear(d, 100), nn.ReLU(), nn.Linear(100, out))
    raw_theta = nn.Parameter(torch.rand(d, k) * 0.5 - 2.0)
    raw_theta0 = nn.Parameter(torch.full((d,), -3.0))
    raw_mu = nn.Parameter(torch.full((k,), -2.0))
    opt = torch.optim.Adam([*encoder.parameters(), raw_theta, raw_theta0, raw_mu], lr=1e-3)

    def loss(xb):
        theta, theta0, mu = F.softplus(raw_theta), F.softplus(raw_theta0), torch.sigmoid(raw_mu)
        if method == "avi":
            logits = encoder(xb)
        else:  # eq. 11 with dense psi
            psi = F.softplus(encoder(xb))
            logits = (xb * psi - (1 - xb)) @ theta + torch.logit(mu)
        q = torch.sigmoid(logits)
        u = torch.rand((N_SAMPLES, *logits.shape)).clamp(1e-7, 1 - 1e-7)
        z = torch.sigmoid((logits + torch.log(u) - torch.log1p(-u)) / 0.5)
        a = theta0 + z @ theta.T  # (L, B, D): every observation
        loglik = (xb * torch.log(-torch.expm1(-a).clamp_max(-1e-12)) - (1 - xb) * a).sum(-1).mean(0)
        kl = (
            q * (torch.log(q + 1e-12) - torch.log(mu))
            + (1 - q) * (torch.log(1 - q + 1e-12) - torch.log1p(-mu))
        ).sum(-1)
        return -(loglik - kl).mean()

    def step(xb):
        opt.zero_grad()
        value = loss(xb)
        value.backward()
        opt.step()
        return float(value)

    return step


def worker(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(args.threads)
    x, x_val, k = _load(args.dataset, args.rows)
    base = _rss_mb()
    if args.impl == "dense":
        step = dense_reference_step_fn(args.method, x, k)
        xf = x.float()
        step(xf[:BATCH])  # warm-up
        perm = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(0))
        start = time.perf_counter()
        for b in range(0, x.shape[0], BATCH):
            step(xf[perm[b : b + BATCH]])
        seconds = time.perf_counter() - start
    else:
        import numpy as np

        from noisyor_bench.inference.fitting import FitBudget
        from noisyor_bench.inference.noisyor.registry import get_method
        from noisyor_bench.models.noisyor.model import NoisyOR

        shape = NoisyOR.from_numpy(np.ones((x.shape[1], k)), np.ones(x.shape[1]), np.full(k, 0.1))
        method = get_method(args.method)(shape, "learning", {}, seed=0)
        if args.method in ("avi", "acp"):  # warm-up on one batch
            get_method(args.method)(shape, "learning", {}, seed=0).fit(
                x[:BATCH], x_val, FitBudget(max_epochs=1)
            )
        start = time.perf_counter()
        method.fit(x, x_val, FitBudget(max_epochs=1, patience=1, batch_size=BATCH))
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "rows": int(x.shape[0]), "peak_mb": peak - base}))


def kernel_worker(args: argparse.Namespace) -> None:
    """FLOP rates of the positive term's products at one batch: dense GEMM vs the CSR kernels.

    The dense reference evaluates the rates of all (sample, point, observation) triples with
    one GEMM ``(L*B, K) @ (K, D)``; the project evaluates them at the active entries only with
    an SDDMM, and its backward pass with two SpMMs.  ``bound`` = the speed-up of the positive
    term these rates allow: (dense FLOPs / dense rate) / (sparse FLOPs / sparse rate).
    """
    import torch

    from noisyor_bench.models.noisyor.sparse import ActiveSet
    from noisyor_bench.models.sparse import sddmm_values, spmm_values

    torch.set_num_threads(args.threads)
    x, _, k = _load(args.dataset, BATCH)
    xb = x[:BATCH].float()
    d = xb.shape[1]
    g = torch.Generator().manual_seed(0)
    z = torch.rand((N_SAMPLES * BATCH, k), generator=g)
    theta = torch.rand((d, k), generator=g)
    pattern = ActiveSet.of(xb).replicated(N_SAMPLES)
    values = torch.rand(pattern.nnz, generator=g)

    def rate(fn, flops: float) -> float:
        fn()
        reps, start = 0, time.perf_counter()
        while time.perf_counter() - start < 0.5:
            fn()
            reps += 1
        return flops * reps / (time.perf_counter() - start) / 1e9

    dense_flops, sparse_flops = 2.0 * N_SAMPLES * BATCH * k * d, 2.0 * pattern.nnz * k
    out = {
        "density": pattern.nnz / (N_SAMPLES * BATCH * d),
        "gemm": rate(lambda: z @ theta.t(), dense_flops),
        "sddmm": rate(lambda: sddmm_values(pattern, z, theta), sparse_flops),
        "spmm": rate(lambda: spmm_values(pattern, values, theta), sparse_flops),
        "spmm_t": rate(lambda: spmm_values(pattern, values, z, transpose=True), sparse_flops),
    }
    sparse_seconds = sum(sparse_flops / out[kname] for kname in ("sddmm", "spmm", "spmm_t"))
    out["bound"] = 3 * dense_flops / out["gemm"] / sparse_seconds
    print(json.dumps(out))


# ------------------------------------------------------------------------------ driver
def measure(dataset: str, method: str, impl: str, rows: int, threads: int) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        "--dataset",
        dataset,
        "--method",
        method,
        "--impl",
        impl,
        "--rows",
        str(rows),
        "--threads",
        str(threads),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"bench: {dataset}/{method}/{impl} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def machine() -> str:
    import torch

    from noisyor_bench.infra.provenance import cpu_model

    cpu = cpu_model()
    return f"{cpu}; {os.cpu_count()} cores; torch {torch.__version__}; python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    p.add_argument(
        "--methods",
        nargs="+",
        default=["avi", "acp", "svi", "lb-cdi"],
        choices=["avi", "acp", "svi", "lb-cdi"],
    )
    p.add_argument("--steps", type=int, default=40, help="minibatches of 128 per measurement (AVI/ACP)")
    p.add_argument(
        "--rows-classical", type=int, default=1000, help="training rows for SVI/LB-CDI (one epoch)"
    )
    p.add_argument("--repeats", type=int, default=2, help="alternating measurements per implementation")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--lbcdi-rows",
        type=int,
        default=40000,
        help="N_train of the LB-CDI vs ACP epoch comparison (0 = skip)",
    )
    p.add_argument("--quick", action="store_true", help="a ~1 minute smoke run")
    p.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    # worker mode (one measurement in a fresh process)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--dataset", help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--impl", help=argparse.SUPPRESS)
    p.add_argument("--rows", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        (kernel_worker if args.impl == "kernels" else worker)(args)
        return 0
    if args.quick:
        args.datasets, args.steps, args.repeats, args.rows_classical, args.lbcdi_rows = (
            ["syn-pattern", "neurips-titles"],
            5,
            1,
            200,
            0,
        )

    rows: list[dict] = []
    print(f"machine: {machine()}; torch threads per job: {args.threads}", flush=True)
    header = f"{'dataset':15} {'method':7} {'project ex/s':>13} {'dense ex/s':>11} {'ratio':>6} {'peak MB proj':>13} {'peak MB dense':>14}"
    print(header, flush=True)
    for dataset in args.datasets:
        for method in args.methods:
            amortized = method in ("avi", "acp")
            n = args.steps * BATCH if amortized else args.rows_classical
            impls = ("project", "dense") if amortized else ("project",)
            results: dict[str, list[dict]] = {impl: [] for impl in impls}
            for _ in range(args.repeats):
                for impl in impls:  # alternate, so machine noise hits both
                    results[impl].append(measure(dataset, method, impl, n, args.threads))
            row = {"dataset": dataset, "method": method, "rows": n}
            for impl in impls:
                best = min(results[impl], key=lambda r: r["seconds"])
                row[f"{impl}_ex_per_s"] = best["rows"] / best["seconds"]
                row[f"{impl}_peak_mb"] = max(r["peak_mb"] for r in results[impl])
            row["ratio"] = row["project_ex_per_s"] / row["dense_ex_per_s"] if amortized else None
            target = TARGETS.get((dataset, method))
            row["target"] = target
            row["met"] = None if target is None else row["ratio"] >= target
            rows.append(row)
            dense = f"{row['dense_ex_per_s']:11.0f}" if amortized else f"{'n/a':>11}"
            ratio = f"{row['ratio']:6.1f}" if amortized else f"{'':>6}"
            dmem = f"{row['dense_peak_mb']:14.0f}" if amortized else f"{'':>14}"
            verdict = (
                "" if target is None else (f"  target >= {target:g}: " + ("PASS" if row["met"] else "FAIL"))
            )
            print(
                f"{dataset:15} {method:7} {row['project_ex_per_s']:13.0f} {dense} {ratio} {row['project_peak_mb']:13.0f} {dmem}{verdict}",
                flush=True,
            )

    kernel_rows = []
    print(
        "\npositive term at one batch of 128 (L = 10): GFLOP/s of the dense GEMM and of the CSR kernels",
        flush=True,
    )
    for dataset in args.datasets:
        r = measure(dataset, "acp", "kernels", BATCH, args.threads)
        r["dataset"] = dataset
        kernel_rows.append(r)
        print(
            f"{dataset:15} density {100 * r['density']:5.1f}%  GEMM {r['gemm']:5.1f}  SDDMM {r['sddmm']:5.1f}  "
            f"SpMM {r['spmm']:5.1f}  SpMM^T {r['spmm_t']:5.1f}  -> attainable speed-up of the positive term {r['bound']:4.1f}x",
            flush=True,
        )

    epoch_line = ""
    if args.lbcdi_rows:
        acp = measure("syn-random-7", "acp", "project", args.lbcdi_rows, args.threads)
        lb = measure("syn-random-7", "lb-cdi", "project", args.lbcdi_rows, args.threads)
        ratio = lb["seconds"] / acp["seconds"]
        epoch_line = (
            f"LB-CDI vs ACP, one epoch on syn-random-7 with N_train = {args.lbcdi_rows}: "
            f"{lb['seconds']:.1f} s vs {acp['seconds']:.1f} s = {ratio:.1f}x (target <= 3x: {'PASS' if ratio <= 3 else 'FAIL'})"
        )
        print(epoch_line, flush=True)

    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fields = [
        "dataset",
        "method",
        "rows",
        "project_ex_per_s",
        "dense_ex_per_s",
        "ratio",
        "project_peak_mb",
        "dense_peak_mb",
        "target",
        "met",
    ]
    from noisyor_bench.infra.io import write_csv_atomic

    write_csv_atomic(out / "bench.csv", rows, fields)
    md = [
        f"Machine: {machine()}; {args.threads} torch thread(s) per measurement; best of {args.repeats} alternating runs.",
        "",
        "| dataset | method | project ex/s | dense ex/s | ratio | peak MB project | peak MB dense | target |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        fmt = lambda v, f: "n/a" if v is None else format(v, f)  # noqa: E731
        tgt = "" if r["target"] is None else f">= {r['target']:g}: {'met' if r['met'] else 'not met'}"
        md.append(
            f"| {r['dataset']} | {r['method']} | {r['project_ex_per_s']:.0f} | {fmt(r.get('dense_ex_per_s'), '.0f')} | "
            f"{fmt(r['ratio'], '.1f')} | {r['project_peak_mb']:.0f} | {fmt(r.get('dense_peak_mb'), '.0f')} | {tgt} |"
        )
    if kernel_rows:
        md += [
            "",
            "Positive term at one batch of 128 (L = 10): GFLOP/s of the dense GEMM and of the CSR kernels, and the",
            "speed-up of the positive term they allow (dense FLOPs / GEMM rate over sparse FLOPs / sparse rates).",
            "",
            "| dataset | density | GEMM | SDDMM | SpMM | SpMM^T | attainable speed-up |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        md += [
            f"| {r['dataset']} | {100 * r['density']:.1f}% | {r['gemm']:.1f} | {r['sddmm']:.1f} | {r['spmm']:.1f} | "
            f"{r['spmm_t']:.1f} | {r['bound']:.1f}x |"
            for r in kernel_rows
        ]
    if epoch_line:
        md += ["", epoch_line]
    (out / "bench.md").write_text("\n".join(md) + "\n")
    print(f"wrote {out / 'bench.md'} and {out / 'bench.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
