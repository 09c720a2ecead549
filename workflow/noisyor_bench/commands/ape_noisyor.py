"""CLI: APE's question on noisy-OR (docs/ape_noisyor.md; rules/ape_noisyor.smk).

``ape-noisyor-problems`` builds a family's problem file, ``ape-noisyor-train`` trains one
encoder across models (every seed), ``ape-noisyor-baseline`` runs a per-datapoint bound (SVI,
LB-CDI) on the test candidates, ``ape-noisyor-report`` writes the table, figure and claims.
``--settings`` is the grid section ``grids.<grid>.ape_noisyor`` as JSON (inline or ``@file``).
"""

from __future__ import annotations

import argparse
import logging

from noisyor_bench.commands.arguments import add_table_outputs, json_argument
from noisyor_bench.infra.errors import ConfigError, DataError

log = logging.getLogger(__name__)


def _settings(args: argparse.Namespace):  # noqa: ANN202 - Settings, imported lazily
    from noisyor_bench.experiments.ape_noisyor.settings import parse_settings

    section = json_argument(args.settings, "--settings")
    if not isinstance(section, dict):
        raise ConfigError("--settings: expected a JSON object (grids.<grid>.ape_noisyor)")
    return parse_settings(section)


def _checked_problems(args: argparse.Namespace, settings) -> dict:  # noqa: ANN001 - Settings
    """The problem file, checked before any fit: ``--family`` configured, the seeds
    valid, the file a problem file whose shapes are the family's (a label naming another
    family, or a file of other settings, is refused naming both)."""
    from noisyor_bench.data.labels import check_choice, check_seed, require_kind
    from noisyor_bench.experiments.ape_noisyor.problems import read_problems

    check_choice(args.family, settings.families, "--family")
    for seed in settings.seeds:
        check_seed(seed, "--settings seeds")
    require_kind(args.problems, "noisyor-problems", "--problems")
    arrays = read_problems(args.problems)
    spec = settings.families[args.family]
    expected = {
        "problems": (settings.problems["train"], arrays["train_theta"].shape[0]),
        "candidates": (settings.candidates, arrays["train_theta"].shape[1]),
        "D": (spec.get("D"), arrays["train_theta"].shape[2]),
        "K": (spec.get("K"), arrays["train_theta"].shape[3]),
    }
    wrong = [
        f"{k} {got} (settings: {want})"
        for k, (want, got) in expected.items()
        if want is not None and want != got
    ]
    if wrong:
        raise DataError(
            f"--problems {args.problems} is not family {args.family!r} of these settings: it has "
            + ", ".join(wrong)
        )
    return arrays


def _out_dirs(args: argparse.Namespace, settings, method: str, seeds) -> list:  # noqa: ANN001 - Settings
    """One run folder per seed: ``--out-dir`` (a rule's outputs), each checked to be its seed's
    run, or without it each seed's place under ``results/``."""
    from noisyor_bench.experiments.ape_noisyor.runs import run_key
    from noisyor_bench.experiments.rundir import check_out_dir

    keys = [run_key(args.family, method, settings.n_train, seed) for seed in seeds]
    if args.out_dir is None:
        return [key.directory("results") for key in keys]
    if len(args.out_dir) != len(keys):
        raise ConfigError(
            f"--out-dir: {len(args.out_dir)} folder(s) for {len(keys)} run(s) (seeds {list(seeds)})"
        )
    return [check_out_dir(out, key) for out, key in zip(args.out_dir, keys, strict=True)]


