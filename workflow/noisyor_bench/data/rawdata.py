"""Raw inputs: one registry of every file the benchmark reads, a mirror or a download.

Every raw input is pinned by the sha256 of the file in the reference mirror (the layout of
``../shared/data``, described in its README).  Two ways to obtain a file:

* **mirror mode** (``raw_data_dir`` set, or ``$NOISYOR_RAW_DATA``): read
  ``<raw_data_dir>/<relpath>`` in place and verify it;
* **download mode** (neither set): download from the public source into
  ``<cache_dir>/<relpath>`` (temp file, verify, rename) and verify.

Checksum policy.  The mirror's sha256 is *the* pin.  Some public sources legitimately serve
different bytes with the same content: MNIST's ``.gz`` files are gzipped with other headers
than the mirror's, NLTK's zips are packed differently (and may hold extra members).  For such
entries the registry also pins a sha256 of the *content* the project reads, computed from
the mirror files:

* ``gzip``: sha256 of the decompressed payload;
* ``zip-members`` / ``tar-members``: sha256 of the manifest ``"<name>\\t<sha256(bytes)>\\n"``
  over the archive's file members whose name fully matches a regular expression, sorted by
  name (members the project never reads, e.g. a README, are left out).

A file is accepted if its bytes match the pinned sha256, or (entries with a content check
only) if its content digest matches.  Anything else is a :class:`DataError` naming the key,
the path, expected and actual digests and how to fix it.  The same rule holds in both
modes, so a download cache can serve as a mirror.
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import re
import shutil
import tarfile
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.client import HTTPException
from pathlib import Path
from typing import Any, Literal

from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.hashing import sha256_bytes, sha256_file, sha256_stream
from noisyor_bench.infra.io import atomic_path

log = logging.getLogger(__name__)

#: Environment variable naming a raw-data mirror when the config's ``raw_data_dir`` is null.
RAW_DATA_ENV = "NOISYOR_RAW_DATA"
#: Seconds before a stalled download is abandoned.
DOWNLOAD_TIMEOUT = 120.0
_CHUNK = 1 << 20

_NLTK_BASE = "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora"
_KELAS_MNIST = "https://raw.githubusercontent.com/kelas/mnist/283b387221ab46655e600cfcc25d843bb14292b9"
_OSSCI_MNIST = "https://ossci-datasets.s3.amazonaws.com/mnist"  # torchvision's copy of the originals
_WIKI_COMMIT = "52b1f163137bc40b0f67cbf129d5dab4f6fd5901"
_WIKI_BASE = f"https://raw.githubusercontent.com/Vibhas-hs-edu/WikiTasks/{_WIKI_COMMIT}"
_APE_COMMIT = "17069bc84dd8e56031c8cca2612dcb5da93b0c2b"  # tufts-ml/any_parameter_encoder, branch workshop
_APE_RAW = (
    f"https://raw.githubusercontent.com/tufts-ml/any_parameter_encoder/{_APE_COMMIT}/datasets/mdreviews/raw"
)
_NEWS20_COMMIT = "70091d4f1df37c7a7eb2995fbbffba36caed46aa"
_NEWS20_BASE = f"https://raw.githubusercontent.com/sophieburkhardt/dirichlet-vae-topic-models/{_NEWS20_COMMIT}/data/20news"
_NEURIPS_ORIGIN = (
    "It has no public single-file source: it was built from the per-year JSON files of the "
    "GitHub repository akshaypithadiya/neurips-papers (commit c6f32a61d918f62b4db574aa82ddfddd098f66c7), "
    "see the README of the raw-data mirror. Copy it from a copy of that mirror"
)


@dataclass(frozen=True)
class ContentCheck:
    """How a file whose bytes legitimately differ from the mirror's is still verified."""

    kind: Literal["gzip", "zip-members", "tar-members"]
    sha256: str
    members: str = ""  # regex (full match) selecting archive members; zip/tar kinds only
    note: str = ""  # why the bytes may differ


