"""SYN-PATTERN and MULTI-MNIST generating parameters, IDX parsing, expected sparsity, pictures.

Sparsities are checked against brute-force enumeration of all 2^K latent states and against
Monte Carlo samples drawn here with numpy, never against the code's own formula alone.
"""

from __future__ import annotations

import gzip
import itertools
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from noisyor_bench.data.synthetic.mnist import jaccard_medoid, load_idx, mnist_digit_patterns
from noisyor_bench.data.synthetic.patterns import SYN_PATTERNS, parse_ascii, pattern_parameters, syn_patterns
from noisyor_bench.data.synthetic.sparsity import expected_sparsity
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.reporting.acp.patterns import plot_patterns

SYN_SPEC = {"family": "pattern", "patterns": "syn-pattern", "mu": 0.125, "weight_prob": 0.8}
MNIST_SPEC = {"family": "pattern", "patterns": "mnist", "mu": 0.2, "weight_prob": 0.8}


def brute_force_sparsity(theta: np.ndarray, theta0: np.ndarray, mu: np.ndarray) -> float:
    """E[fraction of zeros] by summing p(z) p(x_i = 0 | z) over all 2^K states z."""
    k = theta.shape[1]
    z = np.array(list(itertools.product([0.0, 1.0], repeat=k)))  # (2^K, K)
    pz = np.prod(np.where(z == 1, mu, 1 - mu), axis=1)  # (2^K,)
    p0 = np.exp(-(theta0[None, :] + z @ theta.T))  # (2^K, D)
    return float((pz @ p0).mean())


# ----------------------------------------------------------------------------- expected sparsity
def test_expected_sparsity_matches_enumeration() -> None:
    rng = np.random.default_rng(7)
    theta = rng.gamma(1.0, 1.0, (9, 6)) * (rng.random((9, 6)) < 0.5)
    theta0 = rng.gamma(1.0, 0.1, 9)
    mu = rng.uniform(0.05, 0.9, 6)
    assert expected_sparsity(theta, theta0, mu) == pytest.approx(
        brute_force_sparsity(theta, theta0, mu), rel=1e-12
    )
    with pytest.raises(ValueError, match="shapes"):
        expected_sparsity(theta, theta0[:-1], mu)


# ----------------------------------------------------------------------------- SYN-PATTERN
def test_syn_patterns_design() -> None:
    b = syn_patterns()
    assert b.shape == (64, 8) and set(np.unique(b)) <= {0, 1}
    sizes = b.sum(axis=0)
    assert np.all((sizes >= 8) & (sizes <= 12)), sizes
    assert len({col.tobytes() for col in b.T}) == 8  # distinct
    overlap = b.T.astype(int) @ b.astype(int)
    off = overlap - np.diag(np.diag(overlap))
    assert np.all(off.max(axis=1) >= 1), "every pattern overlaps another"
    assert np.all(off < sizes[:, None]) and np.all(off < sizes[None, :]), "no pattern inside another"
    assert b.sum(axis=1).max() <= 2  # shared by at most two patterns
    # Spot-check the layout: row 2 is the horizontal bar, column 4 the vertical bar.
    assert b.reshape(8, 8, 8)[2, :, 0].all() and b.reshape(8, 8, 8)[:, 4, 1].all()


