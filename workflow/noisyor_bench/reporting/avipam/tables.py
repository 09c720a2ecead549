"""aviPAM Tables 1-4: NPMI (external Wikipedia, internal held-out) and training minutes per
method (and MoLDA component), mean ± 95% CI over seeds, the paper's numbers beside ours;
beside ``train_minutes`` its robust centre and spread ``train_minutes_median`` / ``_low`` /
``_high`` (:mod:`noisyor_bench.experiments.avipam.methods`), which the speed-up claim is judged on.

* Table 1 = 20 Newsgroups at the small sizes, Table 2 = 20 Newsgroups at the large sizes,
  Table 3 / 4 = the NIPS SUBSTITUTE (NeurIPS abstracts) at the small / large sizes.
* NPMI of a run = mean over its topics of the mean NPMI of the 45 pairs of each topic's top-10
  words (:func:`noisyor_bench.evaluation.pmi.score_topics`, ``measure="npmi"``, Lau 2014
  conventions), scored here from the run's ``topics.npz`` and the reference counts.
* Rows of the paper's table that the grid did not run are shown as "not run in this grid".
* The caption lists every reduction against the paper read from the runs themselves
  (Gibbs iterations, aviPAM epochs, seeds, data substitutions).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.experiments import papers
from noisyor_bench.experiments.rundir import read_metrics_record
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import load_npz
from noisyor_bench.reporting.avipam.labels import CORPUS_LABELS, METHOD_LABELS
from noisyor_bench.reporting.tables import CI_NOTE, markdown_table, stat_cell, summarise

TABLES = ("table1", "table2", "table3", "table4")
TIME_SPREAD = ("train_minutes_median", "train_minutes_low", "train_minutes_high")  # infra.timing
METRICS = ("npmi_external", "npmi_internal", "train_minutes", *TIME_SPREAD)
METHOD_ORDER = list(METHOD_LABELS)
NOT_RUN = "not run in this grid"


def paper_numbers() -> dict[str, Any]:
    """The aviPAM paper's numbers (a fresh copy; the one loader:
    :func:`noisyor_bench.experiments.papers.paper_numbers`)."""
    return papers.paper_numbers("avipam")


def read_references(paths: Sequence[str | Path]) -> dict[tuple[str, str], Any]:
    """``(corpus, reference) -> CooccurrenceTable`` from files named ``<corpus>-<reference>.npz``."""
    from noisyor_bench.evaluation.pmi import CooccurrenceTable

    refs = {}
    for p in paths:
        corpus, _, reference = Path(p).stem.rpartition("-")
        if reference not in ("external", "internal") or not corpus:
            raise DataError(f"{p}: NPMI reference files are named <corpus>-<external|internal>.npz")
        refs[(corpus, reference)] = CooccurrenceTable.load(p)
    return refs


def run_npmi(top_ids: np.ndarray, table: Any) -> tuple[float, list[float]]:
    """(mean over topics, per topic) NPMI of a run's top-word ids against one reference table."""
    from noisyor_bench.evaluation.pmi import score_topics

    vocab = table.vocabulary
    words = [[vocab[int(i)] for i in row] for row in np.asarray(top_ids)]
    scores = score_topics(table, words, measure="npmi")
    return float(scores.mean), [float(x) for x in scores.per_topic]


