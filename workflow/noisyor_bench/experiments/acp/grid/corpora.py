"""The real-corpus part of ACP's experiment grid (``grids.<g>.acp.text``): which runs exist and their K.

Two experiments share the section: ``table5`` (the noisy-OR topic model on ``neurips-titles``
with ``topics.K`` latents, paper Section 4.5) and ``classification-K<K>`` (``reuters`` with
each ``classification.K``, supplement Section 5.1).  The t-SNE figures (supplement Figs. 4-6)
reuse the classification runs of the first seed, so ``tsne.n_train`` must be a subset of
``classification.n_train`` (:func:`validate_corpus_grid`).  The Snakemake rules build their jobs
from :func:`cells`, so the DAG and the package agree on the grid.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from noisyor_bench.experiments.rundir import RunKey, cell_path
from noisyor_bench.inference.fitting import config_budget_defaults
from noisyor_bench.inference.noisyor.registry import METHODS
from noisyor_bench.infra.errors import ConfigError

TOPICS_EXPERIMENT = "table5"
TOPICS_DATASET = "neurips-titles"
CLASSIFICATION_DATASET = "reuters"
CLASSIFICATION_PREFIX = "classification-K"


def corpus_methods() -> tuple[str, ...]:
    """Methods a real corpus may be trained with: the amortized ones that are no ablation (the
    per-datapoint methods would optimise every document; the ablation is a synthetic study)."""
    return tuple(m.name for m in METHODS if m.amortized and m.ablates is None)


DEFAULT_METHODS = corpus_methods()
DEFAULT_BUDGET = config_budget_defaults()
MODE = "learning"  # real corpora have no ground truth: the generative model is always learned

_CLASSIFICATION_RE = re.compile(rf"^{CLASSIFICATION_PREFIX}(\d+)$")


@dataclass(frozen=True, order=True)
class CorpusCell:
    """One (experiment, dataset, method, N_train) cell with its number of latents K."""

    experiment: str
    dataset: str
    method: str
    n_train: int
    latents: int

    @property
    def path(self) -> str:
        """``<experiment>/<dataset>/<method>/n<N_train>``: the cell's place under runs/."""
        return cell_path(self.experiment, self.dataset, self.method, self.n_train)

    def run_key(self, seed: int) -> RunKey:
        """The key (and path) of the cell's run with ``seed``."""
        return RunKey(self.experiment, self.dataset, self.method, self.n_train, int(seed))


def corpus_section(cfg: Mapping[str, Any], grid: str | None = None) -> dict[str, Any]:
    """``grids.<grid>.acp.text`` of the selected (or named) grid; empty if absent."""
    name = cfg["grid"] if grid is None else grid
    return dict((cfg["grids"][name].get("acp") or {}).get("text") or {})


def seeds(cfg: Mapping[str, Any]) -> list[int]:
    return [int(s) for s in corpus_section(cfg).get("seeds", [0])]


def methods(cfg: Mapping[str, Any]) -> list[str]:
    return list(corpus_section(cfg).get("methods", DEFAULT_METHODS))


def budget(cfg: Mapping[str, Any]) -> dict[str, int]:
    """Fit budget of every text run: defaults < ``text.budget``."""
    merged = dict(DEFAULT_BUDGET)
    merged.update(corpus_section(cfg).get("budget") or {})
    return merged


def classification_experiment(k: int) -> str:
    return f"{CLASSIFICATION_PREFIX}{int(k)}"


def classification_latents(experiment: str) -> int | None:
    """K of a ``classification-K<K>`` experiment name; None for other names."""
    m = _CLASSIFICATION_RE.match(experiment)
    return int(m.group(1)) if m else None


def experiment_dataset(experiment: str) -> str:
    if experiment == TOPICS_EXPERIMENT:
        return TOPICS_DATASET
    if classification_latents(experiment) is not None:
        return CLASSIFICATION_DATASET
    raise ConfigError(
        f"{experiment!r} is not a text experiment ({TOPICS_EXPERIMENT} or {CLASSIFICATION_PREFIX}<K>)"
    )


