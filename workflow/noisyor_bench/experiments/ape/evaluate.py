"""Every method on APE's test combinations, one seed: Table 1's numbers, Figure 1's curves and
errors, Figure 2's reconstructions.

``results/runs/ape-eval/<dataset>/all/n0/seed<s>/`` (:func:`eval_key`: the run-folder contract's
five fields; the run scores every method and trains nothing):

* ``metrics.json`` -- per method (``methods.<m>``): ``ll_paper`` (the authors' per-word
  posterior predictive: prior term and multinomial coefficient included, their evaluation
  prior whose variance is the Laplace variance squared, mean over ``paper_repeats``; and
  ``ll_paper_std``), ``ll_is`` (clean: importance-sampled log p(x | theta) per token with q as
  proposal, the model's prior, no coefficient; ``ll_is_half`` the same from the first half of its
  draws, the estimate's convergence check), ``elbo_per_word`` and ``elbo_pair`` (the ELBO,
  clean prior, with coefficient: the authors' ranking quantity), ``time_s`` (inference time
  on the combinations: encoders one forward pass in float32, the median of
  max(``timing_repeats``, 5); VI its optimisation time; VI-warm the encoder's time plus its own),
  ``time_s_median`` / ``time_s_low`` / ``time_s_high`` and ``timing`` (the time's robust centre
  and spread, :mod:`noisyor_bench.infra.timing`: encoders min..max of the repeated passes; VI
  its time re-based on the median and interquartile step times; NUTS measured once: no spread),
  the same on the process's CPU time where recorded (``time_cpu_s`` with ``_median`` / ``_low`` /
  ``_high``, ``cpu_timing``, and the ``threads`` it ran on: encoders, VI and NUTS; not VI-warm),
  ``agree_vi`` / ``agree_is`` of ``pairs`` (the test models ordered by the method's total
  ELBO as by VI's ranking reference (:mod:`.ranking`: ``ranking.elbo_draws`` draws per
  (document, model) over the ranking documents; null for VI-warm when those are not the
  evaluation documents) / as by the IS log-likelihood with VI's q as proposal),
  ``agree_vi_eval`` (the former measure: ``evaluation.elbo_samples`` draws on the evaluation
  combinations, below its own noise) and ``converged``; ``ranking`` the reference's record
  (``vi_totals``, every method's ``totals`` and ``agree``, the Monte Carlo ``mc_ceiling``,
  ``vi_is_totals``: the seeds' VI-vs-VI ceilings are computed from them in Table 1); ``nuts_subset`` the same for NUTS and VI on NUTS's combinations
  (and ``ll_paper_halves``: NUTS's paper-style value from the first and the second half of its samples);
  ``figure1`` the times to quality;
* ``scores.npz`` -- per method ``elbo_model_<m>`` / ``is_model_<m>`` (models,) totals,
  ``rank_model_<m>`` (models,) its ranking totals and ``rank_reference_vi`` VI's reference
  (the ``ranking`` record's, from which ``agree_vi`` is counted),
  ``elbo_pair_<m>`` (P,), reconstructions ``recon_<m>`` (C, V) of the combinations
  ``recon_index`` (C,) and their documents ``recon_documents`` (C, V);
* ``vi_warm_curve.csv`` -- VI warm-started from the model-aware APE: step, seconds, elbo;
  ``vi_warm_vi_lr_curve.csv``, ``vi_warm_authors_curve.csv`` the same at VI's own rate and the
  authors' lr 0.1 x 600 steps (:func:`warm_variant_configs`; their times in ``figure1``).

It also records per method the paper-style metric's three terms (``ll_paper_words``,
``ll_paper_coefficient``, ``ll_paper_prior``; :mod:`noisyor_bench.models.topics.paper_metric`),
the evaluated combinations' ``doc_constant``, ``document_sets`` (VI on random document sets,
:mod:`.docsets`) and, for NUTS, its combinations (distinct documents) and chain diagnostics.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from noisyor_bench.evaluation.ranking import pairwise_agreement
from noisyor_bench.experiments.ape.baselines import fit_vi_grouped, read_run, vi_config
from noisyor_bench.experiments.ape.pairs import EvalCombinations, evaluation_combinations
from noisyor_bench.experiments.ape.ranking import seed_ranking
from noisyor_bench.experiments.ape.train import load_encoder
from noisyor_bench.experiments.rundir import RunKey, read_metrics_record, write_metrics
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.infra import provenance
from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.integrity import verified_run_file
from noisyor_bench.infra.io import load_npz, write_npz_atomic, write_text_atomic
from noisyor_bench.infra.timing import Timing, single, time_repeated_clocks
from noisyor_bench.infra.timing import from_dict as timing_from_dict

log = logging.getLogger(__name__)

EXPERIMENT = "ape-eval"
METHOD = "all"  # the run's method field: it scores every method of its seed
N_TRAIN = 0  # the run's n field: it trains nothing
WARM_FROM = "ape-model-aware"  # the encoder whose output warm-starts VI (Figure 1 left)
# "VI's quality": 99% of the improvement random-init VI made from its first ELBO to its final one.
# A target VI itself reaches: on the quick grid every seed's VI reaches every other seed's target
# (12 of 12 ordered pairs, toy bars and reviews), where the former "within 0.1% of the final ELBO"
# (0.1 nats on toy bars) was reached in 7 of 12 -- tighter than VI's own seed-to-seed spread of
# 0.46 nats. The claim re-checks this on every run (reporting.ape.claims.vi_reaches_vi).
QUALITY_FRACTION = 0.99
RECONSTRUCTION_COLUMNS = 10
RECONSTRUCTION_SAMPLES = 100
MIN_LOG_SIGMA = math.log(1e-3)  # floor of the NUTS samples' moment-matched proposal scale


def eval_key(dataset: str, seed: int) -> RunKey:
    """The key of the evaluation run of (dataset, seed): ``ape-eval/<dataset>/all/n0/seed<s>``."""
    return RunKey(EXPERIMENT, dataset, METHOD, N_TRAIN, seed)


def _generator(seed: int, stream: str) -> torch.Generator:
    return torch.Generator().manual_seed(stream_seed(seed, stream))


def per_model_totals(values: torch.Tensor | np.ndarray, model_index: np.ndarray) -> np.ndarray:
    """Sum of per-combination ``values`` per test model, (n_models,)."""
    v = np.asarray(values.detach().cpu() if isinstance(values, torch.Tensor) else values, dtype=np.float64)
    return np.bincount(model_index, weights=v, minlength=int(model_index.max()) + 1)


def time_to_reach(curve: pd.DataFrame, target: float, offset: float = 0.0) -> float:
    """Seconds (+ ``offset``) until the fixed-noise ELBO first reaches ``target``; inf if never."""
    column = "eval_elbo" if "eval_elbo" in curve.columns else "elbo"
    points = curve.dropna(subset=[column])
    hit = points[points[column] >= target]
    return float(hit["seconds"].iloc[0]) + offset if not hit.empty else math.inf


def score_q(
    combos: EvalCombinations, mu: torch.Tensor, log_sigma: torch.Tensor, section: Mapping[str, Any], seed: int
) -> dict[str, Any]:
    """Table 1's quantities of one approximate posterior on ``combos`` (float64)."""
    from noisyor_bench.models.topics.logistic_normal import (
        ape_prior,
        elbo,
        paper_prior,
        per_word_log_likelihood_halves,
        sample_q,
    )
    from noisyor_bench.models.topics.paper_metric import paper_metric_terms

    ev = dict(section.get("evaluation") or {})
    x, theta = combos.x.double(), combos.theta.double()
    mu, log_sigma = mu.double(), log_sigma.double()
    n_topics = theta.shape[1]
    clean = ape_prior(n_topics)
    tokens = float(x.sum())
    with torch.no_grad():
        elbo_pair = elbo(
            x,
            theta,
            mu,
            log_sigma,
            clean,
            int(ev.get("elbo_samples", 100)),
            _generator(seed, "ape-eval-elbo"),
        )
        ll_is, ll_is_half, is_pair = per_word_log_likelihood_halves(
            x, theta, mu, log_sigma, clean, int(ev.get("is_samples", 1000)), _generator(seed, "ape-eval-is")
        )
        pool = sample_q(
            mu, log_sigma, int(ev.get("paper_samples", 100)), _generator(seed, "ape-eval-paper-pool")
        )
        terms = paper_metric_terms(
            x,
            theta,
            pool,
            paper_prior(n_topics),
            int(ev.get("paper_draws", 10)),
            int(ev.get("paper_repeats", 10)),
            _generator(seed, "ape-eval-paper"),
        )
    paper = terms["total"]
    return {
        "elbo_pair_values": elbo_pair,
        "is_pair_values": is_pair,
        "ll_is": float(ll_is),
        "ll_is_half": float(ll_is_half),  # the same from half the draws: the convergence check
        "ll_paper": float(paper.mean()),
        "ll_paper_std": float(paper.std()) if paper.numel() > 1 else 0.0,
        **_paper_terms(terms),
        "elbo_per_word": float(elbo_pair.sum()) / tokens,
        "elbo_pair": float(elbo_pair.mean()),
    }


