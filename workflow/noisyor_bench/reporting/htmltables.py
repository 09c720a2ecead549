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
from typing import TYPE_CHECKING, Any

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.integrity import verify_recorded_file

if TYPE_CHECKING:
    import pandas as pd

STAT_SUFFIXES = ("mean", "std", "n", "ci95", "values")
"""Columns ``<metric>_<suffix>`` that :func:`noisyor_bench.reporting.tables.summarise` writes per metric."""

VERDICT_CLASSES = {
    "reproduced": "ok",
    "not reproduced": "bad",
    "inconclusive": "unsure",
    "inconclusive (budget)": "unsure",  # reporting.claims.verdict_label
    "not tested": "untested",
}

STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; font-size: 13px;
       margin: 12px; color: #1f2328; }
h1 { font-size: 16px; margin: 0 0 6px 0; }
p.note { color: #57606a; margin: 4px 0 10px 0; max-width: 110ch; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d0d7de; padding: 3px 4px; vertical-align: top; }
th { background: #f6f8fa; position: sticky; top: 0; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.text { max-width: 60ch; }
th.paper, td.paper { background: #f3f0ff; }
tr.notrun td { color: #8c959f; }
td.ok { background: #dafbe1; color: #116329; font-weight: 600; }
td.bad { background: #ffebe9; color: #a40e26; font-weight: 600; }
td.unsure { background: #fff8c5; color: #7d4e00; font-weight: 600; }
td.untested { background: #eaeef2; color: #57606a; font-weight: 600; }
td.warn { background: #fff1e5; }
a.download { display: inline-block; margin-top: 8px; }
table { max-width: 980px; font-size: 12px; }
th { overflow-wrap: break-word; font-size: 11px; }
td.text { overflow-wrap: break-word; }
div.wide { overflow-x: auto; max-width: 990px; }
details.rows { margin: 4px 0; } details.rows > summary, details.prov > summary { cursor: pointer; }
details.prov { margin-top: 10px; color: #57606a; max-width: 980px; } code { overflow-wrap: anywhere; }
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


def paper_partners(stems: Sequence[str], columns: Iterable[str]) -> dict[str, str]:
    """metric -> the ``paper_<x>`` column shown right after it: ``paper_<metric>`` itself, else
    the paper column whose ``<x>`` the metric's name starts or ends with as a word (aviPAM's
    ``paper_npmi`` beside ``npmi_external``, APE's ``paper_ll`` beside ``ll_paper``), each paper
    column beside one metric only (the first in column order)."""
    papers = [c for c in columns if c.startswith("paper_")]
    out: dict[str, str] = {}
    for match in (
        lambda m, x: m == x,
        lambda m, x: m.startswith(f"{x}_"),
        lambda m, x: m.endswith(f"_{x}"),
    ):
        for m in stems:
            if m in out:
                continue
            for col in papers:
                if col not in out.values() and match(m, col[len("paper_") :]):
                    out[m] = col
                    break
    return out


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
    # imported here, not at the top: pandas (through reporting.tables too) costs ~0.2 s of start-up
    # to software-html, which imports this module for a page without a table
    import pandas as pd

    from noisyor_bench.reporting.tables import format_ci

    stems = metric_stems(frame.columns)
    stat_cols = {f"{m}_{s}" for m in stems for s in STAT_SUFFIXES}
    partner = paper_partners(stems, frame.columns)
    paired_paper = set(partner.values())
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
            if m in partner:
                header.append(f"{m} (paper)")
                kinds.append("paper")
                getters.append(lambda r, c=partner[m]: "" if _empty(r[c]) else _number(r[c]))
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


LONG_CELL_CHARS = 240
"""A cell longer than this (a claim's decision rule) shows its start; the rest opens on a click."""


def _cell_html(text: str) -> str:
    """A cell's escaped text; a long one as a ``<details>`` whose summary is its first words."""
    if len(text) <= LONG_CELL_CHARS:
        return html.escape(text)
    cut = text.rfind(" ", 0, 100)
    cut = cut if cut > 40 else 100
    return f"<details><summary>{html.escape(text[:cut])} …</summary>{html.escape(text[cut:])}</details>"


def html_table(
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    kinds: Sequence[str] | None = None,
    row_classes: Sequence[str] | None = None,
) -> str:
    """An HTML ``<table>``; every cell escaped."""
    kinds = list(kinds or ["text"] * len(header))
    out = ['<div class="wide"><table>', "<thead><tr>"]
    out += [  # '_' shown as a space: a header wraps at its words, not letter by letter
        f'<th class="{"paper" if k == "paper" else ""}">{html.escape(str(h).replace("_", " "))}</th>'
        for h, k in zip(header, kinds)
    ]
    out.append("</tr></thead>\n<tbody>")
    for i, row in enumerate(rows):
        cls = row_classes[i] if row_classes else ""
        cells = "".join(
            f'<td class="{_cell_class(h, str(v), k)}">{_cell_html(str(v))}</td>'
            for h, v, k in zip(header, row, kinds)
        )
        out.append(f'<tr class="{cls}">{cells}</tr>')
    out.append("</tbody></table></div>")  # a table still too wide scrolls in its box, not the page
    return "\n".join(out)


LONG_TABLE_ROWS = 40
MAX_GROUPS = 30
"""A table longer than this is shown in groups (by its leading identity columns), each behind a
``<details>`` toggle, so its page stays a few screens tall (table5 was 50,000 px)."""


def view_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns worth a place in a 1000-px view: ``seeds`` (``n_seeds`` counts them), the
    raw ``method`` id beside its readable ``method_label`` and a metric's ``<m>_low``/``<m>_high``
    range bounds are left to the CSV; ``n_converged`` and ``n_runs`` become one column."""
    drop = [c for c in ("seeds", "run_dir") if c in frame.columns]  # run folders: the provenance block
    stems = set(metric_stems(frame.columns))  # a range's bounds beside its metric: in the CSV only
    drop += [
        f"{m}_{b}_{s}"
        for m in stems
        for b in ("low", "high")
        if f"{m}_{b}" in stems
        for s in STAT_SUFFIXES
        if f"{m}_{b}_{s}" in frame.columns
    ]
    if {"method", "method_label"} <= set(frame.columns) or {"method", "label"} <= set(frame.columns):
        drop.append("method")
    if {"n_runs", "n_converged"} <= set(frame.columns):  # one column: "converged of runs"
        frame = frame.copy()
        frame.insert(
            list(frame.columns).index("n_runs"),
            "converged_of_runs",
            [
                "" if _empty(r) else f"{_number(c)}/{_number(r)}"
                for c, r in zip(frame["n_converged"], frame["n_runs"])
            ],
        )
        drop += ["n_runs", "n_converged"]
    frame = frame.drop(columns=drop)
    return fold_settings(_answer_first(frame))


ID_COLUMNS = frozenset(
    {
        "experiment",
        "table_experiment",
        "corpus",
        "dataset",
        "ds",
        "n_train",
        "method_label",
        "label",
        "method",
        "encoder",
        "component",
        "n_topics",
        "K",
        "seed",
        "claim_id",
        "verdict",
    }
)
"""Columns that say which row it is: they stay first, in their order."""


def _answer_first(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the row's identity first, then each metric (ours ± CI, the paper's beside it),
    then everything else (status, notes, counts): the paper's table reads left to right in the
    first 1000 px instead of after the notes."""
    stems = metric_stems(frame.columns)
    partner = paper_partners(stems, frame.columns)
    metric_cols = [
        c
        for m in stems
        for c in (*(f"{m}_{s}" for s in STAT_SUFFIXES), f"{m}_values", partner.get(m, ""))
        if c in frame.columns
    ]
    ids = [c for c in frame.columns if c in ID_COLUMNS and c not in metric_cols]
    rest = [c for c in frame.columns if c not in ids and c not in metric_cols]
    return frame[[*ids, *dict.fromkeys(metric_cols), *rest]]


def fold_settings(frame: pd.DataFrame) -> pd.DataFrame:
    """The run settings a table lists after its last metric (threads, iterations, learning rate;
    not a note, status, verdict or baseline) as one ``settings`` column of ``name=value`` pairs:
    one column instead of one per setting keeps a wide table inside a 1000-px pane."""
    stems = metric_stems(frame.columns)
    owned = {f"{m}_{s}" for m in stems for s in STAT_SUFFIXES}
    cols = list(frame.columns)
    last = max((i for i, c in enumerate(cols) if c in owned or c.startswith("paper_")), default=None)
    if last is None:
        return frame
    keep = ("note", "status", "verdict")
    settings = [
        c for c in cols[last + 1 :] if c not in keep and "baseline" not in c and not c.startswith("paper_")
    ]
    if len(settings) < 2:
        return frame
    text = [
        ", ".join(f"{c.replace('_', ' ')} {_number(v)}" for c, v in zip(settings, values) if not _empty(v))
        for values in frame[settings].itertuples(index=False)
    ]
    return frame.drop(columns=settings).assign(settings=text)


def row_groups(
    header: Sequence[str], rows: Sequence[Sequence[Any]], kinds: Sequence[str]
) -> list[tuple[str, list[int]]]:
    """Rows of a long table grouped by its leading identity columns (text/num, not a metric):
    columns are added while groups exceed :data:`LONG_TABLE_ROWS` rows and the groups stay at most
    :data:`MAX_GROUPS` (a screen of toggles); one group (everything) for a short table."""
    if len(rows) <= LONG_TABLE_ROWS:
        return [("", list(range(len(rows))))]
    identity = [
        i for i, (h, k) in enumerate(zip(header, kinds)) if k != "paper" and not str(h).endswith("(ours)")
    ]
    key_cols: list[int] = []
    groups: dict[tuple[str, ...], list[int]] = {(): list(range(len(rows)))}
    for i in identity[:6]:
        if len({str(r[i]) for r in rows}) < 2:
            continue
        finer: dict[tuple[str, ...], list[int]] = {}
        for j, r in enumerate(rows):
            finer.setdefault(tuple(str(r[c]) for c in [*key_cols, i]), []).append(j)
        if len(finer) > MAX_GROUPS:  # too fine (an id, a topic): try the next column
            continue
        key_cols, groups = [*key_cols, i], finer
        if max(len(v) for v in groups.values()) <= LONG_TABLE_ROWS:
            break
    if not key_cols:
        return [("", list(range(len(rows))))]
    return [
        (", ".join(f"{header[c]} = {v}" for c, v in zip(key_cols, key)), idx) for key, idx in groups.items()
    ]


WIDE_TABLE_COLUMNS = 16
TRANSPOSE_ROWS = 8
"""A view with more columns than :data:`WIDE_TABLE_COLUMNS` and at most :data:`TRANSPOSE_ROWS`
rows (an ablation's few cells with dozens of statistics) is shown transposed."""


def _breakable(value: Any) -> Any:
    """A cell that can wrap: a ``;``-joined list (``0.46;0.44;...``) gets a space after each
    ``;``, a long dotted or slashed name (a config key, a path) a zero-width space after each
    ``.``, ``/`` or ``_``."""
    if not isinstance(value, str):
        return value
    value = re.sub(r";(?=\S)", "; ", value)
    return re.sub(r"\S{24,}", lambda m: re.sub(r"([./_])", "\\1\u200b", m.group(0)), value)


def transposed(
    header: Sequence[str], rows: Sequence[Sequence[Any]]
) -> tuple[list[str], list[list[Any]], list[str]]:
    """The view turned by 90 degrees: a ``field`` column, then one column per row (headed by its
    first cell)."""
    columns = ["field", *(str(r[0]) if r else "" for r in rows)]
    body = [[h, *(r[i] for r in rows)] for i, h in enumerate(header)][1:]
    return columns, body, ["text"] * len(columns)


def table_page(
    frame: pd.DataFrame,
    title: str,
    csv_name: str | None = None,
    csv_text: str | None = None,
    digits: int = 2,
    footer: str = "",
) -> str:
    """The HTML view of one table: title, how to read it, the table (a long one in groups behind
    toggles), the CSV as a download, then ``footer`` (its provenance)."""
    frame = view_columns(frame)
    if "verdict" in frame.columns and len(frame.columns) > 2:  # the verdict next to the claim it judges
        cols = [c for c in frame.columns if c != "verdict"]
        frame = frame[cols[:1] + ["verdict"] + cols[1:]]
    verdicts = frame["verdict"] if "verdict" in frame.columns else None  # counted as judged
    if verdicts is not None and "budget" in frame.columns:  # shown as people read it
        from noisyor_bench.reporting.claims import verdict_label

        frame = frame.assign(verdict=[verdict_label(r) for r in frame.to_dict("records")])
    constants = constant_columns(frame)
    header, rows, kinds = display_frame(frame.drop(columns=list(constants)), digits)
    status = frame["status"].astype(str).tolist() if "status" in frame.columns else [""] * len(frame)
    row_classes = ["notrun" if s.startswith("not run") else "" for s in status]
    notes = [f"{len(frame)} rows."]
    if "verdict" in frame.columns:
        from collections import Counter

        from noisyor_bench.reporting.summary import counts_text

        notes = [counts_text(Counter(verdicts.fillna("no data").astype(str))) + "."]
    if constants:
        notes.append("In every row: " + ", ".join(f"{c} = {v}" for c, v in constants.items()) + ".")
    if metric_stems(frame.columns):
        notes.append(
            "(ours): mean over seeds ± half-width of the 95% Student-t confidence interval "
            "('(n=1)': one seed); (paper): the number the paper reports. Per-seed values are in the CSV."
        )
    rows = [[_breakable(v) for v in row] for row in rows]
    if len(header) > WIDE_TABLE_COLUMNS and len(rows) <= TRANSPOSE_ROWS:  # one column per row instead
        header, rows, kinds = transposed(header, rows)
        row_classes = [""] * len(rows)
        notes.append(
            "Shown transposed (one column per row of the CSV): the table has more columns than a pane fits."
        )
    groups = row_groups(header, rows, kinds)
    if len(groups) > 1:
        notes.append(f"{len(groups)} groups of rows: each opens on a click.")
    body = [f"<h1>{html.escape(title)}</h1>", f'<p class="note">{html.escape(" ".join(notes))}</p>']
    for label, idx in groups:
        table = html_table(header, [rows[i] for i in idx], kinds, [row_classes[i] for i in idx])
        if label:
            summary = html.escape(f"{label} ({len(idx)} rows)")
            table = f'<details class="rows"><summary>{summary}</summary>{table}</details>'
        body.append(table)
    if csv_text is not None:
        data = base64.b64encode(csv_text.encode("utf-8")).decode("ascii")
        name = html.escape(csv_name or "table.csv")
        body.append(
            f'<p><a class="download" download="{name}" href="data:text/csv;base64,{data}">Download {name}</a></p>'
        )
    if footer:
        body.append(footer)
    return page(title, "\n".join(body))


def csv_title(path: str | Path) -> str:
    """A readable default title from a table's file name (``fig3a.csv`` -> ``fig3a``)."""
    return re.sub(r"[_-]+", " ", Path(path).stem)


def csv_to_html(csv_path: str | Path, html_path: str | Path, title: str | None = None) -> Path:
    """Write the HTML view of the table ``csv_path`` to ``html_path`` (atomically)."""
    import pandas as pd

    from noisyor_bench.infra.io import write_text_atomic

    csv_path = Path(csv_path)
    verify_recorded_file(csv_path)  # an edited table (a verdict changed by hand) is refused
    try:
        text = csv_path.read_text(encoding="utf-8")
        frame = pd.read_csv(csv_path) if text.strip() else pd.DataFrame()
    except (OSError, UnicodeDecodeError, pd.errors.ParserError) as err:
        raise DataError(f"{csv_path}: cannot read the table ({err})") from None
    from noisyor_bench.reporting.provenance_view import provenance_html

    footer = provenance_html(csv_path)  # commit, config, run folders, the audit command
    write_text_atomic(
        html_path, table_page(frame, title or csv_title(csv_path), csv_path.name, text, footer=footer)
    )
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
