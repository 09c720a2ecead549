"""APE's training models: a pool of M topic matrices, each topic ~ symmetric Dir(alpha) (paper B.1).

The paper trains on M = 50,000 models (K x V each): 400 MB for the toy bars and 18 GB for the
reviews (V = 3,000) in float32, too much to store.  The pool is therefore a *recipe*: model
``m`` is drawn from its own generator ``default_rng([seed, m])``, so any model can be produced
in any order, by any process, identically; a small pool is materialised in memory once
(:meth:`ThetaPool.materialise`), a large one drawn batch by batch (:meth:`ThetaPool.draw`).
The dataset file records the recipe (``theta_pool_*`` arrays) and model 0 as an example.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from noisyor_bench.infra.errors import ConfigError


@dataclass(frozen=True)
class ThetaPool:
    """``size`` topic matrices (n_topics x vocab_size), topic rows ~ Dir(alpha, ..., alpha)."""

    seed: int
    size: int
    n_topics: int
    vocab_size: int
    alpha: float = 0.1

    def __post_init__(self) -> None:
        if self.size < 1 or self.n_topics < 1 or self.vocab_size < 2 or self.alpha <= 0 or self.seed < 0:
            raise ConfigError(
                f"theta pool needs size >= 1, n_topics >= 1, vocab_size >= 2, alpha > 0, seed >= 0; got {self}"
            )

    def model(self, index: int) -> np.ndarray:
        """Model ``index`` of the pool: (n_topics, vocab_size) float64, rows sum to 1."""
        out = np.empty((self.n_topics, self.vocab_size), dtype=np.float64)
        self._model_into(int(index), out)
        return out

    def _model_into(self, index: int, out: np.ndarray) -> None:
        """Model ``index`` written into ``out`` (any float dtype): ``default_rng([seed, index])``'s
        ``dirichlet(alpha, size=n_topics)``, row-normalised, bit for bit, drawn as one vectorised
        ``standard_gamma`` call per model (numpy's Dirichlet draws the same gammas one by one,
        sums each row sequentially and scales by its inverse: the cumulative sum below).  Below
        alpha 0.1 numpy's Dirichlet takes another algorithm: called as is."""
        if not 0 <= index < self.size:
            raise ConfigError(f"theta pool index {index} out of range [0, {self.size})")
        rng = np.random.default_rng([int(self.seed), index])
        if self.alpha < 0.1:
            theta = rng.dirichlet(np.full(self.vocab_size, float(self.alpha)), size=self.n_topics)
        else:
            theta = rng.standard_gamma(float(self.alpha), size=(self.n_topics, self.vocab_size))
            theta *= (1.0 / np.cumsum(theta, axis=1)[:, -1])[:, None]
        np.divide(theta, theta.sum(axis=1, keepdims=True), out=out, casting="unsafe")

    def draw(
        self, indices: Sequence[int] | np.ndarray, dtype: np.dtype = np.float32, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Models ``indices``: (len, n_topics, vocab_size), each written in place into one array
        (no per-model copies; ``benchmarks/ape_theta_draws.py`` times it against the former
        per-model ``dirichlet`` + stack + cast).  ``out``: that array given by the caller (a
        block of a preallocated pool; ``dtype`` is then ``out``'s), returned filled."""
        flat = np.asarray(indices).ravel()
        shape = (flat.size, self.n_topics, self.vocab_size)
        if out is None:
            out = np.empty(shape, dtype=dtype)
        elif out.shape != shape:
            raise ConfigError(f"theta pool draw into an array of shape {out.shape}; needs {shape}")
        for i, index in enumerate(flat):
            self._model_into(int(index), out[i])
        return out

    def materialise(self, dtype: np.dtype = np.float32) -> np.ndarray:
        """The whole pool in memory (size, n_topics, vocab_size); mind ``nbytes`` first."""
        return self.draw(np.arange(self.size), dtype)

    def nbytes(self, dtype: np.dtype = np.float32) -> int:
        return self.size * self.n_topics * self.vocab_size * np.dtype(dtype).itemsize

    def arrays(self) -> dict[str, np.ndarray]:
        """The recipe as 0-d arrays of the dataset file (``theta_pool_*``) and model 0."""
        return {
            "theta_pool_seed": np.asarray(self.seed, dtype=np.int64),
            "theta_pool_size": np.asarray(self.size, dtype=np.int64),
            "theta_pool_alpha": np.asarray(self.alpha, dtype=np.float64),
            "train_theta_example": self.model(0),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> ThetaPool:
        """The pool recorded in a dataset file (:meth:`arrays`), shapes from its test models."""
        _, n_topics, vocab_size = np.shape(arrays["test_thetas"])
        return cls(
            seed=int(arrays["theta_pool_seed"]),
            size=int(arrays["theta_pool_size"]),
            n_topics=int(n_topics),
            vocab_size=int(vocab_size),
            alpha=float(arrays["theta_pool_alpha"]),
        )
