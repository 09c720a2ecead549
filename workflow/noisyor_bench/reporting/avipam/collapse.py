"""The normalisation / component-collapse study (paper Section 4.1, Figs. 2-3).

A 3-PAM (LDA) trained by aviPAM with each encoder-output normalisation (``batchnorm``: BN with
gain; ``norm``: gain * x / ||x||, no centring, no shift; ``none``) across learning rates. Per run:
KL per latent dimension on the training documents (``topics.npz`` ``kl_per_dim``), the number of
collapsed dimensions (mean KL below the threshold, metrics.json ``n_collapsed``), the summed KL
(``kl_total``: the KL of all dimensions, mean over the training documents, nats per document),
whether that total is below the whole-run collapse level (``kl_collapsed_share``: 1 when under
:data:`KL_COLLAPSE_NATS` nats per document, the posterior then barely leaving the prior; NaN for a
diverged run, which has no KL), and NPMI of the topics on the text corpora. Table: mean ± 95% CI over seeds per (corpus,
variant, learning rate). Figures: collapsed dimensions and NPMI against the learning rate per
variant, the sorted KL per dimension at each learning rate (Fig. 3's quantity at the end of
training), and topics as 28x28 images on the MNIST stand-in (Fig. 2, Omniglot in the paper).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.experiments.rundir import read_metrics_record
from noisyor_bench.infra.integrity import verified_run_file
from noisyor_bench.infra.io import load_npz
from noisyor_bench.reporting.avipam.labels import CORPUS_LABELS, VARIANT_LABELS, split_collapse_method
from noisyor_bench.reporting.avipam.tables import run_npmi
from noisyor_bench.reporting.tables import CI_NOTE, markdown_table, stat_cell, summarise

#: The whole-run collapse level, nats per document: the run writer's
#: ``inference.topics.avipam.KL_COLLAPSE_NATS`` (recorded per run as ``kl_collapse_nats``), kept here
#: so that judging tables does not import the training code.
KL_COLLAPSE_NATS = 10.0
VARIANT_COLOURS = {"batchnorm": "#1f77b4", "norm": "#2ca02c", "none": "#d62728"}
METRICS = (
    "n_collapsed",
    "collapsed_share",
    "diverged_share",
    "kl_total",
    "kl_collapsed_share",
    "npmi_external",
    "npmi_internal",
    "train_minutes",
)


def collect(metrics_paths: Sequence[str | Path], references: Mapping[tuple[str, str], Any]) -> pd.DataFrame:
    rows = []
    for path in metrics_paths:
        m = read_metrics_record(path)
        arrays = load_npz(verified_run_file(Path(path).parent / "topics.npz"))
        variant, lr = split_collapse_method(m["method"])
        row = {
            "corpus": m["dataset"],
            "variant": variant,
            "lr": lr,
            "seed": int(m["seed"]),
            "n_collapsed": float(m["n_collapsed"]),
            "latent_dims": int(m["latent_dims"]),
            "collapsed_share": float(m["n_collapsed"]) / max(int(m["latent_dims"]), 1),
            "diverged_share": float(bool(m.get("diverged", False))),
            "kl_total": math.nan if m["kl_total"] is None else float(m["kl_total"]),
            "kl_collapsed_share": kl_collapsed_share(
                m["kl_total"], float(m.get("kl_collapse_nats") or KL_COLLAPSE_NATS)
            ),
            "diverged": bool(m.get("diverged", False)),
            "train_minutes": float(m["train_minutes"]),
            "converged": m.get("converged"),
            "run_dir": str(Path(path).parent),
        }
        for ref in ("external", "internal"):
            table = references.get((m["dataset"], ref))
            usable = table is not None and not row["diverged"]
            row[f"npmi_{ref}"] = run_npmi(arrays["top_sub"], table)[0] if usable else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def kl_collapsed_share(kl_total: float | None, level: float = KL_COLLAPSE_NATS) -> float:
    """1.0 when a run's KL total (nats per document) is below ``level``, 0.0 when not, NaN when it
    has none (a diverged run: its KL is not finite)."""
    if kl_total is None or not math.isfinite(float(kl_total)):
        return math.nan
    return float(float(kl_total) < level)


def build_table(runs: pd.DataFrame) -> pd.DataFrame:
    if "kl_collapsed_share" not in runs.columns:  # a runs frame without it: from the KL total
        runs = runs.assign(kl_collapsed_share=[kl_collapsed_share(v) for v in runs["kl_total"]])
    table = summarise(runs, ["corpus", "variant", "lr"], list(METRICS))
    table.insert(0, "artifact", "avipam-collapse")
    order = {v: i for i, v in enumerate(VARIANT_LABELS)}
    table["_v"] = table["variant"].map(order)
    return table.sort_values(["corpus", "_v", "lr"]).drop(columns="_v").reset_index(drop=True)


def markdown(table: pd.DataFrame, grid: str) -> str:
    head = (
        f"aviPAM collapse study (paper Sec. 4.1, Figs. 2-3; grid {grid}): a 3-PAM (LDA) under each "
        "encoder-output normalisation across Adam learning rates. Collapsed = latent dimensions whose mean "
        "KL(q || prior) on the training documents is below the threshold (0.01 nats); a run whose loss became "
        "non-finite (diverged) counts every dimension as collapsed here and has no NPMI or KL; the collapse "
        "claim counts diverged runs apart and judges collapse on the others. KL total = the KL of all "
        "latent dimensions, mean over the training documents (nats per document); 'KL total below "
        f"{KL_COLLAPSE_NATS:g}' = the runs (of those that did not diverge) whose posterior collapsed as a "
        f"whole, KL total under {KL_COLLAPSE_NATS:g} nats per document. MNIST digits stand in "
        "for Omniglot (no NPMI on pixels).\n\n"
    )
    header = [
        "corpus",
        "normalisation",
        "learning rate",
        "collapsed dims",
        "diverged runs",
        "KL total (nats per document)",
        f"KL total below {KL_COLLAPSE_NATS:g}",
        "NPMI external",
        "NPMI internal",
    ]
    body = [
        [
            CORPUS_LABELS.get(r["corpus"], r["corpus"]),
            VARIANT_LABELS.get(r["variant"], r["variant"]),
            f"{r['lr']:g}",
            stat_cell(r, "n_collapsed", 1),
            f"{int(round(r['diverged_share_mean'] * r['n_seeds']))}/{int(r['n_seeds'])}",
            stat_cell(r, "kl_total", 2),
            _kl_collapsed_cell(r),
            stat_cell(r, "npmi_external", 3),
            stat_cell(r, "npmi_internal", 3),
        ]
        for _, r in table.iterrows()
    ]
    return head + markdown_table(header, body) + "\n" + CI_NOTE


def _kl_collapsed_cell(r: Mapping[str, Any]) -> str:
    """``"k/n"``: runs whose KL total is below the collapse level, of the runs with a KL total
    (empty in a table from before the column, or where no run has one)."""
    n = r.get("kl_collapsed_share_n")
    if n is None or (isinstance(n, float) and math.isnan(n)) or int(n) == 0:
        return ""
    return f"{int(round(float(r['kl_collapsed_share_mean']) * int(n)))}/{int(n)}"


def plot_study(runs: pd.DataFrame, png: str | Path) -> None:
    import matplotlib.pyplot as plt

    from noisyor_bench.reporting.plots import figure_style, save_figure

    corpora = sorted(runs["corpus"].unique())
    # 2 columns (readable at the report's ~1000 px); a corpus without NPMI (pixel
    # documents) gets no NPMI panel rather than an empty one; an odd last panel spans the row.
    kinds = {
        c: ["c", "n", "k", "t"]
        if runs.loc[runs["corpus"] == c, "npmi_external"].notna().any()
        else ["c", "k", "t"]
        for c in corpora
    }
    n_panels = sum(len(k) for k in kinds.values())
    with figure_style():
        fig = plt.figure(figsize=(10, 3.6 * -(-n_panels // 2)))
        grid = fig.add_gridspec(-(-n_panels // 2), 2)
        index = 0
        for corpus in corpora:
            sub = runs[runs["corpus"] == corpus]
            panels = {}
            for kind in kinds[corpus]:
                r, col = divmod(index, 2)
                last_alone = index == n_panels - 1 and n_panels % 2 == 1
                panels[kind] = fig.add_subplot(grid[r, :] if last_alone else grid[r, col])
                index += 1
            ax_c, ax_n, ax_k, ax_t = (panels.get(k) for k in ("c", "n", "k", "t"))
            for variant, g in sub.groupby("variant"):
                stats = g.groupby("lr").agg(c=("collapsed_share", "mean"), n=("npmi_external", "mean"))
                colour = VARIANT_COLOURS.get(variant)
                ax_c.plot(
                    stats.index, stats["c"], "o-", color=colour, label=VARIANT_LABELS.get(variant, variant)
                )
                ax_c.scatter(g["lr"], g["collapsed_share"], color=colour, alpha=0.3, s=10)
                if ax_n is not None and stats["n"].notna().any():
                    ax_n.plot(
                        stats.index,
                        stats["n"],
                        "o-",
                        color=colour,
                        label=VARIANT_LABELS.get(variant, variant),
                    )
                top = g[g["lr"] == g["lr"].max()].sort_values("seed").iloc[0]
                label = f"{VARIANT_LABELS.get(variant)}, lr {top['lr']:g}"
                if bool(top["diverged"]):  # no KL to draw: a flat line at 0 would read as "collapsed, finite"
                    ax_k.plot([], [], color=colour, label=f"{label}: diverged, no KL")
                else:
                    kl = np.sort(
                        np.nan_to_num(
                            load_npz(verified_run_file(Path(top["run_dir"]) / "topics.npz"))["kl_per_dim"]
                        )
                    )[::-1]
                    ax_k.plot(np.arange(1, kl.size + 1), kl, color=colour, label=label)
                curve = _curve(Path(top["run_dir"]))
                if curve is not None and "train_kl" in curve.columns:  # Fig. 3: KL over training
                    ax_t.plot(
                        curve["epoch"], curve["train_kl"], color=colour, label=VARIANT_LABELS.get(variant)
                    )
            for ax in (a for a in (ax_c, ax_n) if a is not None):
                ax.set_xscale("log")
                ax.set_xlabel("Adam learning rate")
            ax_c.set_ylabel("share of collapsed dimensions")
            ax_c.set_title(CORPUS_LABELS.get(corpus, corpus), fontsize=9)
            if ax_n is not None:
                ax_n.set_ylabel("NPMI (external)")
                ax_n.set_title(f"{CORPUS_LABELS.get(corpus, corpus)}: topic coherence", fontsize=9)
            ax_k.set_title(f"{CORPUS_LABELS.get(corpus, corpus)}: KL per latent dimension", fontsize=9)
            ax_k.set_yscale("symlog", linthresh=1e-3)
            ax_k.set_xlabel("latent dimension (sorted by KL)")
            ax_k.set_ylabel("mean KL per dimension (nats)")
            ax_t.set_yscale("log")
            ax_t.set_xlabel("epoch")
            ax_t.set_ylabel("KL per document (training, nats)")
            ax_t.set_title(f"Fig. 3: KL during training, lr {sub['lr'].max():g}", fontsize=9)
            ax_c.legend(fontsize=7)
            ax_k.legend(fontsize=6)
        fig.tight_layout()
        save_figure(fig, png)
        plt.close(fig)


def _curve(run_dir: Path) -> pd.DataFrame | None:
    path = verified_run_file(run_dir / "curve.csv")
    if not path.is_file() or path.stat().st_size == 0:
        return None
    return pd.read_csv(path)


def plot_topic_images(
    runs: pd.DataFrame, corpora: Mapping[str, Path], png: str | Path, n_topics: int = 9
) -> None:
    """Fig. 2: topics of the first seed at the highest learning rate, one row per variant, as images."""
    import matplotlib.pyplot as plt

    from noisyor_bench.reporting.plots import save_figure

    sub = runs[runs["corpus"] == "mnist"]
    fig_rows = sorted(sub["variant"].unique(), key=list(VARIANT_LABELS).index) if not sub.empty else []
    if not fig_rows:
        fig, ax = plt.subplots(figsize=(4, 1))
        ax.axis("off")
        ax.text(0.5, 0.5, "no MNIST runs in this grid", ha="center")
        save_figure(fig, png)
        plt.close(fig)
        return
    shape = (
        tuple(int(x) for x in load_npz(corpora["mnist"])["image_shape"]) if "mnist" in corpora else (28, 28)
    )
    lrs = sorted(sub["lr"].unique())
    fig, axes = plt.subplots(
        len(fig_rows) * len(lrs),
        n_topics,
        figsize=(n_topics * 0.9, 1.0 * len(fig_rows) * len(lrs)),
        squeeze=False,
    )
    for i, (variant, lr) in enumerate((v, lr) for v in fig_rows for lr in lrs):
        g = sub[(sub["variant"] == variant) & (sub["lr"] == lr)].sort_values("seed")
        topics = load_npz(verified_run_file(Path(g.iloc[0]["run_dir"]) / "topics.npz"))["topics_sub"]
        picks = np.random.default_rng(0).choice(
            topics.shape[0], size=min(n_topics, topics.shape[0]), replace=False
        )
        for j in range(n_topics):
            ax = axes[i, j]
            ax.set_xticks([])
            ax.set_yticks([])
            if j < picks.size:
                ax.imshow(topics[picks[j]].reshape(shape), cmap="gray_r")
            else:
                ax.axis("off")  # fewer topics than panels (smoke grid)
        axes[i, 0].set_ylabel(f"{variant}\nlr {lr:g}", fontsize=6)
    fig.suptitle(
        "Topics as images (MNIST digits, stand-in for Omniglot): 9 random topics per run", fontsize=8
    )
    save_figure(fig, png)
    plt.close(fig)
