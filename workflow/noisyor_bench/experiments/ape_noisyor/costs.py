"""APE-on-noisy-OR's compute jobs for the cost model (:mod:`noisyor_bench.experiments.costs`).

Why here: an encoder's training costs ~ seeds x training problems x rows x epochs; a
per-problem baseline ~ test problems x test rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.costs import Job

COMPUTE_RULES = ("ape_noisyor_train", "ape_noisyor_baseline")


def jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """The study's compute jobs in the active grid of ``cfg``."""
    sec = dict(cfg["grids"][cfg["grid"]].get("ape_noisyor") or {})
    if not sec:
        return []
    problems, rows = sec["problems"], sec["rows"]
    epochs = float((sec.get("budget") or {}).get("max_epochs", 1))
    train = len(sec.get("seeds") or [0]) * int(problems["train"]) * int(rows["train"]) * epochs
    test = float(int(problems["test"]) * int(rows["test"]))
    data = float(int(problems["train"]) * int(rows["train"]))  # a slice prices the jobs of its size
    out = []
    for family in sec.get("families") or {}:
        out += [
            Job("ape_noisyor_train", f"{family}-{e}", train, key=(family, e), size=data, cuda=True, family=e)
            for e in sec["encoders"]
        ]
        out += [
            Job("ape_noisyor_baseline", f"{family}-{b}", test, key=(family, b), family=b)
            for b in sec.get("baselines") or []
        ]
    return out