def _paper_terms(terms: Mapping[str, torch.Tensor]) -> dict[str, float]:
    """The paper-style metric's three terms, means over the repeats (models.topics.paper_metric):
    ``ll_paper_words`` (the only one inference moves), ``ll_paper_coefficient`` and
    ``ll_paper_prior`` (the multinomial coefficient and the authors' prior normaliser, per word);
    they sum to ``ll_paper``."""
    return {
        "ll_paper_words": float(terms["words"].mean()),
        "ll_paper_coefficient": float(terms["coefficient"].mean()),
        "ll_paper_prior": float(terms["prior"].mean()),
    }


def reconstructions(
    combos: EvalCombinations, index: np.ndarray, mu: torch.Tensor, log_sigma: torch.Tensor, seed: int
) -> np.ndarray:
    """E_q[softmax(h)] theta of the combinations ``index``: (C, V), the document a method expects."""
    from noisyor_bench.models.topics.logistic_normal import sample_q, word_probabilities

    idx = torch.as_tensor(index)
    with torch.no_grad():
        h = sample_q(
            mu[idx].double(), log_sigma[idx].double(), RECONSTRUCTION_SAMPLES, _generator(seed, "ape-recon")
        )
        return word_probabilities(h, combos.theta[idx].double()).mean(0).numpy()


