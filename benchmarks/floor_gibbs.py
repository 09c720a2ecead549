"""Floor unit of the collapsed Gibbs chains: a 4-PAM sweep on 20 Newsgroups (Table 1's "4-PAM Gibbs").

Why tomotopy called directly is the floor: the product does not implement the sampler, it drives
tomotopy's compiled ``PAModel`` (``inference/topics/pam_gibbs.py``).  A collapsed Gibbs sweep
written in numpy or plain Python is a per-token loop in the interpreter -- ~28 us a token for
LDA with K = 50 on this machine against ~0.2 us for tomotopy's 4-PAM, over 100x slower -- so it
would bound nothing.  What the product can add is its wrapper: turning the
count matrix into word strings, training in chunks of ``trace_every`` sweeps with the
log-likelihood, the convergence rule and the top-word snapshot at every trace point, and reading
the posterior means out at the end.  So the floor is the same chain with none of that: build
the model, add the same documents, one ``train(sweeps)`` call, read ``ll_per_word``.  The unit
is a sweep including set-up and read-out (whole call / sweeps).

:func:`check` asserts that the two chains are the same chain: equal log-likelihood per word
after the same sweeps with the same seed (tomotopy continues chunked training into one chain).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from floor_table import Unit

SUPER, SUB = 2, 50
ALPHA_SUM, SUB_ALPHA, ETA, OPTIM = 50.0, 1.0, 0.001, 50  # Mallet PAM4L's defaults, as the product
TRACE_EVERY = 10  # the quick grid's gibbs.trace_every


def floor_chain(counts: sp.csr_matrix, sweeps: int, seed: int) -> float:
    """tomotopy's PAModel alone: the chain's log-likelihood per word after ``sweeps`` sweeps."""
    import tomotopy as tp

    model = tp.PAModel(k1=SUPER, k2=SUB, alpha=ALPHA_SUM / SUPER, subalpha=SUB_ALPHA, eta=ETA, seed=seed)
    model.optim_interval = OPTIM
    for row in range(counts.shape[0]):
        lo, hi = counts.indptr[row], counts.indptr[row + 1]
        words = np.repeat(counts.indices[lo:hi], counts.data[lo:hi].astype(np.int64))
        if words.size:
            model.add_doc([str(int(w)) for w in words])
    model.train(sweeps, workers=1, parallel=tp.ParallelScheme.NONE)
    return float(model.ll_per_word)


def product_chain(counts: sp.csr_matrix, sweeps: int, seed: int) -> float:
    """The grid cell's call (``experiments/avipam/methods.py``), fixed sweeps: its log-likelihood per word."""
    from noisyor_bench.experiments.avipam.methods import fit_pam_gibbs_cell

    settings = {
        "gibbs": {"iterations": sweeps, "trace_every": TRACE_EVERY, "stop_on_rule": False},
        "sizes": {"super": SUPER, "sub": SUB},
    }
    return float(fit_pam_gibbs_cell(counts, settings, seed).extra_metrics["log_likelihood_per_word"])


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def load_counts(data_dir: Path, n_docs: int | None) -> sp.csr_matrix:
    """The first ``n_docs`` (all: None) training documents of the 20 Newsgroups corpus file."""
    from noisyor_bench.data.corpora.bow import load_corpus

    train = load_corpus(data_dir / "avipam-20news.npz").train
    return train[:n_docs] if n_docs else train


def units(data_dir: Path, quick: bool) -> list[Unit]:
    counts = load_counts(data_dir, 3000 if quick else None)
    sweeps = 20 if quick else 40
    tokens = int(counts.sum())
    return [
        Unit(
            name="4-PAM Gibbs sweep",
            size=f"20news, {counts.shape[0]} docs, {tokens} tokens, 1x{SUPER} -> {SUPER}x{SUB}, "
            f"{sweeps} sweeps incl. set-up",
            floor="tomotopy's PAModel called directly: the same documents, seed and sweeps in one train() call",
            product=lambda: _timed(product_chain, counts, sweeps, 0) / sweeps,
            floor_fn=lambda: _timed(floor_chain, counts, sweeps, 0) / sweeps,
        )
    ]


def check(data_dir: Path) -> list[dict]:
    counts = load_counts(data_dir, 300)
    mine, theirs = floor_chain(counts, 30, 7), product_chain(counts, 30, 7)
    diff = abs(mine - theirs)
    assert diff == 0.0, f"4-PAM chain: floor ll/word {mine} != product {theirs}"
    return [
        {
            "name": "4-PAM Gibbs log-likelihood per word after 30 sweeps (same chain)",
            "max_abs_diff": diff,
            "tol": 0.0,
        }
    ]
