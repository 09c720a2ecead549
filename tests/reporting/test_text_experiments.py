"""Real-corpus experiments (Table 5, supplement Figs. 3-6) on tiny hand-made corpora and runs.

Every expected number is computed here by hand (closed forms, brute force in numpy), never by
the code under test: PMI from raw window counts, EM from explicit label vectors, k-NN votes
from an explicit distance list, verdicts from hand-placed CIs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from noisyor_bench.cli import main
from noisyor_bench.evaluation.pmi import CooccurrenceTable
from noisyor_bench.experiments.acp.corpus_hparams import corpus_hparams
from noisyor_bench.experiments.acp.grid import corpora as G
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import load_npz, read_json, write_json_atomic, write_npz_atomic
from noisyor_bench.reporting.acp import text_claims as TC
from noisyor_bench.reporting.acp.classification import (
    classification_table,
    cv_exact_match,
    exact_match,
)
from noisyor_bench.reporting.acp.text_runs import collect_text_runs
from noisyor_bench.reporting.acp.topics_table import median_seed, table5_markdown, topics_table
from noisyor_bench.reporting.acp.tsne import (
    effective_perplexity,
    knn_accuracy,
    knn_predict,
    single_label,
)
from noisyor_bench.reporting.claims import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, REPRODUCED, Interval

# ------------------------------------------------------------------------------ fixtures
VOCAB = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
# Hand-made reference counts: N windows, n_i per word, n_ij for the pairs seen together.
N_WINDOWS = 1000
UNIGRAM = {"alpha": 100, "beta": 50, "gamma": 20, "delta": 10, "eps": 0, "zeta": 40}
PAIRS = {("alpha", "beta"): 10, ("alpha", "gamma"): 4, ("beta", "gamma"): 5, ("delta", "zeta"): 2}


def cooc_table() -> CooccurrenceTable:
    idx = {w: i for i, w in enumerate(VOCAB)}
    pi, pj, pc = [], [], []
    for (a, b), c in PAIRS.items():
        i, j = sorted((idx[a], idx[b]))
        pi.append(i), pj.append(j), pc.append(c)
    return CooccurrenceTable(
        VOCAB,
        5,
        N_WINDOWS,
        np.array([UNIGRAM[w] for w in VOCAB]),
        np.array(pi),
        np.array(pj),
        np.array(pc),
        {"reference": "hand-made"},
    )


def hand_pmi(a: str, b: str) -> float | None:
    n_ij = PAIRS.get((a, b), PAIRS.get((b, a), 0))
    if n_ij == 0 or UNIGRAM[a] == 0 or UNIGRAM[b] == 0:
        return None
    return math.log(n_ij * N_WINDOWS / (UNIGRAM[a] * UNIGRAM[b]))


def make_run(
    root: Path,
    experiment: str,
    dataset: str,
    method: str,
    n: int,
    seed: int,
    arrays: dict[str, np.ndarray],
    extra: dict[str, Any] | None = None,
) -> Path:
    """A finished run directory as acp-train-cell writes it (only the keys the readers need)."""
    d = root / "runs" / experiment / dataset / method / f"n{n}" / f"seed{seed}"
    d.mkdir(parents=True)
    k = arrays["q"].shape[1] if "q" in arrays else arrays["theta"].shape[1]
    metrics = {
        "experiment": experiment,
        "dataset": dataset,
        "method": method,
        "n_train": n,
        "seed": seed,
        "K": k,
        "mode": "learning",
        **(extra or {}),
    }
    write_json_atomic(d / "metrics.json", metrics)
    write_npz_atomic(d / "posterior_test.npz", **arrays)
    return d


def topic_theta(order: list[list[int]], d: int = 6) -> np.ndarray:
    """theta (D, K) whose column k ranks words order[k] first (decreasing weights), others 0."""
    theta = np.zeros((d, len(order)))
    for k, words in enumerate(order):
        for r, i in enumerate(words):
            theta[i, k] = 1.0 - 0.1 * r
    return theta


# ------------------------------------------------------------------------------ Table 5
def test_topics_table_top_words_and_pmi_by_hand(tmp_path: Path) -> None:
    # topic 0 = alpha beta gamma (3 defined pairs); topic 1 = delta zeta eps (1 defined pair, 2 skipped)
    theta = topic_theta([[0, 1, 2], [3, 5, 4]])
    run = make_run(
        tmp_path,
        "table5",
        "neurips-titles",
        "acp",
        2000,
        0,
        {"theta": theta, "theta0": np.full(6, 0.01), "mu": np.array([0.3, 0.1]), "q": np.zeros((2, 2))},
    )
    table = topics_table(collect_text_runs([run]), VOCAB, cooc_table(), top_words=3)
    t0 = table[table["topic"] == 0].iloc[0]
    t1 = table[table["topic"] == 1].iloc[0]
    assert t0["words"] == "alpha beta gamma" and t1["words"] == "delta zeta eps"
    p0 = np.mean([hand_pmi("alpha", "beta"), hand_pmi("alpha", "gamma"), hand_pmi("beta", "gamma")])
    p1 = hand_pmi("delta", "zeta")
    assert t0["pmi"] == pytest.approx(p0, abs=1e-12) and t1["pmi"] == pytest.approx(p1, abs=1e-12)
    assert (t0["pairs_used"], t0["pairs_skipped"], t1["pairs_used"], t1["pairs_skipped"]) == (3, 0, 1, 2)
    assert t0["mean_pmi"] == pytest.approx((p0 + p1) / 2, abs=1e-12)
    best = 0 if p0 > p1 else 1
    assert int(table.loc[table["rank"] == 1, "topic"].iloc[0]) == best
    assert t0["mu"] == pytest.approx(0.3) and set(table["K"]) == {2}


def test_all_topics_mean_beside_best_selection_by_hand(tmp_path: Path) -> None:
    """mean_pmi averages every topic with a defined PMI (unseen pairs skipped, a topic of only unseen
    pairs left out); mean_pmi_best averages the best N of them; the Markdown shows both."""
    # topic 0: 3 defined pairs; topic 1: 1 defined, 2 skipped; topic 2 (eps delta gamma): no pair defined
    theta = topic_theta([[0, 1, 2], [3, 5, 4], [4, 3, 2]])
    run = make_run(
        tmp_path, "table5", "neurips-titles", "acp", 2000, 0, {"theta": theta, "q": np.zeros((1, 3))}
    )
    p0 = np.mean([hand_pmi("alpha", "beta"), hand_pmi("alpha", "gamma"), hand_pmi("beta", "gamma")])
    p1 = hand_pmi("delta", "zeta")
    for best, expected in ((1, max(p0, p1)), (2, (p0 + p1) / 2), (3, (p0 + p1) / 2)):
        table = topics_table(collect_text_runs([run]), VOCAB, cooc_table(), top_words=3, best_topics=best)
        assert table["mean_pmi"].iloc[0] == pytest.approx((p0 + p1) / 2, abs=1e-12)
        assert table["mean_pmi_best"].iloc[0] == pytest.approx(expected, abs=1e-12)
        assert set(table["best_topics"]) == {best} and set(table["topics_defined"]) == {2}
    t2 = table[table["topic"] == 2].iloc[0]
    assert math.isnan(t2["pmi"]) and (t2["pairs_used"], t2["pairs_skipped"]) == (0, 3)
    md = table5_markdown(
        topics_table(collect_text_runs([run]), VOCAB, cooc_table(), 3, best_topics=1), best_topics=1
    )
    assert "mean PMI, all 3 topics (ours)" in md and "mean PMI, best 1 (ours)" in md
    assert "left out" in md and "n_ij = 0" in md  # how unseen pairs are scored
    assert "| 5/9 |" in md  # skipped / all pairs of the run


def test_topics_table_rejects_wrong_vocabulary(tmp_path: Path) -> None:
    run = make_run(
        tmp_path,
        "table5",
        "neurips-titles",
        "acp",
        2000,
        0,
        {"theta": np.ones((4, 2)), "q": np.zeros((1, 2))},
    )
    with pytest.raises(DataError, match="vocabulary has 6 words"):
        topics_table(collect_text_runs([run]), VOCAB, cooc_table(), top_words=3)


def test_median_seed_is_a_real_run() -> None:
    assert median_seed({0: 3.0, 1: 1.0, 2: 2.0}) == 2
    assert median_seed({0: 3.0, 1: 1.0}) == 1  # lower median for an even count
    assert median_seed({0: float("nan"), 1: 5.0, 2: 4.0}) == 2  # NaN sorts last, median of defined values


def test_table5_markdown_shows_median_seed_and_paper(tmp_path: Path) -> None:
    runs = []
    # seed s: topic 0 = alpha beta gamma for seeds 0, 2; seed 1 puts zeta first (lower PMI)
    for seed, order in enumerate([[[0, 1, 2], [3, 5, 4]], [[5, 1, 2], [3, 0, 4]], [[0, 1, 2], [3, 5, 4]]]):
        runs.append(
            make_run(
                tmp_path,
                "table5",
                "neurips-titles",
                "acp",
                5241,
                seed,
                {"theta": topic_theta(order), "q": np.zeros((1, 2))},
            )
        )
    table = topics_table(collect_text_runs(runs), VOCAB, cooc_table(), top_words=3)
    means = table.groupby("seed")["mean_pmi"].first()
    md = table5_markdown(table, best_topics=2)
    shown = median_seed(dict(means))
    assert f"shown: seed {shown}" in md
    assert "N_train = 5241, ACP" in md and "| 5241 | ACP |" in md
    assert "2.78" in md  # the paper's ACP mean PMI at 5241 (paper_numbers.yaml)
    assert "not comparable" in md


# ------------------------------------------------------------------------------ classification
def test_exact_match_by_hand() -> None:
    y = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1]])
    p = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0], [0, 0, 0]])
    assert exact_match(y, p) == pytest.approx(50.0)


def separable(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Labels y (n x 3, single- and multi-label rows) and features that reveal them exactly."""
    rng = np.random.default_rng(seed)
    y = (rng.random((n, 3)) < 0.4).astype(np.int64)
    feats = np.concatenate([y * 4.0 - 2.0, rng.normal(0, 0.05, (n, 2))], axis=1)  # label bits +-2, plus noise
    return feats, y