def _cpu_columns(timing: Timing | None, threads: Any) -> dict[str, Any]:
    """A method's CPU time as its record keeps it: ``time_cpu_s`` (measured),
    ``time_cpu_s_median`` / ``_low`` / ``_high``, ``cpu_timing`` and the ``threads`` it ran on
    (a CPU time on one thread is the wall time on an idle core); {} where none was recorded."""
    if timing is None:
        return {}
    return {
        "time_cpu_s": timing.measured,
        **timing.columns("time_cpu_s"),
        "cpu_timing": timing.as_dict(),
        "threads": None if threads is None else int(threads),
    }


def encode_timed(
    encoder: Any, combos: EvalCombinations, repeats: int
) -> tuple[torch.Tensor, torch.Tensor, Timing, Timing]:
    """(mu, log_sigma) of every combination, the wall time and the process's CPU time of one
    float32 forward pass: median and min..max of max(``repeats``,
    :data:`~noisyor_bench.infra.timing.MIN_REPEATS`) passes, each read on both clocks
    (milliseconds each: repeating is cheap, and one pass slowed by load moves nothing)."""
    enc32 = encoder.float().eval()
    x, theta = combos.x.float(), combos.theta.float()
    with torch.no_grad():
        (mu, log_sigma), (wall, cpu) = time_repeated_clocks(
            lambda: enc32(x, theta if enc32.kind != "standard" else None), repeats
        )
    return mu.double(), log_sigma.double(), wall, cpu


