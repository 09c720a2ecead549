"""Work of ACP's ``baselines`` job (rule baselines -> ``noisyor-bench acp-baselines``), for the cost
model (:mod:`noisyor_bench.experiments.acp.costs`).

Why its own pricing: the job spends its time on the true model's held-out
``-log p(x)`` (``baselines.nll``, :mod:`noisyor_bench.evaluation.noisyor_likelihood`), not on
the importance-weighted bound that ``iw_samples x rows`` priced (``baselines.bounds``, off by
default).  What runs, per dataset of D observations, K latents and ``n_test`` test rows
(:func:`noisyor_bench.experiments.acp.baselines.true_model_scores`):

* start-up (Python, torch, the dataset) and the independent-Bernoulli rows: a constant;
* ``exact_nll`` where ``K <= MAX_EXACT_K``: 2^K enumeration of every test row;
* ``nll`` (always; the rule passes ``baselines.nll``): K <= ``enumerate_k``: 2^K enumeration of
  every row; else on the rows :func:`~noisyor_bench.evaluation.noisyor_likelihood.scored_rows`
  picks, an exact path (Quickscore / forward pass, ~2^P P K numbers for P positives) where a
  row's P allows it, else AIS: ``steps`` temperatures x the R relevant latents x (a fixed
  dispatch cost + rows x chains x P), and the convergence check (``check_rows`` rows at twice
  the temperatures);
* with ``bounds``: LB-CDI's E-step (``max_rounds`` rounds, a cap) on ``max_rows`` rows, the
  NELBO's ``samples`` and, where K is not enumerable, the IW bound's ``iw_samples``, each ~D K
  numbers per row.

A row's P is not known before the data exist: the expected positives of the dataset's
generating parameters stand in (:func:`expected_positives`), the same number for every grid,
so the choice between the paths follows the code's own rules (``exact_affordable``,
``row_budget``).  The unit is nanoseconds of one core at the rates below (scratch timings of
these very functions, 2026-11-26, on the shared 2-core AMD EPYC under the load of two other
runs); the cost model scales the job's measured seconds by the ratio of two works, so only
the rates' ratios matter.  Check: at the quick grid's ``baselines.nll`` the model gives 58 s
(syn-random-6), 28 (-5), 10.5 (-4), 9.0 (-7), 5.6 (-3), 4.2 (-2), 0.3 (-1) for the
likelihood; docs/baselines.md measured 435, 126, 53, 64, 30, 31, 2 s at a load of 15-20 on two
cores: the same order, each 4.5-7.5x the model (a direct rerun at load ~5: syn-random-6 62 s,
-7 9.3 s, -4 9.0 s).  Whole jobs (``noisyor-bench acp-baselines`` with the quick grid's settings,
load ~5): syn-pattern 4.0 s, multi-mnist 6.3 s, syn-random-1 5.7 s, -7 9.2 s; the model 3.5,
7.5, 3.8, 12.5 s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from noisyor_bench.infra.constants import MAX_EXACT_K
from noisyor_bench.infra.errors import ConfigError

# ---------------------------------------------------------------------------------- rates (ns)
#: Start-up of the job (Python, torch, provenance) and the independent-Bernoulli rows: the whole
#: syn-pattern job took 4.0 s wall / 3.3 s CPU at the same load, its enumerations ~0.05 s (the
#: text corpus's job, which scores nothing else, took 1.5 s on the idle machine of 2026-11-25).
STARTUP_NS = 3.5e9
#: Per (row, state, observation) of a 2^K enumeration (0.32 ns multi-mnist's 5,000 rows, 1.9 ns
#: syn-pattern's 1,000: per-chunk overhead).
ENUMERATION_NS = 0.5
#: Per row of an exact path (Quickscore / forward pass) beside its numbers: numpy set-up per row
#: (1,000 syn-random-1 rows, 3 positives each, in 0.36 s).
EXACT_ROW_NS = 3.0e5
#: Per number of an exact path (2^P P K per row).
EXACT_ELEMENT_NS = 1.0
#: Per (temperature, relevant latent) of AIS: one Gibbs update's torch calls, whatever the rows.
AIS_LATENT_STEP_NS = 2.0e5
#: Per (row, chain, positive) of one Gibbs update (18-23 ns at 640 row-chains, D = 500).
AIS_ELEMENT_NS = 20.0
#: Per (row, E-step round, observation, latent) of LB-CDI's posterior (37-52 ns).
LBCDI_ROUND_NS = 45.0
#: Per (row, sample, observation, latent) of the NELBO or IW bound (0.2-1.1 ns).
SAMPLE_NS = 0.25

#: Defaults of :class:`noisyor_bench.evaluation.noisyor_likelihood.LikelihoodConfig` and its
#: ``AISSchedule`` (a test keeps them equal; not imported: that module loads torch, and the cost
#: model runs while Snakemake parses the workflow).
LIKELIHOOD_DEFAULTS: dict[str, Any] = {
    "exact_elements": 2**22,
    "enumerate_k": 16,
    "max_rows": 200,
    "row_budget": 1.0e8,
    "use_ais": True,
    "min_rows": 30,
}
AIS_DEFAULTS: dict[str, Any] = {"steps": 100, "chains": 8, "check_rows": 8}
#: Observations and latents of the pattern datasets: SYN-PATTERN's eight 8 x 8 shapes, one
#: 28 x 28 MNIST exemplar per digit (noisyor_bench.data.synthetic.patterns / .mnist).
PATTERN_SHAPES = {"syn-pattern": (64, 8), "syn-pattern-overlap": (64, 8), "mnist": (784, 10)}
#: Share of ones in a pattern dataset's rows for :func:`expected_positives` (11% SYN-PATTERN,
#: 20% MULTI-MNIST, Table 2); both have K <= 16, so only the enumeration runs there.
PATTERN_DENSITY = 0.2


def dataset_shape(cfg: Mapping[str, Any], dataset: str) -> tuple[int, int, int]:
    """``(D, K, n_test)`` of a synthetic dataset from its config entry (``datasets.<name>``)."""
    spec = (cfg.get("datasets") or {}).get(dataset)
    if not spec:
        raise ConfigError(f"datasets.{dataset}: no such dataset (the baselines job needs its D, K, n_test)")
    n_test = int(spec.get("n_test", 0))
    if spec.get("family") == "random":
        return int(spec["D"]), int(spec["K"]), n_test
    if spec.get("family") == "pattern" and spec.get("patterns") in PATTERN_SHAPES:
        d, k = PATTERN_SHAPES[spec["patterns"]]
        return d, k, n_test
    raise ConfigError(
        f"datasets.{dataset}: family {spec.get('family')!r} / patterns {spec.get('patterns')!r}: "
        f"no D and K for the cost model (random: D, K; pattern: {sorted(PATTERN_SHAPES)})"
    )


def _beta_mean(spec: Mapping[str, Any], name: str) -> float:
    a, b = float(spec[f"alpha_{name}"]), float(spec[f"beta_{name}"])
    return a / (a + b)


def expected_positives(spec: Mapping[str, Any], d: int, k: int) -> float:
    """Expected ones per row: SYN-RANDOM ``D (1 - exp(-lambda))`` with the mean rate
    ``lambda = K (1 - s) E[theta] E[mu]`` of an observation (docs/syn_random.md's reading: rates
    ``Beta(alpha_theta, beta_theta)``, an edge kept with probability 1 - s); patterns
    :data:`PATTERN_DENSITY`.  (The mean rate's value, above the mean by Jensen, below it by the
    orphan repair's extra edges: 3.6 / 10 / 93 / 65 for syn-random-1/4/6/7 against the 2.9 / 8.0 /
    101 / 54 expected of their drawn parameters; SYN-RANDOM-6's draw, the one closest to Table 3's
    sparsity, is 4 sd denser than a typical one.)"""
    if spec.get("family") != "random":
        return max(1.0, d * PATTERN_DENSITY)
    rate = k * (1.0 - float(spec["s"])) * _beta_mean(spec, "theta") * _beta_mean(spec, "mu")
    return max(1.0, d * -math.expm1(-rate))


def _relevant(k: int, d: int, positives: float, sparsity: float) -> float:
    """Latents with an edge to one of ``positives`` observations (at most D) when each edge is
    absent with probability ``sparsity``: AIS sweeps only those."""
    return k * (1.0 - sparsity ** min(float(d), positives))


def positives_pmf(mean: float, d: int) -> list[float]:
    """Probabilities of 0..D ones in a row: Poisson with the expected ``mean``, the tail above D
    put on D.  A row's path depends on its own count, so a mean alone would send every row of a
    sparse dataset down the exact path that most, not all, of them take."""
    mean = max(float(mean), 1e-12)
    pmf = [math.exp(p * math.log(mean) - mean - math.lgamma(p + 1)) for p in range(d)]
    return [*pmf, max(0.0, 1.0 - sum(pmf))]


def likelihood_ns(
    d: int, k: int, n_test: int, positives: float, sparsity: float, spec: Mapping[str, Any] | None
) -> float:
    """Nanoseconds of one ``-log p(x)`` of a K-latent model on ``n_test`` rows with a likelihood
    config ``spec`` (``baselines.nll``, ``evaluation.nll``; defaults where unset), rows of
    ``positives`` ones on average (module docstring), each row down its own path."""
    spec = dict(spec or {})
    ais = {**AIS_DEFAULTS, **dict(spec.pop("ais", None) or {})}
    c = {**LIKELIHOOD_DEFAULTS, **spec}
    if k <= int(c["enumerate_k"]):
        return n_test * 2.0**k * d * ENUMERATION_NS
    steps, chains, max_rows = int(ais["steps"]), int(ais["chains"]), int(c["max_rows"])
    pmf = positives_pmf(positives, d)
    numbers = [2.0**p * max(p, 1) * k for p in range(len(pmf))]  # row_costs' exact cost
    exact = [n <= 4 * float(c["exact_elements"]) for n in numbers]  # exact_affordable
    share_exact = sum(w for w, e in zip(pmf, exact, strict=True) if e)
    per_exact_row = sum(
        w * (EXACT_ROW_NS + n * EXACT_ELEMENT_NS) for w, n, e in zip(pmf, numbers, exact, strict=True) if e
    )  # expected ns of a row times its chance to be exact
    if not c["use_ais"]:  # only the exact rows, none when fewer than min_rows qualify
        pool = n_test * share_exact
        rows = 0.0 if pool < int(c["min_rows"]) else min(pool, float(max_rows))
        return rows * per_exact_row / share_exact if rows else 0.0
    ais_cost = [chains * steps * k * max(p, 1) for p in range(len(pmf))]
    row_cost = sum(w * (n if e else a) for w, n, e, a in zip(pmf, numbers, exact, ais_cost, strict=True))
    rows = n_test if n_test <= max_rows or n_test * row_cost <= float(c["row_budget"]) else max_rows
    share_ais = 1.0 - share_exact
    ais_ones = sum(w * p for p, (w, e) in enumerate(zip(pmf, exact, strict=True)) if not e)
    p_ais = ais_ones / max(share_ais, 1e-300)  # mean ones of an AIS row

    def sweep(n: float, temperatures: int) -> float:
        """AIS on ``n`` rows: per temperature and relevant latent, the dispatch and the rows' numbers."""
        per_latent = AIS_LATENT_STEP_NS * min(1.0, n) + n * chains * p_ais * AIS_ELEMENT_NS
        return temperatures * _relevant(k, d, n * p_ais, sparsity) * per_latent

    n_ais = rows * share_ais
    work = rows * per_exact_row
    if n_ais > 0:
        work += sweep(n_ais, steps) + sweep(min(float(ais["check_rows"]), n_ais), 2 * steps)
    return work