@dataclass(frozen=True)
class RawFile:
    """One raw input: where it lives in a mirror, its pinned checksum and its public source."""

    key: str
    relpath: str  # inside the mirror, e.g. "mnist/t10k-images-idx3-ubyte.gz"
    sha256: str  # of the mirror's file: the pin
    size: int  # bytes of the mirror's file
    description: str
    urls: tuple[str, ...] = ()  # single-file sources, tried in order
    parts: tuple[tuple[str, str], ...] = ()  # (archive member, url): a tar.xz assembled from files
    content: ContentCheck | None = None
    manual: str = ""  # how to obtain the file by hand

    @property
    def downloadable(self) -> bool:
        return bool(self.urls or self.parts)


_WORDNET_MEMBERS = r"wordnet/(index\.(noun|verb|adj|adv)|(noun|verb|adj|adv)\.exc)"

REGISTRY: dict[str, RawFile] = {
    f.key: f
    for f in (
        RawFile(
            key="mnist-test-images",
            relpath="mnist/t10k-images-idx3-ubyte.gz",
            sha256="167310007f03058885c7e95e6c0b19c20de5c7fd3031f4cbdadc9014a523d80b",
            size=1_648_877,
            description="MNIST test images (10,000 x 28 x 28, IDX3, gzip) -- MULTI-MNIST exemplars",
            urls=(
                f"{_KELAS_MNIST}/t10k-images-idx3-ubyte.gz",
                f"{_OSSCI_MNIST}/t10k-images-idx3-ubyte.gz",
            ),
            content=ContentCheck(
                "gzip",
                "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
                note="the mirror is re-gzipped; the decompressed IDX payload is MNIST's original",
            ),
        ),
        RawFile(
            key="mnist-test-labels",
            relpath="mnist/t10k-labels-idx1-ubyte.gz",
            sha256="fc607395669ec21321ea83e4b82c0544b7e8e63ff5b34337c06bc0a17cc0da3c",
            size=4_542,
            description="MNIST test labels (10,000, IDX1, gzip)",
            urls=(
                f"{_KELAS_MNIST}/t10k-labels-idx1-ubyte.gz",
                f"{_OSSCI_MNIST}/t10k-labels-idx1-ubyte.gz",
            ),
            content=ContentCheck(
                "gzip",
                "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
                note="the mirror is re-gzipped; the decompressed IDX payload is MNIST's original",
            ),
        ),
        RawFile(
            key="nltk-reuters",
            relpath="nltk_data/corpora/reuters.zip",
            sha256="e561a898424cbbd27613a8a11247096f7aea469df506b73ff155b318c54e3d13",
            size=6_010_059,
            description="NLTK reuters corpus (Reuters-21578 ApteMod, 10,788 documents)",
            urls=(f"{_NLTK_BASE}/reuters.zip",),
            content=ContentCheck(
                "zip-members",
                "2f8f5d367d086d6c23a9ce0c06b96d29e83e7b48de6eb2654f8964e411ef4af4",
                members=r"reuters/(cats\.txt|stopwords|(test|training)/[^/]+)",
                note="NLTK's zip is packed differently; documents, cats.txt and stopwords are identical",
            ),
        ),
        RawFile(
            key="nltk-wordnet",
            relpath="nltk_data/corpora/wordnet.zip",
            sha256="e6435ccf40573d3c57041eece7914d43705bfd3cfe5754fe9a30fc4f4ea30213",
            size=10_701_172,
            description="WordNet 3.0 in NLTK layout (WordNetLemmatizer)",
            urls=(f"{_NLTK_BASE}/wordnet.zip",),
            content=ContentCheck(
                "zip-members",
                "17a323de5a23948fb99574838c6746785dad7f69a77336febff339f0a1eeb871",
                members=_WORDNET_MEMBERS,
                note="the lemmatizer (morphy) reads only the index.* and *.exc files; those are pinned",
            ),
        ),
        RawFile(
            key="nltk-stopwords",
            relpath="nltk_data/corpora/stopwords.zip",
            sha256="58f6a4b1f38c1ee4fcd207dd37d90d6c3df7454a10ef9f705b237d0e39be162d",
            size=661,
            description="NLTK English stop-word list (179 words)",
            urls=(f"{_NLTK_BASE}/stopwords.zip",),
            content=ContentCheck(
                "zip-members",
                "205a0c451ddb8e45cdf35e58b9e1d2c28d2a82f91113458f264a4cda434a70b9",
                members=r"stopwords/english",
                note="NLTK's zip holds every language; only stopwords/english is read and pinned",
            ),
        ),
        RawFile(
            key="neurips-papers-csv",
            relpath="neurips/nips_papers_1987_2019.csv",
            sha256="070d9bc4e463d604a794f6936c28b9ca404fb259cff895b0685e68fd710604d5",
            size=8_576_681,
            description="NeurIPS papers 1987-2019: id,year,title,authors,pdf_name,abstract (9,678 rows)",
            manual=_NEURIPS_ORIGIN,
        ),
        RawFile(
            key="neurips-titles-tsv",
            relpath="neurips/nips_titles_1987_2017.tsv",
            sha256="e34e6b054a28d2ffa5ba088702b6e8c5938c40ec7a3a63f51b19c6be350c21bd",
            size=515_964,
            description="NeurIPS titles 1987-2017: id<TAB>year<TAB>title (7,241 papers)",
            manual=_NEURIPS_ORIGIN,
        ),
        RawFile(
            key="wikipedia-slice",
            relpath="wikipedia/enwiki_partial_wikiextractor_textAA.tar.xz",
            sha256="edf17e0a3376aac795bc87167b2f2396c9b35138c6bda21d164d1a3d90de9ff7",
            size=16_474_820,
            description="English Wikipedia slice, WikiExtractor output text/AA/wiki_00..63 (PMI reference corpus)",
            parts=tuple((f"text/AA/wiki_{i:02d}", f"{_WIKI_BASE}/text/AA/wiki_{i:02d}") for i in range(64)),
            content=ContentCheck(
                "tar-members",
                "a13829e333aa87578c65ad85bb43da9c1bbbaab6a4582ba7042b4c1f51a1b138",
                members=r"text/AA/wiki_[0-9]{2}",
                note="downloads are re-packed from the 64 files of Vibhas-hs-edu/WikiTasks, so the "
                "tar.xz bytes differ; the 64 text files are identical",
            ),
            manual=(
                f"git clone https://github.com/Vibhas-hs-edu/WikiTasks && git -C WikiTasks checkout {_WIKI_COMMIT} "
                "&& tar -C WikiTasks -cJf <path> text/AA"
            ),
        ),
        RawFile(
            key="mdreviews-valid",
            relpath="mdreviews/X_csr_valid.npz",
            sha256="d7a69b0303386219297fd7ac696a4e1fce7cbe0c8ae25d42e351a9071faf1ad2",
            size=687_862,
            description="Multi-domain product reviews, APE authors' validation split: CSR counts, 792 x 7,729",
            urls=(f"{_APE_RAW}/X_csr_valid.npz",),
        ),
        RawFile(
            key="mdreviews-test",
            relpath="mdreviews/X_csr_test.npz",
            sha256="1d6eb42fa8ec49b1f8af7306ee5fc81a2f4d36c2eac1dce27e967a96f612ff3b",
            size=665_378,
            description="Multi-domain product reviews, APE authors' test split: CSR counts, 793 x 7,729",
            urls=(f"{_APE_RAW}/X_csr_test.npz",),
        ),
        RawFile(
            key="mdreviews-vocab",
            relpath="mdreviews/vocab.txt",
            sha256="646439de80bf4d6c847183c0a4786a94cb9fb4690b3b470ab3bdb2fa9e11c9e6",
            size=65_728,
            description="Multi-domain product reviews vocabulary (7,729 words, one a line; = X_colnames.txt)",
            urls=(f"{_APE_RAW}/vocab.txt", f"{_APE_RAW}/X_colnames.txt"),
        ),
        # aviPAM: 20 Newsgroups in the NVDM/AVITM bag-of-words form, and the raw messages.
        RawFile(
            key="20news-train-feat",
            relpath="20news/train.feat",
            sha256="6c4b612d03bb54c68c923ae7b689398c4a7bd1046b0874332dfe0a0c42830143",
            size=3_720_351,
            description="20 Newsgroups training bag of words (NVDM/AVITM form): 11,258 docs, 'label id:count ...'",
            urls=(f"{_NEWS20_BASE}/train.feat",),
        ),
        RawFile(
            key="20news-test-feat",
            relpath="20news/test.feat",
            sha256="5e5beaff3c66affeb08aeefb69e40e3e1c52360cdad2df03e7df2ecb6b79fad0",
            size=2_421_183,
            description="20 Newsgroups test bag of words (NVDM/AVITM form): 7,487 docs",
            urls=(f"{_NEWS20_BASE}/test.feat",),
        ),
        RawFile(
            key="20news-vocab",
            relpath="20news/vocab.new",
            sha256="75594f361e317a8c8fafca9846e903143ff25bb57ac4207ff850ef4245eb94bb",
            size=19_838,
            description="20 Newsgroups vocabulary (1,995 lines 'word 0'; id 1 is _eos_, never used)",
            urls=(f"{_NEWS20_BASE}/vocab.new",),
        ),
        # aviPAM: the raw 20news-bydate messages, the reference text of the paper's
        # coherence protocol (Lau's NPMI over the 20 Newsgroups corpus itself).
        RawFile(
            key="20news-bydate-text",
            relpath="20news/20news-bydate-text.tar.xz",
            sha256="58bf077b97b6e3c8941e19925e32c1393e1fa63e39814ac7e7076f4607e9aaf3",
            size=9_378_256,
            description="20 Newsgroups raw messages, 20news-bydate train + test (18,846 files, tar.xz)",
            content=ContentCheck(
                "tar-members",
                "351fd543a722f0d6927453d623cf4b474c0f54a012a774f00df060fcec3ec83d",
                members=r"20news-bydate-(train|test)/[^/]+/[0-9]+",
                note="a re-pack of the same message files is accepted (many train files hold tabs for "
                "newlines, so they differ from the official tarball)",
            ),
            manual=(
                "git clone https://github.com/spoddutur/spark-ml-dashboard && git -C spark-ml-dashboard checkout "
                "d95a19293f4cca408ae9c889921b91287f1514ba && tar -C spark-ml-dashboard/data -cJf <path> "
                "20news-bydate-train 20news-bydate-test"
            ),
        ),
    )
}


