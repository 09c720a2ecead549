"""Top-word snapshots along a fit (the coherence curve's raw material): the Gibbs chains' snapshot
callback at every trace point, the aviPAM runs' epoch hook, the ``trace_top_<component>`` /
``trace_steps`` arrays of a run's ``topics.npz`` and the tables' rise columns read from them.
Real tomotopy chains and aviPAM fits on tiny corpora; every fit runs with and without the
snapshots and must give the same numbers."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from noisyor_bench.evaluation.coherence import top_word_ids
from noisyor_bench.experiments.avipam import methods
from noisyor_bench.inference.topics import avipam, gibbs, pam_gibbs
from noisyor_bench.infra.errors import ConfigError


def _corpus(seed: int = 0, docs: int = 80, block: int = 6) -> np.ndarray:
    """4 disjoint word blocks; a document mixes two of them (super-topic 0: blocks 0, 1; 1: 2, 3)."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((docs, 4 * block + 2), dtype=np.int64)
    for d in range(docs):
        blocks = (0, 1) if d % 2 == 0 else (2, 3)
        mix = rng.dirichlet([1.0, 1.0])
        for _ in range(30):
            b = blocks[int(rng.random() > mix[0])]
            counts[d, b * block + rng.integers(block)] += 1
    return counts


def _lda(counts: np.ndarray, snapshot: Any = None, **kw: Any) -> gibbs.LdaGibbsFit:
    return gibbs.fit_lda_gibbs(
        counts, 4, 0.5, 0.01, iterations=60, seed=7, trace_interval=4, snapshot=snapshot, **kw
    )


def _pam(counts: np.ndarray, snapshot: Any = None, **kw: Any) -> pam_gibbs.PamGibbsFit:
    return pam_gibbs.fit_pam_gibbs(
        counts, 2, 4, iterations=60, seed=7, trace_interval=4, snapshot=snapshot, **kw
    )


def _same_chain(a: Any, b: Any) -> None:
    """Every output of two fits of one dataclass is identical but the timings."""
    timing = {"train_seconds", "snapshot_seconds", "cpu_seconds", "cpu_trace"}
    for f in dataclasses.fields(a):
        if f.name in timing:
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "trace":  # (sweep, ll_per_word, seconds): the seconds are wall time
            assert [t[:2] for t in x] == [t[:2] for t in y]
        elif isinstance(x, np.ndarray):
            assert np.array_equal(x, y), f.name
        else:
            assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), f.name


@pytest.mark.parametrize("fit", [_lda, _pam], ids=["lda", "pam4"])
@pytest.mark.parametrize("stop_on_rule", [False, True], ids=["fixed", "rule"])
def test_gibbs_snapshots_do_not_change_the_chain_and_see_its_state_at_every_trace_point(
    fit: Any, stop_on_rule: bool
) -> None:
    counts = _corpus()
    seen: list[tuple[int, np.ndarray]] = []
    with_snapshots = fit(counts, lambda sweep, m: seen.append((sweep, m.copy())), stop_on_rule=stop_on_rule)
    without = fit(counts, stop_on_rule=stop_on_rule)
    _same_chain(with_snapshots, without)
    # one snapshot per trace point, at its sweep; the last one is the final state
    assert [s for s, _ in seen] == [t[0] for t in without.trace]
    final = without.topic_word if fit is _lda else without.sub_topic_word
    assert np.array_equal(seen[-1][1], final)
    assert all(m.shape == final.shape and np.allclose(m.sum(axis=1), 1.0) for _, m in seen)
    assert not np.array_equal(seen[0][1], final)  # the chain moved: the curve has a shape
    assert with_snapshots.snapshot_seconds > 0.0 and without.snapshot_seconds == 0.0


def test_a_snapshot_needs_a_trace() -> None:
    with pytest.raises(ConfigError, match="snapshot needs a trace"):
        gibbs.fit_lda_gibbs(_corpus(), 2, 0.5, 0.01, iterations=5, seed=0, snapshot=lambda s, m: None)


def _without_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    """The adapters' fits with their snapshot argument (callback, epoch hook) dropped."""
    for module, name, key in (
        (gibbs, "fit_lda_gibbs", "snapshot"),
        (pam_gibbs, "fit_pam_gibbs", "snapshot"),
        (avipam, "fit_avipam", "epoch_hook"),
    ):
        real = getattr(module, name)

        def dropped(*args: Any, _real: Any = real, _key: str = key, **kw: Any) -> Any:
            kw.pop(_key, None)
            return _real(*args, **kw)

        monkeypatch.setattr(module, name, dropped)


