"""One aviPAM run: corpus -> fit -> run directory (``results/runs/avipam-<experiment>/...``).

The directory holds

* ``metrics.json``: the cell in the project's run keys (``experiment`` = ``avipam-<small|large|
  collapse>``, ``dataset`` = the corpus, ``method``, ``n_train`` = the training-document limit, 0 =
  all, ``seed``), the settings, ``train_seconds``
  and ``train_minutes`` (wall time of the fit call alone, :mod:`.methods`), its robust centre and
  spread ``train_minutes_median`` / ``_low`` / ``_high`` and ``timing`` (:mod:`.methods`), the same
  from the process's CPU time (``train_cpu_minutes``, its ``_median`` / ``_low`` / ``_high``,
  ``cpu_timing``; absent where the fit records none: scikit-learn, published topics), ``threads``,
  ``converged`` and ``convergence`` (:mod:`noisyor_bench.inference.convergence`; ``null`` where a
  fit has no training curve to judge), method-specific metrics (e.g. the collapse study's KL per
  latent dimension) and ``provenance`` (the corpus, the settings, the sha256 of ``topics.npz`` and
  ``curve.csv``);
* ``topics.npz``: ``topics_<component>`` (K x V float64, rows sum to 1) and ``top_<component>``
  (K x top_n int64 word ids, first first) for each component (``sub``; MoLDA ``molda-<K>``):
  most probable first, except aviPAM's, ranked by the decoder weights without the shared
  per-word shift (AVITM's rule), whose probability ranking is ``top_beta_<component>``;
  plus the method's extra arrays;
* ``curve.csv``: the training curve the fit reported (may be a single row for a sampler).

NPMI is not computed here: the tables score every run's ``top_*`` words against the reference
co-occurrence counts (:mod:`noisyor_bench.reporting.avipam.tables`), so adding a reference never
retrains. Written in ``<out>.partial`` and published when complete
(:func:`noisyor_bench.experiments.rundir.publish_run_dir`).
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from noisyor_bench.data.corpora.bow import load_corpus
from noisyor_bench.evaluation.coherence import top_word_ids
from noisyor_bench.experiments.avipam.methods import TOP_N, TopicFit, fit
from noisyor_bench.experiments.rundir import fresh_partial_dir, publish_run_dir, write_metrics
from noisyor_bench.infra import provenance
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.hashing import sha256_file
from noisyor_bench.infra.io import write_npz_atomic, write_text_atomic
from noisyor_bench.infra.timing import Timing, single

log = logging.getLogger(__name__)
TOPICS_FILE = "topics.npz"
#: ``top_beta_<component>``: top words by the probabilities where ``top_<component>`` ranks by
#: another rule (aviPAM: the decoder weights; the beta ranking is an ablation)
BETA_TOP_PREFIX = "top_beta_"
RANKING_PREFIX = "ranking_"
"""``topics.npz`` key of the matrix a component's top words were ranked by, where that is not
its topic-word matrix (aviPAM: decoder weights without the shared shift); ``verify`` re-ranks it."""


def curve_csv(rows: list[dict[str, float]]) -> str:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _train_limit(limit: Any, available: int, corpus_path: str | Path) -> int:
    """``max_train_docs`` as the run's N: a positive integer no larger than the corpus's
    training documents, so that the recorded N is the number fitted (1,000,000 was
    recorded where 11,258 documents were used; as ACP refuses an n_train above its pool)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"max_train_docs must be a positive integer or null (all); got {limit!r}")
    if limit > available:
        raise ConfigError(
            f"max_train_docs {limit} exceeds the {available} training documents of {corpus_path}; "
            f"use at most {available}, or null for all of them"
        )
    return limit


def cpu_columns(cpu: Timing | None) -> dict[str, Any]:
    """``train_cpu_minutes`` (the process's CPU time of training, measured once), its robust
    centre and spread ``train_cpu_minutes_median`` / ``_low`` / ``_high`` and ``cpu_timing``
    (:mod:`.methods`); none of them where the fit recorded no CPU time."""
    if cpu is None:
        return {}
    return {
        "train_cpu_minutes": round(cpu.measured / 60.0, 5),
        **{k: round(v, 5) for k, v in cpu.columns("train_cpu_minutes", 1 / 60.0).items()},
        "cpu_timing": cpu.as_dict(),
    }


