"""Fault catalogue ("CLI labels are not checked against the files"): every label a
run records -- dataset / corpus name, method, experiment, seed, N, the kind of its input file --
is checked against the file, its sidecar and the settings before anything is fitted: exit 2,
one line, no traceback (:mod:`noisyor_bench.data.labels`)."""

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import REPO
from faultworld import DATA, RANDOM_SPEC, Case, cell_argv, run_case, train_argv

from noisyor_bench.cli import main
from noisyor_bench.data.corpora.bow import Corpus, save_corpus
from noisyor_bench.infra.io import read_json, write_json_atomic

CONFIG = str(REPO / "config" / "config.yaml")
SYN = Path("data/syn-random-1.npz")
APE = Path("data/ape-toybars.npz")
NIPS = Path("data/avipam-nips.npz")
PROBLEMS = Path("data/ape-noisyor-syn-random.npz")

# grids.smoke.ape.datasets.toybars, smaller
APE_SETTINGS = {
    "data": {
        "doc_alpha": 0.01,
        "documents": 20,
        "mean_words": 30,
        "seed": 20190601,
        "test_models": 2,
        "true_topics": "prior-draw",
    },
    "encoders": ["standard", "ape-naive", "ape-model-aware"],
    "evaluation": {"documents": 2, "elbo_samples": 2, "is_samples": 4},
    "theta_pool": {"alpha": 0.1, "seed": 20190611, "size": 4},
    "training": {
        "batch_size": 10,
        "epochs": 1,
        "eval_every": 2,
        "max_steps": 2,
        "validation_pairs": 4,
        "window": 2,
    },
    "vi": {"max_steps": 2, "samples": 1},
    "nuts": {"combinations": 1, "warmup": 1, "samples": 1, "max_tree_depth": 2},
}
# grids.smoke.ape_noisyor, smaller
NOISYOR_SETTINGS = {
    "baselines": ["svi", "lb-cdi"],
    "baseline_hparams": {"svi": {"posterior_steps": 2}, "lb-cdi": {"max_rounds": 2}},
    "budget": {"batch_size": 2, "max_epochs": 1, "min_epoch_steps": 1, "patience": 1},
    "candidates": 2,
    "encoders": {"avi": {"input": "x", "method": "avi"}},
    "families": {
        "syn-random": {
            "D": 8,
            "K": 3,
            "alpha_mu": 1,
            "alpha_theta": 2,
            "beta_mu": 1,
            "beta_theta": 3,
            "family": "random",
            "leak_prob": 0.01,
            "mu": 0.15,
            "perturbation": 1.0,
            "s": 0.7,
        }
    },
    "hparams": {"hidden_dim": 4, "hidden_layers": 1, "lr": 0.003},
    "problems": {"train": 2, "val": 1, "test": 1},
    "rows": {"train": 4, "val": 4, "test": 4},
    "rows_per_model": 2,
    "seed": 1,
    "seeds": [0],
}
# grids.smoke.avipam's lda-online cell
LDA_ONLINE = {
    "method": "lda-online",
    "sizes": {"sub": 3, "super": 2, "superduper": 2, "molda": [2, 3]},
    "mean_field": {"eval_docs": 10, "evaluate_every": 1, "max_iter": 2, "stop_on_rule": True},
    "gibbs": {"iterations": 4, "stop_on_rule": True, "trace_every": 2},
    "avi": {},
    "corpus": {},
    "max_train_docs": 20,
    "threads": 1,
}
COLLAPSE = {
    "method": "avipam-lda",
    "sizes": {"sub": 3},
    "variant": "batchnorm",
    "lr": 0.05,
    "avi": {"max_epochs": 1, "lr": 0.05},
    "corpus": {},
    "max_train_docs": 20,
    "threads": 1,
}


# ---------------------------------------------------------------------------------- preparations
def syn_random(n_train_pool: int = 60) -> Path:
    """data/syn-random-1.npz built by acp-make-dataset: its sidecar records the name syn-random-1."""
    spec = json.dumps({**RANDOM_SPEC, "n_train_pool": n_train_pool})
    assert main(["acp-make-dataset", "--name", "syn-random-1", "--spec", spec, "--out", str(SYN)]) == 0
    return SYN