def evaluate_seed(
    dataset_path: str | Path,
    dataset: str,
    seed: int,
    section: Mapping[str, Any],
    encoder_runs: Mapping[str, str | Path],
    vi_dir: str | Path,
    nuts_dir: str | Path | None,
    out_dir: str | Path,
) -> dict[str, Any]:
    """Score every method of one seed; write ``out_dir`` (module docstring)."""
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    arrays = load_npz(dataset_path)
    combos = evaluation_combinations(arrays, torch.float64)
    n_models = combos.n_models
    ev = dict(section.get("evaluation") or {})
    repeats = int(ev.get("timing_repeats", 3))
    posts: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    threads = torch.get_num_threads()  # this job's: the encoders' passes and the warm VI run here
    times: dict[str, Timing] = {}
    cpu_times: dict[str, Timing | None] = {}  # the process's CPU time where recorded
    converged: dict[str, bool | None] = {}
    for method, run in encoder_runs.items():
        encoder = load_encoder(run)
        mu, log_sigma, seconds, cpu_times[method] = encode_timed(encoder, combos, repeats)
        posts[method], times[method] = (mu, log_sigma), seconds
        converged[method] = read_run(run).get("converged")
        log.info(
            "%s seed %d: %s forward pass on %d combinations %.4f s",
            dataset,
            seed,
            method,
            combos.x.shape[0],
            seconds.median,
        )
    vi_q = load_npz(verified_run_file(Path(vi_dir) / "posterior.npz"))
    vi_meta = read_run(vi_dir)
    posts["vi"] = (torch.as_tensor(vi_q["mu"]).double(), torch.as_tensor(vi_q["log_sigma"]).double())
    times["vi"] = timing_from_dict(vi_meta.get("timing"), float(vi_meta["seconds"]))
    cpu_times["vi"] = timing_from_dict(vi_meta["cpu_timing"], math.nan) if vi_meta.get("cpu_timing") else None
    converged["vi"] = vi_meta.get("converged")
    vi_curve = pd.read_csv(verified_run_file(Path(vi_dir) / "curve.csv"))

    warm_curve, warm_vi = None, None
    extra_warm: dict[str, Any] = {}
    if WARM_FROM in posts:
        n_topics = combos.theta.shape[1]
        mu0, ls0 = posts[WARM_FROM]
        combos_f32 = evaluation_combinations(arrays, torch.float32)
        warm = fit_vi_grouped(
            combos_f32,
            ape_prior(n_topics, dtype=torch.float32),
            vi_config(section, warm=True),
            stream_seed(seed, "ape-vi-warm"),
            bool((section.get("vi") or {}).get("group_by_model", False)),
            init=(mu0.float(), ls0.float()),
        )
        posts["vi-warm"] = (warm.mu.double(), warm.log_sigma.double())
        warm_vi = warm.timing or single(warm.seconds)
        times["vi-warm"] = times[WARM_FROM] + warm_vi
        converged["vi-warm"] = bool(warm.converged)
        warm_curve = pd.DataFrame(warm.curve)
        log.info(
            "%s seed %d: VI warm-started from %s: %d steps, %.1f s",
            dataset,
            seed,
            WARM_FROM,
            warm.steps,
            warm.seconds,
        )
        extra_warm = _warm_variants(combos_f32, section, seed, (mu0.float(), ls0.float()))

    scores: dict[str, dict[str, Any]] = {m: score_q(combos, *q, section, seed) for m, q in posts.items()}
    vi_elbo_model = per_model_totals(scores["vi"]["elbo_pair_values"], combos.model_index)
    vi_is_model = per_model_totals(scores["vi"]["is_pair_values"], combos.model_index)
    arrays_out: dict[str, np.ndarray] = {}
    methods: dict[str, dict[str, Any]] = {}
    # agreement with VI's ranking: the ranking reference (>= 1,000 ELBO draws, ranking documents)
    ranking = seed_ranking(arrays, combos, posts, encoder_runs, section, seed)
    ranking["vi_is_totals"] = vi_is_model.tolist()  # agree_is's reference, for its ceiling across seeds
    arrays_out["rank_reference_vi"] = np.asarray(ranking["vi_totals"])
    for m, s in scores.items():
        elbo_model = per_model_totals(s["elbo_pair_values"], combos.model_index)
        is_model = per_model_totals(s["is_pair_values"], combos.model_index)
        agree_vi = pairwise_agreement(elbo_model, vi_elbo_model)
        agree_is = pairwise_agreement(elbo_model, vi_is_model)
        ranked = ranking["methods"].get(m)  # vi-warm has no q on other ranking documents
        methods[m] = {
            **{k: v for k, v in s.items() if not k.endswith("_values")},
            "time_s": times[m].measured,
            **times[m].columns("time_s"),
            "timing": times[m].as_dict(),
            **_cpu_columns(cpu_times.get(m), vi_meta.get("threads") if m == "vi" else threads),
            "agree_vi": ranked["agree"] if ranked else None,
            "agree_vi_eval": agree_vi.agree,
            "agree_is": agree_is.agree,
            "pairs": agree_vi.pairs,
            "converged": converged[m],
            "combinations": int(combos.x.shape[0]),
        }
        arrays_out[f"elbo_model_{m}"] = elbo_model
        if ranked:
            arrays_out[f"rank_model_{m}"] = np.asarray(ranked["totals"])
        arrays_out[f"is_model_{m}"] = is_model
        arrays_out[f"elbo_pair_{m}"] = s["elbo_pair_values"].numpy()

    nuts_subset = None
    if nuts_dir is not None:
        nuts_subset = _score_nuts(combos, posts["vi"], nuts_dir, section, seed, arrays_out)
    recon_n = nuts_subset["combinations"] if nuts_subset else combos.x.shape[0]
    recon_pos = np.unique(np.linspace(0, recon_n - 1, RECONSTRUCTION_COLUMNS).round().astype(int))
    # with NUTS: among its combinations (positions recon_pos of its samples)
    recon_index = np.asarray(nuts_subset["combination_index"])[recon_pos] if nuts_subset else recon_pos
    arrays_out["recon_index"] = recon_index
    arrays_out["recon_documents"] = combos.x[torch.as_tensor(recon_index)].numpy()
    for m, q in posts.items():
        arrays_out[f"recon_{m}"] = reconstructions(combos, recon_index, *q, seed)
    if nuts_dir is not None:
        h = torch.as_tensor(load_npz(verified_run_file(Path(nuts_dir) / "samples.npz"))["h"]).double()
        from noisyor_bench.models.topics.logistic_normal import word_probabilities

        idx = torch.as_tensor(recon_index)
        with torch.no_grad():
            arrays_out["recon_nuts"] = (
                word_probabilities(h[:, torch.as_tensor(recon_pos)], combos.theta[idx]).mean(0).numpy()
            )

    figure1 = _figure1(methods, vi_curve, warm_curve, times, warm_vi)
    figure1.update(_warm_variant_times(figure1, extra_warm, times.get(WARM_FROM), section))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_npz_atomic(out / "scores.npz", **arrays_out)
    if warm_curve is not None:
        write_text_atomic(out / "vi_warm_curve.csv", warm_curve.to_csv(index=False, lineterminator="\n"))
    for variant, fit in extra_warm.items():
        frame = pd.DataFrame(fit.curve)
        write_text_atomic(
            out / f"vi_warm_{variant}_curve.csv", frame.to_csv(index=False, lineterminator="\n")
        )
    metrics = {
        "experiment": EXPERIMENT,
        "dataset": dataset,
        "method": METHOD,
        "n_train": N_TRAIN,
        "seed": int(seed),
        "combinations": int(combos.x.shape[0]),
        "documents": int(np.unique(combos.doc_index).size),
        "models": int(n_models),
        "tokens": float(combos.x.sum()),
        "methods": methods,
        "nuts_subset": nuts_subset,
        "ranking": ranking,
        "figure1": figure1,
        "evaluation": ev,
        # the paper-style metric's inference-free part on these combinations, nats per word
        "doc_constant": methods["vi"]["ll_paper_coefficient"] + methods["vi"]["ll_paper_prior"],
        "document_sets": _document_sets(arrays, section, seed),
    }
    inputs = [provenance.file_entry(dataset_path, "dataset", out)]
    inputs += [
        provenance.file_entry(Path(r) / "metrics.json", f"run:{m}", out) for m, r in encoder_runs.items()
    ]
    inputs.append(provenance.file_entry(Path(vi_dir) / "metrics.json", "run:vi", out))
    if nuts_dir is not None:
        inputs.append(provenance.file_entry(Path(nuts_dir) / "metrics.json", "run:nuts", out))
    metrics["provenance"] = provenance.artifact_record("evaluation", inputs, [], out)
    # scores.npz and vi_warm_curve.csv, named from the run directory (as every run's outputs)
    written = ["scores.npz"] + (["vi_warm_curve.csv"] if warm_curve is not None else [])
    written += [f"vi_warm_{v}_curve.csv" for v in extra_warm]
    metrics["provenance"]["outputs"] = provenance.run_outputs(out, written)
    write_metrics(out / "metrics.json", metrics)
    for m, v in methods.items():
        log.info(
            "%s seed %d %-16s ll_paper %.4f ll_is %.4f time %.4f s agree VI %s/%d IS %d/%d",
            dataset,
            seed,
            m,
            v["ll_paper"],
            v["ll_is"],
            v["time_s"],
            v["agree_vi"],
            v["pairs"],
            v["agree_is"],
            v["pairs"],
        )
    return metrics


