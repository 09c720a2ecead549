"""What the APE benchmark scripts share (``ape_pool_sweep.py``, ``ape_reference_noise.py``): their
common options, the one-thread set-up, the grid's APE section and dataset, VI fitted exactly as
the ``noisyor-bench ape-vi`` run fits it, and the CSV + Markdown results with the machine line.

Why one module: the scripts compare themselves with the workflow's runs, so the streams, the
config lookup and the result files must not drift apart between copies.  The scripts import it
as ``_common`` (``python benchmarks/<script>.py`` puts ``benchmarks/`` on ``sys.path``).
"""

from __future__ import annotations

import argparse
import copy
import logging
import platform
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from noisyor_bench.experiments.config import load_config
from noisyor_bench.infra.io import load_npz, write_csv_atomic, write_text_atomic

APE_DATASETS = ("toybars", "mdreviews")


def int_list(text: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]`` (an argparse ``type``: a bad item names itself)."""
    try:
        return [int(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def ape_parser(description: str, dataset: str, seeds: str, out: str) -> argparse.ArgumentParser:
    """The options every APE benchmark takes (``--seeds`` parsed by :func:`int_list`); the script
    adds its own."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--dataset", default=dataset, choices=APE_DATASETS)
    ap.add_argument("--grid", default="quick", help="the config grid whose APE settings are used")
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument(
        "--data-dir", default="results/data", help="holds ape-<dataset>.npz (noisyor-bench ape-data)"
    )
    ap.add_argument("--seeds", type=int_list, default=seeds)
    ap.add_argument("--out", default=out, help="the CSV; the Markdown table goes beside it (.md)")
    return ap


def start() -> float:
    """Log lines with the time of day, one torch thread (as the workflow's jobs); the start time."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    torch.set_num_threads(1)
    return time.perf_counter()


def ape_inputs(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The grid's APE section for the dataset (a deep copy: a script may change it) and the
    dataset's arrays."""
    grids = load_config(args.config).get("grids") or {}
    try:
        section = grids[args.grid]["ape"]["datasets"][args.dataset]
    except (KeyError, TypeError):
        raise SystemExit(f"{args.config}: no grids.{args.grid}.ape.datasets.{args.dataset}") from None
    return copy.deepcopy(dict(section)), load_npz(Path(args.data_dir) / f"ape-{args.dataset}.npz")


def evaluation_vi(arrays: Mapping[str, np.ndarray], section: Mapping[str, Any], seed: int) -> Any:
    """VI on the evaluation combinations as ``noisyor-bench ape-vi`` fits it (float32, its
    stream, grouped by model when the section says so): a ``GroupedVi``."""
    from noisyor_bench.experiments.ape.baselines import fit_vi_grouped, vi_config
    from noisyor_bench.experiments.ape.pairs import evaluation_combinations
    from noisyor_bench.inference.seeding import stream_seed
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    f32 = evaluation_combinations(arrays, torch.float32)
    return fit_vi_grouped(
        f32,
        ape_prior(f32.theta.shape[1], dtype=torch.float32),
        vi_config(section),
        stream_seed(seed, "ape-vi"),
        bool((section.get("vi") or {}).get("group_by_model", False)),
    )


def machine_line(started: float) -> str:
    """``Machine: <arch> <cpu>, one thread; wall time X min`` since ``started`` (perf_counter)."""
    cpu = f"{platform.machine()} {platform.processor() or platform.platform()}"
    return f"Machine: {cpu}, one thread; wall time {(time.perf_counter() - started) / 60:.1f} min"


def write_results(out: str | Path, rows: Sequence[Mapping[str, Any]], lines: Sequence[str]) -> None:
    """The rows as the CSV ``out`` and the Markdown ``lines`` beside it (``.md``), both atomically."""
    out = Path(out)
    write_csv_atomic(out, rows)
    write_text_atomic(out.with_suffix(".md"), "\n".join(lines) + "\n")
