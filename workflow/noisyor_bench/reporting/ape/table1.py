"""APE Table 1: per-word held-out log-likelihood (paper style and clean), inference time and
agreement with VI's ranking of the test models, per dataset and method, mean ± 95% CI over
seeds beside the paper's numbers.

Rows (``method``): ``standard``, ``ape-naive``, ``ape-model-aware``, ``vi``, ``vi-warm`` (VI
warm-started from the model-aware APE, beyond the table), ``nuts`` and ``vi-nuts-subset`` (VI
scored on NUTS's combinations, NUTS's yardstick when NUTS runs on fewer than all).  Metrics:
``ll_paper`` (the authors' per-word posterior predictive), ``ll_is`` (clean importance-sampled
log p(x | theta) per word), ``elbo_per_word``, ``time_s``, ``agree_vi`` and ``agree_is`` (pairs
of test models ranked as VI's ELBO / the IS likelihood rank them); beside ``time_s`` its
robust centre and spread ``time_s_median``, ``time_s_low``, ``time_s_high``
(:mod:`noisyor_bench.infra.timing`), which the speed claims are judged on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from noisyor_bench.experiments.rundir import read_metrics_record
from noisyor_bench.infra.errors import DataError
from noisyor_bench.reporting.ape.agreement import CEILING_COLUMNS, ranking_reduction, seed_ceilings
from noisyor_bench.reporting.ape.gaps import (
    DOCSET_COLUMNS,
    GAP_METRICS,
    NUTS_CHAIN_COLUMNS,
    add_gaps,
    document_caption,
    document_set_summary,
    nuts_chain_columns,
    paper_gap,
)
from noisyor_bench.reporting.ape.labels import TABLE1_LABELS
from noisyor_bench.reporting.ape.offset import (
    DATASET_OFFSET_COLUMNS,
    OFFSET_COLUMNS,
    OFFSET_METHODS,
    DocumentTerms,
    dataset_offsets,
    offset_caption,
)
from noisyor_bench.reporting.ape.paper import paper_numbers, table1_row
from noisyor_bench.reporting.tables import CI_NOTE, format_ci, markdown_table, summarise

ARTIFACT = "ape-table1"
METHODS = ("standard", "ape-naive", "ape-model-aware", "vi", "vi-warm", "nuts", "vi-nuts-subset")
DATASET_LABELS = {"toybars": "Synthetic data (toy bars, K = 20)", "mdreviews": "Product reviews (K = 30)"}
TIME_SPREAD = ("time_s_median", "time_s_low", "time_s_high")  # per run: median and spread of time_s
# the same on the process's CPU time, and the threads it ran on (empty in runs before it was recorded)
CPU_TIME = ("time_cpu_s", "time_cpu_s_median", "time_cpu_s_low", "time_cpu_s_high", "threads")
METRICS = (
    "ll_paper",
    "ll_is",
    "ll_is_half",  # the clean IS from half its draws (its convergence check; empty in older runs)
    "elbo_per_word",
    "time_s",
    *TIME_SPREAD,
    *CPU_TIME,
    "agree_vi",
    "agree_is",
    *CEILING_COLUMNS,
    *GAP_METRICS,
    *NUTS_CHAIN_COLUMNS,
)
# the agreement helper's measured training-pool sweep (benchmarks/ape_pool_sweep*)
POOL_SWEEP_NOTE = (
    "Training-pool effect (benchmarks/results/ape_pool_sweep_toybars.md): the model-aware APE "
    "retrained with the same 8,000-step budget on 300 / 3,000 / 10,000 / 50,000 toy-bars models agrees with "
    "VI's 1,000-draw ranking reference on 37.5 / 34.5 / 37.0 / 37.5 of 45 pairs (2 seeds; VI-vs-VI ceiling "
    "45/45) at clean log-likelihood gaps to VI of 0.33 / 0.32 / 0.31 / 0.33 nats per word: the reduced "
    "training pool does not explain the agreement below the paper's 43/45."
)
PAPER_SCALE = {
    "theta_pool": 50_000,
    "epochs": 2,
    "combinations": 300,
    "nuts_combinations": 300,
    "nuts_warmup": 100,
    "nuts_samples": 100,
    "nuts_tree_depth": 10,
    "gibbs_iterations": 1000,
}


def seed_rows(eval_files: Sequence[str | Path]) -> pd.DataFrame:
    """One row per (dataset, method, seed) from the evaluation runs' metrics.json."""
    rows: list[dict[str, Any]] = []
    records = []
    for path in eval_files:
        p = Path(path)
        data = read_metrics_record(p)
        if data.get("experiment") != "ape-eval":
            raise DataError(f"{path}: not an APE evaluation (experiment {data.get('experiment')!r})")
        records.append(data)
        base = {"dataset": data["dataset"], "seed": int(data["seed"])}
        for method, m in data["methods"].items():
            rows.append({**base, "method": method, **_metrics(m), "converged": m.get("converged")})
        subset = data.get("nuts_subset")
        if subset:
            vi_converged = data["methods"].get("vi", {}).get("converged")
            for method, name in (("nuts", "nuts"), ("vi", "vi-nuts-subset")):
                m = subset["methods"][method]
                rows.append(
                    {
                        **base,
                        "method": name,
                        **_metrics(m),
                        "combinations": subset["combinations"],
                        "converged": vi_converged if method == "vi" else None,
                        **(nuts_chain_columns(subset) if method == "nuts" else {}),
                    }
                )
    if not rows:
        raise DataError("APE Table 1: no evaluation runs")
    ceilings = seed_ceilings(records)  # the same per seed for every method: VI-vs-VI
    for row in rows:
        row.update(ceilings.get((row["dataset"], row["seed"]), {}))
    return add_gaps(pd.DataFrame(rows))  # gaps to VI on the same combinations (reporting.ape.gaps)


