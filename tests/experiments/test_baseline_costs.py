"""The price of ACP's baselines job (noisyor_bench.experiments.acp.baseline_costs): what the job
runs (the true model's exact / AIS -log p(x); the IW rows only with
``baselines.bounds``), against the likelihood code's own settings and rules."""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
from conftest import REPO

from noisyor_bench.data.synthetic import mnist, patterns
from noisyor_bench.data.synthetic.synrandom import expected_sparsity, params_rng, random_parameters
from noisyor_bench.evaluation.noisyor_likelihood import AISSchedule, LikelihoodConfig
from noisyor_bench.experiments.acp import baseline_costs as bc
from noisyor_bench.experiments.acp import costs as acp_costs
from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.config import load_config
from noisyor_bench.infra.errors import ConfigError

AIS_ONLY = dict(d=500, k=500, n_test=2000, positives=94.0, sparsity=0.95)  # syn-random-6's sizes


@pytest.fixture(scope="module")
def quick():
    return load_config(REPO / "config" / "config.yaml", {"grid": "quick"})


@pytest.fixture(scope="module")
def extended():
    """The grid with Fig. 5's D = 500 panels (quick runs SYN-RANDOM-1 only)."""
    return load_config(REPO / "config" / "config.yaml", {"grid": "extended"})


def _job(cfg, dataset):
    (job,) = [j for j in acp_costs.jobs(cfg) if j.rule == "baselines" and j.job == dataset]
    return job


def test_defaults_are_the_likelihood_configs():
    """The cost model's copy of the defaults (no torch at DAG time) is the likelihood code's."""
    config = LikelihoodConfig()
    assert {k: getattr(config, k) for k in bc.LIKELIHOOD_DEFAULTS} == bc.LIKELIHOOD_DEFAULTS
    assert {k: getattr(AISSchedule(), k) for k in bc.AIS_DEFAULTS} == bc.AIS_DEFAULTS
    assert set(bc.LIKELIHOOD_DEFAULTS) | {"ais", "cancel_tol"} == {
        f.name for f in dataclasses.fields(LikelihoodConfig)
    }


def test_pattern_shapes_are_the_generators():
    assert bc.PATTERN_SHAPES["syn-pattern"] == (math.prod(patterns.SYN_SHAPE), len(patterns.SYN_PATTERNS))
    assert bc.PATTERN_SHAPES["mnist"] == (math.prod(mnist.IMAGE_SHAPE), 10)  # one exemplar per digit


def test_dataset_shape_reads_the_config_and_names_a_bad_dataset(quick):
    spec = quick["datasets"]["syn-random-7"]
    assert bc.dataset_shape(quick, "syn-random-7") == (spec["D"], spec["K"], spec["n_test"])
    assert bc.dataset_shape(quick, "multi-mnist") == (784, 10, quick["datasets"]["multi-mnist"]["n_test"])
    with pytest.raises(ConfigError, match="datasets.nope"):
        bc.dataset_shape(quick, "nope")


def test_expected_positives_follow_the_generated_parameters(quick):
    """Against the exact expected ones per row of typical parameters the generator draws (the
    mean over 20 draws: the seed rule may pick an atypical one -- SYN-RANDOM-6's is 4 sd denser,
    where this approximation prices the baselines job about 8% low). Jensen and the orphan repair:
    the mean rate's value is at most ~25% above, never far below."""
    for name, spec in quick["datasets"].items():
        if spec.get("family") != "random":
            continue
        base = int(spec["seed"]) // 1000
        truth = np.mean(
            [
                spec["D"] * (1.0 - expected_sparsity(*random_parameters(spec, params_rng(1000 * base + j))))
                for j in range(20)
            ]
        )
        ratio = bc.expected_positives(spec, spec["D"], spec["K"]) / truth
        assert 0.95 <= ratio <= 1.3, (name, ratio)


def test_positives_pmf_is_a_poisson_truncated_at_d():
    pmf = bc.positives_pmf(3.0, 50)
    assert len(pmf) == 51 and sum(pmf) == pytest.approx(1.0)
    assert sum(p * w for p, w in enumerate(pmf)) == pytest.approx(3.0)
    assert pmf[2] == pytest.approx(math.exp(-3.0) * 9 / 2)
    tail = bc.positives_pmf(40.0, 10)  # every count above D = 10 lands on D
    assert tail[-1] == pytest.approx(
        1.0 - sum(math.exp(-40.0) * 40.0**p / math.factorial(p) for p in range(10))
    )


def test_ais_work_is_linear_in_the_temperatures():
    """Every row of a dense D = K = 500 dataset takes AIS: twice the steps, twice the work."""
    one = bc.likelihood_ns(**AIS_ONLY, spec={"ais": {"steps": 50}})
    two = bc.likelihood_ns(**AIS_ONLY, spec={"ais": {"steps": 100}})
    assert two == pytest.approx(2 * one, rel=1e-9)