def score_runs(
    metrics_paths: Sequence[str | Path], references: Mapping[tuple[str, str], Any]
) -> pd.DataFrame:
    """One row per (run, component): identity, NPMI external / internal, minutes, convergence."""
    rows = []
    for path in metrics_paths:
        m = read_metrics_record(path)
        run_dir = Path(path).parent
        arrays = load_npz(run_dir / "topics.npz")
        corpus = m["dataset"]
        for comp in m["components"]:
            row = {
                "experiment": m["experiment"],
                "table_experiment": m.get("table_experiment"),
                "corpus": corpus,
                "method": m["method"],
                "component": comp,
                "n_topics": int(m["n_topics"][comp]),
                "seed": int(m["seed"]),
                "train_minutes": float(m["train_minutes"]),
                # robust centre and spread (runs from before them: the measured minutes, no spread)
                **{c: float(m.get(c, m["train_minutes"])) for c in TIME_SPREAD},
                "train_seconds": float(m["train_seconds"]),
                "threads": m.get("threads"),
                "converged": m.get("converged"),
                # sweeps the chain ran (gibbs_sweeps: fewer than the cap when the rule stopped it)
                "gibbs_iterations": m.get(
                    "gibbs_sweeps", (m.get("settings") or {}).get("gibbs", {}).get("iterations")
                ),
                "avi_max_epochs": (m.get("avi_config") or {}).get("max_epochs"),
                "avi_lr": (m.get("avi_config") or {}).get("lr"),
                "mean_field_passes": (m.get("settings") or {}).get("mean_field", {}).get("max_iter")
                if m["method"] in ("lda-online", "lda-batch")
                else None,
                "epochs": m.get("epochs"),
                "run_dir": str(run_dir),
            }
            for ref in ("external", "internal"):
                table = references.get((corpus, ref))
                row[f"npmi_{ref}"] = (
                    run_npmi(arrays[f"top_{comp}"], table)[0] if table is not None else math.nan
                )
            rows.append(row)
    if not rows:
        raise DataError("avipam tables: no runs")
    return pd.DataFrame(rows)


def _component_rank(component: str) -> int:
    return 0 if component == "sub" else int(component.rpartition("-")[2])


