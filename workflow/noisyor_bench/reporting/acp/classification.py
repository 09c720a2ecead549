"""Supplement Fig. 3 (Section 5.1): document classification from the learned representations.

The supplement: "we take the approximate posterior distribution {q(z_k = 1 | x)}_k as the latent
representation ... We evaluate the quality of learned representations on the test set ... we
train a linear multilabel classifier, which takes the posterior distribution as input and
predicts the document classes. We perform 5-fold cross-validation and report the average EM
scores."  So the classifier is trained and scored *within the test set* (the noisy-OR model
never saw it): ``folds``-fold cross-validation over the test documents, EM = the percentage of
held-out documents whose three labels (earn, acq, money-fx) are all predicted right, averaged
over folds.  The black dashed baseline is the same classifier on the raw binary ``x_test``.

Classifier: one binary logistic regression per label (one-vs-rest), scikit-learn defaults (L2,
C = 1, lbfgs) with ``max_iter`` raised so it converges.  Folds: ``KFold(shuffle=True,
random_state=seed)``, the same split for every run and the baseline, so differences between
methods are paired on the folds too.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from noisyor_bench.experiments.rundir import load_posterior
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import load_npz
from noisyor_bench.reporting.acp.text_runs import add_convergence_columns
from noisyor_bench.reporting.methods import method_label, method_rank
from noisyor_bench.reporting.tables import CI_NOTE, format_ci, markdown_table, parse_values, summarise

ARTIFACT = "classification"
DEFAULT_MAX_ITER = 1000
BASELINE = "baseline"
COLUMNS = (
    "artifact",
    "features",
    "method",
    "K",
    "n_train",
    "seed",
    "em",
    "em_folds",
    "folds",
    "cv_seed",
    "n_docs",
    "run_dir",
)


def load_labelled_test(path: str | Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``x_test``, ``y_test`` (N x L, 0/1) and ``label_names`` of a labelled corpus (reuters.npz)."""
    path = Path(path)
    try:
        data = load_npz(path)
    except FileNotFoundError:
        raise DataError(
            f"dataset {path} not found; build it with 'noisyor-bench acp-ingest-reuters'"
        ) from None
    missing = [k for k in ("x_test", "y_test") if k not in data]
    if missing:
        raise DataError(f"dataset {path} lacks arrays {missing}: classification needs test labels y_test")
    x, y = np.asarray(data["x_test"]), np.asarray(data["y_test"])
    if y.ndim != 2 or y.shape[0] != x.shape[0] or not np.isin(y, (0, 1)).all():
        raise DataError(
            f"dataset {path}: y_test must be an N x L 0/1 array with N = {x.shape[0]}; got {y.shape}"
        )
    names = (
        [str(s) for s in data["label_names"]]
        if "label_names" in data
        else [f"label{i}" for i in range(y.shape[1])]
    )
    return x, y.astype(np.int64), names


def exact_match(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Percent of documents whose label vector is predicted exactly (all labels right)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"label shapes differ: {y_true.shape} vs {y_pred.shape}")
    return float(100.0 * np.mean(np.all(y_true == y_pred, axis=1)))


