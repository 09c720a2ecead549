"""Learning curves of AVI and ACP (learning mode) under several generative learning rates and inits.

Why: with the former defaults, learned noisy-OR rates never left their initialisation.  Under the
softplus parameterisation a small rate theta = softplus(r) ~ e^r, and Adam moves r by about
``gen_lr`` per step, so after T steps theta <= theta_high * e^(gen_lr * T).  This script
measures, per (dataset, N_train, method, gen_lr, init theta_high, seed): the epoch where
early stopping (patience) ended the run, the first epoch where the convergence rule of the
workflow holds (relative improvement of the best validation NELBO over the last W
evaluations below rel_tol), wall and CPU seconds per epoch (CPU time does not depend on how
busy the shared machine is), the best validation and the test NELBO (exact
Bernoulli samples), the independent-Bernoulli baseline of the same training rows, the largest
learned rate against the true one, and the patterns recovered on SYN-PATTERN.

Datasets are files made by ``noisyor-bench acp-make-dataset`` / ``acp-ingest-neurips`` in a scratch
directory outside the repository, e.g.::

    S=/tmp/lr_scratch; mkdir -p $S/data
    noisyor-bench acp-make-dataset --name syn-pattern --config config/config.yaml --out $S/data/syn-pattern.npz
    noisyor-bench acp-ingest-neurips --no-variants --seed 20200201 --out $S/data/neurips-titles.npz
    python benchmarks/learning_curves.py --data-dir $S/data --cells syn-pattern:200,syn-pattern:1000 \
        --settings 1e-3/0.02,1e-2/0.02 --seeds 0,1 --out benchmarks/results/learning_curves_synpattern.csv

Prints one table row per run and writes a CSV (one row per run) plus ``<out>.curves.csv`` (the
validation NELBO of every epoch).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

from noisyor_bench.data.loading import has_truth, load_dataset, training_rows
from noisyor_bench.evaluation.recovery import match_patterns
from noisyor_bench.experiments.acp.corpus_hparams import corpus_hparams
from noisyor_bench.experiments.acp.runs import shape_model
from noisyor_bench.inference.fitting import FitBudget
from noisyor_bench.inference.noisyor.registry import get_method
from noisyor_bench.infra.io import write_csv_atomic

TEXT_K = 20  # Table 5's topic model


def bernoulli_baseline(x_train: np.ndarray, x_test: np.ndarray) -> float:
    """Test NLL (nats per row) of independent Bernoulli pixels, p_i = (count_i + 1) / (N + 2)."""
    p = (x_train.sum(0) + 1.0) / (x_train.shape[0] + 2.0)
    x = x_test.astype(np.float64)
    return float(-(x @ np.log(p) + (1 - x) @ np.log1p(-p)).mean())


def first_converged_epoch(vals: list[float], window: int, rel_tol: float) -> int | None:
    """First epoch (1-based) at which the windowed rule holds: (best before the last ``window``
    evaluations - best within them) / |best before| < rel_tol."""
    for e in range(window + 1, len(vals) + 1):
        before, within = min(vals[: e - window]), min(vals[e - window : e])
        if (before - within) / abs(before) < rel_tol:
            return e
    return None


def parse_settings(text: str) -> list[tuple[float, float]]:
    """``"1e-3/0.02,1e-2/0.1"`` -> [(gen_lr, theta_high), ...]; theta_high 0 = the text rule."""
    out = []
    for item in text.split(","):
        lr, high = item.split("/")
        out.append((float(lr), float(high)))
    return out


def run_one(
    data: dict,
    name: str,
    n_train: int,
    method: str,
    gen_lr: float,
    theta_high: float,
    seed: int,
    budget: FitBudget,
    window: int,
    rel_tol: float,
    test_samples: int,
    lr: float | None = None,
    latents: int = TEXT_K,
) -> tuple[dict, list[float]]:
    x_train = training_rows(data, n_train, name)
    truth = has_truth(data)
    if truth:
        from noisyor_bench.data.loading import ground_truth

        model = ground_truth(data)
        hparams: dict = {}
    else:  # a corpus: K topics, the corpus-scaled init of experiments.corpus_hparams
        model = shape_model(x_train.shape[1], latents)
        hparams = corpus_hparams(x_train)
    if theta_high > 0:
        hparams["init_theta_high"] = theta_high
    hparams["gen_lr"] = gen_lr
    if lr is not None:
        hparams["lr"] = lr
    torch.manual_seed(seed)
    m = get_method(method)(model, "learning", hparams, seed)
    t0, c0 = time.perf_counter(), time.process_time()
    history = m.fit(torch.as_tensor(x_train), torch.as_tensor(data["x_val"]), budget)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    vals = [float(r.val_nelbo) for r in history if r.val_nelbo is not None]
    g = torch.Generator().manual_seed(12345)
    test = float(m.nelbo(torch.as_tensor(data["x_test"]), test_samples, g).mean())
    learned = m.generative.theta.detach().double().cpu().numpy()
    row = {
        "dataset": name if truth else f"{name}-K{model.K}",
        "n_train": n_train,
        "method": method,
        "gen_lr": gen_lr,
        "theta_high": m.hp.generative_init().high(model.D),
        "seed": seed,
        "lr": m.hp.lr,
        "epochs": len(history),
        "stop": m.stop_reason,
        "best_epoch": m.best_epoch,
        "conv_epoch": first_converged_epoch(vals, window, rel_tol),
        "converged": m.stop_reason == "patience"
        or first_converged_epoch(vals[-(window + 1) :], window, rel_tol) is not None,
        "steps_per_epoch": None,
        "sec_per_epoch": seconds / max(len(history), 1),
        "seconds": seconds,
        "cpu_per_epoch": cpu / max(len(history), 1),
        "val_nelbo": min(vals),
        "test_nelbo": test,
        "baseline": bernoulli_baseline(x_train, data["x_test"]),
        "theta_max": float(learned.max()),
        "true_theta_max": float(np.asarray(data["theta"]).max()) if truth else float("nan"),
        "recovered": None,
    }
    batches = math.ceil(n_train / budget.batch_size)
    row["steps_per_epoch"] = batches * math.ceil(budget.min_epoch_steps / batches)
    if name.startswith("syn-pattern") or name.startswith("multi-mnist"):
        rec = match_patterns(np.asarray(data["theta"]), learned)
        row["recovered"] = f"{rec.n_recovered}/{rec.n_true}"
    return row, vals


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--cells", required=True, help="dataset:N_train,... (dataset = file stem in --data-dir)")
    p.add_argument("--methods", default="avi,acp")
    p.add_argument(
        "--settings",
        default="1e-3/0.02,1e-2/0.02,3e-2/0.02,1e-2/0.1",
        help="gen_lr/theta_high,...; theta_high 0 keeps the corpus rule of experiments.corpus_hparams",
    )
    p.add_argument("--seeds", default="0")
    p.add_argument(
        "--lr",
        type=float,
        default=None,
        help="encoder learning rate (default: the method default; corpora: experiments.corpus_hparams)",
    )
    p.add_argument("--latents", type=int, default=TEXT_K, help="K for a corpus (no ground truth)")
    p.add_argument("--max-epochs", type=int, default=200)
    p.add_argument("--patience", type=int, default=10)
    p.add_argument("--min-epoch-steps", type=int, default=20)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--rel-tol", type=float, default=1e-3)
    p.add_argument("--test-samples", type=int, default=50)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    budget = FitBudget(
        max_epochs=a.max_epochs, patience=a.patience, batch_size=128, min_epoch_steps=a.min_epoch_steps
    )
    rows, curves = [], []
    cols = [
        "dataset",
        "n_train",
        "method",
        "gen_lr",
        "theta_high",
        "seed",
        "lr",
        "epochs",
        "stop",
        "best_epoch",
        "conv_epoch",
        "converged",
        "steps_per_epoch",
        "sec_per_epoch",
        "seconds",
        "cpu_per_epoch",
        "val_nelbo",
        "test_nelbo",
        "baseline",
        "theta_max",
        "true_theta_max",
        "recovered",
    ]
    print(" ".join(f"{c[:10]:>10}" for c in cols), flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    for cell in a.cells.split(","):
        name, n = cell.split(":")
        data = load_dataset(a.data_dir / f"{name}.npz")
        for gen_lr, high in parse_settings(a.settings):
            for seed in map(int, a.seeds.split(",")):
                for method in a.methods.split(","):
                    row, vals = run_one(
                        data,
                        name,
                        int(n),
                        method,
                        gen_lr,
                        high,
                        seed,
                        budget,
                        a.window,
                        a.rel_tol,
                        a.test_samples,
                        a.lr,
                        a.latents,
                    )
                    rows.append(row)
                    curves += [
                        {**{k: row[k] for k in cols[:7]}, "epoch": i + 1, "val_nelbo": v}
                        for i, v in enumerate(vals)
                    ]
                    print(
                        " ".join(
                            f"{v:>10.4g}" if isinstance(v, float) else f"{str(v)[:10]:>10}"
                            for v in row.values()
                        ),
                        flush=True,
                    )
                    write_csv_atomic(a.out, rows)
                    write_csv_atomic(a.out.with_suffix(".curves.csv"), curves)
    return 0


if __name__ == "__main__":
    sys.exit(main())