def baselines_ns(cfg: Mapping[str, Any], dataset: str, settings: Mapping[str, Any], samples: int) -> float:
    """Nanoseconds of the baselines job of ``dataset`` with ``baselines`` ``settings``
    (:func:`noisyor_bench.experiments.acp.grid.baseline_settings`) and the NELBO's ``samples``
    (``evaluation.samples``, used only with ``bounds``)."""
    spec = cfg["datasets"][dataset]
    d, k, n_test = dataset_shape(cfg, dataset)
    p = expected_positives(spec, d, k)
    sparsity = float(spec.get("s", 0.0))
    work = STARTUP_NS
    if k <= MAX_EXACT_K:  # true_model_scores' exact_nll, every test row
        work += n_test * 2.0**k * d * ENUMERATION_NS
    work += likelihood_ns(d, k, n_test, p, sparsity, settings.get("nll"))
    if settings.get("bounds"):
        rows = min(int(settings["max_rows"]), n_test)
        per_row = int(settings["max_rounds"]) * LBCDI_ROUND_NS + int(samples) * SAMPLE_NS
        if k > MAX_EXACT_K:  # the IW bound only where the exact value is not enumerated
            per_row += int(settings["iw_samples"]) * SAMPLE_NS
        work += rows * d * k * per_row
    return work


__all__ = [
    "AIS_DEFAULTS",
    "LIKELIHOOD_DEFAULTS",
    "baselines_ns",
    "dataset_shape",
    "expected_positives",
    "likelihood_ns",
    "positives_pmf",
]