def test_cv_exact_match_separable_is_100() -> None:
    feats, y = separable()
    assert cv_exact_match(feats, y, folds=3, seed=0) == pytest.approx([100.0, 100.0, 100.0])


def test_cv_exact_match_uninformative_features_predict_majority_by_hand() -> None:
    from sklearn.model_selection import KFold

    rng = np.random.default_rng(3)
    y = (rng.random((50, 3)) < np.array([0.8, 0.3, 0.1])).astype(np.int64)
    feats = np.ones((50, 2))
    folds = list(KFold(n_splits=5, shuffle=True, random_state=7).split(feats))
    expected = []
    for train, test in folds:
        rate = y[train].mean(axis=0)
        assert np.all(np.abs(rate - 0.5) > 0.05)  # no near-tie: the majority is well defined
        majority = (rate > 0.5).astype(np.int64)
        expected.append(100.0 * np.mean(np.all(y[test] == majority, axis=1)))
    assert cv_exact_match(feats, y, folds=5, seed=7) == pytest.approx(expected)


def test_classification_table_baseline_and_runs(tmp_path: Path) -> None:
    feats, y = separable(40)
    q_good = 1.0 / (1.0 + np.exp(-3.0 * feats))  # ~0.998 / 0.002 on the label bits: separable
    q_bad = np.full((40, 5), 0.5)
    runs = [
        make_run(tmp_path, "classification-K5", "reuters", "acp", 100, 0, {"q": q_good}),
        make_run(tmp_path, "classification-K5", "reuters", "avi", 100, 0, {"q": q_bad}),
    ]
    x = (feats[:, :3] > 0).astype(np.uint8)  # the raw words reveal the labels too
    table = classification_table(collect_text_runs(runs), x, y, folds=4, seed=1)
    base = table[table["features"] == "x"].iloc[0]
    assert base["method"] == "baseline" and base["em"] == pytest.approx(100.0) and pd.isna(base["n_train"])
    acp = table[(table["features"] == "q") & (table["method"] == "acp")].iloc[0]
    avi = table[(table["features"] == "q") & (table["method"] == "avi")].iloc[0]
    assert acp["em"] == pytest.approx(100.0)
    assert avi["em"] == pytest.approx(np.mean(cv_exact_match(q_bad, y, 4, 1)))
    assert [float(v) for v in avi["em_folds"].split(";")] == pytest.approx(cv_exact_match(q_bad, y, 4, 1))
    assert avi["em"] < 100.0 and int(acp["K"]) == 5


