"""APE's (document, model) combinations: the training models, validation and test pairs.

* **Test combinations** (Table 1): the first ``n_eval`` documents crossed with the 10 test
  models, document-major, as the authors' ``itertools.product(documents, topics)`` truncated
  to 300 (30 documents x 10 models).  The documents are also training documents (the authors
  train on every document): what is unseen is the model.
* **Training models**: the pool (:class:`~noisyor_bench.data.synthetic.theta_pool.ThetaPool`),
  held in memory when it fits in :data:`MATERIALISE_BYTES`, else drawn batch by batch.
  The Standard encoder's one model is the pool's model 0.
* **Validation pairs**: random documents with models of a separate validation pool (seed
  ``pool seed + 1``), the same for every training seed; the Standard encoder's validation
  pairs use its own model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from noisyor_bench.data.synthetic.theta_pool import ThetaPool
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.infra.errors import DataError

MATERIALISE_BYTES = 1 << 30  # pools up to 1 GiB (float32) are drawn once and kept in memory
VALIDATION_MODELS = 50


@dataclass(frozen=True)
class EvalCombinations:
    """The evaluation pairs: row ``i`` is document ``doc_index[i]`` with model ``model_index[i]``."""

    x: torch.Tensor  # (P, V) counts
    theta: torch.Tensor  # (P, K, V)
    doc_index: np.ndarray  # (P,)
    model_index: np.ndarray  # (P,)

    @property
    def n_models(self) -> int:
        return int(self.model_index.max()) + 1

    def subset(self, n: int) -> EvalCombinations:
        """The first ``n`` combinations (document-major: the first documents with every model)."""
        n = min(int(n), self.x.shape[0])
        return EvalCombinations(self.x[:n], self.theta[:n], self.doc_index[:n], self.model_index[:n])


def evaluation_combinations(
    arrays: dict[str, np.ndarray], dtype: torch.dtype = torch.float64
) -> EvalCombinations:
    """Documents ``eval_documents`` x test models, document-major."""
    docs = np.asarray(arrays["eval_documents"], dtype=np.int64)
    thetas = np.asarray(arrays["test_thetas"])
    if docs.size == 0 or thetas.ndim != 3:
        raise DataError("dataset has no evaluation documents or no (M, K, V) test_thetas")
    doc_index = np.repeat(docs, thetas.shape[0])
    model_index = np.tile(np.arange(thetas.shape[0]), docs.size)
    x = torch.as_tensor(np.asarray(arrays["documents"])[doc_index], dtype=dtype)
    theta = torch.as_tensor(thetas[model_index], dtype=dtype)
    return EvalCombinations(x, theta, doc_index, model_index)


def training_models(pool: ThetaPool) -> tuple[torch.Tensor | object, int]:
    """The APE encoders' theta source for ``train_encoder`` and the number of models."""
    if pool.nbytes() <= MATERIALISE_BYTES:
        return torch.from_numpy(pool.materialise(np.float32)), pool.size

    def draw(indices: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(pool.draw(indices.cpu().numpy(), np.float32))

    return draw, pool.size


def validation_pairs(
    documents: np.ndarray, pool: ThetaPool, n_pairs: int, standard: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x (n, V), theta (n, K, V)) fixed validation pairs (module docstring)."""
    rng = np.random.default_rng(stream_seed(pool.seed, "ape-validation-pairs"))
    doc_idx = rng.integers(documents.shape[0], size=n_pairs)
    x = torch.as_tensor(documents[doc_idx], dtype=torch.float32)
    if standard:
        theta = torch.from_numpy(pool.draw([0])).expand(n_pairs, -1, -1).contiguous()
        return x, theta
    valid_pool = ThetaPool(pool.seed + 1, VALIDATION_MODELS, pool.n_topics, pool.vocab_size, pool.alpha)
    models = valid_pool.materialise(np.float32)
    model_idx = rng.integers(VALIDATION_MODELS, size=n_pairs)
    return x, torch.from_numpy(models[model_idx])