TIME_KEYS = {"seconds", "sampler_seconds", "train_seconds"}


def _same_topic_fit(a: methods.TopicFit, b: methods.TopicFit) -> None:
    """Topics, rankings, curve, convergence and metrics identical (wall times aside)."""
    assert a.topics.keys() == b.topics.keys() and a.rankings.keys() == b.rankings.keys()
    for name in a.topics:
        assert np.array_equal(a.topics[name], b.topics[name])
    for name in a.rankings:
        assert np.array_equal(a.rankings[name], b.rankings[name])
    strip = lambda rows: [{k: v for k, v in r.items() if k not in TIME_KEYS} for r in rows]  # noqa: E731
    assert strip(a.curve) == strip(b.curve)
    assert a.convergence == b.convergence
    assert {k: v for k, v in a.extra_metrics.items() if k not in TIME_KEYS} == {
        k: v for k, v in b.extra_metrics.items() if k not in TIME_KEYS
    }
    assert b.arrays.keys() <= a.arrays.keys()
    for key, value in b.arrays.items():
        assert np.array_equal(a.arrays[key], value, equal_nan=True)


GIBBS_CELLS = [
    (methods.fit_lda_gibbs_cell, {"sub": 4}),
    (methods.fit_pam_gibbs_cell, {"super": 2, "sub": 4}),
]


