"""APE dataset files: the Gibbs LDA test models are reproducible per seed and differ across
seeds; the evaluation combinations are documents x models, document-major."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch

from noisyor_bench.experiments.ape import datasets
from noisyor_bench.experiments.ape.pairs import evaluation_combinations
from noisyor_bench.infra.io import write_npz_atomic

SECTION = {
    "data": {
        "vocabulary": 6,
        "topics": 2,
        "gibbs_alpha_sum": 0.1,
        "gibbs_eta": 0.01,
        "gibbs_iterations": 30,
        "test_models": 3,
        "seed": 5,
    },
    "theta_pool": {"size": 10, "alpha": 0.1, "seed": 1},
    "evaluation": {"documents": 4},
}


def _raw(tmp_path):
    rng = np.random.default_rng(0)
    paths = {}
    for split, n in (("valid", 12), ("test", 8)):
        m = sp.csr_matrix(rng.poisson(1.0, size=(n, 8)))
        paths[split] = tmp_path / f"{split}.npz"
        np.savez(paths[split], data=m.data, indices=m.indices, indptr=m.indptr, shape=np.array(m.shape))
    paths["vocab"] = tmp_path / "vocab.txt"
    paths["vocab"].write_text("".join(f"w{i}\n" for i in range(8)))
    return paths


def test_lda_test_models_reproducible_per_seed(tmp_path):
    paths = _raw(tmp_path)
    a, facts = datasets.mdreviews_arrays(SECTION, paths)
    b, _ = datasets.mdreviews_arrays(SECTION, paths)
    np.testing.assert_array_equal(a["test_thetas"], b["test_thetas"])
    assert a["test_thetas"].shape == (3, 2, 6)
    np.testing.assert_allclose(a["test_thetas"].sum(-1), 1.0)
    assert list(a["lda_seeds"]) == [5, 6, 7]
    assert not np.allclose(a["test_thetas"][0], a["test_thetas"][1])  # independently seeded runs
    assert facts["gibbs"]["alpha_per_topic"] == 0.05  # Mallet's --alpha is a sum over topics
    other, _ = datasets.mdreviews_arrays({**SECTION, "data": {**SECTION["data"], "seed": 6}}, paths)
    np.testing.assert_array_equal(other["test_thetas"][0], a["test_thetas"][1])


def test_combinations_are_document_major(tmp_path):
    arrays = {
        "documents": np.arange(5 * 4).reshape(5, 4),
        "test_thetas": np.stack([np.full((2, 4), 0.25) * (m + 1) for m in range(3)]),
        "eval_documents": np.arange(2),
    }
    write_npz_atomic(tmp_path / "d.npz", **arrays)
    combos = evaluation_combinations(arrays)
    assert combos.x.shape == (6, 4) and combos.theta.shape == (6, 2, 4)
    np.testing.assert_array_equal(combos.doc_index, [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(combos.model_index, [0, 1, 2, 0, 1, 2])
    assert torch.equal(combos.x[4], torch.tensor([4.0, 5.0, 6.0, 7.0], dtype=torch.float64))
    assert float(combos.theta[5, 0, 0]) == 0.75
    sub = combos.subset(3)
    np.testing.assert_array_equal(sub.model_index, [0, 1, 2])
