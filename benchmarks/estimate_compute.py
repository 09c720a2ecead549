"""Extrapolate the paper grid's compute from a finished quick run (README "Expected compute"),
ACP per epoch from its runs' metrics, then all three papers per job from the cost model.

    python benchmarks/estimate_compute.py            # reads results/runs of the last run

Follows the method written in the README: per cell, the cost of an epoch
``(train_seconds + val_seconds) / epochs`` of the quick run of the same experiment, dataset and
method with the nearest N_train (AVI/ACP epochs are at least 20 steps of 128 rows, so below
2,560 rows the cost is constant), scaled by N_train, charged the paper's full ``max_epochs``
(an upper bound: early stopping ends most fits sooner), times the search draws and seeds, plus
the test evaluation of each seed.  Cells with no quick counterpart (SVI/LB-CDI beyond
syn-random-1 and SYN-PATTERN) are listed, not guessed.
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from noisyor_bench.experiments.acp import grid  # noqa: E402
from noisyor_bench.experiments.acp.grid import corpora as corpus_grid  # noqa: E402
from noisyor_bench.experiments.config import load_config  # noqa: E402
from noisyor_bench.reporting.runtime import cost_model_table  # noqa: E402

AMORTIZED_MIN_ROWS = 20 * 128  # min_epoch_steps * batch_size


def effective_rows(method: str, n: int) -> int:
    return max(n, AMORTIZED_MIN_ROWS) if method in ("avi", "acp") else max(n, 1)


def quick_epoch_costs(results: Path) -> dict[tuple[str, str, str], list[tuple[int, float, float]]]:
    """``(experiment, dataset, method) -> [(N_train, seconds per epoch, eval seconds)]``."""
    costs: dict[tuple[str, str, str], list[tuple[int, float, float]]] = {}
    for path in glob.glob(str(results / "runs/*/*/*/n*/seed*/metrics.json")):
        m = json.loads(Path(path).read_text())
        # APE and aviPAM runs share the layout but not ACP's timing keys: the cost model covers them
        if not m.get("epochs") or "train_seconds" not in m or "eval_seconds" not in m:
            continue
        per_epoch = (m["train_seconds"] + (m.get("val_seconds") or 0.0)) / m["epochs"]
        costs.setdefault((m["experiment"], m["dataset"], m["method"]), []).append(
            (m["n_train"], per_epoch, m["eval_seconds"] or 0.0)
        )
    return costs


def main() -> int:
    costs = quick_epoch_costs(ROOT / "results")
    if not costs:
        raise SystemExit("estimate_compute: no ACP runs under results/runs; run `make reproduce` first")
    cfg = load_config(ROOT / "config" / "config.yaml", {"grid": "paper"})
    cells = [
        (
            c.experiment,
            c.dataset,
            c.method,
            c.n_train,
            grid.n_draws(cfg, c),
            len(grid.seeds(cfg)),
            grid.budget(cfg, c)["max_epochs"],
            max(stop - start for start, stop in grid.search_chunks(cfg, c)),
        )
        for c in grid.cells(cfg)
    ]
    text_epochs = corpus_grid.budget(cfg)["max_epochs"]
    cells += [
        (c.experiment, c.dataset, c.method, c.n_train, 1, len(corpus_grid.seeds(cfg)), text_epochs, 1)
        for c in corpus_grid.cells(cfg)
    ]
    total, fits, longest, missing = 0.0, 0, (0.0, None), []
    for exp, ds, method, n, draws, seeds, epochs, chunk in cells:
        ref = costs.get((exp, ds, method)) or [
            r for (_, d, m), v in costs.items() if d == ds and m == method for r in v
        ]
        if not ref:
            missing.append((exp, ds, method, n))
            continue
        n_quick, per_epoch, eval_s = min(
            ref, key=lambda r: abs(effective_rows(method, r[0]) - effective_rows(method, n))
        )
        fit = per_epoch * effective_rows(method, n) / effective_rows(method, n_quick) * epochs
        search = draws * fit if draws > 1 else 0.0
        chunk_job = chunk * fit if draws > 1 else 0.0  # the longest search chunk (draws_per_job)
        train_job = seeds * (fit + 2 * eval_s)  # 100 test samples against the quick grid's 50
        total += search + train_job
        fits += (draws if draws > 1 else 0) + seeds
        for job in (chunk_job, train_job):
            if job > longest[0]:
                longest = (job, (exp, ds, method, n))
    print(
        f"paper grid: {len(cells)} cells, {fits} fits, compute <= {total / 3600:.0f} core-hours; "
        f"longest job <= {longest[0] / 3600:.1f} h {longest[1]}"
    )
    print(
        f"not extrapolated ({len(missing)} cells, no quick counterpart): {sorted({(m[1], m[2]) for m in missing})}"
    )
    # All three papers, per job, from config/job_seconds.csv (noisyor_bench.experiments.costs):
    print(cost_model_table("paper", None, slots=100, gpu=True, root=ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