def _metrics(m: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: (float("nan") if m.get(k) is None else float(m[k])) for k in METRICS}
    out["ll_paper_std"] = m.get("ll_paper_std")
    out["pairs"] = m.get("pairs")
    out["combinations"] = m.get("combinations")
    terms = (m.get("ll_paper_coefficient"), m.get("ll_paper_prior"))
    out["doc_constant"] = float("nan") if None in terms else float(terms[0]) + float(terms[1])
    out["ll_paper_words"] = float("nan") if m.get("ll_paper_words") is None else float(m["ll_paper_words"])
    out["gap_paper"] = out["gap_is"] = float("nan")  # filled by add_gaps
    out.update({c: float("nan") for c in NUTS_CHAIN_COLUMNS})  # NUTS rows: nuts_chain_columns
    return out


def encoder_windows(train_runs: Sequence[str | Path], documents: Mapping[str, DocumentTerms]) -> pd.DataFrame:
    """Per (dataset, encoder): how far its training runs were still moving, in nats per word --
    ``max_last_window_nats`` (the largest last-window improvement of validation NELBO) and
    ``max_projected_nats`` (how far a doubled budget could move it,
    :func:`~noisyor_bench.reporting.collect.projected_nats`), each per validation document
    divided by the dataset's mean tokens per document: the units of ``elbo_per_word``, so the
    claims' budget rule (:meth:`~noisyor_bench.reporting.claims.Evidence.budget`) can weigh them
    against an effect in nats per word. A dataset without its document terms is left out."""
    from noisyor_bench.reporting.collect import collect_runs, convergence_counts

    columns = ["dataset", "method", "max_last_window_nats", "max_projected_nats"]
    if not train_runs:
        return pd.DataFrame(columns=columns)
    runs = collect_runs(train_runs)
    out = []
    for (dataset, method), group in runs.groupby(["dataset", "method"], sort=True):
        terms = documents.get(str(dataset))
        if terms is None or not len(terms.tokens):
            continue
        words = float(terms.tokens.mean())
        counts = convergence_counts(group)
        out.append(
            {
                "dataset": dataset,
                "method": method,
                "max_last_window_nats": counts["max_last_window_nats"] / words,
                "max_projected_nats": counts["max_projected_nats"] / words,
            }
        )
    return pd.DataFrame(out, columns=columns)