def test_classification_rejects_wrong_test_size(tmp_path: Path) -> None:
    run = make_run(tmp_path, "classification-K2", "reuters", "acp", 100, 0, {"q": np.zeros((7, 2))})
    with pytest.raises(DataError, match="expected \\(10 test documents"):
        classification_table(collect_text_runs([run]), np.zeros((10, 3)), np.zeros((10, 3), int), 2, 0)


def test_run_k_must_match_experiment(tmp_path: Path) -> None:
    run = make_run(tmp_path, "classification-K9", "reuters", "acp", 100, 0, {"q": np.zeros((7, 2))})
    with pytest.raises(DataError, match="learned K=2"):
        collect_text_runs([run])


# ------------------------------------------------------------------------------ t-SNE companion
def test_knn_vote_by_hand_with_tie_break() -> None:
    # 1-D points; k = 2. Point 0 (x=0): neighbours x=1 (label 1), x=-1.5 (label 0): tie 1:1, nearest is label 1.
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [-1.5, 0.0], [10.0, 0.0], [11.0, 0.0], [12.5, 0.0]])
    lab = np.array([0, 1, 0, 1, 1, 0])
    # by hand: 0 -> {1:1 (d1), 0:1 (d1.5)} -> 1; 1 -> {0 (d1), 0 (d2.5)} -> 0; 2 -> {0 (1.5), 1 (2.5)} tie -> 0;
    # 3 -> {1 (1), 0 (2.5)} tie -> 1; 4 -> {1 (1), 0 (1.5)} tie -> 1; 5 -> {1 (1.5), 1 (2.5)} -> 1
    assert knn_predict(pts, lab, k=2).tolist() == [1, 0, 0, 1, 1, 1]
    assert knn_accuracy(pts, lab, k=2) == pytest.approx(100.0 * 3 / 6)


