"""The generated block of a docs page, between a begin and an end marker: found and replaced by
the benchmarks that write their figures into docs/performance.md, and read back by their tests."""

from __future__ import annotations

import re


def _pattern(begin: str, end: str) -> re.Pattern[str]:
    return re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)


def replace_block(text: str, block: str, begin: str, end: str) -> str:
    """``text`` with its block between ``begin`` and ``end`` replaced by ``block`` (ValueError
    without exactly one)."""
    pattern = _pattern(begin, end)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"expected exactly one block between {begin!r} and {end!r}")
    return pattern.sub(lambda _: block, text)


def extract_block(text: str, begin: str, end: str) -> str:
    """The block of ``text`` between ``begin`` and ``end`` (markers included); ValueError without
    exactly one."""
    found = _pattern(begin, end).findall(text)
    if len(found) != 1:
        raise ValueError(f"expected exactly one block between {begin!r} and {end!r}, found {len(found)}")
    return found[0]