# ---------------------------------------------------------------------------- digests
def _manifest_digest(entries: Iterable[tuple[str, bytes]]) -> tuple[str, int]:
    lines = sorted(f"{name}\t{sha256_bytes(data)}\n" for name, data in entries)
    return sha256_bytes("".join(lines).encode("utf-8")), len(lines)


def content_sha256(path: str | os.PathLike[str], check: ContentCheck) -> str:
    """The content digest of ``path`` as defined by ``check`` (see the module docstring).

    Raises :class:`DataError` if the file is not a readable archive of the expected kind or
    holds no matching member.
    """
    try:
        if check.kind == "gzip":
            with gzip.open(path, "rb") as fh:
                return sha256_stream(fh)
        rx = re.compile(check.members)
        if check.kind == "zip-members":
            with zipfile.ZipFile(path) as zf:
                infos = [i for i in zf.infolist() if not i.is_dir() and rx.fullmatch(i.filename)]
                digest, n = _manifest_digest((i.filename, zf.read(i)) for i in infos)
        elif check.kind == "tar-members":
            with tarfile.open(path) as tf:
                found = []
                for m in tf:
                    if m.isfile() and rx.fullmatch(m.name):
                        fh = tf.extractfile(m)
                        assert fh is not None
                        found.append((m.name, fh.read()))
                digest, n = _manifest_digest(found)
        else:  # pragma: no cover - the dataclass literal forbids it
            raise ValueError(f"unknown content check kind {check.kind!r}")
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, zlib.error) as err:
        raise DataError(f"{path}: not a valid {check.kind.split('-')[0]} file ({err})") from None
    if n == 0:
        raise DataError(f"{path}: no archive member matches {check.members!r}")
    return digest