def test_ais_work_is_affine_and_increasing_in_chains_and_rows():
    def work(chains: int = 8, rows: int = 200) -> float:
        return bc.likelihood_ns(**AIS_ONLY, spec={"max_rows": rows, "ais": {"chains": chains}})

    assert work(16) > work(8) > work(4)
    assert work(12) - work(8) == pytest.approx(work(8) - work(4), rel=1e-9)
    # rows: the latents an AIS sweep touches saturate at K for this many positives
    assert work(rows=300) - work(rows=200) == pytest.approx(work(rows=200) - work(rows=100), rel=1e-9)
    assert work(rows=200) > work(rows=100)


def test_small_k_is_enumerated_whatever_the_ais_settings():
    kw = dict(d=64, k=8, positives=7.0, sparsity=0.0)
    base = bc.likelihood_ns(n_test=1000, spec={}, **kw)
    assert base == bc.likelihood_ns(n_test=1000, spec={"ais": {"steps": 5000, "chains": 64}}, **kw)
    assert bc.likelihood_ns(n_test=2000, spec={}, **kw) == pytest.approx(2 * base)
    assert base == pytest.approx(1000 * 2**8 * 64 * bc.ENUMERATION_NS)


def test_sparse_rows_take_exact_paths_and_the_row_budget():
    """syn-random-1 (K = 100, ~3 ones a row): the rows' exact costs fit row_budget, so every test
    row is scored whatever max_rows says (the likelihood code scored all 1,000 in the quick run)."""
    kw = dict(d=50, k=100, n_test=1000, positives=3.65, sparsity=0.95)
    assert bc.likelihood_ns(spec={"max_rows": 10}, **kw) == bc.likelihood_ns(spec={"max_rows": 500}, **kw)
    assert bc.likelihood_ns(spec={"max_rows": 10}, **kw) < 1e-2 * bc.likelihood_ns(**AIS_ONLY, spec={})


def test_without_ais_only_exact_rows_and_none_below_min_rows():
    dense = bc.likelihood_ns(**AIS_ONLY, spec={"use_ais": False})
    assert dense == 0.0  # ~94 ones a row: no row allows an exact path
    sparse = dict(d=50, k=100, n_test=1000, positives=3.65, sparsity=0.95)
    assert bc.likelihood_ns(spec={"use_ais": False, "max_rows": 50}, **sparse) == pytest.approx(
        0.1 * bc.likelihood_ns(spec={"use_ais": False, "max_rows": 500}, **sparse)
    )
    few = dict(sparse, n_test=20)  # fewer qualifying rows than min_rows (30): none scored
    assert bc.likelihood_ns(spec={"use_ais": False}, **few) == 0.0


def _set(cfg, **baselines):
    out = copy.deepcopy(cfg)
    active = out["grids"][out["grid"]]["acp"]
    active["baselines"] = {**(active.get("baselines") or {}), **baselines}
    return out


def test_baselines_job_costs_proportionally_more_with_more_ais_steps(extended):
    nll = dict(grid.baseline_settings(extended)["nll"])
    more = copy.deepcopy(nll)
    more.setdefault("ais", {})["steps"] = 2 * int((nll.get("ais") or {}).get("steps", 100))
    base = _job(extended, "syn-random-6").work - bc.STARTUP_NS
    doubled = _job(_set(extended, nll=more), "syn-random-6").work - bc.STARTUP_NS
    assert doubled == pytest.approx(2 * base, rel=1e-9)


def test_iw_samples_cost_nothing_unless_bounds_are_on(extended):
    """The IW bound runs only with baselines.bounds (the old price was rows x iw_samples)."""
    off = _job(extended, "syn-random-6").work
    assert _job(_set(extended, iw_samples=100_000), "syn-random-6").work == off
    on = _job(_set(extended, bounds=True), "syn-random-6").work
    on_more = _job(_set(extended, bounds=True, iw_samples=2000), "syn-random-6").work
    settings = grid.baseline_settings(_set(extended, bounds=True))
    rows = min(int(settings["max_rows"]), 2000)
    assert on > off
    assert on_more - on == pytest.approx(
        rows * 500 * 500 * (2000 - int(settings["iw_samples"])) * bc.SAMPLE_NS
    )
    # K <= MAX_EXACT_K: the exact value is enumerated, no IW rows even with bounds
    pat = _job(_set(extended, bounds=True), "syn-pattern").work
    assert _job(_set(extended, bounds=True, iw_samples=100_000), "syn-pattern").work == pat


def test_quick_estimates_stay_the_measured_seconds(quick):
    """The reference grid prices its own baselines jobs at their measured seconds."""
    from noisyor_bench.experiments import costs

    refs = costs.load_references(REPO)
    table = next(r for r in refs if r.grid == costs.REFERENCE_GRID)
    est = [e for e in costs.estimate_jobs(quick, refs, ["acp"]) if e.rule == "baselines"]
    assert est and all(e.basis == "measured" for e in est)
    assert all(np.isclose(e.cpu_seconds, table.jobs[("baselines", e.job)].seconds) for e in est)