@pytest.mark.parametrize("fit_cell, sizes", GIBBS_CELLS, ids=["lda-gibbs", "pam4-gibbs"])
def test_gibbs_cells_save_the_top_words_of_every_trace_point_and_nothing_else_moves(
    fit_cell: Any, sizes: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = sp.csr_matrix(_corpus())
    settings = {"sizes": sizes, "gibbs": {"iterations": 40, "trace_every": 5, "stop_on_rule": True}}
    fit = fit_cell(counts, settings, 3)
    steps = fit.arrays[methods.TRACE_STEPS]
    tops = fit.arrays[f"{methods.TRACE_TOP_PREFIX}sub"]
    assert steps.dtype == np.int64 and tops.dtype == np.int64
    assert steps.tolist() == [r["iteration"] for r in fit.curve]  # every trace point
    assert steps[-1] == fit.extra_metrics["gibbs_sweeps"]
    assert tops.shape == (len(steps), sizes["sub"], 10)
    assert np.array_equal(tops[-1], top_word_ids(fit.topics["sub"], 10))  # the final state's
    with monkeypatch.context() as m:
        _without_snapshots(m)
        plain = fit_cell(counts, settings, 3)
    assert not plain.arrays
    _same_topic_fit(fit, plain)


def _avipam_settings(method: str, max_epochs: int) -> dict[str, Any]:
    return {
        "method": method,
        "sizes": {"sub": 4, "super": 2, "molda": [2, 4]},
        "avi": {
            "max_epochs": max_epochs,
            "patience": max_epochs,
            "stop_on_plateau": False,
            "batch_size": 20,
            "hidden": [8],
            "lr": 0.01,
        },
    }


@pytest.mark.parametrize("method", ["avipam-pam4", "avipam-molda"])
def test_avipam_cells_snapshot_every_few_epochs_by_the_final_rule_and_nothing_else_moves(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = sp.csr_matrix(_corpus())
    settings = _avipam_settings(method, max_epochs=25)
    assert methods.snapshot_every(25) == 2
    seen: dict[int, np.ndarray] = {}
    real = avipam.fit_avipam

    def spy(*args: Any, epoch_hook: Any = None, **kw: Any) -> Any:
        def hook(record: Any, net: Any) -> None:  # an independent copy of the weights each epoch
            seen[record.epoch] = avipam.topic_ranking(net, "weights").copy()
            epoch_hook(record, net)

        return real(*args, epoch_hook=hook, **kw)

    with monkeypatch.context() as m:
        m.setattr(avipam, "fit_avipam", spy)
        fit = methods.fit_avipam_cell(counts, settings, 1)
    steps = fit.arrays[methods.TRACE_STEPS]
    assert steps.tolist() == list(range(2, 25, 2))  # every 2 epochs; epoch 25 is the final topics'
    blocks = np.cumsum([2, 4] if method == "avipam-molda" else [4])[:-1]
    for block, name in enumerate(fit.topics):
        tops = fit.arrays[f"{methods.TRACE_TOP_PREFIX}{name}"]
        assert tops.dtype == np.int64 and tops.shape == (len(steps), fit.topics[name].shape[0], 10)
        for i, step in enumerate(steps):
            ranking = np.split(seen[int(step)], blocks, axis=0)[block]
            assert np.array_equal(tops[i], top_word_ids(ranking, 10))
        assert not np.array_equal(tops[0], top_word_ids(fit.rankings[name], 10))  # the topics moved
    with monkeypatch.context() as m:
        _without_snapshots(m)
        plain = methods.fit_avipam_cell(counts, settings, 1)
    assert methods.TRACE_STEPS not in plain.arrays
    _same_topic_fit(fit, plain)


@pytest.mark.parametrize(
    "max_epochs, every", [(2, 1), (9, 1), (34, 3), (99, 9), (100, 10), (200, 10), (300, 10)]
)
def test_snapshot_interval_is_the_coherence_checkpoints_or_a_tenth_of_a_shorter_run(
    max_epochs: int, every: int
) -> None:
    assert methods.snapshot_every(max_epochs) == every


def test_the_saved_names_are_the_ones_the_tables_read() -> None:
    from noisyor_bench.reporting.avipam import tables

    assert methods.TRACE_TOP_PREFIX == tables.TRACE_TOP_PREFIX
    assert methods.TRACE_STEPS == tables.TRACE_STEPS


def test_runs_save_the_trace_and_the_tables_fill_the_rise_columns(tmp_path: Path) -> None:
    """End to end on a tiny corpus: avipam runs -> topics.npz -> the tables' rise columns."""
    from noisyor_bench.data.corpora.bow import Corpus, save_corpus
    from noisyor_bench.evaluation.coherence import document_reference
    from noisyor_bench.experiments.avipam import runs
    from noisyor_bench.infra.io import load_npz
    from noisyor_bench.reporting.avipam import tables

    counts = sp.csr_matrix(_corpus(docs=120))
    vocab = [f"w{i}" for i in range(counts.shape[1])]
    corpus_file = tmp_path / "toy.npz"
    save_corpus(corpus_file, Corpus(counts[:80], counts[80:], vocab))
    reference = document_reference(counts[80:], vocab)
    metrics = []
    for method in ("lda-gibbs", "pam4-gibbs", "avipam-pam4"):
        settings = {
            **_avipam_settings(method, max_epochs=6),
            "gibbs": {"iterations": 12, "trace_every": 3, "stop_on_rule": False},
        }
        cell = {"experiment": "small", "corpus": "toy", "method": method}
        out = runs.execute(corpus_file, cell, settings, 0, tmp_path / "runs" / method)
        arrays = load_npz(out / runs.TOPICS_FILE)
        assert arrays[methods.TRACE_STEPS].tolist() == (
            [3, 6, 9, 12] if "gibbs" in method else [1, 2, 3, 4, 5]
        )
        metrics.append(out / "metrics.json")
    scored = tables.score_runs(metrics, {("toy", "paper"): reference})
    rows = scored[~scored["method"].str.contains("@")].set_index("method")
    for method, last in (("lda-gibbs", 12), ("pam4-gibbs", 12), ("avipam-pam4", 6)):
        # every chain and aviPAM run records its CPU time beside its wall time (the speed claim's clock)
        assert 0.0 < rows.loc[method, "train_cpu_minutes_low"] <= rows.loc[method, "train_cpu_minutes_high"]
        assert math.isfinite(rows.loc[method, "npmi_paper_rise"])
        assert rows.loc[method, "rise_to_step"] == last
        assert rows.loc[method, "rise_from_step"] == last / 2
        # the curve itself, every traced step and the final one, on the paper's protocol
        steps, values = tables.parse_curve(rows.loc[method, "npmi_curve"])
        assert steps == ([3, 6, 9, 12] if "gibbs" in method else [1, 2, 3, 4, 5, 6])
        assert values[-1] == pytest.approx(rows.loc[method, "npmi_paper"])
    # every run of 4-PAM Gibbs and aviPAM 4-PAM reaches the lower of their best points
    table = tables.build_table(
        scored.assign(table_experiment="small", corpus="20news"), "table1", tables.paper_numbers()
    )
    pair = table.set_index("method").loc[["pam4-gibbs", "avipam-pam4"]]
    target = min(max(tables.parse_curve(rows.loc[m, "npmi_curve"])[1]) for m in ("pam4-gibbs", "avipam-pam4"))
    assert (pair["equal_coherence_npmi"] == target).all()
    assert ((pair["equal_coherence_fraction_mean"] > 0) & (pair["equal_coherence_fraction_mean"] <= 1)).all()
