"""CLI: ``noisyor-bench acp-calibration`` -- the calibration panel of the synthetic datasets and the
paper's rows flagged against it (feasibility, distance to near-exact, degradation-curve residuals)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from noisyor_bench.commands.arguments import add_table_outputs, json_argument

log = logging.getLogger(__name__)


def variant_of(path: str) -> str | None:
    """The paper dataset a generator variant stands in for (its sidecar's ``config.variant_of``)."""
    from noisyor_bench.commands.acp.datasets import sidecar_path
    from noisyor_bench.infra.io import read_json

    sidecar = sidecar_path(path)
    meta = read_json(sidecar) if sidecar.exists() else {}
    return ((meta or {}).get("config") or {}).get("variant_of") or None


def cmd_calibration(args: argparse.Namespace) -> int:
    import numpy as np
    import pandas as pd

    from noisyor_bench.data.loading import load_dataset
    from noisyor_bench.experiments.acp.baselines import scored_rows
    from noisyor_bench.experiments.acp.calibration import panel
    from noisyor_bench.infra.device import set_threads
    from noisyor_bench.infra.errors import ConfigError
    from noisyor_bench.reporting.acp.baselines import read_baselines
    from noisyor_bench.reporting.acp.calibration import flag_rows, mean_residual, panel_frame, paper_rows
    from noisyor_bench.reporting.acp.calibration_markdown import calibration_markdown
    from noisyor_bench.reporting.acp.degradation import CURVE_COLUMNS, degradation_curve, svi_learning_rate
    from noisyor_bench.reporting.acp.paper import paper_numbers
    from noisyor_bench.reporting.tables import write_table

    if args.max_rows is not None and args.max_rows < 1:
        raise ConfigError(f"--max-rows must be >= 1, got {args.max_rows}")
    if args.samples < 1:
        raise ConfigError(f"--samples must be >= 1, got {args.samples}")
    set_threads(args.threads)
    truth_nll = json_argument(args.truth_nll, "--truth-nll") if args.truth_nll else None
    if truth_nll is not None and not isinstance(truth_nll, dict):
        raise ConfigError(f"--truth-nll: expected a JSON object of likelihood settings, got {truth_nll!r}")
    baselines = read_baselines(args.baselines)
    rows = paper_rows(paper_numbers())
    curve_datasets = {r["dataset"] for r in rows if r.get("paper_f1") is not None}
    panels, curves = [], []
    for path in args.datasets:
        name = Path(path).stem
        data = load_dataset(path)
        record = panel(
            data,
            name,
            baselines.get(name),
            exact_max_k=args.exact_max_k,
            max_rows=args.max_rows,
            samples=args.samples,
            seed=args.seed,
            truth_nll=truth_nll,
        )
        record["variant_of"] = variant_of(path)
        panels.append(record)
        log.info(
            "%s: truth %s (%s), mean-field %s, near-exact F1/EM %s/%s, MAP EM %s, indep. entropy %.3f",
            name,
            record["truth_nll"],
            record["truth_estimator"],
            record["meanfield_nelbo"],
            record["near_exact_f1"],
            record["near_exact_em"],
            record["map_em"],
            record["indep_entropy"],
        )
        if {name, record["variant_of"]} & curve_datasets and record["K"] <= args.exact_max_k:
            curve_rows = scored_rows(int(np.asarray(data["x_test"]).shape[0]), args.max_rows)
            curve = degradation_curve(data, name, curve_rows, args.steps, args.samples, args.seed)
            curves.append(curve)
            log.info(
                "%s: degradation curve, %d step budgets, %.1fs", name, len(curve), curve.attrs["seconds"]
            )
    curve_frame = (
        pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(columns=list(CURVE_COLUMNS))
    )
    table = panel_frame(panels)
    flagged = flag_rows(rows, panels, curve_frame)
    md = calibration_markdown(table, flagged, curve_frame, svi_learning_rate(), args.exact_max_k)
    write_table(table, args.out_csv, md, args.out_md)
    write_table(flagged, args.out_rows_csv)
    write_table(curve_frame, args.out_curve_csv)
    for _, r in flagged.iterrows():
        log.info(
            "%s %s N=%s: NELBO feasible %s, EM feasible %s, residual %s",
            r["paper_artifact"],
            r["method"],
            r["n_train"],
            r["nelbo_feasible"],
            r["em_feasible"],
            r["residual"],
        )
    mean, placed = mean_residual(flagged)
    log.info("mean degradation-curve residual: %s over %d rows", mean, placed)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from noisyor_bench.infra.constants import CALIBRATION_MAX_ROWS, DEFAULT_N_SAMPLES

    p = sub.add_parser(
        "acp-calibration",
        help="calibration panel of the synthetic datasets; the paper's rows flagged against it",
    )
    p.add_argument(
        "--datasets", nargs="+", required=True, help="synthetic dataset .npz files (name = file stem)"
    )
    p.add_argument(
        "--baselines",
        nargs="*",
        default=[],
        help="results/baselines/<dataset>.json: the truth's -log p(x) where K is too large to enumerate",
    )
    p.add_argument("--exact-max-k", type=int, default=12, help="enumerate 2^K states up to this K")
    p.add_argument(
        "--max-rows",
        type=int,
        default=CALIBRATION_MAX_ROWS,
        help="test rows of an enumerable dataset (a fixed seeded subset beyond; stated in the table)",
    )
    p.add_argument("--samples", type=int, default=DEFAULT_N_SAMPLES, help="posterior draws per row for F1")
    p.add_argument("--steps", type=int, nargs="+", default=None, help="step budgets of the degradation curve")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws and random starts")
    p.add_argument(
        "--truth-nll",
        default=None,
        help="likelihood settings (JSON, evaluation.nll's keys) of the panel's own AIS estimate of the "
        "truth where K is beyond enumeration; default: the baselines' estimate",
    )
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    add_table_outputs(p)
    p.add_argument("--out-rows-csv", required=True, help="output: the paper's rows with flags (CSV)")
    p.add_argument("--out-curve-csv", required=True, help="output: the degradation curve (CSV)")
    p.set_defaults(func=cmd_calibration)
