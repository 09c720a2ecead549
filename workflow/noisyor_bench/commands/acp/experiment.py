"""CLI: one grid cell per job -- its random search, then its runs over seeds.

Snakemake ignores ``group:`` when running locally, and every process pays 2-5 s to import
torch, so the workflow's unit of work is a *cell* (experiment, dataset, method, N_train):
``acp-search`` runs all draws of the cell's random search in one process and ``acp-train-cell``
runs all seeds with the chosen hyperparameters.  Each run still writes its own directory.

Initialisation is part of the protocol: every run's random streams derive from its seed and
its ``init_key`` (:func:`~noisyor_bench.inference.seeding.run_init_key`), the cell (experiment,
dataset, N_train -- not the method) plus ``draw<d>`` for search draw ``d`` or ``final`` for the
reported seeds.  So each draw and each seed starts from its own initialisation, the final
seed-0 run is not the search winner replayed, and AVI/ACP/SVI/LB-CDI of one (cell, draw or
final, seed) share theta's initialisation (paired comparisons).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
from pathlib import Path
from typing import Any

from noisyor_bench.commands.acp.train import add_config_argument
from noisyor_bench.commands.arguments import add_segment_arguments, add_table_outputs, json_argument
from noisyor_bench.infra.constants import DEFAULT_IW_SAMPLES, DEFAULT_N_SAMPLES, MAX_EXACT_K
from noisyor_bench.infra.errors import ConfigError

log = logging.getLogger(__name__)

SEARCH_TABLE = "search.csv"
BEST_FILE = "best.json"


def _spec(
    args: argparse.Namespace,
    hparams: dict[str, Any],
    seed: int,
    out_dir: Path,
    evaluate_test: bool,
    draw: int | None = None,
    init: int = 0,
):
    """The RunSpec of one seed of the cell: initialisation ``init`` of search draw ``draw``, or a
    final run (``draw=None``)."""
    from noisyor_bench.experiments.acp.runs import RunSpec
    from noisyor_bench.inference.fitting import budget_from_mapping
    from noisyor_bench.inference.seeding import run_init_key

    budget = json_argument(args.budget, "--budget")
    evaluation = json_argument(args.evaluation, "--evaluation")
    return RunSpec(
        dataset=Path(args.dataset),
        dataset_name=args.dataset_name,
        experiment=args.experiment,
        method=args.method,
        mode=args.mode,
        n_train=args.n_train,
        seed=seed,
        out_dir=out_dir,
        hparams=hparams,
        budget=budget_from_mapping(budget, "--budget"),
        n_samples=int(evaluation.get("samples", DEFAULT_N_SAMPLES)),
        iw_samples=int(evaluation.get("iw_samples", DEFAULT_IW_SAMPLES)) if evaluate_test else 0,
        nll=dict(evaluation["nll"]) if evaluate_test and evaluation.get("nll") is not None else None,
        # 2^K enumeration of the exact -log p(x) up to this K (K = 16 rows of fig4k2: ~1 min a run)
        exact_max_k=int(evaluation.get("exact_max_k", MAX_EXACT_K)),
        device=args.device,
        threads=args.threads,
        evaluate_test=evaluate_test,
        n_latent=_n_latent(args),
        init_key=run_init_key(args.experiment, args.dataset_name, args.n_train, draw, init),
    )


def _n_latent(args: argparse.Namespace) -> int | None:
    """K to learn: ``--latents``, or ``--latents-factor`` x the dataset's true K (an
    overparameterised sensitivity run), or None (the dataset's K)."""
    latents, factor = getattr(args, "latents", None), getattr(args, "latents_factor", 1)
    if factor is None or factor == 1:
        return latents
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise ConfigError(f"--latents-factor must be an integer >= 1, got {factor!r}")
    if latents is not None:
        raise ConfigError("--latents-factor and --latents both set K; give one")
    from noisyor_bench.data.loading import read_dataset

    theta = read_dataset(Path(args.dataset), need=("theta",))["theta"]
    return factor * int(theta.shape[1])


def _check_cell(args: argparse.Namespace, seeds: list[int], flag: str) -> None:
    """The cell's labels against its files and the config, and its seeds, before any fit."""
    from noisyor_bench.commands.acp.train import check_run_labels
    from noisyor_bench.data.labels import check_seed

    for seed in seeds:
        check_seed(seed, flag)
    check_run_labels(args)


def _finished_draw(spec: Any, key: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """Metrics of a draw an earlier invocation finished under the settings ``key`` (the draw's
    :func:`~noisyor_bench.experiments.acp.settings_key.result_key`), else None with the settings
    that changed (empty when the draw has not finished)."""
    from noisyor_bench.experiments.acp.settings_key import changed_fields, recorded_result_key
    from noisyor_bench.infra.io import read_json

    path = spec.out_dir / "metrics.json"
    if not path.exists():
        return None, []
    metrics = read_json(path)
    changed = changed_fields(recorded_result_key(metrics), key)
    return (None, changed) if changed else (metrics, [])


def draw_dir_name(index: int, init: int) -> str:
    """Folder of initialisation ``init`` of draw ``index``: ``draw<d>`` for init 0 (the folder of
    a one-initialisation search), ``draw<d>-init<j>`` beside it for the others."""
    return f"draw{index}" if init == 0 else f"draw{index}-init{init}"


def _draw_rows(
    args: argparse.Namespace, draws: list[Any], indices: range, work: Path
) -> list[dict[str, Any]]:
    """Run draws ``indices`` of ``draws``, each on ``--inits-per-draw`` initialisations, in
    ``work/draw<i>[-init<j>]/`` (skipping those an earlier invocation finished under the same
    settings: a draw of another dataset content, budget, evaluation... is recomputed); their search.csv
    rows: ``val_nelbo`` is the draw's score (:func:`~noisyor_bench.experiments.acp.search.draw_score`,
    the mean over its initialisations, infinite if one diverged), ``val_nelbo_inits`` the list."""
    from noisyor_bench.experiments.acp.runs import batch_groups, execute_run, execute_runs_batched
    from noisyor_bench.experiments.acp.search import check_inits_per_draw, draw_score
    from noisyor_bench.inference.training import NonFiniteLossError

    inits = range(check_inits_per_draw(args.inits_per_draw, "--inits-per-draw"))
    specs = {
        (index, init): _spec(
            args,
            draws[index],
            args.seed,
            work / draw_dir_name(index, init),
            evaluate_test=False,
            draw=index,
            init=init,
        )
        for index in indices
        for init in inits
    }
    settings = _draw_settings(args, specs)
    done: dict[tuple[int, int], dict[str, Any]] = {}
    changed: dict[int, list[str]] = {}
    for key, spec in specs.items():
        metrics, moved = _finished_draw(spec, settings[key])
        if metrics is not None:
            done[key] = metrics
        elif moved:
            changed.setdefault(key[0], []).extend(moved)
    if changed:
        fields = ", ".join(dict.fromkeys(f for moved in changed.values() for f in moved))
        log.warning("%d draws recomputed: settings changed (%s)", len(changed), fields)
    failed: dict[tuple[int, int], NonFiniteLossError] = {}
    pending = [key for key in specs if key not in done]
    if args.batch_draws:
        # Draws (and their initialisations) that share the encoder's shape train as one
        # computation.
        candidates = list(pending)
        for group in batch_groups([specs[k] for k in candidates]):
            members = [candidates[i] for i in group]
            if len(members) < 2:
                continue
            for key, outcome in zip(members, execute_runs_batched([specs[k] for k in members]), strict=True):
                if isinstance(outcome, NonFiniteLossError):
                    failed[key] = outcome
            pending = [k for k in pending if k not in members]
    for key in pending:
        try:
            execute_run(specs[key])
        except NonFiniteLossError as err:
            failed[key] = err
    rows = []
    for index in indices:
        values, epochs, seconds, reasons = [], [], [], []
        for init in inits:
            spec = specs[(index, init)]
            metrics = done.get((index, init)) or _finished_draw(spec, settings[(index, init)])[0]
            if (index, init) in failed:
                # A diverging draw is a result of the search: recorded with an
                # infinite validation NELBO and the reason; its .partial directory is kept.
                log.warning("draw %d init %d diverged: %s", index, init, failed[(index, init)])
                metrics = {"val_nelbo": math.inf}
                reasons.append(
                    f"diverged (init {init}): {failed[(index, init)]}"
                    if init
                    else f"diverged: {failed[(index, init)]}"
                )
            if metrics is None:
                raise ConfigError(f"draw {index} (init {init}) of the search in {work} left no metrics.json")
            val = metrics.get("val_nelbo")
            values.append(math.nan if val is None else float(val))
            epochs += [metrics["epochs"]] if metrics.get("epochs") is not None else []
            seconds += [metrics["train_seconds"]] if metrics.get("train_seconds") is not None else []
        score = draw_score(values) if not reasons else math.inf
        rows.append(
            {
                "draw": index,
                "val_nelbo": score if len(values) > 1 else values[0],
                "epochs": max(epochs) if epochs else None,
                "train_seconds": sum(seconds) if seconds else None,
                "hparams": json.dumps(draws[index], sort_keys=True),
                "reason": "; ".join(reasons),
                "val_nelbo_inits": json.dumps(values),
            }
        )
        log.info(
            "draw %d/%d: validation NELBO %s over %d inits: %s",
            index + 1,
            len(draws),
            score,
            len(values),
            values,
        )
    return rows


def _draw_settings(args: argparse.Namespace, specs: dict[Any, Any]) -> dict[Any, dict[str, Any]]:
    """Each draw's result key: a finished draw is reused only when it was made under it."""
    from noisyor_bench.experiments.acp.settings_key import result_key
    from noisyor_bench.infra.device import resolve_device
    from noisyor_bench.infra.hashing import sha256_file_memo

    sha = sha256_file_memo(args.dataset)
    device_type = resolve_device(args.device).type
    return {key: result_key(spec, sha, device_type) for key, spec in specs.items()}


def _write_selection(rows: list[dict[str, Any]], hparams: list[Any], out: Path, record: Any) -> int:
    """search.csv and best.json of a whole search (``rows`` of every draw, in draw order);
    fails naming every draw if all diverged.  ``record()`` is best.json's provenance.
    Imports no torch (``acp-search-select`` runs it; the error comes from ``infra.errors``)."""
    import pandas as pd

    from noisyor_bench.experiments.acp.search import best_draw
    from noisyor_bench.infra.errors import NonFiniteLossError
    from noisyor_bench.infra.io import write_json_atomic, write_text_atomic

    table = pd.DataFrame(rows)
    if (table["reason"] != "").all():
        raise NonFiniteLossError(
            f"every draw of the search in {out} diverged:\n  "
            + "\n  ".join(f"draw {r['draw']} {r['hparams']}: {r['reason']}" for r in rows)
        )
    best = best_draw(dict(zip(table["draw"], table["val_nelbo"])))
    write_text_atomic(out / SEARCH_TABLE, table.to_csv(index=False))
    per_init = json.loads(str(table.loc[table["draw"] == best, "val_nelbo_inits"].iloc[0]))
    write_json_atomic(
        out / BEST_FILE,
        {
            "provenance": record(),
            "draw": best,
            "hparams": hparams[best],
            "val_nelbo": float(table.loc[table["draw"] == best, "val_nelbo"].iloc[0]),
            "val_nelbo_inits": per_init,
            "inits_per_draw": len(per_init),
            "criterion": "lowest validation NELBO (test protocol: discrete samples), test set untouched; "
            f"a draw's score is the mean over its {len(per_init)} initialisation(s)",
            "n_draws": len(hparams),
        },
    )
    print(f"best draw {best} of {len(hparams)} (mean over {len(per_init)} inits): {hparams[best]}")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    _check_cell(args, [args.seed], "--seed")
    draws = json_argument(args.draws, "--draws")
    if not isinstance(draws, list) or not draws:
        raise ConfigError("--draws: expected a non-empty JSON list of hyperparameter dicts (draw 0 first)")
    if args.draws_range is not None:
        return _search_chunk(args, draws)
    if args.out_chunk is not None:
        raise ConfigError("--out-chunk needs --draws-range (without it the search writes --out-dir)")
    if args.out_dir is None:
        raise ConfigError("acp-search needs --out-dir (or --draws-range with --out-chunk for one chunk)")
    out = Path(args.out_dir)
    rows = _draw_rows(args, draws, range(len(draws)), out)
    return _write_selection(rows, draws, out, lambda: _search_provenance(args, draws, out))


def _search_chunk(args: argparse.Namespace, draws: list[Any]) -> int:
    """Draws START..STOP-1 of the search: their rows in the chunk table ``--out-chunk``
    (search.csv's columns plus ``n_draws``); the draws' directories in ``<chunk without .csv>/``,
    so chunks running side by side share no working file (batch checkpoints included)."""
    import pandas as pd

    from noisyor_bench.experiments.acp.search import parse_draws_range
    from noisyor_bench.infra import provenance
    from noisyor_bench.infra.io import write_text_atomic

    if args.out_chunk is None:
        raise ConfigError("--draws-range needs --out-chunk (the chunk's table, e.g. chunks/0.csv)")
    if args.out_dir is not None:
        raise ConfigError("--draws-range writes --out-chunk and its folder; leave out --out-dir")
    indices = parse_draws_range(args.draws_range, len(draws))
    chunk = Path(args.out_chunk)
    work = chunk.with_suffix("")
    rows = _draw_rows(args, draws, indices, work)
    for index in indices:  # the chunk's sidecar lists every finished draw's metrics.json
        for init in range(args.inits_per_draw):
            name = draw_dir_name(index, init)
            if (work / name / "metrics.json").is_file():
                provenance.note_input(work / name / "metrics.json", name)
    table = pd.DataFrame(rows).assign(n_draws=len(draws))
    write_text_atomic(chunk, table.to_csv(index=False))
    finite = [r["draw"] for r in rows if not r["reason"]]
    print(
        f"draws {indices.start}..{indices.stop - 1} of {len(draws)}: {len(finite)} finished, "
        f"{len(rows) - len(finite)} diverged -> {chunk}"
    )
    return 0


def _optional(value: str, kind: type) -> Any:
    """A chunk table's cell as the value the search's row held (empty: None)."""
    return None if value == "" else kind(float(value)) if kind is int else kind(value)


def _chunk_rows(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The rows of one chunk table as the search built them (so the merged search.csv has the
    types, hence the text, of a search run in one job), and its ``n_draws``."""
    import csv

    from noisyor_bench.infra.errors import DataError

    with open(path, newline="", encoding="utf-8") as fh:
        records = list(csv.DictReader(fh))
    columns = {"draw", "val_nelbo", "epochs", "train_seconds", "hparams", "reason", "n_draws"}
    # val_nelbo_inits: absent from older tables (one initialisation per draw)
    if not records or not columns <= set(records[0]):
        raise DataError(f"{path}: not a search chunk table (columns {sorted(columns)})")
    rows = [
        {
            "draw": int(r["draw"]),
            "val_nelbo": math.nan if r["val_nelbo"] == "" else float(r["val_nelbo"]),
            "epochs": _optional(r["epochs"], int),
            "train_seconds": _optional(r["train_seconds"], float),
            "hparams": r["hparams"],
            "reason": r["reason"],
            "val_nelbo_inits": r.get("val_nelbo_inits") or json.dumps([float(r["val_nelbo"] or "nan")]),
        }
        for r in records
    ]
    totals = {int(r["n_draws"]) for r in records}
    if len(totals) != 1:
        raise DataError(f"{path}: rows disagree on n_draws {sorted(totals)}")
    return rows, totals.pop()


def cmd_search_select(args: argparse.Namespace) -> int:
    """Merge the chunk tables of one search into its search.csv and best.json, exactly as the
    search run in one job writes them (same rows, same selection, ties and divergences)."""
    from noisyor_bench.experiments.acp.search import check_chunk_coverage

    rows: list[dict[str, Any]] = []
    totals: set[int] = set()
    for path in args.chunks:
        chunk_rows, total = _chunk_rows(Path(path))
        rows += chunk_rows
        totals.add(total)
    if len(totals) != 1:
        raise ConfigError(
            f"--chunks: the tables come from searches of {sorted(totals)} draws, not one search"
        )
    rows.sort(key=lambda r: r["draw"])
    check_chunk_coverage([r["draw"] for r in rows], "--chunks")
    if len(rows) != totals.pop():
        raise ConfigError(f"--chunks: {len(rows)} draws, but the search has more; a chunk table is missing")
    hparams = [json.loads(r["hparams"]) for r in rows]
    out = Path(args.out_dir)
    return _write_selection(rows, hparams, out, lambda: _select_provenance(args, hparams, out))


def _select_provenance(args: argparse.Namespace, hparams: list[Any], out: Path) -> dict[str, Any]:
    """best.json's record of a chunked search: the chunk tables and every finished draw's metrics.json."""
    from noisyor_bench.infra import provenance

    inputs = [provenance.file_entry(path, "chunk", out) for path in args.chunks]
    for path in args.chunks:
        work = Path(path).with_suffix("")
        inputs += [
            provenance.file_entry(metrics, metrics.parent.name, out)
            for metrics in sorted(work.glob("draw*/metrics.json"))
        ]
    config = {
        "draws": hparams,
        "chunks": [str(p) for p in args.chunks],
        "criterion": "lowest mean validation NELBO over each draw's initialisations",
    }
    return provenance.artifact_record("search", inputs, [out / SEARCH_TABLE], out, config)


def _search_provenance(args: argparse.Namespace, draws: list[Any], out: Path) -> dict[str, Any]:
    """best.json's record: the dataset, every draw's metrics.json, the search settings."""
    from noisyor_bench.inference.seeding import run_init_key
    from noisyor_bench.infra import provenance

    inputs = [provenance.file_entry(args.dataset, "dataset", out)]
    # Diverged draws have no metrics.json (search.csv records them with their reason).
    folders = [draw_dir_name(i, j) for i in range(len(draws)) for j in range(args.inits_per_draw)]
    finished = [name for name in folders if (out / name / "metrics.json").is_file()]
    inputs += [provenance.file_entry(out / name / "metrics.json", name, out) for name in finished]
    config = {
        "draws": draws,
        "seed": args.seed,
        "inits_per_draw": args.inits_per_draw,
        "init_keys": [
            run_init_key(args.experiment, args.dataset_name, args.n_train, i, j)
            for i in range(len(draws))
            for j in range(args.inits_per_draw)
        ],
        "budget": json_argument(args.budget, "--budget"),
        "evaluation": json_argument(args.evaluation, "--evaluation"),
        "criterion": "lowest mean validation NELBO over each draw's initialisations",
    }
    return provenance.artifact_record("search", inputs, [out / SEARCH_TABLE], out, config)


def cmd_search_table(args: argparse.Namespace) -> int:
    """Every draw of the run's searches (tables/search_draws.csv) and the selection (.md)."""
    from noisyor_bench.infra.provenance import note_input
    from noisyor_bench.reporting.acp.search_tables import search_draws, selection_markdown
    from noisyor_bench.reporting.tables import write_table

    for folder in args.searches:
        for name in (SEARCH_TABLE, BEST_FILE):
            if (Path(folder) / name).is_file():
                note_input(Path(folder) / name, f"search {name}")
    draws = search_draws(args.searches)
    write_table(draws, args.out_csv, selection_markdown(draws), args.out_md)
    print(f"{len(args.searches)} searches, {len(draws)} draws -> {args.out_csv}")
    return 0


def cmd_train_cell(args: argparse.Namespace) -> int:
    from noisyor_bench.experiments.acp.runs import batchable, execute_run, execute_runs_batched, headline
    from noisyor_bench.infra import provenance
    from noisyor_bench.infra.io import read_json

    _check_cell(args, list(args.seeds), "--seeds")
    out_dirs = _train_cell_dirs(args)
    hparams: dict[str, Any] = {}
    if args.best:
        provenance.note_input(args.best, "--best (hyperparameters)")
        hparams = _best_hparams(Path(args.best))
    # Seeds are independent runs: a divergence (NaN loss) in one keeps the finished seeds'
    # run directories and the failing run's .partial directory, trains the remaining seeds,
    # then fails naming every diverged run.  Any other error stops at once.
    from noisyor_bench.inference.training import NonFiniteLossError

    diverged: list[str] = []
    specs = [
        _spec(args, hparams, seed, out, evaluate_test=True)
        for seed, out in zip(args.seeds, out_dirs, strict=True)
    ]
    previous = Path(args.previous) if args.previous else None
    if previous is not None:
        if len(args.seeds) != 1 or args.batch_seeds:
            raise ConfigError(
                "--previous (a training segment's state) continues one seed: give one --seeds value"
            )
        provenance.note_input(previous, "--previous (the last training segment's state)")
    if args.batch_seeds and batchable(specs):
        # All seeds as one computation: same numbers as one by one to float rounding.
        for seed, spec, outcome in zip(args.seeds, specs, execute_runs_batched(specs), strict=True):
            if isinstance(outcome, NonFiniteLossError):
                log.error("%s", outcome)
                diverged.append(f"seed {seed}: {outcome}")
            else:
                print(f"{spec.out_dir}: {headline(read_json(spec.out_dir / 'metrics.json'))}")
    else:
        for seed, spec in zip(args.seeds, specs, strict=True):
            try:
                execute_run(spec, previous)
            except NonFiniteLossError as err:
                log.error("%s", err)
                diverged.append(f"seed {seed}: {err}")
                continue
            print(f"{spec.out_dir}: {headline(read_json(spec.out_dir / 'metrics.json'))}")
    if diverged:
        kept = len(args.seeds) - len(diverged)
        raise NonFiniteLossError(
            f"{len(diverged)} of {len(args.seeds)} seeds diverged ({kept} finished and kept):\n  "
            + "\n  ".join(diverged)
        )
    return 0


def cmd_train_segment(args: argparse.Namespace) -> int:
    """One segment of a seed's training that runs as several jobs (rule train_segment)."""
    from noisyor_bench.experiments import segments
    from noisyor_bench.experiments.acp.runs import execute_segment
    from noisyor_bench.infra import provenance

    _check_cell(args, [args.seed], "--seed")
    segments.check_segment(args.segment, args.segments, bool(args.previous), "acp-train-cell --previous")
    if not args.seconds >= 0:
        raise ConfigError(f"--seconds (the segment's fitting time) must be >= 0, got {args.seconds}")
    (out_dir,) = _train_cell_dirs(argparse.Namespace(**{**vars(args), "seeds": [args.seed]}))
    hparams: dict[str, Any] = {}
    if args.best:
        provenance.note_input(args.best, "--best (hyperparameters)")
        hparams = _best_hparams(Path(args.best))
    previous = Path(args.previous) if args.previous else None
    if previous is not None:
        provenance.note_input(previous, "--previous (the last training segment's state)")
    spec = _spec(args, hparams, args.seed, out_dir, evaluate_test=True)
    epoch = execute_segment(spec, args.seconds, Path(args.out), previous)
    print(f"segment {args.segment + 1} of {args.segments}: epoch {epoch} -> {args.out}")
    return 0


def _train_cell_dirs(args: argparse.Namespace) -> list[Path]:
    """One run folder per seed: ``--out-dir`` (a rule's outputs), each checked to be its seed's
    run, or without it each seed's place under ``results/``."""
    from noisyor_bench.experiments.rundir import RunKey, check_out_dir, run_dir

    cell = (args.experiment, args.dataset_name, args.method, args.n_train)
    if args.out_dir is None:
        return [run_dir("results", *cell, seed) for seed in args.seeds]
    if len(args.out_dir) != len(args.seeds):
        raise ConfigError(
            f"--out-dir: {len(args.out_dir)} folder(s) for {len(args.seeds)} seed(s) (one per --seeds value)"
        )
    return [
        check_out_dir(out, RunKey(*cell, seed)) for out, seed in zip(args.out_dir, args.seeds, strict=True)
    ]


def _best_hparams(path: Path) -> dict[str, Any]:
    """``hparams`` of a search's best.json, validated (ConfigError naming --best and the file)."""
    best = json_argument(f"@{path}", "--best")
    if not isinstance(best, dict) or not isinstance(best.get("hparams"), dict):
        raise ConfigError(
            f"--best {path}: expected a search's best.json, a JSON object with an 'hparams' object"
        )
    return dict(best["hparams"])


def _previous_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--previous",
        default="",
        help="the previous segment's output (rule train_segment) to continue from; empty: none",
    )


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, help="dataset .npz")
    p.add_argument("--dataset-name", required=True, help="dataset name (the runs/ path component)")
    p.add_argument("--experiment", required=True, help="experiment name, e.g. fig3a")
    p.add_argument(
        "--method", required=True, help="avi, acp, svi, lb-cdi, ub-cdi or acp-sg (learning mode only)"
    )
    p.add_argument(
        "--mode",
        required=True,
        choices=["inference", "learning"],
        help="inference: generative model fixed at the truth; learning: fitted too",
    )
    p.add_argument(
        "--n-train", type=int, required=True, help="first N_train rows of the training pool (0: none)"
    )
    p.add_argument(
        "--budget",
        default="{}",
        help="FitBudget fields as JSON (max_epochs, patience, batch_size, eval_every, min_epoch_steps, convergence_window, convergence_rel_tol)",
    )
    p.add_argument("--evaluation", default="{}", help='JSON {"samples": 100, "iw_samples": 100}')
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda[:N]")
    p.add_argument("--threads", type=int, default=1, help="torch threads (= the job's Snakemake threads)")
    p.add_argument(
        "--latents-factor",
        type=int,
        default=1,
        help="learn K = this x the dataset's true K (learning mode on a dataset with ground truth; "
        "2: the overparameterised sensitivity of Fig. 4, grid key latents_factor)",
    )
    add_config_argument(p)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "acp-search", help="random hyperparameter search of one cell, selected on validation NELBO"
    )
    _common(p)
    p.add_argument(
        "--seed",
        type=int,
        required=True,
        help="seed of the search draws (each draw's initialisation derives from cell, draw index and seed)",
    )
    p.add_argument(
        "--draws", required=True, help="JSON list (or @file) of hyperparameter dicts; draw 0 = defaults"
    )
    p.add_argument("--out-dir", help="search directory: draw<i>/, search.csv, best.json (the whole search)")
    p.add_argument(
        "--draws-range",
        metavar="START:STOP",
        help="run only draws START..STOP-1 of --draws (one chunk of a search split into jobs; "
        "each draw's values and initialisation do not depend on the split); needs --out-chunk",
    )
    p.add_argument(
        "--out-chunk",
        help="with --draws-range: the chunk's table (e.g. <search>/chunks/0.csv); its draws run in "
        "the folder of that name without .csv; acp-search-select merges the chunks",
    )
    p.add_argument(
        "--inits-per-draw",
        type=int,
        default=2,
        help="initialisations each draw is trained from; its score is the mean validation NELBO over "
        "them (one initialisation mostly selects a lucky start); grid key search.inits_per_draw",
    )
    p.add_argument(
        "--batch-draws",
        action="store_true",
        help="train the draws that share the encoder's shape (AVI/ACP/ACP-SG) as one batched computation "
        "(same validation NELBO as one by one to float rounding)",
    )
    p.set_defaults(func=cmd_search)

    p = sub.add_parser(
        "acp-search-select",
        help="merge the chunk tables of a search (acp-search --draws-range) into its search.csv and best.json",
    )
    p.add_argument("--chunks", nargs="+", required=True, help="chunk tables of one search (any order)")
    p.add_argument("--out-dir", required=True, help="search directory: search.csv, best.json")
    p.set_defaults(func=cmd_search_select)

    p = sub.add_parser(
        "acp-search-table",
        help="every draw of the run's random searches (hyperparameters, validation NELBO per initialisation, "
        "score, selected) and the selected hyperparameters per cell",
    )
    p.add_argument(
        "--searches", nargs="+", required=True, help="search folders (search.csv and best.json each)"
    )
    add_table_outputs(p)
    p.set_defaults(func=cmd_search_table)

    p = sub.add_parser("acp-train-cell", help="train one cell for several seeds (one run directory per seed)")
    _common(p)
    p.add_argument(
        "--seeds", type=int, nargs="+", required=True, help="training seeds, one run directory each"
    )
    p.add_argument(
        "--best", help="best.json of the cell's search (default: the method's default hyperparameters)"
    )
    p.add_argument(
        "--batch-seeds",
        action="store_true",
        help="train the seeds of an AVI/ACP/ACP-SG cell as one batched computation (same "
        "metrics as one by one to float rounding, several times faster on small problems)",
    )
    p.add_argument(
        "--latents",
        type=int,
        default=None,
        help="K to learn (learning mode; required for datasets without ground truth, e.g. text corpora)",
    )
    p.add_argument(
        "--out-dir",
        nargs="+",
        default=None,
        metavar="RUN_DIR",
        help="the run folders, one per --seeds value in its order, each "
        "<results>/runs/<experiment>/<dataset>/<method>/n<N>/seed<s> "
        "(default: results/runs/... of each seed)",
    )
    _previous_argument(p)
    p.set_defaults(func=cmd_train_cell)

    p = sub.add_parser(
        "acp-train-segment",
        help="one segment of a seed's training that runs as several jobs (search.max_job_hours): "
        "fit from the previous segment's state for --seconds, then hand the exact state on",
    )
    _common(p)
    p.add_argument("--seed", type=int, required=True, help="training seed")
    p.add_argument("--best", help="best.json of the cell's search (as acp-train-cell)")
    p.add_argument("--latents", type=int, default=None, help="K to learn (as acp-train-cell)")
    p.add_argument(
        "--out-dir",
        nargs=1,
        default=None,
        metavar="RUN_DIR",
        help="the seed's run folder (its .partial working folder holds the fit; default: results/runs/...)",
    )
    add_segment_arguments(p, "acp-train-cell", "the fit's state at the segment's end (.pt)")
    p.add_argument(
        "--seconds",
        type=float,
        required=True,
        help="fitting time of this segment: it pauses at the first epoch end after it (0: after one epoch)",
    )
    _previous_argument(p)
    p.set_defaults(func=cmd_train_segment)