def _score_nuts(
    combos: EvalCombinations,
    vi_q: tuple[torch.Tensor, torch.Tensor],
    nuts_dir: str | Path,
    section: Mapping[str, Any],
    seed: int,
    arrays_out: dict[str, np.ndarray],
) -> dict[str, Any]:
    """NUTS and VI on NUTS's combinations (``samples.npz``'s ``index``; the first P' in runs from
    before that index was stored): the paper's NUTS row and its VI yardstick."""
    from noisyor_bench.experiments.ape.baselines import select_combinations
    from noisyor_bench.models.topics.logistic_normal import ape_prior, moment_matched_q, paper_prior
    from noisyor_bench.models.topics.paper_metric import paper_metric_terms

    meta = read_run(nuts_dir)
    stored = load_npz(verified_run_file(Path(nuts_dir) / "samples.npz"))
    h = torch.as_tensor(stored["h"]).double()
    n = int(h.shape[1])
    if meta.get("combinations") != n:
        raise DataError(
            f"{nuts_dir}: samples.npz holds {n} combinations, metrics.json says {meta.get('combinations')}"
        )
    # older runs sampled the first n combinations and stored no index
    index = np.asarray(stored["index"]) if "index" in stored else np.arange(n)
    sub = select_combinations(combos, index)
    ev = dict(section.get("evaluation") or {})
    out: dict[str, Any] = {
        "combinations": n,
        "documents": int(np.unique(sub.doc_index).size),
        "combination_index": [int(i) for i in index],
        "methods": {},
        "chain": {k: meta.get(k) for k in ("step_size", "acceptance", "divergences", "diagnostics", "nuts")},
    }
    mu, log_sigma = moment_matched_q(h)
    # a chain that did not move in some coordinate (tiny budgets) has zero variance: floor it
    log_sigma = torch.nan_to_num(log_sigma, neginf=MIN_LOG_SIGMA).clamp(min=MIN_LOG_SIGMA)
    nuts_scores = score_q(sub, mu, log_sigma, section, seed)  # IS with the moment-matched Gaussian
    with torch.no_grad():
        terms = paper_metric_terms(
            sub.x.double(),
            sub.theta.double(),
            h,
            paper_prior(sub.theta.shape[1]),
            int(ev.get("paper_draws", 10)),
            int(ev.get("paper_repeats", 10)),
            _generator(seed, "ape-eval-paper"),
        )
    paper = terms["total"]
    nuts_scores["ll_paper"], nuts_scores["ll_paper_std"] = (
        float(paper.mean()),
        float(paper.std()) if paper.numel() > 1 else 0.0,
    )
    nuts_scores.update(_paper_terms(terms))
    out["ll_paper_halves"] = chain_halves(sub, h, ev, seed)
    idx = torch.as_tensor(index)
    vi_scores = score_q(sub, vi_q[0][idx], vi_q[1][idx], section, seed)
    _ = ape_prior  # the clean prior is score_q's
    for m, s, seconds in (("nuts", nuts_scores, float(meta["seconds"])), ("vi", vi_scores, None)):
        out["methods"][m] = {k: v for k, v in s.items() if not k.endswith("_values")}
        out["methods"][m]["time_s"] = seconds
        if seconds is not None:  # NUTS records no per-step times: measured once, no spread
            out["methods"][m].update(single(seconds).columns("time_s"))
    if meta.get("cpu_seconds") is not None:
        out["methods"]["nuts"].update(_cpu_columns(single(float(meta["cpu_seconds"])), meta.get("threads")))
    arrays_out["is_pair_nuts_subset"] = nuts_scores["is_pair_values"].numpy()
    return out


