"""Self-contained HTML views of the result tables and of the software environment.

Snakemake's report renders HTML files inline but offers CSV files only as downloads, so every
table CSV gets an HTML view next to it (``tables/<name>.html``): our mean ± 95% CI beside the
paper's number for each metric, the claims' verdicts coloured, the raw CSV embedded as a
download link.  The view is derived from the CSV alone, so any table (present or future) gets
one without code of its own.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.provenance import verify_recorded_file
from noisyor_bench.reporting.tables import format_ci

STAT_SUFFIXES = ("mean", "std", "n", "ci95", "values")
"""Columns ``<metric>_<suffix>`` that :func:`noisyor_bench.reporting.tables.summarise` writes per metric."""

VERDICT_CLASSES = {
    "reproduced": "ok",
    "not reproduced": "bad",
    "inconclusive": "unsure",
    "budget-limited": "limited",
}

STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; font-size: 13px;
       margin: 12px; color: #1f2328; }
h1 { font-size: 16px; margin: 0 0 6px 0; }
p.note { color: #57606a; margin: 4px 0 10px 0; max-width: 110ch; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d0d7de; padding: 3px 7px; vertical-align: top; }
th { background: #f6f8fa; position: sticky; top: 0; text-align: left; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.text { min-width: 10ch; max-width: 60ch; }
th.paper, td.paper { background: #f3f0ff; }
tr.notrun td { color: #8c959f; }
td.ok { background: #dafbe1; color: #116329; font-weight: 600; }
td.bad { background: #ffebe9; color: #a40e26; font-weight: 600; }
td.unsure { background: #fff8c5; color: #7d4e00; font-weight: 600; }
td.limited { background: #ddf4ff; color: #0a3069; font-weight: 600; }
td.warn { background: #fff1e5; }
a.download { display: inline-block; margin-top: 8px; }
"""


# ---------------------------------------------------------------------------------- columns
def metric_stems(columns: Iterable[str]) -> list[str]:
    """Metrics summarised as ``<m>_mean`` + ``<m>_ci95`` + ``<m>_n``, in column order."""
    cols = list(columns)
    present = set(cols)
    return [
        c[: -len("_mean")]
        for c in cols
        if c.endswith("_mean") and {c[:-5] + "_ci95", c[:-5] + "_n"} <= present
    ]


def _empty(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or (isinstance(value, str) and not value)
    )


def _number(value: Any) -> str:
    """A float as people read it: integers without '.0', others with 4 significant digits."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.4g}"
    return str(value)


def display_frame(frame: pd.DataFrame, digits: int = 2) -> tuple[list[str], list[list[Any]], list[str]]:
    """Header, rows and per-column kind (``num``/``text``/``paper``) of the view of a table.

    Each summarised metric ``m`` becomes one column "m (ours, mean ± CI)", followed by the
    paper's ``paper_m`` when the table has it; the statistics columns behind it and the
    per-seed ``*_values`` are left to the CSV, as are columns empty in every row.
    """
    stems = metric_stems(frame.columns)
    stat_cols = {f"{m}_{s}" for m in stems for s in STAT_SUFFIXES}
    paired_paper = {f"paper_{m}" for m in stems if f"paper_{m}" in frame.columns}
    header: list[str] = []
    kinds: list[str] = []
    getters: list[Any] = []
    for col in frame.columns:
        if col in paired_paper or (col in stat_cols and not col.endswith("_mean")) or col.endswith("_values"):
            continue
        if frame[col].map(_empty).all():
            continue
        if col in stat_cols:  # <m>_mean: the metric's place in the column order
            m = col[: -len("_mean")]
            header.append(f"{m} (ours)")
            kinds.append("num")
            getters.append(lambda r, m=m: format_ci(r[f"{m}_mean"], r[f"{m}_ci95"], r[f"{m}_n"], digits))
            if f"paper_{m}" in paired_paper:
                header.append(f"{m} (paper)")
                kinds.append("paper")
                getters.append(lambda r, m=m: "" if _empty(r[f"paper_{m}"]) else _number(r[f"paper_{m}"]))
            continue
        numeric = pd.api.types.is_numeric_dtype(frame[col]) and not pd.api.types.is_bool_dtype(frame[col])
        header.append(col)
        kinds.append("paper" if col.startswith("paper_") else "num" if numeric else "text")
        getters.append(lambda r, c=col: "" if _empty(r[c]) else _number(r[c]))
    rows = [[get(r) for get in getters] for r in frame.to_dict("records")]
    return header, rows, kinds


def constant_columns(frame: pd.DataFrame) -> dict[str, str]:
    """Identity columns with one value in every row (stated once above the table, not repeated)."""
    if len(frame) < 2:
        return {}
    stats = {f"{m}_{s}" for m in metric_stems(frame.columns) for s in STAT_SUFFIXES}
    out = {}
    for col in frame.columns:
        if col in stats or col.startswith("paper_") or col in ("verdict", "status"):
            continue
        values = frame[col]
        if values.notna().all() and values.nunique() == 1:
            out[col] = _number(values.iloc[0])
    return out


def _cell_class(column: str, value: str, kind: str) -> str:
    classes = [kind]
    if column == "verdict":
        classes.append(VERDICT_CLASSES.get(value.strip(), ""))
    if column in ("below_baseline",) and value == "true":
        classes.append("warn")
    if column == "converged" and value == "false":
        classes.append("warn")
    return " ".join(dict.fromkeys(c for c in classes if c))


# ---------------------------------------------------------------------------------- pages
def page(title: str, body: str) -> str:
    """A complete HTML document with the shared style (no external resources)."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def html_table(
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    kinds: Sequence[str] | None = None,
    row_classes: Sequence[str] | None = None,
) -> str:
    """An HTML ``<table>``; every cell escaped."""
    kinds = list(kinds or ["text"] * len(header))
    out = ["<table>", "<thead><tr>"]
    out += [
        f'<th class="{"paper" if k == "paper" else ""}">{html.escape(str(h))}</th>'
        for h, k in zip(header, kinds)
    ]
    out.append("</tr></thead>\n<tbody>")
    for i, row in enumerate(rows):
        cls = row_classes[i] if row_classes else ""
        cells = "".join(
            f'<td class="{_cell_class(h, str(v), k)}">{html.escape(str(v))}</td>'
            for h, v, k in zip(header, row, kinds)
        )
        out.append(f'<tr class="{cls}">{cells}</tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


def table_page(
    frame: pd.DataFrame, title: str, csv_name: str | None = None, csv_text: str | None = None, digits: int = 2
) -> str:
    """The HTML view of one table: title, how to read it, the table, the CSV as a download."""
    if "verdict" in frame.columns and len(frame.columns) > 2:  # the verdict next to the claim it judges
        cols = [c for c in frame.columns if c != "verdict"]
        frame = frame[cols[:1] + ["verdict"] + cols[1:]]
    constants = constant_columns(frame)
    header, rows, kinds = display_frame(frame.drop(columns=list(constants)), digits)
    status = frame["status"].astype(str).tolist() if "status" in frame.columns else [""] * len(frame)
    row_classes = ["notrun" if s.startswith("not run") else "" for s in status]
    notes = [f"{len(frame)} rows."]
    if "verdict" in frame.columns:
        from collections import Counter

        from noisyor_bench.reporting.summary import counts_text

        notes = [counts_text(Counter(frame["verdict"].fillna("no data").astype(str))) + "."]
    if constants:
        notes.append("In every row: " + ", ".join(f"{c} = {v}" for c, v in constants.items()) + ".")
    if metric_stems(frame.columns):
        notes.append(
            "(ours): mean over seeds ± half-width of the 95% Student-t confidence interval "
            "('(n=1)': one seed); (paper): the number the paper reports. Per-seed values are in the CSV."
        )
    body = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">{html.escape(" ".join(notes))}</p>',
        html_table(header, rows, kinds, row_classes),
    ]
    if csv_text is not None:
        data = base64.b64encode(csv_text.encode("utf-8")).decode("ascii")
        name = html.escape(csv_name or "table.csv")
        body.append(
            f'<p><a class="download" download="{name}" href="data:text/csv;base64,{data}">Download {name}</a></p>'
        )
    return page(title, "\n".join(body))