def ape_toybars(sidecar: bool = True) -> Path:
    """data/ape-toybars.npz built by ape-data (with its sidecar unless told otherwise)."""
    argv = ["ape-data", "--dataset", "toybars", "--settings", json.dumps(APE_SETTINGS), "--out", str(APE)]
    assert main(argv) == 0
    if not sidecar:
        APE.with_suffix(".json").unlink()
    return APE


def nips_corpus(n_train: int = 30) -> Path:
    """A tiny bag-of-words corpus written as avipam-data writes the NIPS one (sidecar: corpus nips)."""
    rng = np.random.default_rng(0)
    counts = rng.poisson(0.5, size=(n_train + 10, 12)).astype(np.int64)
    corpus = Corpus(
        sp.csr_matrix(counts[:n_train]), sp.csr_matrix(counts[n_train:]), [f"w{i}" for i in range(12)]
    )
    save_corpus(NIPS, corpus)
    write_json_atomic(NIPS.with_suffix(".json"), {"corpus": "nips", "train_documents": n_train})
    return NIPS


def noisyor_problems() -> Path:
    argv = ["ape-noisyor-problems", "--settings", json.dumps(NOISYOR_SETTINGS), "--family", "syn-random"]
    assert main([*argv, "--out-npz", str(PROBLEMS)]) == 0
    return PROBLEMS


def ape_argv(command: str, *extra: str, dataset: str = "toybars", settings: dict = APE_SETTINGS) -> list[str]:
    argv = [command, "--dataset", dataset, "--dataset-file", str(APE), "--seed", "0"]
    argv += ["--settings", json.dumps(settings), "--out-dir", "results/runs/ape"]
    return argv + (["--method", "standard"] if command == "ape-train" else []) + list(extra)


def avipam_argv(
    *extra: str, corpus: str = "nips", method: str = "lda-online", settings: dict = LDA_ONLINE
) -> list[str]:
    return [
        "avipam-run",
        "--corpus-file",
        str(NIPS),
        "--experiment",
        "small",
        "--corpus",
        corpus,
        "--method",
        method,
        "--seed",
        "0",
        "--settings",
        json.dumps(settings),
        "--out-dir",
        "results/runs/avipam-small/nips/lda-online/n20/seed0",
        *extra,
    ]


def noisyor_argv(
    command: str, *extra: str, settings: dict = NOISYOR_SETTINGS, problems: Path = PROBLEMS
) -> list[str]:
    what = ["--encoder", "avi"] if command == "ape-noisyor-train" else ["--method", "svi"]
    argv = [command, "--settings", json.dumps(settings), "--family", "syn-random", *what]
    return argv + ["--problems", str(problems), *extra]


def with_noisyor(**changes: object) -> dict:
    return {**NOISYOR_SETTINGS, **changes}


def bow_instead_of_dataset() -> list[str]:
    nips_corpus()
    return train_argv(dataset=NIPS)


def arrays_missing() -> list[str]:
    np.savez("data/other.npz", a=np.zeros(3))
    return train_argv(dataset=Path("data/other.npz"))


def family_with_other_shape() -> list[str]:
    noisyor_problems()
    family = {**NOISYOR_SETTINGS["families"]["syn-random"], "D": 16}
    return noisyor_argv("ape-noisyor-baseline", settings=with_noisyor(families={"syn-random": family}))


def effective_n_recorded() -> None:
    metrics = read_json(Path("results/runs/avipam-small/nips/lda-online/n20/seed0/metrics.json"))
    assert metrics["n_train"] == metrics["n_train_docs"] == 20


