"""Patterned generating parameters: SYN-PATTERN and MULTI-MNIST (paper Section 4.1, Table 2).

"The model parameters theta and theta0 are reshaped from the patterns depicted in Fig. 2a
(SYN-PATTERN) and 2b (MULTI-MNIST) ... white pixels in the kth pattern indicate theta_ik = 0
... the last pattern refers to the pattern of leak probability.  The values of non-zero
theta_ik are -log(1 - 0.8)."  The figures' pixels are not in the text, so we design them
(docs/patterns.md):

* SYN-PATTERN: the eight 8x8 shapes of :data:`SYN_PATTERNS` (8 or 9 pixels each, 15 pixels
  shared by two shapes, none by three).  Their number of pixels is fixed by Table 2: with
  mu = 0.125 and p = 0.8 every pattern pixel adds ~0.1/64 to the density, so 89.0% sparsity
  leaves room for only ~65 pattern pixels on 64 observations.
* MULTI-MNIST: one binarised MNIST test image per digit (:mod:`.mnist`).

Leak (both datasets): ``leak_prob`` (default 0.01) on *every* pixel, i.e.
``theta0_i = -log(1 - 0.01)``.  A positive leak everywhere keeps every x possible under the
true model (with theta0_i = 0 a pixel outside all active patterns can never be on, so
log p(x) = -inf for any x that a learned model's noise puts there); 1% is small next to the
0.8 pattern probability (0.6 stray pixels per 8x8 image).  A 0.8 leak -- the paper's value
for "non-zero" pixels -- on even one pixel would cost 1.25 points of sparsity per pixel
and turn "leak" into a pattern that is always on, so we do not read the paper that way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Real
from pathlib import Path
from typing import Any

import numpy as np

from noisyor_bench.data.synthetic.sparsity import expected_sparsity
from noisyor_bench.infra.errors import ConfigError

#: Leak probability p(x_i = 1 | z = 0) on every pixel unless the spec sets ``leak_prob``.
DEFAULT_LEAK_PROB = 0.01
SYN_SHAPE = (8, 8)

#: SYN-PATTERN shapes ('#' = theta_ik > 0), in the order of the latent variables.
SYN_PATTERNS: dict[str, str] = {
    "horizontal bar": """
        ........
        ........
        ########
        ........
        ........
        ........
        ........
        ........""",
    "vertical bar": """
        ....#...
        ....#...
        ....#...
        ....#...
        ....#...
        ....#...
        ....#...
        ....#...""",
    "diagonal": """
        #.......
        .#......
        ..#.....
        ...#....
        ....#...
        .....#..
        ......#.
        .......#""",
    "anti-diagonal": """
        .......#
        ......#.
        .....#..
        ....#...
        ...#....
        ..#.....
        .#......
        #.......""",
    "left block": """
        ........
        ........
        ........
        ###.....
        ###.....
        ###.....
        ........
        ........""",
    "top-right corner": """
        ...#####
        .......#
        .......#
        .......#
        ........
        ........
        ........
        ........""",
    "bottom-right block": """
        ........
        ........
        ........
        ........
        ........
        ........
        ....####
        ....####""",
    "right ring": """
        ........
        ........
        ........
        .....###
        .....#.#
        .....###
        ........
        ........""",
}


#: A generator variant of SYN-PATTERN with the same number of pattern pixels (65) and nearly the
#: same sparsity (89.5% against 89.2%), but overlapping shapes: 36 pixel overlaps between pairs of
#: shapes (SYN_PATTERNS: 15) and 8 pixels under three or more shapes (SYN_PATTERNS: none).  The
#: paper's Fig. 2a is an image, so its shapes' overlap is not in the text; this variant shows
#: which claims depend on it (docs/patterns.md, "Generator variants").
SYN_OVERLAP_PATTERNS: dict[str, str] = {
    "horizontal bar": """
        ........
        ........
        ........
        ########
        ........
        ........
        ........
        ........""",
    "vertical bar": """
        ...#....
        ...#....
        ...#....
        ...#....
        ...#....
        ...#....
        ...#....
        ...#....""",
    "diagonal": SYN_PATTERNS["diagonal"],
    "anti-diagonal": SYN_PATTERNS["anti-diagonal"],
    "centre block": """
        ........
        ........
        ..###...
        ..###...
        ..###...
        ........
        ........
        ........""",
    "upper-right ring": """
        ........
        .....###
        .....#.#
        .....###
        ........
        ........
        ........
        ........""",
    "second row bar": SYN_PATTERNS["horizontal bar"],  # row 2, as SYN-PATTERN's
    "second column bar": SYN_PATTERNS["vertical bar"],  # column 4, as SYN-PATTERN's
}

#: The designed shape sets by their config name (``patterns:`` of a ``family: pattern`` dataset).
SHAPE_SETS: dict[str, dict[str, str]] = {
    "syn-pattern": SYN_PATTERNS,
    "syn-pattern-overlap": SYN_OVERLAP_PATTERNS,
}


def parse_ascii(picture: str, shape: tuple[int, int] = SYN_SHAPE) -> np.ndarray:
    """A '#'/'.' picture as a 0/1 uint8 array of ``shape`` (rows top to bottom)."""
    rows = [line.strip() for line in picture.strip().splitlines()]
    if len(rows) != shape[0] or any(len(r) != shape[1] or set(r) - {"#", "."} for r in rows):
        raise ValueError(f"pattern picture must be {shape[0]} rows of {shape[1]} '#'/'.': {rows}")
    return np.array([[c == "#" for c in r] for r in rows], dtype=np.uint8)


