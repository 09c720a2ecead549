"""One adapter per aviPAM method: (training counts, settings, seed) -> :class:`TopicFit`.

The inference lives below (``inference/topics``: tomotopy collapsed Gibbs LDA and 4-PAM,
scikit-learn mean-field LDA, the aviPAM trainer); the adapters only map a grid cell's settings to
those calls and measure the training wall time the same way for every method
(``time.perf_counter`` around the fit call alone: no data loading, no evaluation).  Beside that
time measured once, ``timing`` re-bases it on the fit's per-step times (Gibbs: per trace chunk
of sweeps; aviPAM: per epoch; :func:`noisyor_bench.infra.timing.per_step_timing`): its median
and interquartile spread, so that a load spike during a long fit does not flip the speed claim.
``cpu_timing`` is the same from the process's CPU time per step: on one thread, the time the fit
takes on an idle core, whatever else the machine runs (the speed claims prefer it).
scikit-learn's fits record no per-pass times: measured once, no spread.

The Gibbs chains and the aviPAM runs also keep their coherence curve's raw material
(:class:`TopWordTrace`): each topic's top words at every trace point of a chain and every few
epochs of an aviPAM run, saved in the run's ``topics.npz`` as ``trace_top_<component>`` and
``trace_steps`` (the tables score them: ``reporting.avipam.tables.trace_npmi``).  Recording them
reads the fit's state only (no random draw) and its time is taken out of the training time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from noisyor_bench.inference.convergence import Convergence
from noisyor_bench.inference.fitting import FitBudget
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.timing import Timing, cumulative_timing, epoch_cpu_timing, per_step_timing

#: How a run's top words are ranked (aviPAM: ``inference.topics.avipam.TOP_WORD_RULES``; the
#: probability ranking is the ablation): the rule of its final topics and of its trace
AVIPAM_TOP_WORD_RULE = "weights"
#: Epochs between an aviPAM run's top-word snapshots: the checkpoints its coherence plateaus were
#: read off (benchmarks/avipam_coherence_epochs.py, ``--every``); a run shorter than
#: ``COHERENCE_CHECK_EVERY ** 2`` epochs is snapshot more often (:func:`snapshot_every`)
COHERENCE_CHECK_EVERY = 10
TOP_N = 10  # top words per topic: the runs' topics, their coherence and the traces along the fit
TRACE_TOP_PREFIX = "trace_top_"  # topics.npz: (points, K, top_n) int64 top-word ids per component
TRACE_STEPS = "trace_steps"  # topics.npz: (points,) int64 sweep / epoch of each point


@dataclass
class TopWordTrace:
    """Each component's top words along a fit: ``steps`` (sweeps of a Gibbs chain, epochs of an
    aviPAM run) and, per component, one ``(K, top_n)`` array of word ids per step, ranked as the
    run's final ``top_<component>`` (``experiments.avipam.runs``); ``seconds``: the time spent
    recording them (taken out of the run's training time)."""

    steps: list[int] = field(default_factory=list)
    tops: dict[str, list[np.ndarray]] = field(default_factory=dict)
    seconds: float = 0.0

    def record(self, step: int, rankings: Mapping[str, np.ndarray]) -> None:
        """Keep the top words of every component at ``step``: ``rankings`` maps a component to
        the ``(K, V)`` matrix its top words are ranked by (a topic-word matrix, aviPAM's weights)."""
        from noisyor_bench.evaluation.coherence import top_word_ids

        start = time.perf_counter()
        self.steps.append(int(step))
        for name, matrix in rankings.items():
            self.tops.setdefault(name, []).append(top_word_ids(matrix, TOP_N))
        self.seconds += time.perf_counter() - start

    def arrays(self, before: int | None = None) -> dict[str, np.ndarray]:
        """``topics.npz``'s :data:`TRACE_STEPS` and :data:`TRACE_TOP_PREFIX` arrays, the points
        before step ``before`` only (``None``: all); empty without a point."""
        keep = [i for i, s in enumerate(self.steps) if before is None or s < before]
        if not keep:
            return {}
        out = {TRACE_STEPS: np.asarray([self.steps[i] for i in keep], dtype=np.int64)}
        for name, tops in self.tops.items():
            out[f"{TRACE_TOP_PREFIX}{name}"] = np.stack([tops[i] for i in keep]).astype(np.int64)
        return out


def snapshot_every(max_epochs: int) -> int:
    """Epochs between an aviPAM run's top-word snapshots: :data:`COHERENCE_CHECK_EVERY`, or a
    tenth of ``max_epochs`` (at least 1) for a shorter run, so that its curve has ~10 points."""
    return max(1, min(COHERENCE_CHECK_EVERY, int(max_epochs) // COHERENCE_CHECK_EVERY))


@dataclass
class TopicFit:
    """What a run keeps of a fit: topic-word matrices per component and the training record."""

    topics: dict[str, np.ndarray]  # component -> (K, V) rows sum to 1 ("sub"; MoLDA: "molda-10", ...)
    train_seconds: float
    curve: list[dict[str, float]] = field(default_factory=list)  # one row per evaluation
    convergence: dict[str, Any] | None = None  # inference.convergence.Convergence.as_dict()
    extra_metrics: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # saved in topics.npz (e.g. kl_per_dim)
    timing: Timing | None = None  # train_seconds re-based on the per-step times (None: measured once)
    # the same from the process's CPU time per step (None: not measured, e.g. a resumed fit)
    cpu_timing: Timing | None = None
    # component -> (K, V) scores whose row order is the top-word order, where it is not the
    # topic matrix's (aviPAM: the decoder weights, inference.topics.avipam.TOP_WORD_RULES)
    rankings: dict[str, np.ndarray] = field(default_factory=dict)


Adapter = Callable[[sp.csr_matrix, Mapping[str, Any], int], TopicFit]


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _convergence_dict(conv: Any) -> dict[str, Any] | None:
    if conv is None:
        return None
    return conv.as_dict() if hasattr(conv, "as_dict") else dict(conv)


def baseline_budget(cap: int) -> FitBudget:
    """The budget a Gibbs chain or a mean-field LDA fit runs under and is judged with: ``cap``
    (iterations / passes) as ``max_epochs`` and :class:`~noisyor_bench.inference.fitting.FitBudget`'s
    convergence rule (window 5 checks, 0.1% relative; no grid key overrides it).  One object
    per run, given both to the fit (its ``stop_on_rule``) and to :func:`trace_convergence` /
    :func:`meanfield_convergence`, so that the rule that stops a run is the rule that judges it."""
    return FitBudget(max_epochs=int(cap))


def trace_convergence(
    trace: Sequence[tuple[int, float, float]],
    iterations: int,
    stop_reason: str = "max_epochs",
    budget: FitBudget | None = None,
) -> dict[str, Any] | None:
    """The project's convergence rule on a sampler's trace: the monitored value is minus the
    log-likelihood per word every ``trace_every`` iterations; a chain converged when the best of
    its last W trace points improves on the best before them by less than rel_tol (relative;
    ``budget``'s, default :func:`baseline_budget`: 5 and 0.1%).
    ``stop_reason`` ``"plateau"``: the chain stopped there because the rule held (``stop_on_rule``;
    ``iterations`` was its cap), ``"max_epochs"``: it ran every iteration."""
    from noisyor_bench.inference.convergence import assess
    from noisyor_bench.inference.topics.gibbs import trace_records

    if not trace:
        return None
    records = trace_records(trace)
    finite = [r for r in records if math.isfinite(r.train_nelbo)]  # a NaN would win min()'s comparison
    if not finite:
        return None
    best = int(min(finite, key=lambda r: r.train_nelbo).epoch)
    return assess(records, stop_reason, best, budget or baseline_budget(iterations)).as_dict()


def _trace_curve(trace: Sequence[tuple[int, float, float]]) -> list[dict[str, float]]:
    return [
        {"iteration": int(it), "log_likelihood_per_word": float(ll), "seconds": float(sec)}
        for it, ll, sec in trace
    ]


def _trace_every(g: Mapping[str, Any]) -> int:
    return int(g.get("trace_every") or max(1, int(g["iterations"]) // 20))


def _gibbs_topic_fit(
    run: Callable[[int, FitBudget, Any], Any], topic_word: Callable[[Any], np.ndarray], g: Mapping[str, Any]
) -> TopicFit:
    """The one Gibbs path: time ``run(trace_interval, budget, snapshot)`` (a tomotopy fit), keep
    its sub-topic-word matrix ``topic_word(fit)``, its trace as the curve, the convergence rule
    on that trace (the run's :func:`baseline_budget`, the one its ``stop_on_rule`` used) and the
    top words at every trace point (:class:`TopWordTrace`; the last one is the final state's).

    With ``stop_on_rule`` (the quick and smoke grids) the chain stops at the first trace point
    where the rule holds and ``iterations`` is a cap; metrics record the sweeps run
    (``gibbs_sweeps``) and whether the rule or the cap ended the chain (``gibbs_stop``)."""
    iterations = int(g["iterations"])
    budget = baseline_budget(iterations)
    trace = TopWordTrace()
    fit, seconds = _timed(
        lambda: run(_trace_every(g), budget, lambda sweep, matrix: trace.record(sweep, {"sub": matrix}))
    )
    seconds -= fit.snapshot_seconds  # recording the top words (trace.seconds within it) is not training
    # a chain stopped by its time limit ran out of budget as one stopped by the cap does
    stop_reason = "max_epochs" if fit.stop_reason == "time" else fit.stop_reason
    return TopicFit(
        topics={"sub": topic_word(fit)},
        train_seconds=seconds,
        timing=cumulative_timing([t[0] for t in fit.trace], [t[2] for t in fit.trace], seconds),
        cpu_timing=(
            cumulative_timing([t[0] for t in fit.trace], fit.cpu_trace, fit.cpu_seconds)
            if fit.cpu_seconds is not None and len(fit.cpu_trace) == len(fit.trace)
            else None
        ),
        curve=_trace_curve(fit.trace),
        convergence=trace_convergence(fit.trace, iterations, stop_reason, budget),
        extra_metrics={
            "sampler_seconds": fit.train_seconds,
            "log_likelihood_per_word": fit.log_likelihood_per_word,
            "gibbs_sweeps": int(fit.sweeps),
            "gibbs_cap": iterations,
            "gibbs_stop": {"plateau": "rule", "time": "time"}.get(fit.stop_reason, "cap"),
        },
        arrays=trace.arrays(),
    )


def _stop_on_rule(g: Mapping[str, Any]) -> bool:
    value = g.get("stop_on_rule", False)
    if not isinstance(value, bool):
        raise ConfigError(f"grids.*.avipam.tables.*.gibbs.stop_on_rule must be true or false; got {value!r}")
    return value


def _max_seconds(g: Mapping[str, Any]) -> float | None:
    """``max_minutes`` (a chain's training-time limit) in seconds; ``None`` without one."""
    minutes = g.get("max_minutes")
    return None if minutes is None else 60.0 * float(minutes)


def fit_lda_gibbs_cell(counts: sp.csr_matrix, settings: Mapping[str, Any], seed: int) -> TopicFit:
    """tomotopy collapsed Gibbs LDA (the paper: Mallet), K = the sub-topic count; Mallet's
    defaults (alpha = 50 / K, beta = 0.01, no hyperparameter optimisation)."""
    from noisyor_bench.inference.topics import gibbs

    g = settings["gibbs"]
    k = int(settings["sizes"]["sub"])
    return _gibbs_topic_fit(
        lambda trace_interval, budget, snapshot: gibbs.fit_lda_gibbs(
            counts,
            n_topics=k,
            alpha=float(g.get("lda_alpha", 50.0 / k)),
            eta=float(g.get("eta", 0.01)),
            iterations=int(g["iterations"]),
            seed=seed,
            burn_in=int(g.get("burn_in", 0)),
            trace_interval=trace_interval,
            stop_on_rule=_stop_on_rule(g),
            budget=budget,
            max_seconds=_max_seconds(g),
            snapshot=snapshot,
        ),
        lambda fit: fit.topic_word,
        g,
    )


def fit_pam_gibbs_cell(counts: sp.csr_matrix, settings: Mapping[str, Any], seed: int) -> TopicFit:
    """tomotopy PAModel (the paper: Mallet PAM4L) with Mallet's defaults (inference.topics.pam_gibbs)."""
    from noisyor_bench.inference.topics import pam_gibbs

    g = settings["gibbs"]
    sizes = settings["sizes"]
    return _gibbs_topic_fit(
        lambda trace_interval, budget, snapshot: pam_gibbs.fit_pam_gibbs(
            counts,
            n_super=int(sizes["super"]),
            n_sub=int(sizes["sub"]),
            iterations=int(g["iterations"]),
            seed=seed,
            burn_in=int(g.get("burn_in", 0)),
            trace_interval=trace_interval,
            stop_on_rule=_stop_on_rule(g),
            budget=budget,
            max_seconds=_max_seconds(g),
            snapshot=snapshot,
        ),
        lambda fit: fit.sub_topic_word,
        g,
    )


def meanfield_convergence(
    trace: Sequence[tuple[int, float]],
    stopped_by_criterion: bool,
    max_iter: int,
    checked: bool,
    stop_reason: str = "",
    budget: FitBudget | None = None,
) -> dict[str, Any]:
    """The convergence record of a scikit-learn LDA fit.

    With perplexity checks (``evaluate_every > 0``) the monitored value is the log of
    scikit-learn's training perplexity at every check (its own bound per token, a NELBO per
    word), judged by the project's rule (:func:`noisyor_bench.inference.convergence.assess`
    with ``budget``, default :func:`baseline_budget`: window 5 checks, 0.1% relative);
    scikit-learn's own stop (perplexity change below
    ``perp_tol``) counts as converged too.  Without checks there is nothing to judge:
    not converged (``epoch-limit-unchecked``)."""
    from noisyor_bench.inference.convergence import assess
    from noisyor_bench.inference.topics.lda_meanfield import perplexity_records

    if not checked or not trace:
        return {
            "converged": False,
            "rule": "epoch-limit-unchecked",
            "stop_reason": "max_epochs",
            "epochs": int(max_iter),
            "max_epochs": int(max_iter),
        }
    records = perplexity_records(trace)
    finite = [r for r in records if math.isfinite(r.train_nelbo)]
    best = min(finite, key=lambda r: r.train_nelbo).epoch if finite else None
    stop = "converged" if stopped_by_criterion else (stop_reason or "max_epochs")
    return assess(records, stop, best, budget or baseline_budget(max_iter)).as_dict()


def fit_lda_meanfield_cell(counts: sp.csr_matrix, settings: Mapping[str, Any], seed: int) -> TopicFit:
    """scikit-learn mean-field LDA, online or batch (the method name says which).

    Convergence (:func:`meanfield_convergence`): the project's plateau rule on the log of
    scikit-learn's training perplexity, checked every ``evaluate_every`` passes, or
    scikit-learn's own stop; without checks (``evaluate_every <= 0``) not converged."""
    from noisyor_bench.inference.topics import lda_meanfield

    mf = dict(settings.get("mean_field") or {})
    method = "online" if settings["method"] == "lda-online" else "batch"
    max_iter = int(mf.get("max_iter", 10))
    evaluate_every = int(mf.get("evaluate_every", 2))
    budget = baseline_budget(max_iter)  # the stop rule's and the verdict's
    fit, seconds = _timed(
        lambda: lda_meanfield.fit_lda_meanfield(
            counts,
            n_topics=int(settings["sizes"]["sub"]),
            learning_method=method,
            seed=seed,
            max_iter=max_iter,
            evaluate_every=evaluate_every,
            perp_tol=float(mf.get("perp_tol", 0.1)),
            compute_perplexity=False,
            eval_docs=int(mf.get("eval_docs") or 0) if method == "online" else 0,
            stop_on_rule=bool(mf.get("stop_on_rule", False)) and method == "online",
            budget=budget,
        )
    )
    convergence = meanfield_convergence(
        fit.perplexity_trace,
        bool(fit.stopped_by_criterion),
        max_iter,
        evaluate_every > 0,
        fit.stop_reason,
        budget,
    )
    curve = [{"passes": int(p), "perplexity": float(v)} for p, v in fit.perplexity_trace] or [
        {"passes": int(fit.n_iter), "em_steps": int(fit.n_batch_iter)}
    ]
    return TopicFit(
        topics={"sub": fit.topic_word},
        train_seconds=seconds,
        curve=curve,
        convergence=convergence,
        extra_metrics={
            "sklearn_seconds": fit.train_seconds,
            "learning_method": method,
            "passes": int(fit.n_iter),
            "em_steps": int(fit.n_batch_iter),
            "perplexity_eval_docs": int(fit.eval_docs),  # 0: every training document (scikit-learn's loop)
            "mean_field_stop": "rule"
            if fit.stop_reason == "plateau"
            else ("criterion" if fit.stopped_by_criterion else "cap"),
        },
    )


# aviPAM structures of the table methods: (kind of models.topics.pam.make_structure, sizes)
AVIPAM_STRUCTURES: dict[str, Callable[[Mapping[str, Any]], tuple[str, list[int]]]] = {
    "avipam-pam4": lambda z: ("pam4", [int(z["super"]), int(z["sub"])]),
    "avipam-pam5": lambda z: ("pam5", [int(z["superduper"]), int(z["super"]), int(z["sub"])]),
    "avipam-ctm": lambda z: ("ctm", [int(z["sub"])]),
    "avipam-molda": lambda z: ("molda", [int(k) for k in z["molda"]]),
    "avipam-lda": lambda z: ("lda", [int(z["sub"])]),
    "avipam-pam4-gain": lambda z: ("pam4", [int(z["super"]), int(z["sub"])]),
}
#: Trainer settings an ablation method fixes over the grid's ``avi`` section.
ABLATION_OVERRIDES: dict[str, dict[str, Any]] = {"avipam-pam4-gain": {"output_norm": "batchnorm"}}


def avipam_config(settings: Mapping[str, Any]) -> Any:
    """The trainer's config: the grid's ``avi`` section, the corpus's overrides, and (collapse
    study) the run's normalisation variant, topic batch-norm and learning rate."""
    from noisyor_bench.inference.topics.avipam import config_from_mapping

    values = {**dict(settings.get("avi") or {}), **dict(settings.get("corpus") or {})}
    values.update(ABLATION_OVERRIDES.get(str(settings.get("method")), {}))
    if "variant" in settings:
        values.update(output_norm=settings["variant"], topic_bn=bool(settings.get("topic_bn", True)))
        values["lr"] = float(settings["lr"])
    return config_from_mapping(values, where="grids.*.avipam.avi")


def avipam_device(settings: Mapping[str, Any], **fake_gpus: Any) -> Any:
    """The run's torch device: ``settings['device']`` (default cpu) through the project's one
    device picker, so concurrent aviPAM jobs on a multi-GPU node claim different GPUs;
    ``fake_gpus`` (``gpu_count``, ``lock_dir``) as :func:`~noisyor_bench.infra.device.resolve_device`."""
    from noisyor_bench.infra.device import resolve_device

    return resolve_device(str(settings.get("device", "cpu")), **fake_gpus)


def fit_avipam_cell(counts: sp.csr_matrix, settings: Mapping[str, Any], seed: int) -> TopicFit:
    """aviPAM (models.topics.pam structure + inference.topics.avipam trainer).

    No validation split: the corpora have only train and test, and the test documents are the
    internal NPMI reference, so the trainer monitors the training NELBO (early stopping and the
    convergence rule on it).  Every :func:`snapshot_every` epochs the trainer's hook keeps the top
    words of every component by the final topics' rule (:data:`AVIPAM_TOP_WORD_RULE`); the last
    epoch's point is left out, as the run's final topics (the restored best state) stand there."""
    import dataclasses

    from noisyor_bench.inference.topics import avipam
    from noisyor_bench.inference.training import NonFiniteLossError
    from noisyor_bench.models.topics.pam import make_structure

    method = str(settings["method"])
    kind, sizes = AVIPAM_STRUCTURES[method](settings["sizes"])
    structure = make_structure(kind, sizes)
    config = avipam_config(settings)
    device = avipam_device(settings)
    names = [f"molda-{k}" for k in sizes] if kind == "molda" else ["sub"]
    trace = TopWordTrace()
    every = snapshot_every(config.max_epochs)
    blocks = np.cumsum(structure.topic_blocks)[:-1]

    def snapshot(record: Any, net: Any) -> None:  # reads the weights only: no draw, no update
        if record.epoch % every == 0:
            ranking = avipam.topic_ranking(net, AVIPAM_TOP_WORD_RULE)
            trace.record(record.epoch, dict(zip(names, np.split(ranking, blocks, axis=0), strict=True)))

    start = time.perf_counter()
    try:
        result = avipam.fit_avipam(
            counts, None, structure, config, seed=seed, device=device, epoch_hook=snapshot
        )
    except NonFiniteLossError as err:
        if method != "avipam-lda":
            raise
        return diverged_fit(structure, counts.shape[1], time.perf_counter() - start - trace.seconds, str(err))
    seconds = time.perf_counter() - start - trace.seconds  # recording the top words is not training
    topics = dict(zip(names, result.component_topic_words(), strict=True))
    rankings = dict(
        zip(names, result.split_components(result.topic_ranking(AVIPAM_TOP_WORD_RULE)), strict=True)
    )
    curve = [
        {"epoch": r.epoch, "train_nelbo": r.train_nelbo, "seconds": r.seconds, **r.extra}
        for r in result.history
    ]
    extra: dict[str, Any] = {
        "structure": structure.describe(),
        "avi_config": dataclasses.asdict(config),
        "top_word_rule": AVIPAM_TOP_WORD_RULE,
        "time_limited": bool(result.time_limited),
        **collapse_record(result, counts, seed),
        **coherence_budget(settings, len(result.history)),
    }
    arrays: dict[str, np.ndarray] = trace.arrays(before=result.history[-1].epoch if result.history else None)
    if method == "avipam-lda":  # the collapse study: KL per latent dimension on the training documents
        kl = avipam.kl_per_dimension(result.net, counts, seed=seed)[-1]
        threshold = float(settings.get("collapse_threshold") or avipam.COLLAPSE_THRESHOLD)
        arrays["kl_per_dim"] = kl
        extra.update(
            diverged=False,
            kl_total=float(kl.sum()),
            n_collapsed=avipam.collapsed_dimensions(kl, threshold),
            collapse_threshold=threshold,
            latent_dims=int(kl.size),
            final_train_nelbo=float(result.history[-1].train_nelbo) if result.history else None,
        )
    return TopicFit(
        topics=topics,
        train_seconds=seconds,
        timing=per_step_timing([r.seconds for r in result.history], [1.0] * len(result.history), seconds),
        cpu_timing=epoch_cpu_timing(result.history),
        curve=curve,
        convergence=_convergence_dict(result.convergence),
        extra_metrics=extra,
        arrays=arrays,
        rankings=rankings,
    )


def collapse_record(result: Any, counts: sp.csr_matrix, seed: int) -> dict[str, Any]:
    """The fitted model's KL term on the training documents (nats per document, evaluation mode)
    and whether it is below :data:`~noisyor_bench.inference.topics.avipam.KL_COLLAPSE_NATS`."""
    from noisyor_bench.inference.topics import avipam

    kl = avipam.evaluate(result.net, counts, seed).kl_per_doc
    return {
        "kl_per_doc": float(kl),
        "kl_collapse_nats": avipam.KL_COLLAPSE_NATS,
        "kl_collapsed": avipam.kl_collapsed(kl),
    }


def coherence_budget(settings: Mapping[str, Any], epochs: int) -> dict[str, Any]:
    """Whether the run trained as long as its corpus's coherence needs: ``coherence_plateau``
    (epochs at which the measured coherence-vs-epoch curve plateaus, per corpus;
    benchmarks/results/avipam_coherence_epochs.md) against the epochs run.  ``None`` where the
    grid states no plateau for the corpus."""
    plateau = settings.get("coherence_plateau_epoch")
    if plateau is None:
        return {"coherence_plateau_epoch": None, "coherence_converged": None}
    return {"coherence_plateau_epoch": int(plateau), "coherence_converged": bool(epochs >= int(plateau))}


def diverged_fit(structure: Any, vocab_size: int, seconds: float, message: str) -> TopicFit:
    """The collapse study's record of a run whose loss became non-finite (a finding there, e.g.
    no normalisation at a high learning rate): no topic is usable, so every latent dimension
    counts as collapsed (``n_collapsed = latent_dims``), the topics are uniform placeholders
    and its NPMI is left empty; ``diverged: true`` says so.  ``converged`` is ``None`` (rule
    ``diverged``): there is no curve to judge and no budget would change the outcome, so the
    run does not give the collapse claims the ``unconverged`` qualifier."""
    dims = int(structure.latent_dims[-1])
    return TopicFit(
        topics={"sub": np.full((structure.n_topics, vocab_size), 1.0 / vocab_size)},
        train_seconds=seconds,
        convergence={"converged": None, "rule": "diverged", "stop_reason": "diverged", "epochs": 0},
        extra_metrics={
            "diverged": True,
            "divergence": message,
            "kl_total": float("nan"),
            "n_collapsed": dims,
            "latent_dims": dims,
            "structure": structure.describe(),
        },
        arrays={"kl_per_dim": np.full(dims, np.nan)},
    )


def fit_prodlda_cell(counts: sp.csr_matrix, settings: Mapping[str, Any], seed: int) -> TopicFit:
    """Calibration row (b)/(c) of Table 1: AVITM's ProdLDA / NVLDA with AVITM's settings
    (:mod:`noisyor_bench.inference.topics.prodlda`; K = the sub-topic count, a fixed number of
    epochs, ``settings['prodlda']`` overrides), top words by the decoder weights."""
    from noisyor_bench.inference.topics import prodlda

    values = {"decoder": settings["method"], "topics": int(settings["sizes"]["sub"])}
    values.update(dict(settings.get("prodlda") or {}))
    config = prodlda.config_from_mapping(values, where="grids.*.avipam.prodlda")
    device = avipam_device(settings)
    result, seconds = _timed(lambda: prodlda.fit_prodlda(counts, config, seed=seed, device=device))
    history = result.history
    return TopicFit(
        topics={"sub": result.topic_word},
        train_seconds=seconds,
        timing=per_step_timing([r.seconds for r in history], [1.0] * len(history), seconds),
        cpu_timing=epoch_cpu_timing(history),
        curve=[
            {"epoch": r.epoch, "train_nelbo": r.train_nelbo, "seconds": r.seconds, **r.extra} for r in history
        ],
        # a fixed epoch budget (AVITM's protocol) stops it; the project's rule still records
        # whether its training NELBO had plateaued by then (every learning run says so)
        convergence=_fixed_budget_convergence(history),
        extra_metrics={
            "prodlda_config": config.as_dict(),
            "top_word_rule": "weights",
            "kl_per_doc": float(history[-1].extra["kl_per_doc"]) if history else None,
        },
    )


def _fixed_budget_convergence(history: Sequence[Any]) -> dict[str, Any]:
    """The convergence record of a fit that ran a fixed number of epochs: the project's rule
    (:func:`~noisyor_bench.inference.convergence.assess`, :func:`baseline_budget`) on its
    training NELBO curve, stopped at ``max_epochs``."""
    from noisyor_bench.inference.convergence import assess
    from noisyor_bench.inference.fitting import EpochRecord

    records = [EpochRecord(int(r.epoch), float(r.train_nelbo), None, float(r.seconds)) for r in history]
    finite = [r for r in records if math.isfinite(r.train_nelbo)]
    best = min(finite, key=lambda r: r.train_nelbo).epoch if finite else None
    return assess(records, "max_epochs", best, baseline_budget(max(len(records), 1))).as_dict()


def fit_avitm_published_cell(vocabulary: Sequence[str], settings: Mapping[str, Any], seed: int) -> TopicFit:
    """Calibration row (a) of Table 1: no training -- AVITM's published K = 50 topics
    (:mod:`noisyor_bench.data.avitm_topics`), seed ``s`` = published run ``s + 1``, as a topic
    matrix whose top words are the published ones in order."""
    from noisyor_bench.data import avitm_topics

    source, runs = avitm_topics.load()
    run = avitm_topics.run_of(seed, runs)
    return TopicFit(
        topics={"sub": avitm_topics.topic_matrix(run.words, vocabulary)},
        train_seconds=0.0,
        # nothing is trained, so nothing is left to converge: a record that says so, never a
        # missing one (every run's metrics.json states its convergence rule)
        convergence=Convergence(
            converged=True,
            rule="not applicable: published topics, no training",
            stop_reason="no-training",
            epochs=0,
            best_epoch=None,
            max_epochs=0,
            window=0,
            rel_tol=0.0,
            monitored=None,
            evaluations=0,
            best_before_window=None,
            best_within_window=None,
            relative_improvement=None,
        ).as_dict(),
        extra_metrics={
            "published_run": run.run,
            "logged_npmi": run.logged_average,
            "logged_npmi_per_topic": run.logged_npmi,
            "source": source,
        },
    )


ADAPTERS: dict[str, Adapter] = {
    "lda-gibbs": fit_lda_gibbs_cell,
    "pam4-gibbs": fit_pam_gibbs_cell,
    "lda-online": fit_lda_meanfield_cell,
    "lda-batch": fit_lda_meanfield_cell,
    **{name: fit_avipam_cell for name in AVIPAM_STRUCTURES},
    "prodlda": fit_prodlda_cell,
    "nvlda": fit_prodlda_cell,
}
#: methods that read the corpus's vocabulary, not its counts (no training)
VOCABULARY_ADAPTERS: dict[str, Callable[[Sequence[str], Mapping[str, Any], int], TopicFit]] = {
    "avitm-published": fit_avitm_published_cell,
}


def fit(
    method: str,
    counts: sp.csr_matrix,
    settings: Mapping[str, Any],
    seed: int,
    vocabulary: Sequence[str] | None = None,
) -> TopicFit:
    if method in VOCABULARY_ADAPTERS:
        if vocabulary is None:
            raise ConfigError(f"avipam: method {method!r} needs the corpus's vocabulary")
        return VOCABULARY_ADAPTERS[method](vocabulary, settings, seed)
    try:
        adapter = ADAPTERS[method]
    except KeyError:
        raise ConfigError(
            f"avipam: no fit adapter for method {method!r}; known: {sorted([*ADAPTERS, *VOCABULARY_ADAPTERS])}"
        ) from None
    return adapter(counts, settings, seed)