SYN_OUT = "results/runs/exp/syn-pattern/svi/n60/seed0"
CASES = [
    # ACP: --dataset-name against the sidecar acp-make-dataset wrote
    Case(
        "train-name-not-the-sidecars",
        lambda t, m: (syn_random(), train_argv(Path(SYN_OUT), "--dataset-name", "syn-pattern", dataset=SYN))[
            1
        ],
        2,
        ("--dataset-name 'syn-pattern' disagrees", "own name is 'syn-random-1'"),
    ),
    Case(
        "train-cell-name-not-the-sidecars",
        lambda t, m: (
            syn_random(),
            cell_argv(
                "acp-train-cell", "--dataset", str(SYN), "--dataset-name", "syn-pattern", "--seeds", "0"
            ),
        )[1],
        2,
        ("--dataset-name 'syn-pattern' disagrees", "own name is 'syn-random-1'"),
    ),
    Case(
        "search-name-not-the-sidecars",
        lambda t, m: (
            syn_random(),
            cell_argv(
                "acp-search",
                "--dataset",
                str(SYN),
                "--dataset-name",
                "syn-pattern",
                "--seed",
                "0",
                "--draws",
                "[{}]",
                "--out-dir",
                "s",
            ),
        )[1],
        2,
        ("--dataset-name 'syn-pattern' disagrees", "own name is 'syn-random-1'"),
    ),
    Case(
        "train-name-of-the-sidecar-trains",
        lambda t, m: (
            syn_random(),
            train_argv(
                Path("results/runs/exp/syn-random-1/svi/n60/seed0"),
                "--dataset-name",
                "syn-random-1",
                dataset=SYN,
            ),
        )[1],
        0,
        (),
    ),
    # ACP: --experiment known to the config
    Case(
        "train-experiment-bogus",
        lambda t, m: train_argv(
            Path("results/runs/bogus/toy/svi/n60/seed0"), "--experiment", "bogus", "--config", CONFIG
        ),
        2,
        ("--experiment 'bogus' is not an experiment of", "fig3a"),
    ),
    Case(
        "train-cell-experiment-bogus",
        lambda t, m: cell_argv("acp-train-cell", "--experiment", "bogus", "--config", CONFIG, "--seeds", "0"),
        2,
        ("--experiment 'bogus' is not an experiment of",),
    ),
    Case(
        "search-experiment-not-a-name",
        lambda t, m: cell_argv(
            "acp-search", "--experiment", "../x", "--seed", "0", "--draws", "[{}]", "--out-dir", "s"
        ),
        2,
        ("--experiment: experiment: name '../x' is not allowed",),
    ),
    # ACP: seeds and file kinds
    Case(
        "train-cell-negative-seed",
        lambda t, m: cell_argv("acp-train-cell", "--seeds", "0", "-1"),
        2,
        ("--seeds: must be an integer >= 0; got -1",),
    ),
    Case(
        "search-negative-seed",
        lambda t, m: cell_argv("acp-search", "--seed", "-3", "--draws", "[{}]", "--out-dir", "s"),
        2,
        ("--seed: must be an integer >= 0",),
    ),
    Case(
        "train-given-a-corpus",
        lambda t, m: bow_instead_of_dataset(),
        2,
        ("is a bag-of-words corpus (avipam-data), not a noisy-OR dataset",),
    ),
    Case(
        "train-npz-without-the-arrays",
        lambda t, m: arrays_missing(),
        2,
        ("data/other.npz is not a noisy-OR dataset", "it lacks arrays ['x_train'"),
    ),
    # APE: --dataset against the file, seeds, kinds, settings
    Case(
        "ape-train-mdreviews-label-on-toybars",
        lambda t, m: (ape_toybars(), ape_argv("ape-train", dataset="mdreviews"))[1],
        2,
        ("--dataset 'mdreviews' disagrees", "own name is 'toybars'"),
    ),
    Case(
        "ape-train-mdreviews-label-no-sidecar",
        lambda t, m: (ape_toybars(sidecar=False), ape_argv("ape-train", dataset="mdreviews"))[1],
        2,
        ("--dataset 'mdreviews' disagrees", "'true_topics', an array of the toybars dataset"),
    ),
    Case(
        "ape-vi-mdreviews-label-on-toybars",
        lambda t, m: (ape_toybars(), ape_argv("ape-vi", dataset="mdreviews"))[1],
        2,
        ("--dataset 'mdreviews' disagrees",),
    ),
    Case(
        "ape-train-negative-seed",
        lambda t, m: (ape_toybars(), ape_argv("ape-train", "--seed", "-1"))[1],
        2,
        ("--seed: must be an integer >= 0; got -1",),
    ),
    Case(
        "ape-vi-negative-seed",
        lambda t, m: (ape_toybars(), ape_argv("ape-vi", "--seed", "-1"))[1],
        2,
        ("--seed: must be an integer >= 0",),
    ),
    Case(
        "ape-train-given-a-corpus",
        lambda t, m: (nips_corpus(), ape_argv("ape-train", "--dataset-file", str(NIPS)))[1],
        2,
        ("is a bag-of-words corpus (avipam-data), not an amortized-topic-model dataset",),
    ),
    Case(
        "ape-train-settings-without-training",
        lambda t, m: (
            ape_toybars(),
            ape_argv("ape-train", settings={k: v for k, v in APE_SETTINGS.items() if k != "training"}),
        )[1],
        2,
        ("--settings: no ['training'] section",),
    ),
    # APE on noisy-OR: family, seeds, kind and shapes of the problem file
    Case(
        "ape-noisyor-train-unknown-family",
        lambda t, m: noisyor_argv("ape-noisyor-train", "--family", "syn-pattern"),
        2,
        ("--family: unknown value 'syn-pattern'",),
    ),
    Case(
        "ape-noisyor-train-negative-seed",
        lambda t, m: (
            noisyor_problems(),
            noisyor_argv("ape-noisyor-train", settings=with_noisyor(seeds=[0, -2])),
        )[1],
        2,
        ("--settings seeds: must be an integer >= 0; got -2",),
    ),
    Case(
        "ape-noisyor-baseline-given-a-dataset",
        lambda t, m: noisyor_argv("ape-noisyor-baseline", problems=DATA),
        2,
        ("is a noisy-OR dataset", "not a noisy-OR problem file"),
    ),
    Case(
        "ape-noisyor-baseline-other-family-shapes",
        lambda t, m: family_with_other_shape(),
        2,
        ("is not family 'syn-random'", "D 8 (settings: 16)"),
    ),
    # aviPAM: corpus, method, experiment, N, seed, kind, settings
    Case(
        "avipam-run-nips-labelled-20news",
        lambda t, m: (nips_corpus(), avipam_argv(corpus="20news"))[1],
        2,
        ("--corpus '20news' disagrees", "corpus's own name is 'nips'"),
    ),
    Case(
        "avipam-run-method-not-the-settings",
        lambda t, m: (nips_corpus(), avipam_argv(method="lda-gibbs"))[1],
        2,
        ("--method 'lda-gibbs' disagrees with --settings", "'lda-online'"),
    ),
    Case(
        "avipam-run-collapse-variant-not-the-settings",
        lambda t, m: (
            nips_corpus(),
            avipam_argv("--experiment", "collapse", method="none-lr0.05", settings=COLLAPSE),
        )[1],
        2,
        ("--method 'none-lr0.05' disagrees with --settings", "variant is 'batchnorm'"),
    ),
    Case(
        "avipam-run-experiment-bogus",
        lambda t, m: (nips_corpus(), avipam_argv("--experiment", "bogus"))[1],
        2,
        ("--experiment: unknown value 'bogus'", "collapse"),
    ),
    Case(
        "avipam-run-max-docs-above-the-corpus",
        lambda t, m: (nips_corpus(), avipam_argv(settings={**LDA_ONLINE, "max_train_docs": 1_000_000}))[1],
        2,
        ("max_train_docs 1000000 exceeds the 30 training documents",),
    ),
    Case(
        "avipam-run-negative-seed",
        lambda t, m: (nips_corpus(), avipam_argv("--seed", "-1"))[1],
        2,
        ("--seed: must be an integer >= 0; got -1",),
    ),
    Case(
        "avipam-run-given-a-dataset",
        lambda t, m: avipam_argv("--corpus-file", str(DATA)),
        2,
        ("is a noisy-OR dataset", "not a bag-of-words corpus"),
    ),
    Case(
        "avipam-run-settings-without-sizes",
        lambda t, m: (
            nips_corpus(),
            avipam_argv(settings={k: v for k, v in LDA_ONLINE.items() if k != "sizes"}),
        )[1],
        2,
        ("--settings: lda-online needs sizes ['sub']",),
    ),
    Case(
        "avipam-run-records-the-effective-n",
        lambda t, m: (nips_corpus(), avipam_argv())[1],
        0,
        (),
        after=effective_n_recorded,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fault(case, template, tmp_path, monkeypatch, capsys):
    run_case(case, template, tmp_path, monkeypatch, capsys)