def _pair_overlaps(b: np.ndarray) -> int:
    overlap = b.T.astype(int) @ b.astype(int)
    return int((overlap.sum() - np.trace(overlap)) // 2)


def test_overlap_variant_has_syn_patterns_pixels_but_more_overlap(tmp_path: Path) -> None:
    """The generator variant keeps the shapes' pixel count (and so Table 2's sparsity, within
    half a point) while more than doubling the overlaps between shapes."""
    b, v = syn_patterns(), syn_patterns("syn-pattern-overlap")
    assert v.shape == (64, 8) and len({col.tobytes() for col in v.T}) == 8
    assert v.sum() == b.sum() == 65
    assert (_pair_overlaps(b), int((b.sum(axis=1) >= 3).sum())) == (15, 0)
    assert (_pair_overlaps(v), int((v.sum(axis=1) >= 3).sum())) == (36, 8)
    theta, theta0, mu, info = pattern_parameters(
        {**SYN_SPEC, "patterns": "syn-pattern-overlap"}, None, tmp_path
    )
    exact = 100 * brute_force_sparsity(theta, theta0, mu)
    assert abs(exact - 89.0) <= 1.0 and info["pattern_names"][4] == "centre block"


def test_parse_ascii_rejects_bad_pictures() -> None:
    assert parse_ascii("#.\n.#", (2, 2)).tolist() == [[1, 0], [0, 1]]
    with pytest.raises(ValueError):
        parse_ascii("#.\n.x", (2, 2))
    with pytest.raises(ValueError):
        parse_ascii("#..\n.#.", (2, 2))


def test_syn_pattern_parameters_and_sparsity(tmp_path: Path) -> None:
    theta, theta0, mu, info = pattern_parameters(SYN_SPEC, None, tmp_path)
    b = syn_patterns()
    assert theta.dtype == np.float64 and theta.shape == (64, 8)
    np.testing.assert_array_equal(theta, np.where(b == 1, -math.log(1 - 0.8), 0.0))
    np.testing.assert_allclose(theta0, np.full(64, -math.log(0.99)), rtol=1e-15)
    np.testing.assert_array_equal(mu, np.full(8, 0.125))
    exact = 100 * brute_force_sparsity(theta, theta0, mu)
    assert abs(exact - 89.0) <= 2.0, exact
    assert info["expected_sparsity_percent"] == pytest.approx(exact, rel=1e-12)
    assert info["pattern_names"] == list(SYN_PATTERNS) and info["leak_prob"] == 0.01
    # Monte Carlo with an independent numpy sampler (N * D = 1.28M draws, s.e. < 0.05 points).
    rng = np.random.default_rng(20200101)
    z = rng.random((20_000, 8)) < mu
    x = rng.random((20_000, 64)) < -np.expm1(-(theta0 + z @ theta.T))
    assert abs(100 * (1 - x.mean()) - exact) < 0.3


def test_pattern_spec_overrides(tmp_path: Path) -> None:
    spec = dict(SYN_SPEC, leak_prob=0.05, weight_prob=0.9, mu=[0.1] * 4 + [0.2] * 4)
    theta, theta0, mu, info = pattern_parameters(spec, None, tmp_path)
    assert theta.max() == pytest.approx(-math.log(0.1))
    np.testing.assert_allclose(theta0, -math.log(0.95))
    np.testing.assert_array_equal(mu, [0.1] * 4 + [0.2] * 4)
    assert info["leak_prob"] == 0.05
    assert np.all(pattern_parameters(dict(SYN_SPEC, leak_prob=0.0), None, tmp_path)[1] == 0.0)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"patterns": "letters"}, "patterns: 'letters' is not allowed"),
        ({"mu": 1.0}, r"mu: expected a probability in \(0, 1\)"),
        ({"mu": [0.1] * 3}, "mu: a list needs 8 entries"),
        ({"weight_prob": "high"}, "weight_prob: expected a number"),
        ({"weight_prob": None}, "weight_prob: missing"),
        ({"leak_prob": -0.1}, r"leak_prob: expected a probability in \[0, 1\)"),
        ({"patterns": "mnist", "mnist_threshold": 1.5}, "mnist_threshold"),
    ],
)
def test_pattern_spec_errors(tmp_path: Path, change: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        pattern_parameters(dict(SYN_SPEC, **change), None, tmp_path)


# ----------------------------------------------------------------------------- IDX
def _idx(type_code: int, dims: tuple[int, ...], payload: bytes) -> bytes:
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


def test_load_idx_hand_written(tmp_path: Path) -> None:
    raw = _idx(0x08, (2, 2, 3), bytes(range(12)))
    (tmp_path / "a.idx").write_bytes(raw)
    (tmp_path / "a.idx.gz").write_bytes(gzip.compress(raw))
    for name in ("a.idx", "a.idx.gz"):
        arr = load_idx(tmp_path / name)
        assert arr.dtype == np.uint8 and arr.shape == (2, 2, 3)
        assert arr[1, 0, 2] == 8 and arr.ravel().tolist() == list(range(12))
    # Big-endian int16 labels: 0x0102 = 258, 0xFFFE = -2.
    (tmp_path / "s.gz").write_bytes(gzip.compress(_idx(0x0B, (2,), b"\x01\x02\xff\xfe")))
    assert load_idx(tmp_path / "s.gz").tolist() == [258, -2]


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"\x01\x00\x08\x01" + struct.pack(">I", 1) + b"\x00", "not an IDX file"),
        (_idx(0x07, (1,), b"\x00"), "unknown IDX element type 0x07"),
        (_idx(0x08, (2, 2), b"\x00" * 3), "payload has 3 bytes"),
        (_idx(0x08, (2,), b"\x00" * 3), "payload has 3 bytes"),
        (b"\x00\x00\x08\x03\x00\x00", "truncated IDX header"),
        (gzip.compress(_idx(0x08, (4,), b"\x01" * 4), mtime=0)[:-6], "corrupt gzip"),
    ],
)
def test_load_idx_corruption(tmp_path: Path, data: bytes, match: str) -> None:
    (tmp_path / "bad").write_bytes(data)
    with pytest.raises(DataError, match=match):
        load_idx(tmp_path / "bad")


