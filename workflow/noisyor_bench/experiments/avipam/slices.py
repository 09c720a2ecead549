"""Calibration slices of aviPAM's runs: a few sweeps, passes or epochs at the run's own sizes.

Why: a run is priced from a measured run of its method family at other sizes (a 4-PAM chain at
50 x 100 topics from one at 2 x 50, whose sweep costs far less than the topics suggest), or not
at all (batch mean-field LDA and NVLDA run in the paper grid only).  A slice builds the run's
corpus from its raw inputs, as ``avipam-data`` does, and runs the run's own fit through the same
adapter (:func:`noisyor_bench.experiments.avipam.methods.fit`) with the run's settings, cut to a
few steps:

* a Gibbs chain :data:`GIBBS_SWEEPS` sweeps, traced after each; the second half is timed (the
  first pays the initialisation);
* mean-field LDA ``max(2, evaluate_every)`` passes, at least one of them with its perplexity
  check: scikit-learn's passes and checks, timed together (no per-pass time exists);
* amortized training (aviPAM, the collapse study, ProdLDA / NVLDA) :data:`EPOCHS` epochs; the
  epochs after the first are timed.

Its work is the timed steps in the cost model's unit (:func:`~noisyor_bench.experiments.avipam.costs.run_steps`).
What a slice leaves out runs once per job (loading the corpus, the final topics, writing the run
folder).  Published topics (no training) have no slice.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.avipam import cells as avipam_cells
from noisyor_bench.experiments.avipam import costs as avipam_costs
from noisyor_bench.experiments.costs import Job

#: Sweeps of a Gibbs slice; the last half is timed.
GIBBS_SWEEPS = 4
#: Epochs of an amortized slice; all but the first are timed.
EPOCHS = 3
RULE = "avipam_run"


def _cell(cfg: Mapping[str, Any], job: Job) -> avipam_cells.RunCell | None:
    """The run of an ``avipam_run`` job with training to slice (None: not one)."""
    if job.rule != RULE:
        return None
    sec = avipam_cells.section(cfg)
    cell = next((c for c in avipam_cells.all_cells(sec) if avipam_costs.job_name(c) == job.job), None)
    return None if cell is None or cell.method == "avitm-published" else cell


def bench_name(cfg: Mapping[str, Any], job: Job) -> tuple[str, str] | None:
    """The (rule, job) a slice of ``job`` is recorded under: the job itself (None: no slice)."""
    return (job.rule, job.job) if _cell(cfg, job) is not None else None


def slice_settings(settings: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The run's settings cut to a slice's steps, and the kind of step (sweeps, passes, epochs)."""
    out = copy.deepcopy(dict(settings))
    method = str(out["method"])
    if method in avipam_cells.GIBBS_METHODS:
        gibbs = {k: v for k, v in out["gibbs"].items() if k != "max_minutes"}
        out["gibbs"] = {**gibbs, "iterations": GIBBS_SWEEPS, "trace_every": 1, "stop_on_rule": False}
        return out, "sweeps"
    if method.startswith("lda-"):
        mf = dict(out.get("mean_field") or {})
        passes = max(2, int(mf.get("evaluate_every", 2)))
        out["mean_field"] = {**mf, "max_iter": passes, "stop_on_rule": False}
        return out, "passes"
    if method in avipam_costs.AVITM_EPOCHS:
        out["prodlda"] = {**(out.get("prodlda") or {}), "epochs": EPOCHS}
        return out, "epochs"
    cut = {"max_epochs": EPOCHS, "patience": EPOCHS + 1, "stop_on_plateau": False, "max_minutes": None}
    out["avi"] = {**out["avi"], **cut}
    out["corpus"] = {**out.get("corpus", {}), **{k: v for k, v in cut.items() if k in out.get("corpus", {})}}
    return out, "epochs"


def timed_steps(fit: Any, kind: str) -> tuple[float, int]:
    """(seconds, steps) of the timed part of a slice's :class:`~.methods.TopicFit`."""
    if kind == "passes":  # scikit-learn's fit: its passes and checks, no time per pass
        return float(fit.train_seconds), int(fit.extra_metrics["passes"])
    curve = fit.curve
    if kind == "sweeps":  # the trace's seconds are cumulative
        half = len(curve) // 2
        return float(curve[-1]["seconds"]) - float(curve[half - 1]["seconds"]), len(curve) - half
    return sum(float(r["seconds"]) for r in curve[1:]), len(curve) - 1  # seconds per epoch


def _corpus(cfg: Mapping[str, Any], corpus: str, raw_data_dir: str | None, cache: str) -> Any:
    """The corpus as ``avipam-data`` builds it with the config's options (rules/avipam.smk)."""
    from noisyor_bench.data.corpora.avipam_corpora import CorpusOptions, build

    own = dict((cfg.get("corpora") or {}).get(f"avipam-{corpus}") or {})
    return build(corpus, CorpusOptions(raw_data_dir, cache, **own))[0]


def run(cfg: Mapping[str, Any], job: Job, raw_data_dir: str | None) -> tuple[float, float, str]:
    """(seconds of the timed steps, their work, what was run) of the ``avipam_run`` job."""
    import tempfile

    from noisyor_bench.experiments.avipam.methods import fit

    cell = _cell(cfg, job)
    assert cell is not None
    sec = avipam_cells.section(cfg)
    settings, kind = slice_settings(avipam_cells.cell_settings(sec, cell))
    with tempfile.TemporaryDirectory(prefix="noisyor-slice-") as cache:
        corpus = _corpus(cfg, cell.corpus, raw_data_dir, cache)
    counts = corpus.train[: settings.get("max_train_docs") or None]  # as a run limits them
    result = fit(str(settings["method"]), counts, settings, cell.seed, vocabulary=corpus.vocab)
    seconds, steps = timed_steps(result, kind)
    per_step = avipam_costs.run_steps(sec, cell)[1]
    what = f"{kind} {steps} timed ({cell.path}, {counts.shape[0]} documents x {counts.shape[1]} words)"
    return seconds, steps * per_step, what


__all__ = ["EPOCHS", "GIBBS_SWEEPS", "bench_name", "run", "slice_settings", "timed_steps"]