def with_time_spread(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with the :data:`TIME_SPREAD` columns; missing ones are the measured minutes
    (no spread), so run tables from before the spread still summarise."""
    missing = [c for c in TIME_SPREAD if c not in runs.columns]
    return runs.assign(**{c: runs["train_minutes"] for c in missing}) if missing else runs


def build_table(runs: pd.DataFrame, name: str, paper: Mapping[str, Any], grid: str = "") -> pd.DataFrame:
    """Summary rows of one paper table (``name`` in :data:`TABLES`); missing rows marked not run."""
    spec = paper[name]
    sel = with_time_spread(
        runs[(runs["corpus"] == spec["corpus"]) & (runs["table_experiment"] == spec["experiment"])]
    )
    summary = summarise(sel, ["method", "component"], list(METRICS)) if not sel.empty else pd.DataFrame()
    rows = []
    paper_npmi, paper_min = spec.get("npmi") or {}, spec.get("minutes") or {}
    wanted = [(m, c) for m, comps in paper_npmi.items() for c in comps]
    measured = set() if summary.empty else set(zip(summary["method"], summary["component"], strict=True))
    for m, c in wanted + sorted(measured - set(wanted)):
        base: dict[str, Any] = {
            "artifact": f"avipam-{name}",
            "corpus": spec["corpus"],
            "experiment": spec["experiment"],
            "method": m,
            "component": c,
            "label": METHOD_LABELS.get(m, m) + ("" if c == "sub" else f" ({c.split('-')[1]} topics)"),
            "paper_npmi": (paper_npmi.get(m) or {}).get(c, math.nan),
            "paper_minutes": paper_min.get(m, math.nan),
        }
        if (m, c) in measured:
            r = summary[(summary["method"] == m) & (summary["component"] == c)].iloc[0].to_dict()
            base.update(status="measured", **{k: v for k, v in r.items() if k not in ("method", "component")})
            g = sel[(sel["method"] == m) & (sel["component"] == c)]
            base["threads"] = int(g["threads"].max()) if g["threads"].notna().any() else math.nan
            base["gibbs_iterations"] = (
                g["gibbs_iterations"].dropna().mean() if "gibbs_iterations" in g else math.nan
            )
            base["avi_max_epochs"] = g["avi_max_epochs"].dropna().max() if "avi_max_epochs" in g else math.nan
            for key in ("avi_lr", "mean_field_passes"):
                base[key] = g[key].dropna().max() if key in g and g[key].notna().any() else math.nan
        else:
            base.update(status=NOT_RUN + (f" ({grid})" if grid else ""))
        rows.append(base)
    frame = pd.DataFrame(rows)
    frame["_m"] = frame["method"].map(lambda x: METHOD_ORDER.index(x) if x in METHOD_ORDER else 99)
    frame["_c"] = frame["component"].map(_component_rank)
    return frame.sort_values(["_m", "_c"]).drop(columns=["_m", "_c"]).reset_index(drop=True)


def caption(table: pd.DataFrame, name: str, paper: Mapping[str, Any], grid: str) -> str:
    """The table's title and every reduction against the paper, read from the runs."""
    spec = paper[name]
    number = name.replace("table", "Table ")
    lines = [f"aviPAM {number}: {CORPUS_LABELS[spec['corpus']]}, {spec['experiment']} sizes (grid {grid})."]
    lines.append(f"Paper: {spec['where']}.")
    measured = table[table["status"] == "measured"] if "status" in table else table.iloc[0:0]
    if spec["corpus"] == "nips":
        lines.append(
            "SUBSTITUTE DATA: our NIPS is 1,500 NeurIPS abstracts (docs/avipam.md), not the paper's UCI "
            "full-paper bag of words (12,419 words): numbers are not directly comparable."
        )
    if not measured.empty:
        seeds = sorted({int(n) for n in measured["n_seeds"]})
        lines.append(f"Seeds per cell: {', '.join(map(str, seeds))} (paper: not stated; 'average').")
        gibbs = measured[measured["method"].str.endswith("gibbs")]
        target = 10000 if spec["experiment"] == "small" else 3000
        for _, r in gibbs.iterrows():
            it = r.get("gibbs_iterations")
            if not pd.isna(it) and int(it) < target:
                lines.append(
                    f"REDUCED: {r['label']} ran {round(float(it))} Gibbs iterations (mean over seeds; chains stop"
                    f" where the convergence rule holds in the quick grid; paper {target:,})."
                )
        epochs = measured["avi_max_epochs"].dropna() if "avi_max_epochs" in measured else []
        if len(epochs):
            rates = sorted(set(measured["avi_lr"].dropna())) if "avi_lr" in measured else []
            lr = " / ".join(f"{float(r):g}" for r in rates) or "0.002"
            lines.append(
                f"aviPAM: at most {int(max(epochs))} epochs (or early stopping), Adam lr {lr}, one CPU thread (paper: GPU)."
            )
        mf = measured[measured["method"].isin(["lda-online", "lda-batch"])]
        passes = mf["mean_field_passes"].dropna() if "mean_field_passes" in mf else []
        if len(passes):
            lines.append(f"LDA DMFVI (scikit-learn): at most {int(max(passes))} passes over the corpus.")
        threads = measured["threads"].dropna() if "threads" in measured else []
        if len(threads):
            lines.append(
                f"Training time: wall time of the fit call, {int(max(threads))} thread(s) per run, this machine's CPU."
            )
    if "status" in table:
        skipped = table[table["status"] != "measured"]
        labels = sorted(set(skipped["label"])) if "label" in skipped else []
        if labels:
            lines.append(f"REDUCED: not run in this grid: {', '.join(labels)}.")
    lines.append(
        "NPMI: top-10 words, Lau et al. (2014) conventions; external = Wikipedia slice "
        "(20-token padded windows), internal = held-out documents of the same corpus."
    )
    return " ".join(lines)


def markdown(table: pd.DataFrame, name: str, paper: Mapping[str, Any], grid: str) -> str:
    header = [
        "method",
        "NPMI external (ours)",
        "NPMI internal (ours)",
        "NPMI (paper)",
        "minutes (ours)",
        "minutes (paper)",
    ]
    body = []
    for _, r in table.iterrows():
        if r["status"] != "measured":
            ours = [r["status"], "", ""]
        else:
            ours = [stat_cell(r, "npmi_external", 3), stat_cell(r, "npmi_internal", 3), ""]
        minutes = stat_cell(r, "train_minutes", 2) if r["status"] == "measured" else ""
        body.append(
            [r["label"], ours[0], ours[1], _num(r["paper_npmi"], 3), minutes, _num(r["paper_minutes"], 0)]
        )
    return f"{caption(table, name, paper, grid)}\n\n{markdown_table(header, body)}\n{CI_NOTE}"


def _num(v: Any, digits: int) -> str:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return ""
    return "" if math.isnan(x) else f"{x:.{digits}f}"