# ----------------------------------------------------------------------------- exemplar rule
def test_jaccard_medoid_against_set_brute_force() -> None:
    rng = np.random.default_rng(3)
    rows = rng.random((25, 40)) < rng.uniform(0.1, 0.6, (25, 1))
    sets = [set(np.flatnonzero(r)) for r in rows]

    def jd(a: set, b: set) -> float:
        return 0.0 if not (a | b) else 1 - len(a & b) / len(a | b)

    totals = [sum(jd(a, b) for b in sets) for a in sets]
    assert jaccard_medoid(rows) == int(np.argmin(totals))
    twin = np.array([[0, 0, 1], [1, 1, 0], [1, 1, 0]])  # rows 1 and 2 tie: lowest index wins
    assert jaccard_medoid(twin) == 1
    assert jaccard_medoid(np.zeros((3, 4))) == 0  # empty rows: distance 0, no division by zero


def _write_mnist(tmp_path: Path, images: np.ndarray, labels: np.ndarray) -> tuple[Path, Path]:
    ip, lp = tmp_path / "img.gz", tmp_path / "lab.gz"
    ip.write_bytes(gzip.compress(_idx(0x08, images.shape, images.astype(np.uint8).tobytes())))
    lp.write_bytes(gzip.compress(_idx(0x08, labels.shape, labels.astype(np.uint8).tobytes())))
    return ip, lp


def test_mnist_digit_patterns_synthetic(tmp_path: Path) -> None:
    """Three images per digit: two similar strokes and an outlier; threshold is strict '>'."""
    images, labels = [], []
    for d in range(10):
        base = np.zeros((28, 28), np.uint8)
        base[4 + d, 5:20] = 255  # a bar at row 4+d
        base[10, 3 + d] = 205  # 205/255 > 0.8: on
        base[11, 3 + d] = 204  # 204/255 = 0.8: off
        near = base.copy()
        near[4 + d, 19] = 0
        outlier = np.zeros((28, 28), np.uint8)
        outlier[20:27, 20:27] = 255
        for img in (outlier, near, base):
            images.append(img)
            labels.append(d)
    images_a, labels_a = np.stack(images), np.array(labels)
    ip, lp = _write_mnist(tmp_path, images_a, labels_a)
    pats, idx = mnist_digit_patterns(ip, lp, 0.8)
    assert pats.shape == (784, 10) and pats.dtype == np.uint8
    for d in range(10):
        rows = np.flatnonzero(labels_a == d)
        b = images_a[rows].reshape(3, -1) > 204
        inter = b.astype(int) @ b.T.astype(int)
        union = b.sum(1)[:, None] + b.sum(1)[None, :] - inter
        expect = rows[int(np.argmin((1 - inter / union).sum(1)))]
        assert idx[d] == expect
        np.testing.assert_array_equal(pats[:, d], images_a[idx[d]].ravel() > 204)
        assert pats.reshape(28, 28, 10)[10, 3 + d, d] == 1 and pats.reshape(28, 28, 10)[11, 3 + d, d] == 0
    with pytest.raises(DataError, match="no image of digit 9"):
        keep = labels_a != 9
        mnist_digit_patterns(*_write_mnist(tmp_path, images_a[keep], labels_a[keep]), 0.8)