# ---------------------------------------------------------------------------- lookup
def key_pattern() -> str:
    """A regex matching exactly the registry's keys (the workflow's ``{key}`` wildcard)."""
    return "|".join(re.escape(k) for k in sorted(REGISTRY))


def entry(key: str) -> RawFile:
    """The registry entry for ``key``; :class:`DataError` listing valid keys otherwise."""
    try:
        return REGISTRY[key]
    except KeyError:
        raise DataError(f"unknown raw input {key!r}; known keys: {', '.join(sorted(REGISTRY))}") from None


def key_for_relpath(relpath: str) -> str:
    """The registry key of the file at ``relpath`` inside a mirror (for a Snakemake fetch rule)."""
    for f in REGISTRY.values():
        if f.relpath == str(relpath):
            return f.key
    known = ", ".join(sorted(f.relpath for f in REGISTRY.values()))
    raise DataError(f"no raw input lives at {relpath!r}; known paths: {known}")


def resolve_raw_data_dir(config_value: str | os.PathLike[str] | None) -> Path | None:
    """The mirror to read: config ``raw_data_dir``, else ``$NOISYOR_RAW_DATA``, else None (download).

    A directory that is named but does not exist is a :class:`ConfigError` (silently falling
    back to downloading would hide a typo).
    """
    if config_value is not None and str(config_value) != "":
        source, value = "raw_data_dir", str(config_value)
    elif os.environ.get(RAW_DATA_ENV):
        source, value = f"${RAW_DATA_ENV}", os.environ[RAW_DATA_ENV]
    else:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise ConfigError(f"{source}: {value!r} is not a directory (it should hold a raw-data mirror)")
    return path