def syn_patterns(kind: str = "syn-pattern") -> np.ndarray:
    """A designed shape set (:data:`SHAPE_SETS`) as a (64, 8) 0/1 array; column k is pattern k,
    row-major pixels."""
    return np.stack([parse_ascii(p).ravel() for p in SHAPE_SETS[kind].values()], axis=1)


def rate(prob: float) -> float:
    """The noisy-OR rate ``-log(1 - p)`` of an activation probability (eq. 4)."""
    return -math.log1p(-prob)


def _prob(spec: Mapping[str, Any], key: str, default: float | None, *, low_open: bool = True) -> float:
    """A probability from ``spec`` (or ``default``), checked; ConfigError names the key."""
    value = spec.get(key, default)
    if value is None:
        raise ConfigError(f"{key}: missing (a pattern dataset needs mu and weight_prob)")
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ConfigError(f"{key}: expected a number, got {value!r}")
    value = float(value)
    if not ((0.0 < value if low_open else 0.0 <= value) and value < 1.0):
        raise ConfigError(f"{key}: expected a probability in {'(0' if low_open else '[0'}, 1), got {value!r}")
    return value


def _mu(spec: Mapping[str, Any], k: int) -> np.ndarray:
    """``mu`` as a scalar for every latent or a list of K probabilities."""
    value = spec.get("mu")
    if isinstance(value, (list, tuple)):
        if len(value) != k:
            raise ConfigError(f"mu: a list needs {k} entries (one per pattern), got {len(value)}")
        return np.array([_prob({"mu": v}, "mu", None) for v in value], dtype=np.float64)
    return np.full(k, _prob(spec, "mu", None), dtype=np.float64)


def pattern_parameters(
    spec: Mapping[str, Any], raw_data_dir: str | Path | None, cache_dir: str | Path
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """``(theta (D,K), theta0 (D,), mu (K,), info)`` for a ``family: pattern`` dataset entry.

    Spec keys: ``patterns`` ('syn-pattern' | 'syn-pattern-overlap' | 'mnist'), ``mu``, ``weight_prob`` (theta_ik =
    -log(1 - weight_prob) on pattern pixels), optional ``leak_prob`` (default
    :data:`DEFAULT_LEAK_PROB`, on every pixel) and, for MNIST, ``mnist_threshold``.  ``info``
    records the provenance for the dataset's sidecar JSON.  MNIST files come from
    :func:`noisyor_bench.data.rawdata.fetch` (mirror or download into ``cache_dir``).
    """
    kind = spec.get("patterns")
    weight_prob = _prob(spec, "weight_prob", None)
    leak_prob = _prob(spec, "leak_prob", DEFAULT_LEAK_PROB, low_open=False)
    info: dict[str, Any] = {
        "patterns": kind,
        "weight_prob": weight_prob,
        "leak_prob": leak_prob,
        "leak": "uniform",
    }
    if kind in SHAPE_SETS:
        binary = syn_patterns(kind)
        info.update(
            image_shape=list(SYN_SHAPE),
            pattern_names=list(SHAPE_SETS[kind]),
            pattern_pixels=binary.sum(axis=0).tolist(),
            reading="designed shapes, see docs/patterns.md",
        )
    elif kind == "mnist":
        from noisyor_bench.data import rawdata
        from noisyor_bench.data.synthetic.mnist import DEFAULT_THRESHOLD, IMAGE_SHAPE, mnist_digit_patterns

        threshold = spec.get("mnist_threshold", DEFAULT_THRESHOLD)
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, Real)
            or not 0.0 <= float(threshold) < 1.0
        ):
            raise ConfigError(f"mnist_threshold: expected a number in [0, 1), got {threshold!r}")
        images = rawdata.fetch("mnist-test-images", raw_data_dir, cache_dir)
        labels = rawdata.fetch("mnist-test-labels", raw_data_dir, cache_dir)
        binary, indices = mnist_digit_patterns(images, labels, float(threshold))
        info.update(
            image_shape=list(IMAGE_SHAPE),
            pattern_names=[str(d) for d in range(10)],
            pattern_pixels=binary.sum(axis=0).tolist(),
            mnist_threshold=float(threshold),
            exemplar_indices=indices,
            exemplar_rule="Jaccard medoid of the binarised MNIST test images of each digit (ties: lowest index)",
            raw_sha256={k: rawdata.entry(k).sha256 for k in ("mnist-test-images", "mnist-test-labels")},
            reading="MNIST exemplars, see docs/patterns.md",
        )
    else:
        raise ConfigError(f"patterns: {kind!r} is not allowed; allowed values: {[*SHAPE_SETS, 'mnist']}")
    d, k = binary.shape
    theta = binary.astype(np.float64) * rate(weight_prob)
    theta0 = np.full(d, rate(leak_prob), dtype=np.float64)
    mu = _mu(spec, k)
    info["expected_sparsity_percent"] = 100.0 * expected_sparsity(theta, theta0, mu)
    return theta, theta0, mu, info
