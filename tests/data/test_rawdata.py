"""Raw-data registry, verification, mirror and (offline, monkeypatched) download modes."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import tarfile
import urllib.error
import zipfile
from pathlib import Path

import pytest

from noisyor_bench.data import rawdata
from noisyor_bench.data.rawdata import ContentCheck, RawFile, fetch, resolve_raw_data_dir, verify
from noisyor_bench.infra.errors import ConfigError, DataError


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest(pairs: list[tuple[str, bytes]]) -> str:
    """Independent implementation of the member-manifest digest documented in rawdata."""
    text = "".join(sorted(f"{n}\t{_sha(b)}\n" for n, b in pairs))
    return _sha(text.encode())


# ----------------------------------------------------------------------------- registry vs mirror
def test_registry_matches_mirror_readme(mirror: Path) -> None:
    readme = (mirror / "README.md").read_text(encoding="utf-8")
    readme_shas = set(re.findall(r"`([0-9a-f]{64})`", readme))
    # every input the registry pins is documented in the mirror's README with the same sha256
    # (the mirror also holds inputs of the other papers, which this registry does not need yet)
    assert {f.sha256 for f in rawdata.REGISTRY.values()} <= readme_shas
    for f in rawdata.REGISTRY.values():
        assert f"`{f.relpath}`" in readme, f.relpath
        assert f"{f.size:,}" in readme, (f.key, f.size)


def test_registry_matches_mirror_files(mirror: Path) -> None:
    for f in rawdata.REGISTRY.values():
        path = mirror / f.relpath
        data = path.read_bytes()
        assert len(data) == f.size, f.key
        assert _sha(data) == f.sha256, f.key
        assert fetch(f.key, mirror, "/nonexistent-cache") == path


def test_content_digests_match_mirror(mirror: Path) -> None:
    """The content pins are recomputed here with independent code from the mirror files."""
    for f in rawdata.REGISTRY.values():
        c = f.content
        if c is None:
            continue
        path = mirror / f.relpath
        if c.kind == "gzip":
            got = _sha(gzip.decompress(path.read_bytes()))
        elif c.kind == "zip-members":
            with zipfile.ZipFile(path) as zf:
                got = _manifest(
                    [
                        (n, zf.read(n))
                        for n in zf.namelist()
                        if not n.endswith("/") and re.fullmatch(c.members, n)
                    ]
                )
        else:
            with tarfile.open(path) as tf:
                members = [m for m in tf.getmembers() if m.isfile() and re.fullmatch(c.members, m.name)]
                got = _manifest([(m.name, tf.extractfile(m).read()) for m in members])
        assert got == c.sha256, f.key


def test_every_entry_has_a_way_to_obtain_it() -> None:
    for f in rawdata.REGISTRY.values():
        assert f.downloadable or f.manual, f.key
        assert all(u.startswith("https://") for u in f.urls), f.key
    assert rawdata.entry("nltk-stopwords").urls == (
        "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/stopwords.zip",
    )
    assert not rawdata.entry("neurips-titles-tsv").downloadable
    with pytest.raises(DataError, match="unknown raw input 'nope'.*mnist-test-images"):
        rawdata.entry("nope")


def test_dataset_raw_keys_and_location(tmp_path: Path) -> None:
    mnist_keys = ["mnist-test-images", "mnist-test-labels"]
    assert rawdata.dataset_raw_keys({"family": "pattern", "patterns": "mnist"}) == mnist_keys
    assert rawdata.dataset_raw_keys({"family": "pattern", "patterns": "syn-pattern"}) == []
    assert rawdata.dataset_raw_keys({"family": "random"}) == []
    rel = "mnist/t10k-labels-idx1-ubyte.gz"
    assert rawdata.expected_location("mnist-test-labels", tmp_path, "c") == tmp_path / rel
    assert rawdata.expected_location("mnist-test-labels", None, tmp_path) == tmp_path / rel
    assert rawdata.key_for_relpath(rel) == "mnist-test-labels"
    with pytest.raises(DataError, match="no raw input lives at 'mnist/x.gz'"):
        rawdata.key_for_relpath("mnist/x.gz")


# ----------------------------------------------------------------------------- resolve_raw_data_dir
def test_resolve_raw_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    monkeypatch.setenv(rawdata.RAW_DATA_ENV, str(b))
    assert resolve_raw_data_dir(str(a)) == a  # config wins
    assert resolve_raw_data_dir(None) == b  # then the environment
    monkeypatch.setenv(rawdata.RAW_DATA_ENV, "")
    assert resolve_raw_data_dir(None) is None  # empty means unset
    monkeypatch.delenv(rawdata.RAW_DATA_ENV)
    assert resolve_raw_data_dir(None) is None  # download mode
    with pytest.raises(ConfigError, match="raw_data_dir: .*missing.*not a directory"):
        resolve_raw_data_dir(str(tmp_path / "missing"))
    monkeypatch.setenv(rawdata.RAW_DATA_ENV, str(tmp_path / "gone"))
    with pytest.raises(ConfigError, match=r"\$NOISYOR_RAW_DATA"):
        resolve_raw_data_dir(None)


# ----------------------------------------------------------------------------- fake entries
PAYLOAD = b"noisy-or raw payload\n" * 500
GZ_PINNED = gzip.compress(PAYLOAD, mtime=0)
GZ_OTHER = gzip.compress(PAYLOAD, mtime=1_234_567)  # same payload, different bytes
PLAIN = b"id\tyear\ttitle\n1\t1987\tA title\n"


@pytest.fixture
def fake_entries(monkeypatch: pytest.MonkeyPatch) -> dict[str, RawFile]:
    assert GZ_PINNED != GZ_OTHER
    entries = {
        "t-gz": RawFile(
            key="t-gz",
            relpath="sub/file.gz",
            sha256=_sha(GZ_PINNED),
            size=len(GZ_PINNED),
            description="test gzip",
            urls=("https://a.invalid/file.gz", "https://b.invalid/file.gz"),
            content=ContentCheck("gzip", _sha(PAYLOAD)),
        ),
        "t-plain": RawFile(
            key="t-plain",
            relpath="plain/titles.tsv",
            sha256=_sha(PLAIN),
            size=len(PLAIN),
            description="test file without a download",
            manual="Copy it from the mirror",
        ),
    }
    for k, v in entries.items():
        monkeypatch.setitem(rawdata.REGISTRY, k, v)
    return entries


def _place(root: Path, relpath: str, data: bytes) -> Path:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


class _Server:
    """A fake ``urlopen`` serving fixed bytes per URL; anything else is 'offline'."""

    def __init__(self, served: dict[str, bytes]) -> None:
        self.served = served
        self.calls: list[str] = []

    def __call__(self, url: str, timeout: float | None = None) -> io.BytesIO:
        self.calls.append(url)
        if url not in self.served:
            raise urllib.error.URLError("network is unreachable (test)")
        return io.BytesIO(self.served[url])


def _serve(monkeypatch: pytest.MonkeyPatch, served: dict[str, bytes]) -> _Server:
    server = _Server(served)
    monkeypatch.setattr(rawdata.urllib.request, "urlopen", server)
    return server


# ----------------------------------------------------------------------------- mirror mode
def test_mirror_mode_accepts_pinned_and_equivalent_content(tmp_path: Path, fake_entries) -> None:
    path = _place(tmp_path, "sub/file.gz", GZ_PINNED)
    assert fetch("t-gz", tmp_path, tmp_path / "cache") == path
    assert verify("t-gz", path) == "sha256"
    other = _place(tmp_path / "m2", "sub/file.gz", GZ_OTHER)
    assert fetch("t-gz", tmp_path / "m2", tmp_path / "cache") == other
    assert verify("t-gz", other) == "content-gzip"


def test_mirror_mode_missing_file(tmp_path: Path, fake_entries) -> None:
    with pytest.raises(DataError) as err:
        fetch("t-gz", tmp_path, tmp_path / "cache")
    msg = str(err.value)
    assert "'t-gz'" in msg and str((tmp_path / "sub/file.gz").resolve()) in msg
    assert f"expected sha256 {_sha(GZ_PINNED)}" in msg
    assert "raw_data_dir" in msg and "NOISYOR_RAW_DATA" in msg and "internet" in msg


def test_mirror_mode_corrupt_file_names_both_checksums(tmp_path: Path, fake_entries) -> None:
    corrupt = bytearray(GZ_PINNED)
    corrupt[len(corrupt) // 2] ^= 0xFF
    path = _place(tmp_path, "sub/file.gz", bytes(corrupt))
    with pytest.raises(DataError) as err:
        fetch("t-gz", tmp_path, tmp_path / "cache")
    msg = str(err.value)
    assert "'t-gz'" in msg and str(path.resolve()) in msg
    assert _sha(GZ_PINNED) in msg and _sha(bytes(corrupt)) in msg
    assert "raw_data_dir" in msg


def test_mirror_mode_wrong_payload(tmp_path: Path, fake_entries) -> None:
    wrong = gzip.compress(PAYLOAD + b"x", mtime=0)
    _place(tmp_path, "sub/file.gz", wrong)
    with pytest.raises(DataError, match=f"expected {_sha(PAYLOAD)}, got {_sha(PAYLOAD + b'x')}"):
        fetch("t-gz", tmp_path, tmp_path / "cache")


def test_real_mirror_corrupt_copy(tmp_path: Path, mirror: Path) -> None:
    f = rawdata.entry("nltk-stopwords")
    data = bytearray((mirror / f.relpath).read_bytes())
    data[-5] ^= 0x01
    _place(tmp_path, f.relpath, bytes(data))
    with pytest.raises(DataError, match=f"expected sha256 {f.sha256}.*got {_sha(bytes(data))}"):
        fetch("nltk-stopwords", tmp_path, tmp_path / "cache")


def test_verification_memo_notices_rewrites(tmp_path: Path, fake_entries) -> None:
    path = _place(tmp_path, "plain/titles.tsv", PLAIN)
    assert verify("t-plain", path) == "sha256"
    st = path.stat()
    path.write_bytes(PLAIN.replace(b"A", b"B"))  # same size, other bytes
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000))
    with pytest.raises(DataError, match="checksum mismatch"):
        verify("t-plain", path)


# ----------------------------------------------------------------------------- download mode
def test_download_mode_fetches_verifies_and_caches(tmp_path: Path, fake_entries, monkeypatch) -> None:
    server = _serve(monkeypatch, {"https://a.invalid/file.gz": GZ_PINNED})
    cache = tmp_path / "cache"
    path = fetch("t-gz", None, cache)
    assert path == cache / "sub/file.gz" and path.read_bytes() == GZ_PINNED
    assert server.calls == ["https://a.invalid/file.gz"]
    assert fetch("t-gz", None, cache) == path
    assert len(server.calls) == 1  # served from the verified cache
    assert sorted(p.name for p in path.parent.iterdir()) == ["file.gz"]  # no temp files left


def test_download_mode_accepts_regzipped_source_and_falls_back(
    tmp_path: Path, fake_entries, monkeypatch
) -> None:
    server = _serve(monkeypatch, {"https://b.invalid/file.gz": GZ_OTHER})  # first URL is "offline"
    path = fetch("t-gz", None, tmp_path)
    assert path.read_bytes() == GZ_OTHER
    assert server.calls == ["https://a.invalid/file.gz", "https://b.invalid/file.gz"]
    assert verify("t-gz", path) == "content-gzip"


def test_download_mode_rejects_corrupt_download(tmp_path: Path, fake_entries, monkeypatch) -> None:
    bad = GZ_PINNED[:-20]  # truncated
    _serve(monkeypatch, {"https://a.invalid/file.gz": bad, "https://b.invalid/file.gz": b"<html>404</html>"})
    with pytest.raises(DataError) as err:
        fetch("t-gz", None, tmp_path)
    msg = str(err.value)
    assert "https://a.invalid/file.gz" in msg and "https://b.invalid/file.gz" in msg
    assert _sha(GZ_PINNED) in msg and _sha(bad) in msg and "raw_data_dir" in msg
    assert not (tmp_path / "sub" / "file.gz").exists()
    assert list((tmp_path / "sub").iterdir()) == []  # temp files cleaned up


def test_download_mode_offline(tmp_path: Path, fake_entries, monkeypatch) -> None:
    _serve(monkeypatch, {})
    with pytest.raises(DataError, match="network is unreachable"):
        fetch("t-gz", None, tmp_path)


def test_download_mode_replaces_corrupt_cache(tmp_path: Path, fake_entries, monkeypatch) -> None:
    _place(tmp_path, "sub/file.gz", b"garbage")
    server = _serve(monkeypatch, {"https://a.invalid/file.gz": GZ_PINNED})
    assert fetch("t-gz", None, tmp_path).read_bytes() == GZ_PINNED
    assert server.calls == ["https://a.invalid/file.gz"]


def test_download_mode_without_source_explains(tmp_path: Path, fake_entries, monkeypatch) -> None:
    server = _serve(monkeypatch, {})
    with pytest.raises(DataError) as err:
        fetch("t-plain", None, tmp_path)
    msg = str(err.value)
    assert "no public download" in msg and "Copy it from the mirror" in msg
    assert str((tmp_path / "plain/titles.tsv").resolve()) in msg and _sha(PLAIN) in msg
    assert server.calls == []
    placed = _place(tmp_path, "plain/titles.tsv", PLAIN)  # supplied by hand: accepted
    assert fetch("t-plain", None, tmp_path) == placed


def test_neurips_download_mode_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    _serve(monkeypatch, {})
    with pytest.raises(DataError, match="neurips-titles-tsv.*no public download.*akshaypithadiya"):
        fetch("neurips-titles-tsv", None, tmp_path)


def test_download_assembles_tar_from_parts(tmp_path: Path, monkeypatch) -> None:
    members = {
        "text/AA/wiki_00": b"<doc id=1>\nalpha\n</doc>\n",
        "text/AA/wiki_01": b"<doc id=2>\nbeta\n</doc>\n",
    }
    urls = {name: f"https://w.invalid/{name}" for name in members}
    f = RawFile(
        key="t-tar",
        relpath="wikipedia/slice.tar.xz",
        sha256="0" * 64,  # the assembled tar.xz never equals the mirror's bytes
        size=1,
        description="test tar",
        parts=tuple((n, urls[n]) for n in members),
        content=ContentCheck(
            "tar-members", _manifest(list(members.items())), members=r"text/AA/wiki_[0-9]{2}"
        ),
    )
    monkeypatch.setitem(rawdata.REGISTRY, "t-tar", f)
    _serve(monkeypatch, {urls[n]: b for n, b in members.items()})
    path = fetch("t-tar", None, tmp_path)
    with tarfile.open(path) as tf:
        assert {m.name: tf.extractfile(m).read() for m in tf.getmembers()} == members
    assert verify("t-tar", path) == "content-tar-members"
