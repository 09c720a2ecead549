"""``noisyor-bench verify`` of an aviPAM run (found through the paper registry).

A run records no test metric: the tables score its ``top_<component>`` words (NPMI).  Its
``topics.npz`` determines ``n_topics`` and those top words (recomputed with the run's own function
from ``ranking_<component>`` where stored -- aviPAM ranks by its decoder weights -- else from
``topics_<component>``), and for the collapse study ``kl_total``, ``n_collapsed`` and
``latent_dims`` (from ``kl_per_dim``).
"""

from __future__ import annotations

import numpy as np

from noisyor_bench.evaluation.coherence import top_word_ids
from noisyor_bench.experiments.avipam.runs import RANKING_PREFIX, TOP_N, TOPICS_FILE
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import load_npz
from noisyor_bench.infra.runcheck import NotRecomputable, Recomputed, RunCheck


def recompute(check: RunCheck) -> Recomputed:
    from noisyor_bench.inference.topics.avipam import collapsed_dimensions

    path = check.path / TOPICS_FILE
    arrays = load_npz(path)
    recorded = check.recorded
    rows = []
    for comp in recorded.get("components") or []:
        topics, top = arrays.get(f"topics_{comp}"), arrays.get(f"top_{comp}")
        if topics is None or top is None:
            raise DataError(f"{path} lacks topics_{comp} / top_{comp}")
        n_recorded, n_now = (recorded.get("n_topics") or {}).get(comp), int(topics.shape[0])
        rows.append((f"n_topics.{comp}", n_recorded, n_now, n_recorded == n_now))
        # top words come from the ranking matrix where the run stored one (aviPAM: weights), else
        # the topic-word matrix; a run from before the ranking was stored cannot be re-ranked
        ranking = arrays.get(f"{RANKING_PREFIX}{comp}")
        again = top_word_ids(topics if ranking is None else ranking, TOP_N)
        same = again.shape == top.shape and bool(np.array_equal(again, top))
        rows.append((f"top_{comp} ({TOPICS_FILE})", "stored", "same" if same else "differs", same))
    if "kl_per_dim" in arrays and "kl_total" in recorded:
        kl = np.asarray(arrays["kl_per_dim"])
        again = {"kl_total": float(kl.sum()), "latent_dims": int(kl.size)}
        if recorded.get("collapse_threshold") is not None:
            again["n_collapsed"] = collapsed_dimensions(kl, float(recorded["collapse_threshold"]))
        rows += check.rows(recorded, again)
    if not rows:
        raise NotRecomputable(f"{path} holds no topics of the components the run records")
    return Recomputed(
        rows,
        [],
        "training statistics (log_likelihood_per_word, convergence, timings) are the fit's own; NPMI is "
        "computed by the tables from these top words",
    )
