"""CLI: ``noisyor-bench acp-train`` -- one training run -> one run directory (see runs.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from noisyor_bench.commands.arguments import json_argument
from noisyor_bench.data.labels import check_label, require_kind
from noisyor_bench.inference.fitting import BUDGET_FIELDS, FitBudget
from noisyor_bench.inference.noisyor import registry as methods_pkg
from noisyor_bench.infra.constants import DEFAULT_IW_SAMPLES, DEFAULT_N_SAMPLES, MAX_EXACT_K
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.io import read_json


def parse_hparams(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    value = json_argument(text, "--hparams")
    if not isinstance(value, dict):
        raise ConfigError(
            f"--hparams: expected a JSON object like '{{\"lr\": 0.001}}'; got {type(value).__name__}"
        )
    return value


# flag -> minimum of the integer options (None: option not given)
_INT_FLAGS = {
    "n_train": ("--n-train", 1),
    "seed": ("--seed", 0),
    "max_epochs": ("--max-epochs", 1),
    "patience": ("--patience", 1),
    "batch_size": ("--batch-size", 1),
    "eval_every": ("--eval-every", 1),
    "min_epoch_steps": ("--min-epoch-steps", 1),
    "convergence_window": ("--convergence-window", 1),
    "eval_samples": ("--eval-samples", 1),
    "iw_samples": ("--iw-samples", 0),
    "exact_max_k": ("--exact-max-k", 0),
    "threads": ("--threads", 1),
    "latents": ("--latents", 1),
}


def check_args(args: argparse.Namespace) -> None:
    """Reject bad values up front, naming the flag and what is allowed."""
    if args.method not in methods_pkg.METHOD_NAMES:
        raise ConfigError(
            f"--method: unknown method {args.method!r}; allowed: {', '.join(methods_pkg.METHOD_NAMES)}"
        )
    for attr, (flag, minimum) in _INT_FLAGS.items():
        value = getattr(args, attr, None)
        if value is not None and value < minimum:
            raise ConfigError(f"{flag}: must be an integer >= {minimum}; got {value}")
    if args.latents is not None and args.mode != "learning":
        raise ConfigError("--latents: only allowed with --mode learning (inference uses the dataset's K)")


# The ad-hoc experiment of a run trained by hand (train's default): no table reads it.
ADHOC_EXPERIMENT = "default"


def known_experiments(config: str | None) -> set[str] | None:
    """The experiments of every grid of the config file (synthetic ``experiments`` and the
    text experiments of ``text``); None when no config is given."""
    import yaml

    from noisyor_bench.experiments.acp import grid
    from noisyor_bench.experiments.acp.grid import corpora

    if not config:
        return None
    try:
        cfg = yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"--config {config}: cannot be read ({err})") from None
    names: set[str] = set()
    if isinstance(cfg, dict) and isinstance(cfg.get("grids"), dict):
        from noisyor_bench.experiments.acp.configcheck import migrate

        migrate(cfg)  # an older layout's ACP keys, at the grid's root, into its acp section
    for name in (cfg.get("grids") or {}) if isinstance(cfg, dict) else ():
        selected = {**cfg, "grid": name}
        names |= set(grid.experiments(selected))
        names |= {cell.experiment for cell in corpora.cells(selected)}
    return names


def check_experiment(experiment: str, config: str | None) -> None:
    """``--experiment`` is a valid path component and, with ``--config``, an experiment that
    config declares (the tables read only those); ``default`` is the ad-hoc one.  Without
    ``--config`` any valid name is allowed (hand-made and test runs; the workflow's rules only
    ever pass the grid's experiments)."""
    from noisyor_bench.experiments.config import check_name

    check_name(experiment, "--experiment: experiment")
    if experiment == ADHOC_EXPERIMENT:
        return
    known = known_experiments(config)
    if known is not None and experiment not in known:
        raise ConfigError(
            f"--experiment {experiment!r} is not an experiment of {config} (known: {', '.join(sorted(known))}); "
            "add it to a grid, or pass --config with the config that declares it"
        )


def check_run_labels(args: argparse.Namespace) -> str | None:
    """Labels of a run checked against its files before anything is fitted: ``--dataset`` is
    a noisy-OR dataset, ``--dataset-name`` the name its sidecar records, ``--experiment`` known.
    Returns the dataset name to record (None: the file's stem)."""
    require_kind(args.dataset, "noisyor-dataset", "--dataset")
    from noisyor_bench.experiments.config import check_name

    name = check_label(args.dataset, args.dataset_name, "name", "--dataset-name")
    if name is not None:
        check_name(name, "--dataset-name: dataset name")
    check_experiment(args.experiment, getattr(args, "config", None))
    return name


def spec_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~noisyor_bench.experiments.acp.runs.RunSpec` described by the parsed arguments."""
    from noisyor_bench.experiments.acp.runs import RunSpec

    check_args(args)
    dataset_name = check_run_labels(args)
    defaults = FitBudget()
    budget = FitBudget(
        **{
            name: getattr(args, name) if getattr(args, name) is not None else getattr(defaults, name)
            for name in BUDGET_FIELDS
        }
    )
    spec = RunSpec(
        dataset=Path(args.dataset),
        method=args.method,
        mode=args.mode,
        n_train=args.n_train,
        seed=args.seed,
        out_dir=Path(args.out),
        dataset_name=dataset_name,
        experiment=args.experiment,
        hparams=parse_hparams(args.hparams),
        budget=budget,
        n_samples=args.eval_samples,
        iw_samples=args.iw_samples,
        exact_max_k=args.exact_max_k,
        device=args.device,
        threads=args.threads,
        n_latent=args.latents,
        val_metrics=not args.no_val_metrics,
        resume=not args.no_resume,
        init_key=getattr(args, "init_key", None),
    )
    spec.validate()
    return spec


def cmd_train(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.acp.runs import execute_run, headline
    from noisyor_bench.experiments.rundir import METRICS_FILE

    spec = spec_from_args(args)
    out = execute_run(spec)
    metrics = read_json(out / METRICS_FILE)
    print(out)
    print(headline(metrics))
    return 0


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="dataset .npz (results/data/<name>.npz)")
    p.add_argument("--dataset-name", help="name recorded in metrics.json (default: the file's stem)")
    p.add_argument("--method", required=True, help=f"inference method: {', '.join(methods_pkg.METHOD_NAMES)}")
    p.add_argument(
        "--mode",
        required=True,
        choices=("inference", "learning"),
        help="inference: generative model fixed at the ground truth; learning: learned jointly",
    )
    p.add_argument("--n-train", type=int, required=True, help="training rows (the first N of the pool)")
    p.add_argument("--seed", type=int, required=True, help="run seed (initialisation, sampling, evaluation)")
    p.add_argument(
        "--init-key",
        help="initialisation key, e.g. fig4/syn-pattern/n1000/final (what the grid's acp-train-cell uses) or "
        ".../draw3 (a search draw): the run's training streams derive from (seed, key); "
        "default: from the seed alone",
    )
    p.add_argument("--hparams", help="method hyperparameters as a JSON object, or @file.json")
    p.add_argument("--max-epochs", type=int, help=f"epoch limit (default {FitBudget.max_epochs})")
    p.add_argument(
        "--patience", type=int, help=f"early-stopping patience in evaluations (default {FitBudget.patience})"
    )
    p.add_argument("--batch-size", type=int, help=f"minibatch size (default {FitBudget.batch_size})")
    p.add_argument("--eval-every", type=int, help=f"validate every N epochs (default {FitBudget.eval_every})")
    p.add_argument(
        "--min-epoch-steps",
        type=int,
        help="AVI/ACP: passes per epoch until this many optimiser steps (default 1 = one pass)",
    )
    p.add_argument(
        "--convergence-window",
        type=int,
        help=f"evaluations judged for convergence at the epoch limit (default {FitBudget.convergence_window})",
    )
    p.add_argument(
        "--convergence-rel-tol",
        type=float,
        help="converged at the epoch limit if the window improved the best validation NELBO by less than "
        f"this fraction (default {FitBudget.convergence_rel_tol:g})",
    )
    p.add_argument(
        "--eval-samples",
        type=int,
        default=DEFAULT_N_SAMPLES,
        help="discrete posterior samples per test point for NELBO and F1/EM (default %(default)s)",
    )
    p.add_argument(
        "--iw-samples",
        type=int,
        default=DEFAULT_IW_SAMPLES,
        help="samples of the importance-weighted bound; 0 skips it (default %(default)s)",
    )
    p.add_argument(
        "--exact-max-k",
        type=int,
        default=MAX_EXACT_K,
        help="exact log p(x) by 2^K enumeration when K <= this (default %(default)s)",
    )
    p.add_argument(
        "--latents", type=int, help="learning mode only: number of latent causes K (default: the dataset's)"
    )
    p.add_argument(
        "--experiment",
        default=ADHOC_EXPERIMENT,
        help="experiment name recorded in metrics.json: one of the config's grids (default: %(default)s, ad hoc)",
    )
    add_config_argument(p)
    p.add_argument("--device", default="auto", help="auto (CUDA if available), cpu, cuda, cuda:N")
    p.add_argument(
        "--threads", type=int, help="torch intra-op threads (default: $OMP_NUM_THREADS or torch's)"
    )
    p.add_argument(
        "--no-val-metrics", action="store_true", help="skip the test-protocol NELBO on the validation split"
    )
    p.add_argument("--no-resume", action="store_true", help="discard a checkpoint left by a killed run")
    p.add_argument(
        "--out", required=True, help="run directory, e.g. results/runs/<exp>/<dataset>/<method>/n<N>/seed<S>"
    )


def add_config_argument(p: argparse.ArgumentParser) -> None:
    """``--config``: the config whose grids declare the known experiments."""
    p.add_argument(
        "--config",
        help="config file whose grids declare the experiments: --experiment must be one of them "
        "(default: not checked, any valid name)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("acp-train", help="train one method on one dataset and evaluate it on the test split")
    add_train_arguments(p)
    p.set_defaults(func=cmd_train)
