"""Pachinko allocation machines (Li & McCallum 2006) with the word paths integrated out.

A PAM here is a layered DAG: a root, ``L`` levels of internal nodes and the vocabulary.  Level
``l`` (0 = the root's level) has ``n_parents`` nodes; each parent ``p`` holds a distribution
over a contiguous range of the next level's nodes (its children).  The last level's children
are the *sub-topics* ``k = 0..K-1``, each a distribution ``beta_k`` over the ``V`` words, shared
by the corpus; every other distribution is drawn per document from a symmetric Dirichlet.

With the path ``root -> n_1 -> ... -> k -> w`` of every word summed out, a document's words are
i.i.d. categorical draws from

    p(w | doc) = theta_0^T Theta_1 ... Theta_{L-1} beta        (4-PAM: theta_root^T Theta_super beta)

where ``Theta_l`` is the ``(n_parents_l, n_children_l)`` matrix of level-``l`` proportions (rows on
the simplex, zero outside each parent's children).  The special cases:

* LDA = 3-PAM: one level, ``1 x K``;
* 4-PAM: ``1 x S`` then ``S x K`` (every super-topic over every sub-topic);
* 5-PAM: ``1 x R``, ``R x S``, ``S x K`` ("super-duper" topics R);
* MoLDA (mixture of LDAs with ``K_1, ..., K_M`` topics): ``1 x M`` then an ``M x sum(K_m)`` level
  whose parent ``m`` has only the ``K_m`` topics of component ``m`` as children;
* CTM: the LDA structure; its prior (a learned full-covariance Gaussian in the softmax basis)
  lives in :mod:`noisyor_bench.models.topics.gaussian`.

Every per-document distribution is parameterised in the softmax basis: a latent vector ``h_l``
of ``latent_dim(l) = sum_p |children(p)|`` reals, softmax-ed within each parent's block
(:func:`level_proportions`).  The Laplace approximation of each Dirichlet in that basis is
:func:`laplace_prior` (MacKay 1998; :mod:`noisyor_bench.models.topics.dirichlet_laplace`).

The document log-likelihood is that of the word *sequence* (``sum_v x_v log p_v``), without the
multinomial coefficient, as AVITM (Srivastava & Sutton 2017) and perplexity computations use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.models.sparse import sddmm
from noisyor_bench.models.topics.counts import SparseCounts
from noisyor_bench.models.topics.dirichlet_laplace import laplace_dirichlet_prior

#: Added to word probabilities before the log (AVITM adds 1e-10 likewise): a word of zero
#: probability under a saturated topic gives a large finite loss, not -inf.
LOG_FLOOR = 1e-10

STRUCTURE_KINDS = ("lda", "pam4", "pam5", "molda", "ctm")


@dataclass(frozen=True)
class PamLevel:
    """One level of the DAG: ``n_parents`` nodes, each over a range of ``n_children`` nodes."""

    n_parents: int
    n_children: int
    children: tuple[tuple[int, int], ...]  # per parent: (start, stop) into the children

    @property
    def latent_dim(self) -> int:
        """Reals of the softmax-basis latent of this level: the sum of the parents' child counts."""
        return sum(stop - start for start, stop in self.children)

    def mask(self, device: torch.device | str | None = None) -> torch.Tensor:
        """Boolean ``(n_parents, n_children)``: True where parent ``p`` may choose child ``c``."""
        m = torch.zeros(self.n_parents, self.n_children, dtype=torch.bool, device=device)
        for p, (start, stop) in enumerate(self.children):
            m[p, start:stop] = True
        return m


@dataclass(frozen=True)
class PamStructure:
    """A layered PAM: its levels (root first) and the sub-topic blocks (MoLDA's components)."""

    kind: str
    levels: tuple[PamLevel, ...]
    topic_blocks: tuple[int, ...]  # sizes of the sub-topic groups; one block unless MoLDA

    @property
    def n_topics(self) -> int:
        """K, the number of sub-topics (rows of beta)."""
        return self.levels[-1].n_children

    @property
    def latent_dims(self) -> tuple[int, ...]:
        """Softmax-basis dimensions of every level, root first."""
        return tuple(level.latent_dim for level in self.levels)

    def describe(self) -> str:
        """E.g. ``pam4: 1x2 -> 2x50`` (parents x children per level)."""
        return f"{self.kind}: " + " -> ".join(f"{lv.n_parents}x{lv.n_children}" for lv in self.levels)


def _full_level(n_parents: int, n_children: int) -> PamLevel:
    if n_parents < 1 or n_children < 2:
        raise ConfigError(
            f"a PAM level needs >= 1 parent and >= 2 children per parent, got {n_parents} x {n_children}"
        )
    return PamLevel(n_parents, n_children, tuple((0, n_children) for _ in range(n_parents)))