def test_knn_accuracy_planted_clusters() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(0, 0.1, (30, 2))
    b = rng.normal(0, 0.1, (30, 2)) + [5.0, 0.0]
    pts, lab = np.vstack([a, b]), np.repeat([0, 1], 30)
    assert knn_accuracy(pts, lab, 5) == pytest.approx(100.0)
    # fused: both categories drawn from one cloud with random labels -> near chance
    assert knn_accuracy(rng.normal(0, 1, (60, 2)), rng.integers(0, 2, 60), 5) < 80.0


def test_single_label_and_perplexity_cap() -> None:
    y = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1], [0, 0, 0], [0, 1, 0]])
    mask, labels = single_label(y)
    assert mask.tolist() == [True, False, True, False, True] and labels.tolist() == [0, 2, 1]
    assert effective_perplexity(30.0, 1000) == 30.0
    assert effective_perplexity(30.0, 31) == pytest.approx(10.0)
    with pytest.raises(DataError):
        effective_perplexity(30.0, 3)


def test_tsne_cli_figure_and_companion(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n = 45
    y = np.zeros((n, 3), dtype=np.uint8)
    y[np.arange(n), np.arange(n) % 3] = 1
    y[0, 1] = 1  # a multi-label document: left out of the map
    centers = np.eye(3) * 0.9
    q_sep = np.clip(centers[np.arange(n) % 3] + rng.normal(0, 0.02, (n, 3)), 0, 1)
    q_fused = np.clip(0.5 + rng.normal(0, 0.2, (n, 3)), 0, 1)
    data = tmp_path / "corpus.npz"
    write_npz_atomic(
        data, x_test=np.zeros((n, 4), np.uint8), y_test=y, label_names=np.array(["earn", "acq", "money-fx"])
    )
    runs = [
        make_run(tmp_path, "classification-K3", "reuters", "acp", 100, 0, {"q": q_sep}),
        make_run(tmp_path, "classification-K3", "reuters", "avi", 100, 0, {"q": q_fused}),
    ]
    out = tmp_path / "out"
    args = [
        "acp-tsne",
        "--runs",
        *map(str, runs),
        "--dataset",
        str(data),
        "--perplexity",
        "30",
        "--seed",
        "0",
        "--out-png",
        str(out / "t.png"),
        "--out-pdf",
        str(out / "t.pdf"),
        "--out-csv",
        str(out / "t.csv"),
    ]
    assert main(args) == 0
    assert (out / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / "t.pdf").stat().st_size > 0
    t = pd.read_csv(out / "t.csv").set_index("method")
    assert t.loc["acp", "n_points"] == n - 1 and t.loc["acp", "perplexity"] == pytest.approx((n - 2) / 3)
    assert t.loc["acp", "knn_acc_q"] == pytest.approx(100.0) and t.loc["acp", "knn_acc_2d"] > 95.0
    assert t.loc["avi", "knn_acc_q"] < 70.0


# ------------------------------------------------------------------------------ claims
def table5_frame(values: dict[tuple[str, int], list[float]]) -> pd.DataFrame:
    rows = [
        {
            "artifact": "table5",
            "method": m,
            "n_train": n,
            "seed": s,
            "topic": 0,
            "rank": 1,
            "pmi": v,
            "mean_pmi": v,
        }
        for (m, n), vs in values.items()
        for s, v in enumerate(vs)
    ]
    return pd.DataFrame(rows)


def test_pmi_claims_verdicts() -> None:
    up = {"table5": table5_frame({("acp", 2000): [2.0, 2.2, 2.1], ("avi", 2000): [1.0, 1.1, 1.3]})}
    down = {"table5": table5_frame({("acp", 2000): [1.0, 1.1, 1.3], ("avi", 2000): [2.0, 2.2, 2.1]})}
    one = {"table5": table5_frame({("acp", 2000): [2.0], ("avi", 2000): [1.0]})}
    assert TC.claim_pmi_acp_higher(up).verdict == REPRODUCED
    assert TC.claim_pmi_acp_higher(down).verdict == NOT_REPRODUCED
    assert TC.claim_pmi_acp_higher(one).verdict == INCONCLUSIVE  # n=1
    nodata = TC.claim_pmi_acp_higher({})
    assert nodata.verdict == NOT_TESTED and nodata.numbers.startswith("not tested")
    # rank-wise best topics: rank 1 only here, best=1
    assert TC.claim_best_topics_acp_higher(up, 2000, best=1).verdict == REPRODUCED
    assert TC.claim_best_topics_acp_higher(up, 2000, best=2).verdict == NOT_TESTED  # no rank-2 rows
    # a best-topics claim shows the all-topics mean beside its rank-wise numbers
    assert (
        "mean PMI over all topics: ACP 2.10, AVI 1.13"
        in TC.claim_best_topics_acp_higher(up, 2000, best=1).numbers
    )


def test_similarity_verdict_by_hand_intervals() -> None:
    assert TC.verdict_within(Interval(0.0, -0.1, 0.2, "paired", "3"), 0.3) == REPRODUCED
    assert TC.verdict_within(Interval(0.0, -0.4, 0.2, "paired", "3"), 0.3) == INCONCLUSIVE
    assert TC.verdict_within(Interval(0.5, 0.35, 0.6, "paired", "3"), 0.3) == NOT_REPRODUCED
    assert TC.verdict_within(Interval(-0.5, -0.6, -0.31, "paired", "3"), 0.3) == NOT_REPRODUCED
    assert TC.verdict_within(Interval(0.0, float("nan"), float("nan"), "n=1", "1"), 0.3) == INCONCLUSIVE
    close = {
        "table5": table5_frame(
            {("acp", 5241): [2.00, 2.10, 2.05, 2.02], ("avi", 5241): [2.01, 2.08, 2.06, 2.00]}
        )
    }
    assert TC.claim_pmi_similar(close).verdict == REPRODUCED


def classification_frame(em: dict[tuple[str, int, int], list[float]]) -> pd.DataFrame:
    rows = [
        {
            "artifact": "classification",
            "features": "x",
            "method": "baseline",
            "K": 9,
            "n_train": np.nan,
            "seed": np.nan,
            "em": 50.0,
        }
    ]
    rows += [
        {"artifact": "classification", "features": "q", "method": m, "K": k, "n_train": n, "seed": s, "em": v}
        for (m, k, n), vs in em.items()
        for s, v in enumerate(vs)
    ]
    return pd.DataFrame(rows)


def test_classification_claims_pooled_over_k() -> None:
    em = {}
    for k in (50, 100):
        em[("acp", k, 100)] = [70.0 + k / 100, 71.0, 72.0]
        em[("avi", k, 100)] = [60.0, 61.5, 60.5]
        em[("acp", k, 4543)] = [80.0, 80.5, 81.0]
        em[("avi", k, 4543)] = [85.0, 86.0, 85.5]
        em[("acp", k, 1000)] = [1.0, 1.0, 1.0]  # N=1000 is neither the smallest nor > 1000: ignored
        em[("avi", k, 1000)] = [99.0, 99.0, 99.0]
    tables = {"classification": classification_frame(em)}
    small, large = TC.claim_em_acp_small(tables), TC.claim_em_avi_large(tables)
    assert small.verdict == REPRODUCED and "N_train [100]" in small.numbers and "n=6" in small.numbers
    assert large.verdict == REPRODUCED and "N_train [4543]" in large.numbers
    flipped = {
        "classification": classification_frame(
            {(("avi" if m == "acp" else "acp"), k, n): v for (m, k, n), v in em.items()}
        )
    }
    assert TC.claim_em_acp_small(flipped).verdict == NOT_REPRODUCED
    assert TC.claim_em_avi_large(flipped).verdict == NOT_REPRODUCED


def test_tsne_claim_uses_small_columns_only() -> None:
    rows = []
    for k in (50, 100, 150):
        for n, acp, avi in ((4543, 50.0, 99.0), (1000, 90.0 + k / 100, 70.0), (100, 88.0, 65.0 + k / 100)):
            rows += [
                {
                    "artifact": "tsne",
                    "method": "acp",
                    "K": k,
                    "n_train": n,
                    "seed": 0,
                    "knn_acc_2d": acp,
                    "neighbors": 5,
                },
                {
                    "artifact": "tsne",
                    "method": "avi",
                    "K": k,
                    "n_train": n,
                    "seed": 0,
                    "knn_acc_2d": avi,
                    "neighbors": 5,
                },
            ]
    c = TC.claim_tsne_acp_separates({"tsne": pd.DataFrame(rows)})
    assert c.verdict == REPRODUCED and "N_train [100, 1000]" in c.numbers and "n=6" in c.numbers
    single = pd.DataFrame([r for r in rows if r["K"] == 50 and r["n_train"] in (4543, 100)])
    assert TC.claim_tsne_acp_separates({"tsne": single}).verdict == INCONCLUSIVE  # one pair: n=1


# ------------------------------------------------------------------------------ grid and hparams
def text_cfg(**text: Any) -> dict[str, Any]:
    base = {
        "seeds": [0, 1],
        "methods": ["avi", "acp"],
        "topics": {"K": 5, "n_train": [300], "top_words": 10, "best_topics": 4},
        "classification": {"K": [10, 20], "n_train": [100, 300], "folds": 2},
        "tsne": {"n_train": [300, 100], "perplexity": 30},
    }
    base.update(text)
    return {"grid": "p", "grids": {"p": {"acp": {"text": base}}}}


def test_grid_cells_and_latents() -> None:
    cfg = text_cfg()
    cells = G.cells(cfg)
    assert len(cells) == 2 * 1 + 2 * 2 * 2
    assert G.CorpusCell("table5", "neurips-titles", "acp", 300, 5) in cells
    assert G.CorpusCell("classification-K20", "reuters", "avi", 100, 20) in cells
    assert G.experiment_latents(cfg, "classification-K20") == 20 and G.experiment_latents(cfg, "table5") == 5
    with pytest.raises(ConfigError, match="classification-K30"):
        G.experiment_latents(cfg, "classification-K30")
    assert [c.n_train for c in G.tsne_cells(cfg, 10)] == [100, 300, 100, 300]


def test_tsne_n_train_must_be_classification_subset() -> None:
    with pytest.raises(ConfigError, match=r"grids\.p\.acp\.text\.tsne\.n_train: \[500\]"):
        G.validate_corpus_grid(text_cfg(tsne={"n_train": [300, 500], "perplexity": 30}))
    G.validate_corpus_grid(text_cfg())


def test_repo_config_text_grids_are_valid(repo: Path) -> None:
    from noisyor_bench.experiments.config import load_config

    cfg = load_config(repo / "config" / "config.yaml", {"grid": "quick"})
    G.validate_corpus_grid(cfg)
    assert len(G.cells(cfg, "table5")) == 2 * len(cfg["grids"]["quick"]["acp"]["text"]["topics"]["n_train"])


def test_corpus_hparams_by_hand() -> None:
    x = np.zeros((10, 200), dtype=np.uint8)
    x[:, :4] = 1  # density 4 / 200 = 0.02
    hp = corpus_hparams(x)
    assert hp["init_theta_high"] == pytest.approx(2 * 0.64 / 200)
    assert hp["init_theta0"] == pytest.approx(-math.log(1 - 0.02))
    assert hp["lr"] == pytest.approx(1e-2)
    from noisyor_bench.inference.noisyor.amortized import parse_hparams

    parse_hparams(hp)  # valid AVI/ACP hyperparameters


# ------------------------------------------------------------------------------ runs without ground truth
@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    arrays = {
        f"x_{s}": (rng.random((n, 12)) < 0.2).astype(np.uint8)
        for s, n in (("train", 40), ("val", 10), ("test", 10))
    }
    arrays["y_test"] = np.eye(3, dtype=np.uint8)[np.arange(10) % 3]
    path = tmp_path_factory.mktemp("corpus") / "tiny.npz"
    write_npz_atomic(path, **arrays)
    return path


def test_execute_run_without_ground_truth(corpus: Path, tmp_path: Path) -> None:
    from noisyor_bench.experiments.acp.runs import RunSpec, execute_run
    from noisyor_bench.inference.fitting import FitBudget

    spec = RunSpec(
        dataset=corpus,
        method="avi",
        mode="learning",
        n_train=30,
        seed=0,
        out_dir=tmp_path / "run",
        budget=FitBudget(max_epochs=2, patience=2, batch_size=16),
        n_samples=5,
        iw_samples=5,
        n_latent=3,
        device="cpu",
        threads=1,
    )
    out = execute_run(spec)
    m = read_json(out / "metrics.json")
    assert m["K"] == 3 and m["K_true"] is None and m["D"] == 12 and m["n_latent"] == 3
    for key in (
        "f1",
        "em",
        "f1_map",
        "em_map",
        "exact_nll",
        "exact_elbo",
        "exact_gap",
        "latent_match_cosine",
        "latent_matching",
        "latent_permutation",
    ):
        assert m[key] is None, key
    assert m["exact_max_k"] == 0 and math.isfinite(m["nelbo"]) and math.isfinite(m["iw_nll"])
    post = load_npz(out / "posterior_test.npz")
    assert post["q"].shape == (10, 3) and post["theta"].shape == (12, 3)
    # the recorded metrics are recomputable from the run directory and the dataset
    assert main(["evaluate", str(out), "--dataset", str(corpus)]) == 0


def test_execute_run_without_ground_truth_needs_learning_and_k(corpus: Path, tmp_path: Path) -> None:
    from noisyor_bench.experiments.acp.runs import RunSpec, execute_run

    base = dict(dataset=corpus, method="avi", n_train=30, seed=0, device="cpu")
    with pytest.raises(ConfigError, match="no ground truth.*n_latent"):
        execute_run(RunSpec(mode="learning", out_dir=tmp_path / "a", **base))
    with pytest.raises(ConfigError, match="n_latent"):
        execute_run(RunSpec(mode="inference", n_latent=3, out_dir=tmp_path / "b", **base))
    with pytest.raises(ConfigError, match="no ground truth"):
        execute_run(RunSpec(mode="inference", out_dir=tmp_path / "c", **base))


# ------------------------------------------------------------------------------ CLI end to end
def test_cli_tables_and_claims(tmp_path: Path) -> None:
    vocab = tmp_path / "v.vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    cooc = tmp_path / "cooc.npz"
    cooc_table().save(cooc)
    t5 = [
        make_run(
            tmp_path, "table5", "neurips-titles", m, n, s, {"theta": topic_theta(o), "q": np.zeros((1, 2))}
        )
        # ACP: "beta gamma eps" + "delta zeta alpha" (mean ln 5); AVI: "alpha beta gamma" + "delta zeta eps"
        # (mean ((2 ln 2 + ln 5) / 3 + ln 5) / 2 < ln 5)
        for m, o in (("acp", [[1, 2, 4], [3, 5, 0]]), ("avi", [[0, 1, 2], [3, 5, 4]]))
        for n in (2000, 5241)
        for s in (0, 1, 2)  # three seeds: a paired t over two (1 degree of freedom) decides nothing
    ]
    out = tmp_path / "out"
    assert (
        main(
            [
                "acp-table5",
                "--runs",
                *map(str, t5),
                "--vocab",
                str(vocab),
                "--cooccurrence",
                str(cooc),
                "--top-words",
                "3",
                "--best-topics",
                "2",
                "--out-csv",
                str(out / "table5.csv"),
                "--out-md",
                str(out / "table5.md"),
            ]
        )
        == 0
    )
    feats, y = separable(30)
    data = tmp_path / "reuters.npz"
    write_npz_atomic(
        data,
        x_test=(feats[:, :3] > 0).astype(np.uint8),
        y_test=y.astype(np.uint8),
        label_names=np.array(["earn", "acq", "money-fx"]),
    )
    from noisyor_bench.infra.hashing import sha256_file

    sha = {"dataset_sha256": sha256_file(data)}
    cls = [
        make_run(
            tmp_path,
            "classification-K5",
            "reuters",
            m,
            n,
            s,
            {"q": 1 / (1 + np.exp(-feats * (1 if m == "acp" else 0.01) + s))},
            sha,
        )
        for m in ("avi", "acp")
        for n in (100, 4543)
        for s in (0, 1)
    ]
    assert (
        main(
            [
                "acp-classification",
                "--runs",
                *map(str, cls),
                "--dataset",
                str(data),
                "--folds",
                "3",
                "--seed",
                "0",
                "--out-csv",
                str(out / "c.csv"),
                "--out-md",
                str(out / "c.md"),
                "--out-png",
                str(out / "c.png"),
                "--out-pdf",
                str(out / "c.pdf"),
            ]
        )
        == 0
    )
    c = pd.read_csv(out / "c.csv")
    assert len(c) == 1 + len(cls) and (out / "c.png").stat().st_size > 0
    assert "Baseline" in (out / "c.md").read_text()
    other = tmp_path / "other.npz"
    write_npz_atomic(other, x_test=np.zeros((30, 3), np.uint8), y_test=y.astype(np.uint8))
    with pytest.raises(DataError, match="another file"):
        from noisyor_bench.reporting.acp.text_runs import check_dataset

        check_dataset(collect_text_runs(cls), sha256_file(other), other)
    assert (
        main(
            [
                "acp-claims-text",
                "--tables",
                str(out / "table5.csv"),
                str(out / "c.csv"),
                "--best-topics",
                "2",
                "--out-csv",
                str(out / "claims.csv"),
                "--out-md",
                str(out / "claims.md"),
            ]
        )
        == 0
    )
    claims = pd.read_csv(out / "claims.csv").set_index("claim_id")
    assert claims.loc["table5-acp-higher-mean-pmi-n2000", "verdict"] == REPRODUCED  # ACP's topics hold pairs
    assert claims.loc["suppfig4-6-acp-separates-categories-small-n", "numbers"].startswith("not tested")
    assert set(claims["verdict"]) <= {REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_TESTED}