def chain_halves(
    sub: EvalCombinations, h: torch.Tensor, ev: Mapping[str, Any], seed: int
) -> list[float] | None:
    """NUTS's paper-style log-likelihood per word from the first and from the second half of its
    samples (in chain order), [first, second]: how far the estimate still moves along the chain,
    the convergence check of the quantity the NUTS claim compares (a chain whose halves differ by
    more than the claim's effect cannot decide it). ``None`` with fewer than 2 samples."""
    from noisyor_bench.models.topics.logistic_normal import paper_prior
    from noisyor_bench.models.topics.paper_metric import paper_metric_terms

    half = int(h.shape[0]) // 2
    if half < 1:
        return None
    gen = _generator(seed, "ape-eval-paper-halves")
    values = []
    with torch.no_grad():
        for part in (h[:half], h[half : 2 * half]):
            terms = paper_metric_terms(
                sub.x.double(),
                sub.theta.double(),
                part,
                paper_prior(sub.theta.shape[1]),
                int(ev.get("paper_draws", 10)),
                int(ev.get("paper_repeats", 10)),
                gen,
            )
            values.append(float(terms["total"].mean()))
    return values


def warm_variant_configs(section: Mapping[str, Any]) -> dict[str, Any]:
    """VI warm starts beside the paper's rate (``vi-warm``, ``vi.warm_lr``, A.2's 0.0005):
    ``vi_lr`` at VI's own rate with the same stopping rule (omitted when the rates are equal), and
    ``authors`` the authors' runnable warm start (``vi.warm_authors``: lr 0.1 for 600 steps, no
    stopping rule; their workshop branch, docs/ape.md)."""
    vi = dict(section.get("vi") or {})
    base = vi_config(section, warm=True)
    out: dict[str, Any] = {}
    if float(vi.get("lr", 0.01)) != base.learning_rate:
        out["vi_lr"] = replace(base, learning_rate=float(vi.get("lr", 0.01)))
    authors = dict(vi.get("warm_authors") or {"lr": 0.1, "steps": 600})
    if authors.get("steps"):
        out["authors"] = replace(
            base, learning_rate=float(authors["lr"]), max_steps=int(authors["steps"]), stop_rule=False
        )
    return out


