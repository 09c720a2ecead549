"""Every relative link and image of the Markdown front pages and docs resolves.

Checked: README.md, docs/**/*.md, results/README.md, reference/README.md, benchmarks/README.md.
A link or image target that is not an external URL (``http:``, ``https:``, ``mailto:``, any
``scheme:``) must name an existing file or folder, relative to the page (or, with a leading ``/``,
to the repository root); a ``#anchor`` into a Markdown page (or a bare ``#anchor`` into the page
itself) must name one of its headings, slugged as GitHub does. External links are not fetched.
Code spans and fenced code blocks are not links and are skipped.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).resolve().parents[1]

PAGES = ("README.md", "docs/**/*.md", "results/README.md", "reference/README.md", "benchmarks/README.md")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
# [text](target) and ![alt](target); the text may hold one level of brackets (an image in a link).
_INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)")
_REFERENCE_DEF = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*(<[^>]*>|\S+)")
_HTML = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']*)["']""", re.I)
_HTML_ANCHOR = re.compile(r"""<[a-z]+\b[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _pages() -> list[Path]:
    found: set[Path] = set()
    for pattern in PAGES:
        found.update(p for p in REPO.glob(pattern) if p.is_file())
    return sorted(found)


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with code spans blanked out."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        out.append((number, _CODE_SPAN.sub(lambda s: " " * len(s.group(0)), line)))
    return out


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its rendered text lower-cased, punctuation dropped
    (letters, digits, ``_``, ``-`` and spaces kept), each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # _emphasis_, not snake_case
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """The anchors of a Markdown page: its headings' slugs (repeats get -1, -2, ...) and HTML ids."""
    text = page.read_text(encoding="utf-8")
    seen: dict[str, int] = {}
    found: set[str] = set()
    previous = ""
    fence: str | None = None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if fence is not None or m:
            if fence is None:
                fence = m.group(1)
            elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            previous = ""
            continue
        heading = None
        atx = _ATX.match(line)
        if atx:
            heading = atx.group(2) or ""
        elif (
            _SETEXT.match(line)
            and previous.strip()
            and not previous.lstrip().startswith(("|", "-", "*", ">"))
        ):
            heading = previous
        if heading is not None:
            slug = github_slug(heading)
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
        found.update(_HTML_ANCHOR.findall(line))
        previous = line
    return frozenset(found)


def links(page: Path) -> list[tuple[int, str]]:
    """(line, target) of every link and image of a page, external ones included."""
    out: list[tuple[int, str]] = []
    for number, line in _prose_lines(page.read_text(encoding="utf-8")):
        for m in _INLINE.finditer(line):
            out.append((number, m.group(1)))
        m = _REFERENCE_DEF.match(line)
        if m:
            out.append((number, m.group(2)))
        out.extend((number, target) for target in _HTML.findall(line))
    return [(n, t[1:-1] if t.startswith("<") and t.endswith(">") else t) for n, t in out]


def broken(page: Path, target: str) -> str | None:
    """Why a link target of ``page`` does not resolve; None when it does or is external."""
    if not target:
        return "empty target"
    if _SCHEME.match(target) or target.startswith("//"):
        return None
    path_part, _, anchor = target.partition("#")
    path_part = unquote(path_part.split("?", 1)[0])
    if path_part:
        base = REPO if path_part.startswith("/") else page.parent
        resolved = (base / path_part.lstrip("/")).resolve()
        if not resolved.exists():
            return f"no such file or folder: {resolved.relative_to(REPO) if resolved.is_relative_to(REPO) else resolved}"
    else:
        resolved = page
    if anchor and resolved.is_file() and resolved.suffix.lower() == ".md":
        if unquote(anchor).lower() not in anchors(resolved):
            return f"no heading with anchor #{anchor} in {resolved.relative_to(REPO)}"
    return None


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    problems = [
        f"{page.relative_to(REPO)}:{line}: {target} ({why})"
        for line, target in links(page)
        if (why := broken(page, target)) is not None
    ]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_checked_pages_exist() -> None:
    names = {str(p.relative_to(REPO)) for p in _pages()}
    assert {"README.md", "results/README.md", "reference/README.md", "benchmarks/README.md"} <= names
    assert any(n.startswith("docs/") for n in names)


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Paper-protocol reference (SYN-PATTERN)", "paper-protocol-reference-syn-pattern"),
        ("Faults: nothing lost, nothing silently wrong", "faults-nothing-lost-nothing-silently-wrong"),
        ("Runs (`experiments/ape/`)", "runs-experimentsape"),
        ("Claims (`tables/claims_ape_noisyor.csv`)", "claims-tablesclaims_ape_noisyorcsv"),
        ("... an inference method", "-an-inference-method"),
        (
            "Fourth measurement (2026-11-25): 11.2 min -- the CPU",
            "fourth-measurement-2026-11-25-112-min----the-cpu",
        ),
        ("Chosen reading (B\\*) and why", "chosen-reading-b-and-why"),
    ],
)
def test_github_slug(heading: str, slug: str) -> None:
    assert github_slug(heading) == slug


def test_the_checker_finds_what_is_broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other page\n\n## Second `part`\n\n## Second `part`\n")
    page.write_text(
        "# Title\n\n[ok](other.md#second-part-1) [bad anchor](other.md#third) ![img](missing.png)\n"
        "`[not a link](nowhere.md)` [self](#title) [web](https://example.org/x#y)\n\n"
        "```\n[in code](nowhere.md)\n```\n[ref]: gone.md\n"
    )
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    found = {(n, t): broken(page, t) for n, t in links(page)}
    assert found[(3, "other.md#second-part-1")] is None
    assert "no heading with anchor #third" in found[(3, "other.md#third")]
    assert "no such file" in found[(3, "missing.png")]
    assert found[(4, "#title")] is None and found[(4, "https://example.org/x#y")] is None
    assert "no such file" in found[(9, "gone.md")]
    assert all(t != "nowhere.md" for _, t in found)