def compute_device(settings: Mapping[str, Any]) -> str:
    """Where the run computes: ``"cuda"`` for a CUDA-capable method given a GPU (``device``
    ``cuda[:N]``, or ``auto`` with one present), else ``"cpu"``. A GPU run's process CPU time is
    not its compute (the work is the device's), so it records no CPU time and the speed claims
    read its wall time."""
    from noisyor_bench.experiments.avipam.costs import is_cuda_method

    name = str(settings.get("device", "cpu"))
    if not is_cuda_method(str(settings.get("method", ""))) or name == "cpu":
        return "cpu"
    if name == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cuda"


def execute(
    corpus_path: str | Path,
    cell: Mapping[str, Any],
    settings: Mapping[str, Any],
    seed: int,
    out_dir: str | Path,
) -> Path:
    """Fit ``settings['method']`` on the corpus's training documents; write the run directory."""
    from noisyor_bench.infra.device import set_threads

    clock = provenance.Stopwatch()
    out = Path(out_dir)
    threads = set_threads(int(settings.get("threads", 1)))
    corpus = load_corpus(corpus_path)
    counts = corpus.train
    limit = settings.get("max_train_docs")
    if limit:
        counts = counts[: _train_limit(limit, counts.shape[0], corpus_path)]
    if counts.shape[0] == 0:
        raise ConfigError(f"avipam run {cell}: no training documents")
    log.info(
        "avipam %s: %s on %s, %d documents x %d words, seed %d",
        cell.get("experiment"),
        settings["method"],
        cell.get("corpus"),
        counts.shape[0],
        counts.shape[1],
        seed,
    )
    result: TopicFit = fit(str(settings["method"]), counts, settings, int(seed), vocabulary=corpus.vocab)
    log.info("avipam %s: trained in %.1f s", cell.get("method"), result.train_seconds)

    work = fresh_partial_dir(out)
    arrays: dict[str, np.ndarray] = {}
    n_topics = {}
    for name, matrix in result.topics.items():
        arrays[f"topics_{name}"] = np.asarray(matrix, dtype=np.float64)
        ranking = result.rankings.get(name)
        arrays[f"top_{name}"] = top_word_ids(matrix if ranking is None else ranking, TOP_N)
        if ranking is not None:  # the ablation: top words by the topic-word probabilities
            arrays[f"{BETA_TOP_PREFIX}{name}"] = top_word_ids(matrix, TOP_N)
            arrays[f"{RANKING_PREFIX}{name}"] = np.asarray(ranking, dtype=np.float64)  # for verify
        n_topics[name] = int(np.shape(matrix)[0])
    arrays.update({k: np.asarray(v) for k, v in result.arrays.items()})
    write_npz_atomic(work / TOPICS_FILE, **arrays)
    write_text_atomic(work / "curve.csv", curve_csv(result.curve) if result.curve else "")
    conv = result.convergence
    timing = result.timing or single(result.train_seconds)
    device = compute_device(settings)
    metrics = {
        "experiment": f"avipam-{cell['experiment']}",
        "dataset": cell["corpus"],
        "method": cell["method"],
        "n_train": int(limit or 0),
        "seed": int(seed),
        "mode": "learning",
        "corpus": cell["corpus"],
        "table_experiment": cell["experiment"],
        "settings": dict(settings),
        "components": list(result.topics),
        "n_topics": n_topics,
        "n_train_docs": int(counts.shape[0]),
        "vocabulary": int(counts.shape[1]),
        "train_seconds": round(float(result.train_seconds), 3),
        "train_minutes": round(float(result.train_seconds) / 60.0, 5),
        **{k: round(v, 5) for k, v in timing.columns("train_minutes", 1 / 60.0).items()},
        "timing": timing.as_dict(),
        "compute_device": device,
        **cpu_columns(result.cpu_timing if device == "cpu" else None),
        "threads": int(threads),
        "converged": None if conv is None else conv.get("converged"),
        "convergence": conv,
        "epochs": None if conv is None else conv.get("epochs"),
        **result.extra_metrics,
    }
    corpus_entry = provenance.file_entry(corpus_path, "dataset", out)
    corpus_entry["sha256"] = sha256_file(corpus_path)
    metrics["provenance"] = provenance.artifact_record(
        "run", [corpus_entry], [], out, dict(settings), clock, "cpu", threads
    )
    metrics["provenance"]["outputs"] = provenance.run_outputs(work)  # topics.npz, curve.csv
    write_metrics(work / "metrics.json", metrics)
    return publish_run_dir(work, out)
