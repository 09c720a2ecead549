"""The random searches of a run as tables: every draw of every searched cell, and the selection.

Why a table: a reader of a published reference (``reference/``: tables and figures only) must
see which hyperparameters each cell ran with and how the search chose them:
each draw's hyperparameters, its validation NELBO per initialisation, its score (their mean)
and whether it was selected.  Read from each search's ``search.csv`` and ``best.json``
(:mod:`noisyor_bench.commands.acp.experiment`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import read_json
from noisyor_bench.reporting.methods import method_label, method_rank
from noisyor_bench.reporting.tables import format_number, markdown_table

CELL = ("experiment", "dataset", "method", "n_train")
ARTIFACT = "search"
"""The ``artifact`` of the draws table (the claims read it as ``tables["search"]``)."""
DRAW_COLUMNS = (
    "artifact",
    *CELL,
    "draw",
    "hparams",
    "val_nelbo_inits",
    "score",
    "n_inits",
    "selected",
    "epochs",
    "train_seconds",
    "reason",
)


def cell_of_search(path: Path) -> dict[str, Any]:
    """(experiment, dataset, method, N_train) of a search folder ``.../search/<e>/<d>/<m>/n<N>``."""
    parts = Path(path).parts
    if len(parts) < 4 or not parts[-1].startswith("n") or not parts[-1][1:].isdigit():
        raise DataError(f"{path}: not a search folder (expected search/<experiment>/<dataset>/<method>/n<N>)")
    return dict(zip(CELL, (parts[-4], parts[-3], parts[-2], int(parts[-1][1:])), strict=True))


def _inits(row: pd.Series) -> list[float]:
    """The per-initialisation values of a search.csv row (one value: searches from before two initialisations per draw)."""
    text = row.get("val_nelbo_inits")
    if isinstance(text, str) and text:
        return [float(v) for v in json.loads(text)]
    return [float(row["val_nelbo"])]


def search_draws(searches: Sequence[str | Path]) -> pd.DataFrame:
    """One row per draw of every search folder in ``searches`` (each with search.csv and best.json)."""
    rows = []
    for folder in searches:
        folder = Path(folder)
        table_path, best_path = folder / "search.csv", folder / "best.json"
        for path in (table_path, best_path):
            if not path.is_file():
                raise DataError(f"{path}: not found; a finished search writes search.csv and best.json")
        table = pd.read_csv(table_path, keep_default_na=False)
        best = read_json(best_path)
        if "draw" not in best:
            raise DataError(f"{best_path}: no 'draw' key; not a search's best.json")
        cell = cell_of_search(folder)
        for r in table.to_dict("records"):
            values = _inits(pd.Series(r))
            score = float(r["val_nelbo"]) if r["val_nelbo"] != "" else math.nan
            rows.append(
                {
                    "artifact": ARTIFACT,
                    **cell,
                    "draw": int(r["draw"]),
                    "hparams": r["hparams"],
                    "val_nelbo_inits": json.dumps(values),
                    "score": score,
                    "n_inits": len(values),
                    "selected": int(r["draw"]) == int(best["draw"]),
                    "epochs": r.get("epochs", ""),
                    "train_seconds": r.get("train_seconds", ""),
                    "reason": r.get("reason", ""),
                }
            )
    frame = pd.DataFrame(rows, columns=list(DRAW_COLUMNS))
    if frame.empty:
        return frame
    order = frame.assign(_r=frame["method"].map(method_rank))
    return (
        order.sort_values(["experiment", "dataset", "_r", "n_train", "draw"])
        .drop(columns="_r")
        .reset_index(drop=True)
    )


def search_protocol(
    draws: pd.DataFrame | None, experiment: str, dataset: str, method: str, n_train: int
) -> tuple[int, int]:
    """(draws, initialisations per draw) of one cell's search; (1, 1) when the cell was not
    searched (it ran the method's defaults)."""
    if draws is None or draws.empty:
        return 1, 1
    g = draws[
        (draws["experiment"] == experiment)
        & (draws["dataset"] == dataset)
        & (draws["method"] == method)
        & (draws["n_train"].astype(int) == int(n_train))
    ]
    if g.empty:
        return 1, 1
    return len(g), int(g["n_inits"].astype(int).max())


def selection_markdown(draws: pd.DataFrame) -> str:
    """The selected draw of every searched cell: hyperparameters, per-init validation NELBO, score,
    rank of the draw's first initialisation alone (1 = a one-initialisation search picks it too)."""
    rows = []
    for _, g in draws.groupby(list(CELL), sort=False):
        sel = g[g["selected"]]
        if sel.empty:
            continue
        s = sel.iloc[0]
        first = g.assign(_f=[json.loads(v)[0] for v in g["val_nelbo_inits"]])
        finite = first[first["_f"].map(math.isfinite)]
        alone = int(finite.sort_values(["_f", "draw"])["draw"].iloc[0]) if len(finite) else None
        inits = ", ".join(format_number(v, 3) for v in json.loads(s["val_nelbo_inits"]))
        rows.append(
            [
                s["experiment"],
                s["dataset"],
                method_label(str(s["method"])),
                int(s["n_train"]),
                f"{len(g)} x {int(s['n_inits'])}",
                int(s["draw"]),
                f"`{s['hparams']}`",
                inits,
                format_number(float(s["score"]), 3),
                "—" if alone is None else ("same" if alone == int(s["draw"]) else f"draw {alone}"),
            ]
        )
    header = [
        "experiment",
        "dataset",
        "method",
        "N_train",
        "draws x inits",
        "selected draw",
        "hyperparameters (draw 0: the defaults)",
        "val. NELBO per init",
        "score (mean)",
        "one-init search would pick",
    ]
    return (
        "# Random searches: the selected hyperparameters\n\n"
        "Each cell's random search (supplement Section 3) trains every draw from several "
        "initialisations (grid key `search.inits_per_draw`) and selects the draw with the lowest mean "
        "validation NELBO (test set untouched). *One-init search would pick*: the draw a search scored "
        "on the first initialisation alone would have selected ('same' when it agrees). Every draw, "
        "with its per-initialisation values: `search_draws.csv`.\n\n" + markdown_table(header, rows)
    )