def expected_location(
    key: str, raw_data_dir: str | os.PathLike[str] | None, cache_dir: str | os.PathLike[str]
) -> Path:
    """Where :func:`fetch` reads (mirror mode) or stores (download mode) the file ``key``."""
    base = Path(raw_data_dir) if raw_data_dir is not None else Path(cache_dir)
    return base / entry(key).relpath


def dataset_raw_keys(spec: Mapping[str, Any]) -> list[str]:
    """Raw inputs a synthetic dataset entry of the config is built from (may be empty)."""
    if spec.get("family") == "pattern" and spec.get("patterns") == "mnist":
        return ["mnist-test-images", "mnist-test-labels"]
    return []


# ---------------------------------------------------------------------------- verification
# In-process memo of successful verifications, keyed by the file's identity and stat.  A
# rewritten file changes size, mtime or inode and is hashed again.
_VERIFIED: dict[tuple[str, str, int, int, int, int], str] = {}


def _stat_key(key: str, path: Path) -> tuple[str, str, int, int, int, int]:
    st = path.stat()
    return (key, str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


def _fix_hint(f: RawFile) -> str:
    hint = (
        f"Fix: point the config key raw_data_dir (or ${RAW_DATA_ENV}) at a raw-data mirror holding "
        f"{f.relpath} (layout of the mirror README)"
    )
    if f.downloadable:
        hint += ", or leave both unset on a machine with internet access to download it"
    if f.manual:
        hint += f". By hand: {f.manual}"
    return hint + "."


def verify(key: str, path: str | os.PathLike[str]) -> str:
    """Check ``path`` against the pins of ``key``; return how it matched.

    Returns ``"sha256"`` (bytes identical to the mirror) or ``"content-<kind>"`` (content
    digest matches).  Raises :class:`DataError` otherwise.
    """
    f = entry(key)
    p = Path(path)
    if not p.is_file():
        raise DataError(
            f"raw input {key!r}: file not found: {p.resolve()} (expected sha256 {f.sha256}, {f.size} bytes)\n{_fix_hint(f)}"
        )
    memo = _stat_key(key, p)
    if memo in _VERIFIED:
        return _VERIFIED[memo]
    actual = sha256_file(p)
    if actual == f.sha256:
        method = "sha256"
    else:
        method = ""
        content_msg = ""
        if f.content is not None:
            try:
                got = content_sha256(p, f.content)
            except DataError as err:
                got, content_msg = "", f"; content check ({f.content.kind}) failed: {err}"
            if got == f.content.sha256:
                method = f"content-{f.content.kind}"
            elif got:
                content_msg = (
                    f"; content check ({f.content.kind}{' ' + f.content.members if f.content.members else ''}):"
                    f" expected {f.content.sha256}, got {got}"
                )
        if not method:
            raise DataError(
                f"raw input {key!r}: checksum mismatch for {p.resolve()}: expected sha256 {f.sha256} "
                f"({f.size} bytes), got {actual} ({p.stat().st_size} bytes){content_msg}. "
                f"The file is corrupt, truncated or a different version.\n{_fix_hint(f)}"
            )
    _VERIFIED[_stat_key(key, p)] = method
    return method


# ---------------------------------------------------------------------------- download
def _download_to(url: str, dest: Path) -> None:
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as resp, open(dest, "wb") as out:
        shutil.copyfileobj(resp, out, _CHUNK)


def _assemble_tar_xz(parts: tuple[tuple[str, str], ...], dest: Path) -> None:
    """Download ``parts`` and pack them into a reproducible tar.xz (fixed mtime/owner)."""
    with tarfile.open(dest, "w:xz") as tf:
        for name, url in parts:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as resp:
                data = resp.read()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))


