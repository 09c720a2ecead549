"""CLI: the decidability planner of the ACP claims (what deciding each open claim would cost)."""

from __future__ import annotations

import argparse


def cmd_plan(args: argparse.Namespace) -> int:
    from pathlib import Path

    from noisyor_bench.experiments.config import load_config
    from noisyor_bench.infra.errors import UserError
    from noisyor_bench.reporting.acp.planner import cost_model_price, format_plan, plan, read_claims

    if args.budget_seconds < 0:
        raise UserError(f"--budget-seconds must be >= 0; got {args.budget_seconds:g}")
    root = Path(args.repo)
    config = root / "config" / "config.yaml" if args.config is None else Path(args.config)
    if not config.is_file():
        raise UserError(f"--config {config}: no such file")
    cfg = load_config(config, {"grid": args.grid})
    rows = read_claims(args.claims)
    price, basis, machine = cost_model_price(cfg, root)
    grids = [g for chunk in args.grids for g in chunk.split(",") if g]
    result = plan(rows, cfg, args.grid, price, args.budget_seconds, grids, machine, basis)
    print(format_plan(result), flush=True)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from noisyor_bench.reporting.acp.planner import DEFAULT_BUDGET_SECONDS, PLAN_GRIDS

    p = sub.add_parser(
        "acp-plan",
        help="decidability planner: for each ACP claim not tested or inconclusive, the cells a grid "
        "lacks, their cost (cost model, one core), the cheapest grid that runs them",
    )
    p.add_argument("--claims", required=True, help="claims table (results/tables/claims.csv)")
    p.add_argument("--grid", default="quick", help="grid to add the missing cells to (default: quick)")
    p.add_argument(
        "--budget-seconds",
        type=float,
        default=DEFAULT_BUDGET_SECONDS,
        help=f"extra job seconds of one core the grid may spend (default: {DEFAULT_BUDGET_SECONDS:g})",
    )
    p.add_argument(
        "--grids",
        nargs="+",
        default=list(PLAN_GRIDS),
        help=f"grids a claim may be decided in, space- or comma-separated (default: {' '.join(PLAN_GRIDS)})",
    )
    p.add_argument("--config", help="config file (default: REPO/config/config.yaml)")
    p.add_argument(
        "--repo",
        default=".",
        help="checkout whose measured runs price the cells (default: the working directory)",
    )
    p.set_defaults(func=cmd_plan)