def test_multi_mnist_parameters(mirror: Path, tmp_path: Path) -> None:
    theta, theta0, mu, info = pattern_parameters(MNIST_SPEC, mirror, tmp_path)
    assert theta.shape == (784, 10) and theta0.shape == (784,) and mu.shape == (10,)
    # Independent read of the raw files (no load_idx) to check exemplars and binarisation.
    raw_img = gzip.decompress((mirror / "mnist/t10k-images-idx3-ubyte.gz").read_bytes())
    raw_lab = gzip.decompress((mirror / "mnist/t10k-labels-idx1-ubyte.gz").read_bytes())
    imgs = np.frombuffer(raw_img, np.uint8, offset=16).reshape(10_000, 784)
    labs = np.frombuffer(raw_lab, np.uint8, offset=8)
    idx = info["exemplar_indices"]
    assert [int(labs[i]) for i in idx] == list(range(10))
    binary = imgs[idx].T.astype(np.float64) / 255 > info["mnist_threshold"]
    np.testing.assert_allclose(theta, np.where(binary, -math.log(0.2), 0.0), rtol=1e-15, atol=0)
    assert np.all(binary.sum(0) >= 50)  # a real digit, not a blank
    exact = 100 * brute_force_sparsity(theta, theta0, mu)  # 2^10 states
    assert abs(exact - 80.3) <= 2.0, exact
    assert info["expected_sparsity_percent"] == pytest.approx(exact, rel=1e-12)


def test_multi_mnist_exemplars_deterministic_and_robust(mirror: Path) -> None:
    ip = mirror / "mnist/t10k-images-idx3-ubyte.gz"
    lp = mirror / "mnist/t10k-labels-idx1-ubyte.gz"
    p1, i1 = mnist_digit_patterns(ip, lp, 0.8)
    p2, i2 = mnist_digit_patterns(ip, lp, 0.8)
    assert i1 == i2 and np.array_equal(p1, p2)
    # The medoid is not a near-tie that float rounding on another BLAS could flip.
    imgs, labs = load_idx(ip).reshape(10_000, 784), load_idx(lp)
    for d in (4, 6):  # the two smallest margins
        b = (imgs[labs == d] > 204).astype(np.float64)
        inter = b @ b.T
        union = b.sum(1)[:, None] + b.sum(1)[None, :] - inter
        totals = np.sort((1 - inter / union).sum(1))
        assert totals[1] - totals[0] > 0.1


# ----------------------------------------------------------------------------- pictures
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plot_patterns_image_grid(tmp_path: Path) -> None:
    import matplotlib.image as mpimg

    theta, theta0, _, info = pattern_parameters(SYN_SPEC, None, tmp_path)
    png, pdf = tmp_path / "fig" / "p.png", tmp_path / "fig" / "p.pdf"
    plot_patterns(theta, (8, 8), png, pdf, title="syn-pattern", leak=theta0, labels=info["pattern_names"])
    assert png.read_bytes()[:8] == PNG_MAGIC and pdf.read_bytes()[:5] == b"%PDF-"
    img = mpimg.imread(png)
    assert img.shape[0] > 100 and img[..., :3].min() < 0.1 and img[..., :3].max() > 0.9  # black and white
    assert sorted(p.name for p in png.parent.iterdir()) == ["p.pdf", "p.png"]  # no temp files
    plot_patterns(theta * np.arange(1, 9), (8, 8), tmp_path / "c.png", scale="common")
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_plot_patterns_heatmap_and_errors(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    theta = rng.gamma(1.0, 0.2, (50, 100)) * (rng.random((50, 100)) < 0.05)
    plot_patterns(theta, None, tmp_path / "h.png", leak=rng.gamma(1.0, 0.1, 50))
    assert (tmp_path / "h.png").read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="non-negative"):
        plot_patterns(-theta - 1, None, tmp_path / "x.png")
    with pytest.raises(ValueError, match="image_shape"):
        plot_patterns(theta, (7, 7), tmp_path / "x.png")
    with pytest.raises(ValueError, match="leak"):
        plot_patterns(theta, None, tmp_path / "x.png", leak=np.ones(3))
    assert not (tmp_path / "x.png").exists()
