"""AVITM's published topics (``prodlda_k50_20news.yaml``: source, commit and licence inside), the
data of aviPAM Table 1's calibration row "AVITM published topics"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import yaml

from noisyor_bench.infra.errors import DataError

FILE = "prodlda_k50_20news.yaml"


@dataclass(frozen=True)
class PublishedRun:
    """One AVITM run: its topics' top-10 words and the NPMI Lau's scripts printed for each."""

    run: int
    logged_average: float
    words: list[list[str]]
    logged_npmi: list[float]


def load(name: str = FILE) -> tuple[dict[str, Any], list[PublishedRun]]:
    """(the file's ``source`` record, its runs); DataError naming the file if it is malformed."""
    try:
        text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        runs = [
            PublishedRun(
                int(r["run"]),
                float(r["logged_average"]),
                [[str(w) for w in t["words"]] for t in r["topics"]],
                [float(t["npmi"]) for t in r["topics"]],
            )
            for r in data["runs"]
        ]
        source = dict(data["source"])
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as err:
        raise DataError(f"AVITM published topics {name}: not readable ({err!r})") from None
    return source, runs


def run_of(seed: int, runs: Sequence[PublishedRun]) -> PublishedRun:
    """The published run a calibration cell's seed stands for: seed ``s`` is run ``s + 1``."""
    if not 0 <= seed < len(runs):
        raise DataError(
            f"AVITM published topics: seed {seed} has no run (runs 1..{len(runs)}: seeds 0..{len(runs) - 1})"
        )
    return runs[seed]


def topic_matrix(words: Sequence[Sequence[str]], vocabulary: Sequence[str]) -> np.ndarray:
    """(K, V) rows summing to one whose top words, in order, are ``words[k]`` (listed words get
    weights n, n-1, ..., 1 over the rest's 0), so a run directory can hold published topics."""
    index = {w: i for i, w in enumerate(vocabulary)}
    matrix = np.zeros((len(words), len(vocabulary)))
    for k, topic in enumerate(words):
        missing = [w for w in topic if w not in index]
        if missing:
            raise DataError(f"AVITM published topic {k}: words {missing} are not in the corpus vocabulary")
        matrix[k, [index[w] for w in topic]] = np.arange(len(topic), 0, -1, dtype=np.float64)
    return matrix / matrix.sum(axis=1, keepdims=True)