def _download(f: RawFile, dest: Path) -> str:
    """Download ``f`` to ``dest`` atomically; only a verified file is renamed into place."""
    attempts: list[tuple[str, Callable[[Path], None]]] = [
        (url, lambda tmp, url=url: _download_to(url, tmp)) for url in f.urls
    ]
    if f.parts:
        base = f.parts[0][1].rsplit("/", 1)[0]
        attempts.append((f"{base}/ ({len(f.parts)} files)", lambda tmp: _assemble_tar_xz(f.parts, tmp)))
    failures: list[str] = []
    for source, get in attempts:
        try:
            with atomic_path(dest) as tmp:
                log.info("downloading %s <- %s", f.key, source)
                get(tmp)
                method = verify(f.key, tmp)
            _VERIFIED[_stat_key(f.key, dest)] = method
            return method
        except (OSError, HTTPException, ValueError, DataError) as err:
            failures.append(f"{source}: {err}")
    details = "\n  ".join(failures)
    raise DataError(
        f"raw input {f.key!r}: could not download a valid copy to {dest.resolve()}:\n  {details}\n"
        f"{_fix_hint(f)}"
    )


def fetch(key: str, raw_data_dir: str | os.PathLike[str] | None, cache_dir: str | os.PathLike[str]) -> Path:
    """Path of the verified raw input ``key``: from the mirror, or downloaded into ``cache_dir``.

    Mirror mode never falls back to downloading: a missing or mismatching mirror file is an
    error to fix, not something to paper over with a different copy.
    """
    f = entry(key)
    if raw_data_dir is not None:
        path = Path(raw_data_dir) / f.relpath
        verify(key, path)
        return path
    path = Path(cache_dir) / f.relpath
    if path.is_file():
        try:
            verify(key, path)
            return path
        except DataError as err:
            if not f.downloadable:
                raise
            log.warning("cached %s failed verification, downloading again: %s", key, err)
    if not f.downloadable:
        raise DataError(
            f"raw input {key!r}: not found at {path.resolve()} and there is no public download for it. "
            f"{f.manual}, and place it at {path.resolve()} (it is verified against sha256 {f.sha256}), "
            f"or set raw_data_dir / ${RAW_DATA_ENV} to a raw-data mirror."
        )
    _download(f, path)
    return path
