"""Which config a time measurement belongs to: a short hash of the work a grid's config gives
one paper's compute jobs.

Why: a measured time holds for the config that ran.  ``config/runtime_estimates.yaml`` records
this hash with each measured row and ``estimate-time`` compares it with today's, so a grid whose
seeds, sizes, budgets or draws changed since is not reported at its old time.  The hash is of
what the estimate depends on, resolved by the paper's cost model: every compute job's rule, name
and work.  Moving a key without changing a value leaves it; changing a priced value does not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments import costs

#: Hex digits kept: enough to tell configs apart, short enough to read in a warning.
LENGTH = 12


def config_hash(cfg: Mapping[str, Any], grid: str, paper_id: str) -> str | None:
    """The hash of ``paper_id``'s compute jobs in ``grid`` of ``cfg`` (None: it has none there)."""
    jobs = costs.paper_jobs(costs.grid_config(cfg, grid), paper_id)
    if not jobs:
        return None
    work = sorted((j.rule, j.job, repr(float(j.work))) for j in jobs)
    return hashlib.sha256(json.dumps(work).encode()).hexdigest()[:LENGTH]


__all__ = ["LENGTH", "config_hash"]
