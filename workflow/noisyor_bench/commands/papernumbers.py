"""CLI: ``noisyor-bench paper-numbers --paper ID [--out-md FILE] [--out-csv FILE]`` -- a paper's
published numbers as a flat table, one row per leaf: its key path and its value.

Generic: it reads any registered paper's numbers through the one loader
(:func:`noisyor_bench.experiments.papers.paper_numbers`, package data), so it runs from an
installed wheel without the repository.  Without ``--out-*`` the Markdown table is printed.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from typing import Any

COLUMNS = ("key", "value")


def papers_with_numbers() -> list[str]:
    """The ids of the registered papers that have a paper-numbers file (``--paper`` choices)."""
    from noisyor_bench.experiments import papers

    return [pid for pid in papers.ids() if papers.get(pid).paper_numbers is not None]


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(key path, leaf)`` of a nested structure in its order: mapping keys joined by ``.``, list
    items as ``[i]``; an empty mapping or list is a leaf of its own."""
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            yield from flatten(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from flatten(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


def format_value(value: Any) -> str:
    """A leaf as text: a string as it is, anything else as JSON (``null``, ``true``, ``0.17``, ``{}``)."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def rows(paper_id: str) -> list[tuple[str, str]]:
    """The paper's numbers as ``(key path, value)`` rows."""
    from noisyor_bench.experiments import papers

    return [(key, format_value(leaf)) for key, leaf in flatten(papers.paper_numbers(paper_id))]


def markdown(paper_id: str, table: list[tuple[str, str]]) -> str:
    from noisyor_bench.experiments import papers
    from noisyor_bench.reporting.tables import markdown_table

    paper = papers.get(paper_id)
    cells = [(f"`{key}`", value.replace("\n", " ")) for key, value in table]
    return (
        f"# {paper.name}: the published numbers\n\n"
        f"{paper.title}; {paper.citation}\n"
        f"Transcribed in `noisyor_bench/{paper.paper_numbers}`; one row per value.\n\n"
        + markdown_table(COLUMNS, cells)
    )


def cmd_paper_numbers(args: argparse.Namespace) -> int:
    from noisyor_bench.infra.io import write_csv_atomic, write_text_atomic

    table = rows(args.paper)
    text = markdown(args.paper, table)
    if args.out_md:
        write_text_atomic(args.out_md, text)
    if args.out_csv:
        write_csv_atomic(args.out_csv, [dict(zip(COLUMNS, row)) for row in table], COLUMNS)
    if not (args.out_md or args.out_csv):
        print(text, end="")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "paper-numbers",
        help="a paper's published numbers as a flat table (key path, value), from the package data",
    )
    p.add_argument(
        "--paper", required=True, choices=papers_with_numbers(), help="the paper whose numbers to list"
    )
    p.add_argument("--out-md", default=None, help="output file: the table as Markdown (default: print it)")
    p.add_argument("--out-csv", default=None, help="output file: the table as CSV (columns key, value)")
    p.set_defaults(func=cmd_paper_numbers)
