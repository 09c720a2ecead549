"""aviPAM's library baselines: tomotopy 4-PAM Gibbs (Mallet PAM4L defaults), tomotopy LDA Gibbs
with a timed trace, scikit-learn mean-field LDA (online and batch).  Seeded reproducibility,
recovery of well-separated topics, shapes, and the Mallet -> tomotopy hyperparameter mapping."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from noisyor_bench.inference.convergence import assess
from noisyor_bench.inference.fitting import FitBudget
from noisyor_bench.inference.topics.gibbs import fit_lda_gibbs, trace_records
from noisyor_bench.inference.topics.lda_meanfield import fit_lda_meanfield
from noisyor_bench.inference.topics.pam_gibbs import MALLET_PAM4L, fit_pam_gibbs
from noisyor_bench.infra.errors import ConfigError, DataError


def block_corpus(seed: int = 0, n_docs: int = 60, block: int = 5, words_per_doc: int = 40) -> np.ndarray:
    """4 disjoint word blocks (sub-topics); super-topic 0 mixes blocks {0, 1}, super-topic 1
    blocks {2, 3}; a document draws from one super-topic.  Words 20, 21 never occur."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_docs, 4 * block + 2), dtype=int)
    for d in range(n_docs):
        blocks = (0, 1) if d % 2 == 0 else (2, 3)
        mix = rng.dirichlet([1.0, 1.0])
        for _ in range(words_per_doc):
            b = blocks[int(rng.random() > mix[0])]
            counts[d, b * block + rng.integers(block)] += 1
    return counts