def experiment_latents(cfg: Mapping[str, Any], experiment: str) -> int:
    """K learned in an experiment of the selected grid (ConfigError if it is not in the grid)."""
    text = corpus_section(cfg)
    if experiment == TOPICS_EXPERIMENT and "topics" in text:
        return int(text["topics"]["K"])
    k = classification_latents(experiment)
    if k is not None and k in [int(v) for v in (text.get("classification") or {}).get("K", [])]:
        return k
    raise ConfigError(f"experiment {experiment!r} is not in grids.{cfg['grid']}.acp.text")


def cells(cfg: Mapping[str, Any], experiment: str | None = None) -> list[CorpusCell]:
    """Every real-corpus cell of the selected grid (or of one experiment), in a stable order."""
    text = corpus_section(cfg)
    out: list[CorpusCell] = []
    topics = text.get("topics")
    if topics:
        out += [
            CorpusCell(TOPICS_EXPERIMENT, TOPICS_DATASET, m, int(n), int(topics["K"]))
            for m in methods(cfg)
            for n in topics["n_train"]
        ]
    cls = text.get("classification")
    if cls:
        out += [
            CorpusCell(classification_experiment(k), CLASSIFICATION_DATASET, m, int(n), int(k))
            for k in cls["K"]
            for m in methods(cfg)
            for n in cls["n_train"]
        ]
    return [c for c in out if experiment is None or c.experiment == experiment]


def classification_ks(cfg: Mapping[str, Any]) -> list[int]:
    return [int(k) for k in (corpus_section(cfg).get("classification") or {}).get("K", [])]


def tsne_n_train(cfg: Mapping[str, Any]) -> list[int]:
    """N_train columns of the t-SNE figures, in the configured order (the paper: large to small)."""
    return [int(n) for n in (corpus_section(cfg).get("tsne") or {}).get("n_train", [])]


def tsne_cells(cfg: Mapping[str, Any], k: int) -> list[CorpusCell]:
    """Classification cells shown in the t-SNE figure of one K (run at the first seed)."""
    ns = set(tsne_n_train(cfg))
    return [c for c in cells(cfg, classification_experiment(k)) if c.n_train in ns]


def validate_corpus_grid(cfg: Mapping[str, Any]) -> None:
    """Cross-field checks of every grid's ``text`` section the schema cannot express."""
    for gname in cfg["grids"]:
        text = corpus_section(cfg, gname)
        where = f"grids.{gname}.acp.text"
        _unique(text.get("methods", DEFAULT_METHODS), f"{where}.methods")
        topics = text.get("topics")
        if topics:
            _unique(topics["n_train"], f"{where}.topics.n_train")
            if int(topics.get("top_words", 10)) < 2:
                raise ConfigError(
                    f"{where}.topics.top_words must be >= 2 (PMI is averaged over word pairs); "
                    f"got {topics['top_words']}"
                )
            if int(topics.get("best_topics", 4)) > int(topics["K"]):
                raise ConfigError(
                    f"{where}.topics.best_topics = {topics['best_topics']} exceeds "
                    f"{where}.topics.K = {topics['K']}"
                )
        cls = text.get("classification") or {}
        if cls:
            _unique(cls["K"], f"{where}.classification.K")
            _unique(cls["n_train"], f"{where}.classification.n_train")
        tsne = text.get("tsne")
        if tsne:
            _unique(tsne["n_train"], f"{where}.tsne.n_train")
            allowed = sorted(int(n) for n in cls.get("n_train", []))
            extra = sorted({int(n) for n in tsne["n_train"]} - set(allowed))
            if extra:
                raise ConfigError(
                    f"{where}.tsne.n_train: {extra} not in {where}.classification.n_train {allowed}; the t-SNE "
                    "figures reuse the classification runs, so every t-SNE N_train must be trained there"
                )


def _unique(values: Any, where: str) -> None:
    vals = [int(v) if not isinstance(v, str) else v for v in values]
    dupes = sorted({v for v in vals if vals.count(v) > 1}, key=str)
    if dupes:
        raise ConfigError(f"{where}: duplicate value(s) {dupes}")