def pam_chain(sizes: Sequence[int], kind: str = "pam") -> PamStructure:
    """Fully connected n-PAM with internal level sizes ``sizes`` (root excluded, last = K).

    ``pam_chain([K])`` is LDA, ``pam_chain([S, K])`` 4-PAM, ``pam_chain([R, S, K])`` 5-PAM."""
    sizes = [int(s) for s in sizes]
    if not sizes:
        raise ConfigError("a PAM needs at least one level of topics")
    parents = [1, *sizes[:-1]]
    levels = tuple(_full_level(p, c) for p, c in zip(parents, sizes, strict=True))
    return PamStructure(kind=kind, levels=levels, topic_blocks=(sizes[-1],))


def lda_structure(n_topics: int) -> PamStructure:
    """LDA as 3-PAM: root -> K topics -> words."""
    return pam_chain([n_topics], kind="lda")


def pam4_structure(n_super: int, n_sub: int) -> PamStructure:
    """4-PAM: root -> S super-topics -> K sub-topics -> words."""
    return pam_chain([n_super, n_sub], kind="pam4")


def pam5_structure(n_superduper: int, n_super: int, n_sub: int) -> PamStructure:
    """5-PAM: root -> R super-duper-topics -> S super-topics -> K sub-topics -> words."""
    return pam_chain([n_superduper, n_super, n_sub], kind="pam5")


def ctm_structure(n_topics: int) -> PamStructure:
    """CTM's structure is LDA's; only its prior differs (learned full-covariance Gaussian)."""
    return pam_chain([n_topics], kind="ctm")


def molda_structure(component_topics: Sequence[int]) -> PamStructure:
    """Mixture of LDAs: root -> M components -> component m's K_m topics -> words."""
    sizes = [int(k) for k in component_topics]
    if len(sizes) < 2 or min(sizes) < 2:
        raise ConfigError(f"MoLDA needs >= 2 components of >= 2 topics each, got {sizes}")
    starts = [sum(sizes[:m]) for m in range(len(sizes))]
    ranges = tuple((s, s + k) for s, k in zip(starts, sizes, strict=True))
    levels = (_full_level(1, len(sizes)), PamLevel(len(sizes), sum(sizes), ranges))
    return PamStructure(kind="molda", levels=levels, topic_blocks=tuple(sizes))


def make_structure(kind: str, sizes: Sequence[int]) -> PamStructure:
    """The structure named ``kind`` (:data:`STRUCTURE_KINDS`) with ``sizes``:

    lda/ctm ``[K]``; pam4 ``[S, K]``; pam5 ``[R, S, K]``; molda ``[K_1, ..., K_M]``."""
    sizes = [int(s) for s in sizes]
    expected = {"lda": 1, "ctm": 1, "pam4": 2, "pam5": 3}
    if kind not in STRUCTURE_KINDS:
        raise ConfigError(f"unknown PAM structure {kind!r}; known: {', '.join(STRUCTURE_KINDS)}")
    if kind in expected and len(sizes) != expected[kind]:
        raise ConfigError(f"structure {kind!r} takes {expected[kind]} size(s), got {sizes}")
    if kind == "molda":
        return molda_structure(sizes)
    return pam_chain(sizes, kind=kind)


# ---------------------------------------------------------------------- proportions


def level_proportions(h: torch.Tensor, level: PamLevel) -> torch.Tensor:
    """``(..., n_parents, n_children)`` proportions from the softmax-basis latent ``h (..., latent_dim)``.

    The reals of ``h`` fill each parent's child range in parent order; each row is a softmax
    over its own children and exactly 0 elsewhere.  A fully connected level is just a reshape of
    ``h`` to ``(n_parents, n_children)`` followed by a row softmax (the paper's 3-D tensor)."""
    if h.shape[-1] != level.latent_dim:
        raise ValueError(f"latent has {h.shape[-1]} reals, level needs {level.latent_dim}")
    batch = h.shape[:-1]
    if all(c == (0, level.n_children) for c in level.children):
        return torch.softmax(h.reshape(*batch, level.n_parents, level.n_children), dim=-1)
    mask = level.mask(h.device)
    logits = h.new_full((*batch, level.n_parents, level.n_children), float("-inf"))
    logits[..., mask] = h
    return torch.softmax(logits, dim=-1)


def subtopic_proportions(thetas: Sequence[torch.Tensor]) -> torch.Tensor:
    """``(B, K)`` = ``theta_0^T Theta_1 ... Theta_{L-1}``: the batched product of the level
    proportions (each ``(B, n_parents, n_children)``; the root level has one parent)."""
    if not thetas:
        raise ValueError("need the proportions of at least one level")
    if thetas[0].shape[-2] != 1:
        raise ValueError(f"the root level must have one parent, got shape {tuple(thetas[0].shape)}")
    current = thetas[0]  # (B, 1, n_1)
    for theta in thetas[1:]:
        current = torch.bmm(current, theta)
    return current.squeeze(-2)