def table1(
    rows: pd.DataFrame,
    docsets: pd.DataFrame | None = None,
    documents: Mapping[str, DocumentTerms] | None = None,
    windows: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Summaries over seeds per (dataset, method) with the paper's numbers beside them; with
    ``docsets`` (:func:`~noisyor_bench.reporting.ape.gaps.document_set_rows`) the per-dataset
    :data:`~noisyor_bench.reporting.ape.gaps.DOCSET_COLUMNS`; with ``documents`` (per dataset
    its :func:`~noisyor_bench.reporting.ape.offset.load_terms`) the offset to the paper's values
    and where the document constant it needs sits among random document sets
    (:data:`~noisyor_bench.reporting.ape.offset.OFFSET_COLUMNS`, per dataset
    :data:`~noisyor_bench.reporting.ape.offset.DATASET_OFFSET_COLUMNS`); with ``windows``
    (:func:`encoder_windows`) the encoders' ``max_last_window_nats`` / ``max_projected_nats``
    in nats per word."""
    rank = {m: i for i, m in enumerate(METHODS)}
    frame = summarise(rows, ["dataset", "method"], METRICS)
    extra = rows.groupby(["dataset", "method"], sort=False).agg(
        pairs=("pairs", "max"), combinations=("combinations", "max")
    )
    frame = frame.join(extra, on=["dataset", "method"])
    if windows is not None and not windows.empty:  # the encoders' training curves, per word
        moving = windows.set_index(["dataset", "method"])
        for column in ("max_last_window_nats", "max_projected_nats"):
            frame[column] = [
                moving[column].get((d, m), value)
                for d, m, value in zip(frame["dataset"], frame["method"], frame[column])
            ]
    for key, column in (
        ("ll", "paper_ll"),
        ("ll_pm", "paper_ll_pm"),
        ("time_s", "paper_time_s"),
        ("agree", "paper_agree"),
    ):
        frame[column] = [
            table1_row(d, m).get(key, float("nan")) for d, m in zip(frame["dataset"], frame["method"])
        ]
    frame["paper_gap"] = [paper_gap(d, m) for d, m in zip(frame["dataset"], frame["method"])]
    summaries = {d: document_set_summary(docsets, d) for d in dict.fromkeys(frame["dataset"])}
    for column in DOCSET_COLUMNS:
        frame[column] = [summaries[d][column] for d in frame["dataset"]]
    add_offsets(frame, documents or {})
    frame.insert(0, "artifact", ARTIFACT)
    frame["_order"] = [
        (d != "toybars", rank.get(m, len(rank))) for d, m in zip(frame["dataset"], frame["method"])
    ]
    return frame.sort_values("_order").drop(columns="_order").reset_index(drop=True)


def add_offsets(frame: pd.DataFrame, documents: Mapping[str, DocumentTerms]) -> None:
    """Fill the offset columns in place (NaN for a dataset without its documents)."""
    for column in (*OFFSET_COLUMNS, *DATASET_OFFSET_COLUMNS):
        frame[column] = math.nan
    for dataset, terms in documents.items():
        here = frame["dataset"] == dataset
        block = frame[here & frame["method"].isin(OFFSET_METHODS)]
        if block.empty:
            continue
        slope = frame.loc[here, "docsets_slope"].iloc[0] if "docsets_slope" in frame else math.nan
        summary, methods = dataset_offsets(
            terms,
            dict(zip(block["method"], block["ll_paper_mean"].astype(float))),
            dict(zip(block["method"], block["paper_ll"].astype(float))),
            float(slope),
        )
        for column, value in summary.items():
            frame.loc[here, column] = value
        for method, values in methods.items():
            for column, value in values.items():
                frame.loc[here & (frame["method"] == method), column] = value


def reductions(settings: Mapping[str, Any]) -> list[str]:
    """What the grid runs below the paper's scale, per dataset (stated in the caption)."""
    notes: list[str] = []
    seeds = settings.get("seeds") or []
    for name, section in (settings.get("datasets") or {}).items():
        parts = []
        missing = [
            m for m in ("standard", "ape-naive", "ape-model-aware") if m not in section.get("encoders", [])
        ]
        if missing:
            parts.append(f"not run: {', '.join(TABLE1_LABELS[m] for m in missing)}")
        pool = int(section["theta_pool"]["size"])
        if pool < PAPER_SCALE["theta_pool"]:
            parts.append(f"{pool:,} training models (paper 50,000)")
        ape = "APE model-aware" if section.get("naive_training") else "APE"
        for key, what in (
            ("training", ape),
            ("naive_training", "APE naive"),
            ("standard_training", "Standard"),
        ):
            budget = section.get(key) or {}
            if budget.get("max_steps"):
                parts.append(
                    f"{what} training capped at {int(budget['max_steps']):,} steps of batch {budget.get('batch_size', 100)}"
                )
        vi = section.get("vi") or {}
        if vi.get("lr") and float(vi["lr"]) != 0.01:
            parts.append(f"VI learning rate {float(vi['lr']):g} (paper 0.01; A.2: the best of several rates)")
        if vi.get("max_steps"):
            parts.append(f"VI capped at {int(vi['max_steps']):,} steps")
        ev = section.get("evaluation") or {}
        n_models = int(section["data"].get("test_models", 10))
        combos = int(ev.get("documents", 30)) * n_models
        if combos != PAPER_SCALE["combinations"]:
            parts.append(f"{combos} test combinations (paper 300)")
        if n_models != 10:
            parts.append(f"{n_models} test models (paper 10)")
        nuts = section.get("nuts") or {}
        if nuts:
            if nuts.get("documents"):
                n_docs = min(int(nuts["documents"]), int(ev.get("documents", 30)))
                parts.append(
                    f"NUTS on {n_docs} combinations of {n_docs} distinct documents, one test model each "
                    "(paper all 300)"
                )
            else:
                n_nuts = min(int(nuts.get("combinations", 300)), combos)
                if n_nuts < combos:
                    parts.append(f"NUTS on the first {n_nuts} combinations (paper all 300)")
            if nuts.get("seeds") is not None and seeds and list(nuts["seeds"]) != list(seeds):
                parts.append(f"NUTS in seed(s) {list(nuts['seeds'])} only")
            if (int(nuts.get("warmup", 100)), int(nuts.get("samples", 100))) != (100, 100):
                parts.append(
                    f"NUTS {nuts.get('warmup')} warm-up + {nuts.get('samples')} samples (authors 100 + 100)"
                )
            if int(nuts.get("max_tree_depth", 10)) < PAPER_SCALE["nuts_tree_depth"]:
                parts.append(f"NUTS tree depth <= {nuts.get('max_tree_depth')} (pyro default 10)")
        iters = section["data"].get("gibbs_iterations")
        if iters is not None and int(iters) < PAPER_SCALE["gibbs_iterations"]:
            parts.append(f"{int(iters)} Gibbs sweeps per LDA test model (authors 1,000)")
        if name == "toybars" and int(section["data"].get("documents", 500)) != 500:
            parts.append(f"{section['data']['documents']} documents (paper 500)")
        n_sets = int(ev.get("document_sets", 0)) * max(1, len(seeds))
        if n_sets < 10:
            parts.append(f"VI on {n_sets} random evaluation-document sets (>= 10)")
        if ranking := ranking_reduction(section, len(seeds)):
            parts.append(ranking)
        if parts:
            notes.append(f"{DATASET_LABELS.get(name, name)}: " + "; ".join(parts))
    if seeds:
        notes.append(
            f"{len(seeds)} seed(s) {list(seeds)} (the paper: one training run; its ± is the std of 10 predictive evaluations)"
        )
    return notes


def _cell(row: Mapping[str, Any], metric: str, digits: int) -> str:
    return format_ci(row[f"{metric}_mean"], row[f"{metric}_ci95"], row[f"{metric}_n"], digits)


def _time_cell(row: Mapping[str, Any]) -> str:
    """The measured time's mean ± CI, then the timings' spread (means over seeds of the per-run
    low and high ends) where one was recorded."""
    text = _cell(row, "time_s", 3)
    low, high = row.get("time_s_low_mean"), row.get("time_s_high_mean")
    if text and not _missing(low) and not _missing(high) and high > low:
        text += f" (spread {float(low):.3g}–{float(high):.3g})"
    return text


def _paper(value: Any, digits: int, pm: Any = None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    text = f"{float(value):.{digits}f}"
    if pm is not None and not (isinstance(pm, float) and math.isnan(pm)):
        text += f" ± {float(pm):.{digits}f}"
    return text


def _agreement(row: Mapping[str, Any], metric: str) -> str:
    pairs = row.get("pairs")
    if row[f"{metric}_n"] == 0 or pairs is None or (isinstance(pairs, float) and math.isnan(pairs)):
        return "–"
    ceiling = row.get(f"{metric}_ceiling_mean")
    beside = "" if _missing(ceiling) else f" (ceiling {float(ceiling):.3g}/{int(pairs)})"
    return f"{_cell(row, metric, 1)} / {int(pairs)}{beside}"


def table1_markdown(frame: pd.DataFrame, settings: Mapping[str, Any]) -> str:
    """Table 1 for people: one block per dataset, ours beside the paper's, caption with the reductions."""
    location = paper_numbers()["table1"]["location"]
    lines = [
        "# APE Table 1: held-out log-likelihood, inference time and agreement",
        "",
        f"Paper: {location}. Per-word log-likelihood on the test (document, model) combinations, "
        "higher is better: **paper style** = the authors' posterior predictive (prior term and "
        "multinomial coefficient included, their evaluation prior), **clean** = importance-sampled "
        "log p(x | theta) per word with q as proposal (docs/ape.md). Time: seconds of inference on "
        "all combinations (encoders: one forward pass, median of >= 5; VI: until its stopping rule; NUTS: "
        "warm-up + sampling); spread: min..max of the passes (encoders), interquartile step times (VI). Agreement: pairs of the test models (45 for 10) that the method's total ELBO "
        "orders as VI's ranking reference does (its ELBO with the draws and over the documents of "
        "the caption's ranking note) / as the IS log-likelihood (VI's q as proposal) does; beside each, "
        "its **ceiling**: how many pairs VI's reference orders alike across seeds (an independent VI fit "
        "and independent draws; one seed: two draws samples), the most a method can be expected to "
        "agree; an agreement claim is judged only at a ceiling >= 40/45. VI's own row: its totals from "
        "independent draws against the reference (the Monte Carlo part of the noise). "
        "Product reviews are a **subset**: 1,585 of the ~7,900 documents of the authors' "
        "preprocessing (their 6,343-document training split is unavailable).",
        "",
    ]
    notes = reductions(settings)
    if notes:
        lines += ["**Reduced grid:** " + " | ".join(notes), ""]
    for dataset in dict.fromkeys(frame["dataset"]):
        block = frame[frame["dataset"] == dataset]
        header = [
            "method",
            "gap to VI, paper style (ours)",
            "gap to VI (paper)",
            "gap to VI, clean IS (ours)",
            "LL paper style (ours)",
            "LL (paper)",
            "LL clean IS (ours)",
            "time s (ours)",
            "time s (paper)",
            "agree VI (ours)",
            "agree VI (paper)",
            "agree IS (ours)",
            "runs conv.",
        ]
        rows = []
        for r in block.to_dict("records"):
            if r["method"] == "vi-nuts-subset":
                continue  # NUTS's yardstick: its gap is NUTS's row (the CSV keeps it)
            absolute = r["method"] != "nuts"  # NUTS: only its gap to VI on its combinations
            rows.append(
                [
                    TABLE1_LABELS.get(r["method"], r["method"]),
                    _cell(r, "gap_paper", 3),
                    _paper(r["paper_gap"], 3),
                    _cell(r, "gap_is", 3),
                    _cell(r, "ll_paper", 4) if absolute else "–",
                    _paper(r["paper_ll"], 4, r["paper_ll_pm"]),
                    _cell(r, "ll_is", 4) if absolute else "–",
                    _time_cell(r),
                    _paper(r["paper_time_s"], 2),
                    _agreement(r, "agree_vi"),
                    _paper(r["paper_agree"], 0) + ("/45" if not _missing(r["paper_agree"]) else ""),
                    _agreement(r, "agree_is"),
                    f"{int(r['n_converged'])}/{int(r['n_runs'])}",
                ]
            )
        lines += [f"## {DATASET_LABELS.get(dataset, dataset)}", "", markdown_table(header, rows)]
        caption = document_caption(block.iloc[0].to_dict(), dataset)
        offsets = offset_caption(
            block.iloc[0].to_dict(),
            {
                r["method"]: r
                for r in block.to_dict("records")
                if r["method"] in OFFSET_METHODS and not _missing(r.get("paper_offset"))
            },
            TABLE1_LABELS,
        )
        if caption:
            lines += ["", f"Absolute paper-style values: {caption}.", ""]
        if offsets:
            lines += ([] if caption else [""]) + [f"Documents alone: {offsets}.", ""]
    lines += [
        CI_NOTE,
        "**Compare methods by their gap to VI.** Gap = the method minus VI on the same combinations, "
        "per seed (NUTS: minus VI on NUTS's combinations); the paper's gap is its Table 1 value minus "
        "its VI's. The paper-style metric includes the multinomial coefficient and the authors' prior "
        "normaliser, terms of the documents alone (docs/ape.md, 'The paper-style metric'): absolute "
        "paper-style values move by about +/-1 nat/word with the choice of evaluation documents "
        "(see each dataset's document constant and VI's spread over random document sets), while "
        "they cancel in a gap. NUTS is shown only as its gap (its chain diagnostics: "
        "docs/ape.md, 'NUTS').",
        "'runs conv.': training runs (encoders) or VI runs (VI rows) that met their convergence rule; "
        "NUTS has none.",
        POOL_SWEEP_NOTE,
    ]
    return "\n".join(lines) + "\n"


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


FIGURE1_ARTIFACT = "ape-figure1"
WARM_VARIANTS = ("vi_lr", "authors")  # experiments.ape.evaluate.warm_variant_configs
FIGURE1_COLUMNS = (
    "ape_time",
    "ape_elbo",
    "vi_final_elbo",
    "quality_target",
    # the target's make (99% of VI's improvement from vi_initial_elbo) and VI's best ELBO, which
    # the warm-start claim checks every seed's target against (a target VI itself reaches)
    "vi_initial_elbo",
    "vi_best_elbo",
    "quality_fraction",
    "vi_time_to_quality",
    "warm_time_to_quality",
    "vi_time_to_ape_elbo",
    *(f"{t}_{s}" for t in ("vi_time_to_quality", "warm_time_to_quality") for s in ("median", "low", "high")),
    # the warm start at the paper's rate (warm_*, above, at warm_lr), at VI's own rate
    # (warm_vi_lr_*) and the authors' runnable lr 0.1 x 600 steps (warm_authors_*)
    "warm_lr",
    *(
        f"warm_{v}_{c}"
        for v in WARM_VARIANTS
        for c in (
            "lr",
            "steps",
            "final_elbo",
            "time_to_quality",
            "time_to_quality_median",
            "time_to_quality_low",
            "time_to_quality_high",
        )
    ),
)


def figure1_rows(eval_files: Sequence[str | Path]) -> pd.DataFrame:
    """Figure 1 (left)'s times per (dataset, seed): ``tables/ape_figure1.csv`` (empty = never reached)."""
    rows = []
    for path in eval_files:
        p = Path(path)
        data = read_metrics_record(p)
        fig1 = data.get("figure1") or {}
        rows.append(
            {
                "artifact": FIGURE1_ARTIFACT,
                "dataset": data["dataset"],
                "seed": int(data["seed"]),
                **{c: fig1.get(c) for c in FIGURE1_COLUMNS},
            }
        )
    return pd.DataFrame(rows, columns=["artifact", "dataset", "seed", *FIGURE1_COLUMNS])