def cmd_problems(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.ape_noisyor.problems import build_problems, write_problems

    arrays = build_problems(_settings(args), args.family)
    write_problems(args.out_npz, arrays)
    log.info("ape-noisyor %s: problems -> %s", args.family, args.out_npz)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    import torch

    from noisyor_bench.experiments.ape_noisyor.runs import train_encoder

    settings = _settings(args)
    if args.encoder not in settings.encoders:
        raise ConfigError(
            f"--encoder {args.encoder!r} is not configured; configured: {', '.join(settings.encoders)}"
        )
    arrays = _checked_problems(args, settings)
    outs = _out_dirs(args, settings, args.encoder, settings.seeds)
    torch.set_num_threads(1)
    for seed, out in zip(settings.seeds, outs, strict=True):
        train_encoder(
            arrays, settings, args.family, settings.encoders[args.encoder], seed, out, args.problems
        )
    return 0


def cmd_baseline(args: argparse.Namespace) -> int:
    import torch

    from noisyor_bench.experiments.ape_noisyor.runs import run_baseline

    settings = _settings(args)
    arrays = _checked_problems(args, settings)
    (out,) = _out_dirs(args, settings, args.method, [0])
    torch.set_num_threads(1)
    run_baseline(arrays, settings, args.family, args.method, out, args.problems)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from noisyor_bench.experiments.ape_noisyor.problems import read_problems
    from noisyor_bench.reporting.ape_noisyor.claims import ape_noisyor_claims
    from noisyor_bench.reporting.ape_noisyor.figure import plot_ape_noisyor
    from noisyor_bench.reporting.ape_noisyor.table import ape_noisyor_markdown, ape_noisyor_table, run_rows
    from noisyor_bench.reporting.claims import write_claims
    from noisyor_bench.reporting.tables import write_table

    settings = _settings(args)
    log_px = {}
    for path in args.problems:
        family = Path(path).stem.removeprefix("ape-noisyor-")
        log_px[family] = read_problems(path)["test_log_px"]
    table = ape_noisyor_table(run_rows(args.runs, log_px))
    detail = (
        f"{settings.problems['train']} training / {settings.problems['val']} validation / "
        f"{settings.problems['test']} test problems per family, {settings.candidates} candidates each, "
        f"{settings.rows['test']} test rows per problem, seeds {list(settings.seeds)}, at most "
        f"{settings.budget.max_epochs} epochs of >= {settings.budget.min_epoch_steps} steps "
        f"({settings.budget.batch_size} models x {settings.rows_per_model} rows per step)."
    )
    write_table(
        table, args.out_csv, ape_noisyor_markdown(table, {"grid": args.grid, "detail": detail}), args.out_md
    )
    plot_ape_noisyor(table, args.out_png)
    claims = ape_noisyor_claims(table)
    write_claims(
        claims, args.out_claims_csv, args.out_claims_md, title="APE on noisy-OR: claims and verdicts"
    )
    log.info("ape-noisyor: %d table rows, %d claims -> %s", len(table), len(claims), args.out_csv)
    return 0


def _add_settings(p: argparse.ArgumentParser) -> None:
    p.add_argument("--settings", required=True, help="grids.<grid>.ape_noisyor as JSON or @file")


def _add_family(p: argparse.ArgumentParser) -> None:
    """``--settings`` and ``--family``: the problem family of the settings a command works on."""
    _add_settings(p)
    p.add_argument("--family", required=True, help="a problem family of the settings (e.g. syn-random)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ape-noisyor-problems", help="APE on noisy-OR: the problem file of one family")
    _add_family(p)
    p.add_argument("--out-npz", required=True, help="results/data/ape-noisyor-<family>.npz")
    p.set_defaults(func=cmd_problems)

    p = sub.add_parser(
        "ape-noisyor-train", help="APE on noisy-OR: train one encoder across models (all seeds)"
    )
    _add_family(p)
    p.add_argument("--encoder", required=True, help="an encoder name of the settings (e.g. avi-model-aware)")
    p.add_argument("--problems", required=True, help="the family's problem file")
    p.add_argument(
        "--out-dir",
        nargs="+",
        default=None,
        metavar="RUN_DIR",
        help="the run folders, one per seed of the settings in their order, each "
        "<results>/runs/ape-noisyor/<family>/<encoder>/n<P_train>/seed<s> (default: results/runs/...)",
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "ape-noisyor-baseline", help="APE on noisy-OR: a per-datapoint bound on the test candidates"
    )
    _add_family(p)
    p.add_argument(
        "--method",
        required=True,
        choices=("svi", "lb-cdi"),
        help="per-datapoint baseline fitted on every test row",
    )
    p.add_argument("--problems", required=True, help="the family's problem file")
    p.add_argument(
        "--out-dir",
        nargs=1,
        default=None,
        metavar="RUN_DIR",
        help="the run folder <results>/runs/ape-noisyor/<family>/<method>/n<P_train>/seed0 "
        "(default: results/runs/...)",
    )
    p.set_defaults(func=cmd_baseline)

    p = sub.add_parser("ape-noisyor-report", help="APE on noisy-OR: table, figure and claims")
    _add_settings(p)
    p.add_argument("--grid", default="?", help="the grid's name, for the caption")
    p.add_argument(
        "--problems", nargs="+", required=True, help="problem files results/data/ape-noisyor-<family>.npz"
    )
    p.add_argument("--runs", nargs="+", required=True, help="metrics.json of every run")
    add_table_outputs(p)
    p.add_argument("--out-png", required=True)
    p.add_argument("--out-claims-csv", required=True)
    p.add_argument("--out-claims-md", required=True)
    p.set_defaults(func=cmd_report)