def csv_title(path: str | Path) -> str:
    """A readable default title from a table's file name (``fig3a.csv`` -> ``fig3a``)."""
    return re.sub(r"[_-]+", " ", Path(path).stem)


def csv_to_html(csv_path: str | Path, html_path: str | Path, title: str | None = None) -> Path:
    """Write the HTML view of the table ``csv_path`` to ``html_path`` (atomically)."""
    from noisyor_bench.infra.io import write_text_atomic

    csv_path = Path(csv_path)
    verify_recorded_file(csv_path)  # an edited table (a verdict changed by hand) is refused
    try:
        text = csv_path.read_text(encoding="utf-8")
        frame = pd.read_csv(csv_path) if text.strip() else pd.DataFrame()
    except (OSError, UnicodeDecodeError, pd.errors.ParserError) as err:
        raise DataError(f"{csv_path}: cannot read the table ({err})") from None
    write_text_atomic(html_path, table_page(frame, title or csv_title(csv_path), csv_path.name, text))
    return Path(html_path)


def html_path_for(csv_path: str | Path) -> Path:
    """Where the HTML view of a table lives: next to it, ``.csv`` -> ``.html``."""
    return Path(csv_path).with_suffix(".html")


# ---------------------------------------------------------------------------------- software
def _rows(mapping: Mapping[str, Any]) -> list[list[str]]:
    return [[str(k), "" if v is None else str(v)] for k, v in mapping.items()]


def software_page(env: Mapping[str, Any], title: str = "Software, code version and machine") -> str:
    """The report's software page from :func:`noisyor_bench.infra.provenance.environment`."""
    code = env.get("code", {})
    pkgs = env.get("packages", {})
    commit = code.get("commit") or "unknown"
    state = " (uncommitted changes)" if code.get("dirty") else "" if code.get("dirty") is False else ""
    summary = [
        ["noisyor-bench", str(env.get("noisyor_bench_version", ""))],
        ["git commit", f"{commit}{state}"],
        ["code version from", str(code.get("source") or code.get("reason") or "")],
        [
            "python",
            f"{env.get('python', {}).get('version', '')} ({env.get('python', {}).get('implementation', '')})",
        ],
    ]
    machine = _rows(env.get("platform", {})) + _rows(env.get("device", {}))
    versions = pkgs.get("versions", {})
    differ = pkgs.get("differ_from_pins", {})
    pkg_rows = [
        [n, v or "not installed", f"pinned {differ[n]['pinned']}" if n in differ else ""]
        for n, v in versions.items()
    ]
    body = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">Recorded when the workflow ran. Pins: {html.escape(str(pkgs.get("requirements") or "none found"))}; '
        f"{len(differ)} installed package(s) differ from them.</p>",
        "<h1>Code</h1>",
        html_table(["", ""], summary),
        "<h1>Machine</h1>",
        html_table(["", ""], machine),
        "<h1>Packages (pinned in envs/requirements.txt, as installed)</h1>",
        html_table(["package", "installed", "differs from"], pkg_rows),
    ]
    return page(title, "\n".join(body))