def _warm_variants(
    combos: EvalCombinations, section: Mapping[str, Any], seed: int, init: tuple[torch.Tensor, torch.Tensor]
) -> dict[str, Any]:
    """The :func:`warm_variant_configs` runs from the APE's output (their curves give the times)."""
    from noisyor_bench.models.topics.logistic_normal import ape_prior

    out = {}
    for variant, config in warm_variant_configs(section).items():
        out[variant] = fit_vi_grouped(
            combos,
            ape_prior(combos.theta.shape[1], dtype=torch.float32),
            config,
            stream_seed(seed, "ape-vi-warm"),
            bool((section.get("vi") or {}).get("group_by_model", False)),
            init=init,
        )
        log.info(
            "VI warm start (%s, lr %g): %d steps, %.1f s",
            variant,
            config.learning_rate,
            out[variant].steps,
            out[variant].seconds,
        )
    return out


def _warm_variant_times(
    figure1: Mapping[str, Any], fits: Mapping[str, Any], ape: Timing | None, section: Mapping[str, Any]
) -> dict[str, Any]:
    """Per variant: ``warm_<v>_time_to_quality`` (APE pass included; None = never) with its
    ``_median``/``_low``/``_high``, ``warm_<v>_final_elbo`` and ``warm_<v>_lr``; and ``warm_lr``,
    the paper-rate run's."""
    out: dict[str, Any] = {"warm_lr": vi_config(section, warm=True).learning_rate}
    target = figure1.get("quality_target")
    if target is None or ape is None:
        return out
    configs = warm_variant_configs(section)
    for variant, fit in fits.items():
        curve = pd.DataFrame(fit.curve)
        key = f"warm_{variant}_time_to_quality"
        reached = time_to_reach(curve, target, offset=ape.measured)
        out[key] = reached if math.isfinite(reached) else None
        column = "eval_elbo" if "eval_elbo" in curve.columns else "elbo"
        out[f"warm_{variant}_final_elbo"] = float(curve[column].dropna().iloc[-1])
        out[f"warm_{variant}_lr"] = configs[variant].learning_rate
        out[f"warm_{variant}_steps"] = int(fit.steps)
        timing = fit.timing or single(fit.seconds)
        if math.isfinite(reached):
            out.update((ape + timing.rebase(reached - ape.measured)).columns(key))
    return out