def word_distribution(thetas: Sequence[torch.Tensor], beta: torch.Tensor) -> torch.Tensor:
    """``(B, V)`` word probabilities of each document: ``subtopic_proportions(thetas) @ beta``."""
    return subtopic_proportions(thetas) @ beta


def document_log_likelihood(
    counts: torch.Tensor, thetas: Sequence[torch.Tensor], beta: torch.Tensor
) -> torch.Tensor:
    """``(B,)`` log-likelihood of each document's word sequence, ``sum_v x_v log p(v | doc)``."""
    return log_likelihood_from_word_probs(counts, word_distribution(thetas, beta))


def log_likelihood_from_word_probs(counts: torch.Tensor, word_probs: torch.Tensor) -> torch.Tensor:
    """``(B,)`` ``sum_v counts_v log(p_v + LOG_FLOOR)`` (AVITM's floor)."""
    return (counts * torch.log(word_probs + LOG_FLOOR)).sum(-1)


def sparse_log_likelihood(counts: SparseCounts, subtopics: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """``(L, B)``: :func:`log_likelihood_from_word_probs` of ``subtopics @ beta`` at the non-zero
    counts only, for ``subtopics (L * B, K)`` (draw ``l`` of document ``d`` at row ``l * B + d``).

    A zero count adds nothing to ``sum_v x_v log p_v``, so the word probabilities are needed
    only where ``x_v > 0``: an SDDMM, O(L * nnz * K) instead of the ``(L * B, V)`` product."""
    batch = counts.shape[0]
    copies = subtopics.shape[0] // max(batch, 1)
    if copies * batch != subtopics.shape[0]:
        raise ValueError(f"subtopics has {subtopics.shape[0]} rows, not a multiple of the batch's {batch}")
    pattern, values = counts.replicated(copies)
    terms = values * torch.log(sddmm(pattern, subtopics, beta.t()) + LOG_FLOOR)
    return terms.new_zeros(copies * batch).index_add(0, pattern.row, terms).view(copies, batch)


# ---------------------------------------------------------------------- priors


def laplace_prior(
    level: PamLevel, alpha: float, dtype: torch.dtype = torch.float64
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mean, variance)``, each ``(latent_dim,)``: every parent's symmetric Dir(alpha) over its
    children, Laplace-approximated in the softmax basis, concatenated in parent order."""
    means, variances = [], []
    for start, stop in level.children:
        m, v = laplace_dirichlet_prior(alpha, stop - start, dtype=dtype)
        means.append(m)
        variances.append(v)
    return torch.cat(means), torch.cat(variances)


# ---------------------------------------------------------------------- sampling


def sample_documents(
    structure: PamStructure,
    alphas: Sequence[float],
    beta: torch.Tensor,
    lengths: Sequence[int] | torch.Tensor,
    generator: torch.Generator,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Documents from the generative process: per document and level, Dirichlet(alpha_l) rows;
    then ``lengths[d]`` words from the integrated word distribution.  Returns the ``(D, V)``
    counts and the per-level proportions ``[(D, n_parents, n_children)]`` (synthetic data, tests)."""
    if len(alphas) != len(structure.levels):
        raise ConfigError(f"need one alpha per level ({len(structure.levels)}), got {len(alphas)}")
    lengths = torch.as_tensor(lengths, dtype=torch.int64)
    if lengths.ndim != 1 or bool((lengths < 0).any()):
        raise DataError("document lengths must be a 1-D array of non-negative integers")
    n_docs, dtype = int(lengths.shape[0]), beta.dtype
    # numpy's Dirichlet, seeded from the torch generator (torch's Dirichlet takes no generator)
    rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=generator)))
    thetas = []
    for level, alpha in zip(structure.levels, alphas, strict=True):
        theta = torch.zeros(n_docs, level.n_parents, level.n_children, dtype=dtype)
        for p, (start, stop) in enumerate(level.children):
            draws = rng.dirichlet(np.full(stop - start, float(alpha)), size=n_docs)
            theta[:, p, start:stop] = torch.as_tensor(draws, dtype=dtype)
        thetas.append(theta)
    probs = word_distribution(thetas, beta)
    counts = torch.zeros(n_docs, beta.shape[1], dtype=dtype)
    for d in range(n_docs):
        if int(lengths[d]) > 0:
            words = torch.multinomial(probs[d], int(lengths[d]), replacement=True, generator=generator)
            counts[d] = torch.bincount(words, minlength=beta.shape[1]).to(dtype)
    return counts, thetas


__all__ = [
    "LOG_FLOOR",
    "STRUCTURE_KINDS",
    "PamLevel",
    "PamStructure",
    "ctm_structure",
    "document_log_likelihood",
    "laplace_prior",
    "lda_structure",
    "level_proportions",
    "log_likelihood_from_word_probs",
    "make_structure",
    "molda_structure",
    "pam4_structure",
    "pam5_structure",
    "pam_chain",
    "sample_documents",
    "sparse_log_likelihood",
    "subtopic_proportions",
    "word_distribution",
]