def make_classifier(max_iter: int = DEFAULT_MAX_ITER) -> Any:
    """One-vs-rest logistic regression: a linear multi-label classifier."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    return OneVsRestClassifier(LogisticRegression(max_iter=max_iter))


def cv_exact_match(
    features: np.ndarray, y: np.ndarray, folds: int, seed: int, max_iter: int = DEFAULT_MAX_ITER
) -> list[float]:
    """EM (percent) on each held-out fold of a shuffled ``folds``-fold split of the documents."""
    from sklearn.model_selection import KFold
    from threadpoolctl import threadpool_limits

    features = np.asarray(features, dtype=np.float64)
    if features.shape[0] != y.shape[0]:
        raise DataError(f"{features.shape[0]} feature rows but {y.shape[0]} label rows")
    if folds < 2 or folds > features.shape[0]:
        raise ConfigError(
            f"--folds must be in [2, {features.shape[0]}] (number of test documents); got {folds}"
        )
    scores = []
    for train, test in KFold(n_splits=folds, shuffle=True, random_state=seed).split(features):
        clf = make_classifier(max_iter)
        with (
            warnings.catch_warnings(),
            threadpool_limits(limits=1),
        ):  # one BLAS thread: same result everywhere
            # A label absent from (or present in) every training document of a fold: the
            # one-vs-rest wrapper predicts it constantly, which is the right thing here.
            warnings.filterwarnings("ignore", message="Label .* is present in all training examples")
            clf.fit(features[train], y[train])
        scores.append(exact_match(y[test], clf.predict(features[test])))
    return scores


def _row(
    features: str,
    method: str,
    k: Any,
    n_train: Any,
    seed: Any,
    scores: list[float],
    folds: int,
    cv_seed: int,
    n_docs: int,
    run_dir: str,
) -> dict[str, Any]:
    return {
        "artifact": ARTIFACT,
        "features": features,
        "method": method,
        "K": k,
        "n_train": n_train,
        "seed": seed,
        "em": float(np.mean(scores)),
        "em_folds": ";".join(repr(float(s)) for s in scores),
        "folds": folds,
        "cv_seed": cv_seed,
        "n_docs": n_docs,
        "run_dir": run_dir,
    }


def classification_table(
    runs: pd.DataFrame,
    x_test: np.ndarray,
    y_test: np.ndarray,
    folds: int,
    seed: int,
    max_iter: int = DEFAULT_MAX_ITER,
) -> pd.DataFrame:
    """One row per run (features ``q``) plus the baseline row (features ``x``); see :data:`COLUMNS`."""
    rows = [
        _row(
            "x",
            BASELINE,
            int(x_test.shape[1]),
            None,
            None,
            cv_exact_match(x_test, y_test, folds, seed, max_iter),
            folds,
            seed,
            int(y_test.shape[0]),
            "",
        )
    ]
    for r in runs.to_dict("records"):
        q = load_posterior(r["run_dir"], ("q",))["q"]
        if q.ndim != 2 or q.shape[0] != y_test.shape[0]:
            raise DataError(
                f"{r['run_dir']}/posterior_test.npz: q has shape {q.shape}, expected "
                f"({y_test.shape[0]} test documents, K)"
            )
        rows.append(
            _row(
                "q",
                r["method"],
                int(q.shape[1]),
                int(r["n_train"]),
                int(r["seed"]),
                cv_exact_match(q, y_test, folds, seed, max_iter),
                folds,
                seed,
                int(y_test.shape[0]),
                str(r["run_dir"]),
            )
        )
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for col in ("K", "n_train", "seed"):
        frame[col] = frame[col].astype("Int64")
    frame = frame.assign(_b=frame["features"] != "x", _m=frame["method"].map(method_rank))
    frame = frame.sort_values(["_b", "K", "n_train", "_m", "seed"]).drop(columns=["_b", "_m"])
    return add_convergence_columns(frame.reset_index(drop=True), runs)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """EM mean, CI and per-seed values per (K, N_train, method) of the posterior-feature rows."""
    q = table[table["features"] == "q"].copy()
    for col in ("K", "n_train", "seed"):
        q[col] = q[col].astype(int)
    return summarise(q, ["K", "n_train", "method"], ["em"])


def baseline_em(table: pd.DataFrame) -> float | None:
    b = table[table["features"] == "x"]
    return float(b["em"].iloc[0]) if len(b) else None


def classification_markdown(table: pd.DataFrame) -> str:
    s = summary(table)
    base = baseline_em(table)
    rows = []
    for r in s.assign(_m=s["method"].map(method_rank)).sort_values(["K", "n_train", "_m"]).to_dict("records"):
        rows.append(
            [
                r["K"],
                r["n_train"],
                method_label(r["method"]),
                format_ci(r["em_mean"], r["em_ci95"], r["em_n"]),
                "; ".join(f"s{seed}: {v:.2f}" for seed, v in parse_values(r["em_values"]).items()),
            ]
        )
    folds = int(table["folds"].iloc[0]) if len(table) else 0
    cv_seed = table["cv_seed"].iloc[0] if len(table) else ""
    n_docs = int(table["n_docs"].iloc[0]) if len(table) else 0
    base_text = "" if base is None else f"{base:.2f}"
    return (
        "# Supplement Fig. 3: document classification on Reuters (earn, acq, money-fx)\n\n"
        "Features: the test-set posterior q(z_k = 1 | x) of each run (K features). Classifier: one-vs-rest "
        f"logistic regression, {folds}-fold cross-validation **on the {n_docs} test documents** (shuffled KFold, "
        f"seed {cv_seed}, the same folds for every run), as in the supplement. EM: percent of held-out documents "
        "with all three labels right, averaged over folds.\n\n"
        f"Baseline (black dashed line in the figure): the same classifier on the raw binary x_test: **EM = {base_text}**.\n\n"
        + CI_NOTE
        + "\n"
        + markdown_table(["K", "N_train", "method", "EM % (mean ± CI over seeds)", "per seed"], rows)
    )