def single_block_corpus(seed: int = 0, n_docs: int = 200, block: int = 10) -> np.ndarray:
    """Each document draws 60 words from one of 4 disjoint 10-word blocks (well-separated
    topics; smaller corpora leave mean-field LDA in a merged-topic optimum for some seeds)."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((n_docs, 4 * block + 2), dtype=int)
    for d in range(n_docs):
        np.add.at(counts[d], (d % 4) * block + rng.integers(block, size=60), 1)
    return counts


def block_mass(topic_word: np.ndarray, block: int = 5) -> np.ndarray:
    """(topics, 4) mass of each topic on each word block."""
    return np.stack([topic_word[:, b * block : (b + 1) * block].sum(axis=1) for b in range(4)], axis=1)


# ---------------------------------------------------------------- 4-PAM Gibbs
def test_pam_same_seed_same_chain_other_seed_other_chain() -> None:
    counts = np.random.default_rng(3).poisson(1.0, size=(30, 12))
    a = fit_pam_gibbs(counts, 2, 4, iterations=30, seed=5)
    b = fit_pam_gibbs(counts, 2, 4, iterations=30, seed=5)
    c = fit_pam_gibbs(counts, 2, 4, iterations=30, seed=6)
    for name in ("sub_topic_word", "super_sub", "doc_super", "doc_sub", "subalpha"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert not np.array_equal(a.doc_sub, c.doc_sub)


def test_pam_shapes_and_structure() -> None:
    counts = block_corpus()
    counts[3] = 0  # an empty document gets the prior's mean
    fit = fit_pam_gibbs(counts, n_super=2, n_sub=4, iterations=200, seed=1, trace_interval=50)
    d, v = counts.shape
    assert fit.sub_topic_word.shape == (4, v) and fit.super_sub.shape == (2, 4)
    assert fit.doc_super.shape == (d, 2) and fit.doc_sub.shape == (d, 4)
    for m in (fit.sub_topic_word, fit.super_sub, fit.doc_super, fit.doc_sub):
        np.testing.assert_allclose(m.sum(axis=1), 1.0)
    np.testing.assert_allclose(fit.doc_super[3], [0.5, 0.5])
    # every sub-topic is one block (> 90% of its mass), and the four blocks are all found
    mass = block_mass(fit.sub_topic_word)
    assert (mass.max(axis=1) > 0.9).all()
    assert sorted(mass.argmax(axis=1).tolist()) == [0, 1, 2, 3]
    # words absent from the corpus keep eta / (n_k + V eta)
    assert fit.sub_topic_word[:, 20:].max() < 1e-3
    # the trace: after every chunk of 50 sweeps, with growing training time
    assert [t[0] for t in fit.trace] == [50, 100, 150, 200]
    assert all(t1[2] <= t2[2] for t1, t2 in itertools.pairwise(fit.trace))
    assert 0 < fit.train_seconds and fit.trace[-1][2] <= fit.train_seconds + 1e-6


def test_pam_mallet_hyperparameter_mapping() -> None:
    counts = block_corpus(n_docs=20)
    fit = fit_pam_gibbs(counts, n_super=2, n_sub=4, iterations=120, seed=0)
    assert MALLET_PAM4L == {"alpha_sum": 50.0, "beta": 0.001, "sub_alpha": 1.0, "optimize_interval": 50}
    # root alpha: alphaSum / S per super-topic, never re-estimated (as Mallet's PAM4L)
    np.testing.assert_array_equal(fit.alpha, [25.0, 25.0])
    # sub-alphas start at 1 and are re-estimated every 50 sweeps
    assert not np.allclose(fit.subalpha, 1.0)
    fixed = fit_pam_gibbs(counts, 2, 4, iterations=120, seed=0, optimize_interval=0)
    np.testing.assert_array_equal(fixed.subalpha, np.ones((2, 4)))
    assert fit.eta == 0.001 and fit.optimize_interval == 50 and fit.workers == 1


def test_pam_bad_input() -> None:
    with pytest.raises(ConfigError, match="n_super"):
        fit_pam_gibbs(np.ones((2, 3), dtype=int), 0, 4, iterations=5, seed=0)
    with pytest.raises(DataError, match="empty"):
        fit_pam_gibbs(np.zeros((2, 3), dtype=int), 2, 4, iterations=5, seed=0)
    with pytest.raises(DataError, match="non-negative integers"):
        fit_pam_gibbs(np.array([[0.5, 1.0]]), 2, 2, iterations=5, seed=0)


# ---------------------------------------------------------------- LDA Gibbs (timing, trace)
def test_lda_gibbs_trace_does_not_change_the_chain() -> None:
    counts = block_corpus(n_docs=30)
    plain = fit_lda_gibbs(counts, 4, alpha=0.1, eta=0.01, iterations=40, seed=2)
    traced = fit_lda_gibbs(counts, 4, alpha=0.1, eta=0.01, iterations=40, seed=2, trace_interval=10)
    assert np.array_equal(plain.topic_word, traced.topic_word)
    assert [t[0] for t in traced.trace] == [10, 20, 30, 40] and plain.trace == ()  # after each chunk
    assert traced.trace[-1][1] == pytest.approx(traced.log_likelihood_per_word)
    assert plain.train_seconds > 0
    records = trace_records(traced.trace)
    assert [r.epoch for r in records] == [10, 20, 30, 40]
    assert records[-1].train_nelbo == -traced.trace[-1][1] and records[-1].val_nelbo is None
    assert assess(records, "max_epochs", None, FitBudget(max_epochs=40, convergence_window=2)).epochs == 40


# ---------------------------------------------------------------- mean-field LDA
@pytest.mark.parametrize("method", ["online", "batch"])
def test_meanfield_seeded_and_recovers_blocks(method: str) -> None:
    counts = single_block_corpus()
    a = fit_lda_meanfield(counts, 4, method, seed=3, max_iter=20, batch_size=50)
    b = fit_lda_meanfield(counts, 4, method, seed=3, max_iter=20, batch_size=50)
    assert np.array_equal(a.topic_word, b.topic_word) and np.array_equal(a.doc_topic, b.doc_topic)
    c = fit_lda_meanfield(counts, 4, method, seed=4, max_iter=20, batch_size=50)
    assert not np.array_equal(a.topic_word, c.topic_word)
    assert a.topic_word.shape == (4, counts.shape[1]) and a.doc_topic.shape == (counts.shape[0], 4)
    np.testing.assert_allclose(a.topic_word.sum(axis=1), 1.0)
    np.testing.assert_allclose(a.doc_topic.sum(axis=1), 1.0)
    mass = block_mass(a.topic_word, block=10)
    assert (mass.max(axis=1) > 0.9).all() and sorted(mass.argmax(axis=1).tolist()) == [0, 1, 2, 3]
    assert a.doc_topic_prior == a.topic_word_prior == 0.25  # scikit-learn's 1 / K
    assert a.learning_method == method and a.n_iter == 20 and a.train_seconds > 0
    assert np.isfinite(a.perplexity)
    # online: one EM step per mini-batch (200 documents / 50 -> 4 per pass); batch: one per pass
    assert a.n_batch_iter == (20 * 4 if method == "online" else 20) + 1


def test_meanfield_methods_differ_and_bad_method() -> None:
    counts = block_corpus(n_docs=20)
    on = fit_lda_meanfield(counts, 4, "online", seed=0, max_iter=5, compute_perplexity=False)
    ba = fit_lda_meanfield(counts, 4, "batch", seed=0, max_iter=5, compute_perplexity=False)
    assert not np.allclose(on.topic_word, ba.topic_word)
    assert np.isnan(on.perplexity)
    assert not on.stopped_by_criterion and on.max_iter == 5
    early = fit_lda_meanfield(counts, 4, "batch", seed=0, max_iter=200, evaluate_every=1, perp_tol=1.0)
    assert early.stopped_by_criterion and early.n_iter < 200
    with pytest.raises(ConfigError, match="learning_method"):
        fit_lda_meanfield(counts, 4, "stochastic", seed=0)


# ---------------------------------------------------------------- convergence of the baselines' runs
def test_meanfield_perplexity_trace_is_scikit_learns_perplexity_after_each_pass() -> None:
    """The trace read from scikit-learn's verbose lines equals the perplexity an independent
    fit stopped after that many passes reports (batch EM is deterministic given the seed)."""
    counts = single_block_corpus(n_docs=80)
    fit = fit_lda_meanfield(counts, 4, "batch", seed=2, max_iter=4, evaluate_every=1, perp_tol=0.0)
    assert [p for p, _ in fit.perplexity_trace] == [1, 2, 3, 4]
    for passes in (1, 3):
        short = fit_lda_meanfield(counts, 4, "batch", seed=2, max_iter=passes)
        assert fit.perplexity_trace[passes - 1][1] == pytest.approx(short.perplexity, rel=1e-3)
    unchecked = fit_lda_meanfield(counts, 4, "batch", seed=2, max_iter=2, compute_perplexity=False)
    assert unchecked.perplexity_trace == ()


@pytest.mark.parametrize(
    ("trace", "stopped", "checked", "converged", "rule"),
    [
        # falling to the last check at the limit: best evaluation last, never converged
        ([(i, 100.0 - 10 * i) for i in range(1, 9)], False, True, False, "best-at-limit"),
        # still falling over the window, but the best check (7) is not the last one
        ([*[(i, 100.0 - 10 * i) for i in range(1, 8)], (8, 35.0)], False, True, False, "still-improving"),
        ([(1, 300.0), (2, 200.0), *[(i, 150.0) for i in range(3, 10)]], False, True, True, "plateau"),
        ([(1, 300.0), (2, 200.0), (3, 199.0)], False, True, False, "too-few-evaluations"),
        ([(1, 300.0), (2, 200.0)], True, True, True, "method-criterion"),
        ([], False, False, False, "epoch-limit-unchecked"),
    ],
)
def test_meanfield_convergence_rule(trace, stopped, checked, converged, rule) -> None:
    from noisyor_bench.experiments.avipam.methods import meanfield_convergence

    conv = meanfield_convergence(trace, stopped, 10, checked)
    assert conv["converged"] is converged and conv["rule"] == rule
    if trace and rule != "method-criterion":
        # monitored: log perplexity (a NELBO per word), not the perplexity itself
        assert conv["best_within_window"] is None or conv["best_within_window"] == pytest.approx(
            np.log(min(v for _, v in trace[-5:]))
        )


@pytest.mark.parametrize("method", ["lda-online", "lda-batch"])
def test_real_meanfield_runs_record_falling_curves_unconverged_and_plateaus_converged(method) -> None:
    from noisyor_bench.experiments.avipam.methods import fit_lda_meanfield_cell

    counts = sp.csr_matrix(single_block_corpus(n_docs=120))
    settings = {"method": method, "sizes": {"sub": 4}}
    short = fit_lda_meanfield_cell(
        counts, {**settings, "mean_field": {"max_iter": 3, "evaluate_every": 1, "perp_tol": 0.0}}, 0
    )
    # 3 checks, scikit-learn's own stop off: no window of 5 to judge
    assert short.convergence["converged"] is False and short.convergence["rule"] == "too-few-evaluations"
    long = fit_lda_meanfield_cell(
        counts, {**settings, "mean_field": {"max_iter": 80, "evaluate_every": 1, "perp_tol": 0.0}}, 0
    )
    assert long.convergence["converged"] is True and long.convergence["rule"] == "plateau"
    assert [r["passes"] for r in long.curve] == list(range(1, 81))


def test_real_gibbs_runs_record_falling_curves_unconverged_and_plateaus_converged() -> None:
    from noisyor_bench.experiments.avipam.methods import fit_lda_gibbs_cell, fit_pam_gibbs_cell

    counts = sp.csr_matrix(block_corpus(n_docs=60))
    for fit_cell, sizes in ((fit_lda_gibbs_cell, {"sub": 4}), (fit_pam_gibbs_cell, {"super": 2, "sub": 4})):
        early = fit_cell(counts, {"sizes": sizes, "gibbs": {"iterations": 6, "trace_every": 1}}, 0)
        assert early.convergence["converged"] is False  # the chain's likelihood still rising
        late = fit_cell(counts, {"sizes": sizes, "gibbs": {"iterations": 400, "trace_every": 20}}, 0)
        assert late.convergence["converged"] is True and late.convergence["rule"] == "plateau"


def test_a_diverged_collapse_run_is_not_judged_by_the_convergence_rule() -> None:
    from noisyor_bench.experiments.avipam.methods import diverged_fit
    from noisyor_bench.models.topics.pam import make_structure

    fit = diverged_fit(make_structure("lda", [3]), 7, 1.0, "loss became nan")
    assert fit.convergence["converged"] is None and fit.convergence["rule"] == "diverged"
    assert fit.extra_metrics["n_collapsed"] == 3