def _document_sets(
    arrays: Mapping[str, np.ndarray], section: Mapping[str, Any], seed: int
) -> dict[str, Any] | None:
    """VI on ``evaluation.document_sets`` random document sets of the evaluation's size
    (:mod:`.docsets`), or None when the grid sets none."""
    from noisyor_bench.experiments.ape.docsets import vi_on_document_sets

    ev = dict(section.get("evaluation") or {})
    n_sets = int(ev.get("document_sets", 0))
    if n_sets < 1:
        return None
    size = int(ev.get("documents", 30))
    result = vi_on_document_sets(arrays, section, seed, n_sets, size)
    log.info(
        "VI on %d random %d-document sets: paper-style %s (%.1f s)",
        n_sets,
        size,
        ", ".join(f"{s['ll_paper']:.3f}" for s in result["sets"]),
        result["seconds"],
    )
    return result


def _figure1(
    methods: Mapping[str, Any],
    vi_curve: pd.DataFrame,
    warm_curve: pd.DataFrame | None,
    times: Mapping[str, Timing] | None = None,
    warm_vi: Timing | None = None,
) -> dict[str, Any]:
    """Figure 1 (left)'s times: VI (random) until APE's ELBO and both VI runs until VI's quality;
    the times to quality also re-based on the runs' per-step times (``_median``/``_low``/``_high``,
    :meth:`~noisyor_bench.infra.timing.Timing.rebase`)."""
    column = "eval_elbo" if "eval_elbo" in vi_curve.columns else "elbo"
    elbos = vi_curve[column].dropna()
    initial, final = float(elbos.iloc[0]), float(elbos.iloc[-1])
    target = initial + QUALITY_FRACTION * (final - initial)
    out: dict[str, Any] = {
        "vi_initial_elbo": initial,
        "vi_final_elbo": final,
        "vi_best_elbo": float(elbos.max()),
        "quality_target": target,
        "quality_fraction": QUALITY_FRACTION,
    }
    out["vi_time_to_quality"] = time_to_reach(vi_curve, target)
    if WARM_FROM in methods:
        ape = methods[WARM_FROM]
        out.update(ape_time=ape["time_s"], ape_elbo=ape["elbo_pair"])
        out["vi_time_to_ape_elbo"] = time_to_reach(vi_curve, ape["elbo_pair"])
    if warm_curve is not None and WARM_FROM in methods:
        out["warm_time_to_quality"] = time_to_reach(warm_curve, target, offset=methods[WARM_FROM]["time_s"])
    if times:
        out.update(_robust_times_to_quality(out, times, warm_vi))
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


def _robust_times_to_quality(
    fig1: Mapping[str, Any], times: Mapping[str, Timing], warm_vi: Timing | None
) -> dict[str, float]:
    """``vi_time_to_quality`` and ``warm_time_to_quality`` with the per-step correction and spread
    of their runs (warm: the APE pass's repeated timing plus the warm VI's re-based time)."""
    out: dict[str, float] = {}
    cold = fig1.get("vi_time_to_quality", math.inf)
    if "vi" in times and math.isfinite(cold):
        out.update(times["vi"].rebase(cold).columns("vi_time_to_quality"))
    warm = fig1.get("warm_time_to_quality", math.inf)
    if warm_vi is not None and WARM_FROM in times and math.isfinite(warm):
        ape = times[WARM_FROM]
        out.update((ape + warm_vi.rebase(warm - ape.measured)).columns("warm_time_to_quality"))
    return out


def read_eval(path: str | Path) -> dict[str, Any]:
    """An evaluation run's record, its self-hash and metrics checked."""
    return read_metrics_record(path)
