"""How far the times behind the speed claims move between two runs of one commit: the size of the
timing tolerance (:data:`noisyor_bench.reporting.timing_claims.TIMING_TOLERANCE`).

Why: a speed claim is decided by the 95% CI of a log time ratio over seeds.  Two runs of one
commit give the same tables but not the same times (load, caches, clock), so a CI edge near the
threshold flips the verdict from one run to the next.  This script reads two results
directories of the same grid and prints, per timed column of the tables (``*_median_values``:
per-seed medians), how far each seed's time moved (ln of the ratio, second run / first), and,
per speed claim judged in each run's claim table, the ratio and CI it printed in its ``timing``.
The tolerance must exceed the movement of a CI edge.  Example::

    python benchmarks/timing_reproducibility.py /work/runA/results /work/runB/results \\
        --out benchmarks/results/timing_reproducibility.md
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from noisyor_bench.infra.io import write_text_atomic
from noisyor_bench.reporting.tables import parse_values
from noisyor_bench.reporting.timing_claims import TIMING_TOLERANCE

TIMED_TABLES = ("avipam_table1", "avipam_table2", "avipam_table3", "avipam_table4", "ape_table1")
CLAIM_TABLES = ("claims_avipam", "claims_ape", "claims_ape_noisyor")
PART = re.compile(r"^(table\d): ")
NUMBER = r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
RATIO = re.compile(rf"ratio {NUMBER} \[{NUMBER}, {NUMBER}\]")
LOG10 = re.compile(r"log10\([^)]*\) ([+-][\d.]+) \[([+-][\d.]+), ([+-][\d.]+)\]")
TIMED = ("minutes", "seconds", "time")
KEYS = ("method", "component", "dataset", "corpus", "experiment")


def seed_moves(first: Path, second: Path) -> pd.DataFrame:
    """One row per (table, timed column, row, seed) present in both runs: the two times and
    ln(second / first)."""
    rows = []
    for name in TIMED_TABLES:
        a_path, b_path = first / "tables" / f"{name}.csv", second / "tables" / f"{name}.csv"
        if not a_path.exists() or not b_path.exists():
            continue
        a, b = pd.read_csv(a_path), pd.read_csv(b_path)
        keys = [k for k in KEYS if k in a.columns and k in b.columns]
        merged = a.merge(b, on=keys, suffixes=("_a", "_b"))
        timed = [
            c
            for c in a.columns
            if c.endswith("_median_values") and c in b.columns and any(t in c for t in TIMED)
        ]
        for col in timed:
            for _, r in merged.iterrows():
                va, vb = parse_values(r[f"{col}_a"]), parse_values(r[f"{col}_b"])
                for seed in sorted(set(va) & set(vb)):
                    if va[seed] > 0 and vb[seed] > 0 and math.isfinite(va[seed] * vb[seed]):
                        row = {"table": name, "column": col.removesuffix("_median_values"), "seed": seed}
                        row |= {k: r[k] for k in keys}
                        row |= {
                            "first": va[seed],
                            "second": vb[seed],
                            "ln_moved": math.log(vb[seed] / va[seed]),
                        }
                        rows.append(row)
    return pd.DataFrame(rows)


CLOCK_PAIRS = (("time_s", "time_cpu_s"), ("train_minutes", "train_cpu_minutes"))


def cpu_over_wall(results: Path) -> pd.DataFrame:
    """Per (table, method): each run's CPU time over its wall time (medians per seed), where both
    are recorded -- 1 on an idle core for a one-thread run, below 1 where the run waited for a
    core, above 1 where it used several threads."""
    rows = []
    for name in TIMED_TABLES:
        path = results / "tables" / f"{name}.csv"
        if not path.exists():
            continue
        table = pd.read_csv(path)
        for wall, cpu in CLOCK_PAIRS:
            wc, cc = f"{wall}_median_values", f"{cpu}_median_values"
            if wc not in table.columns or cc not in table.columns:
                continue
            for _, r in table.iterrows():
                w, c = parse_values(r[wc]), parse_values(r[cc])
                ratios = [c[s] / w[s] for s in sorted(set(w) & set(c)) if w[s] > 0 and math.isfinite(c[s])]
                if ratios:
                    label = " ".join(
                        str(r[k]) for k in ("dataset", "method", "component") if k in table.columns
                    )
                    rows.append(
                        {
                            "table": name,
                            "row": label,
                            "runs": len(ratios),
                            "min": min(ratios),
                            "max": max(ratios),
                        }
                    )
    return pd.DataFrame(rows)


def claim_ratios(results: Path) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(claim, part) -> (ratio, CI low, CI high) as factors, as each speed claim's ``timing``
    printed them: aviPAM's "table1: ...; ratio 46.1 [31.3, 67.8]" and APE's
    "log10(time VI / time APE) +4.53 [+4.25, +4.81]"."""
    out = {}
    for name in CLAIM_TABLES:
        path = results / "tables" / f"{name}.csv"
        if not path.exists():
            continue
        for _, r in pd.read_csv(path, dtype=str).fillna("").iterrows():
            part = ""
            for token in str(r["timing"]).split("; "):
                if head := PART.match(token):
                    part = head[1]
                if m := RATIO.search(token):
                    out[(r["claim_id"], part)] = (float(m[1]), float(m[2]), float(m[3]))
                elif m := LOG10.search(token):
                    out[(r["claim_id"], part)] = tuple(10 ** float(m[i]) for i in (1, 2, 3))  # type: ignore[assignment]
    return out


def hardware(results: Path) -> str:
    """The machine a run's speed claims name in their timing ("hardware: ..."), else "unknown"."""
    for name in CLAIM_TABLES:
        path = results / "tables" / f"{name}.csv"
        if path.exists():
            for text in pd.read_csv(path, dtype=str).fillna("")["timing"]:
                if m := re.search(r"hardware: ([^;]+)", str(text)):
                    return m[1].strip()
    return "unknown"


def report(first: Path, second: Path) -> str:
    moves = seed_moves(first, second)
    lines = [
        "# Timing reproducibility: two runs of one commit",
        "",
        f"Generated by `python benchmarks/timing_reproducibility.py {first} {second}`. "
        f"Where the runs measured: {hardware(first)} / {hardware(second)}.",
        "",
        "## Per-seed times (ln of second / first)",
        "",
        "| table | column | cells | median abs | max abs | max as factor |",
        "|---|---|---:|---:|---:|---:|",
    ]
    if not moves.empty:
        for (table, col), g in moves.groupby(["table", "column"]):
            d = g["ln_moved"].abs()
            lines.append(
                f"| {table} | {col} | {len(g)} | {np.median(d):.3f} | {d.max():.3f} | x{math.exp(d.max()):.2f} |"
            )
    lines += [
        "",
        "## Speed claims: ratio [95% CI] as each run's claim table printed it",
        "",
        "| claim | part | first run | second run | CI edges moved by (factor) |",
        "|---|---|---|---|---:|",
    ]
    a, b = claim_ratios(first), claim_ratios(second)
    worst = 1.0
    for key in sorted(set(a) & set(b)):
        (ea, la, ha), (eb, lb, hb) = a[key], b[key]
        moved = max(max(la, lb) / min(la, lb), max(ha, hb) / min(ha, hb))
        worst = max(worst, moved)
        lines.append(
            f"| {key[0]} | {key[1]} | {ea:g} [{la:g}, {ha:g}] | {eb:g} [{lb:g}, {hb:g}] | x{moved:.2f} |"
        )
    for label, results in (("first", first), ("second", second)):
        ratios = cpu_over_wall(results)
        lines += [
            "",
            f"## CPU time / wall time per run, {label} run (1 on an idle core for a one-thread run)",
            "",
            "| table | row | runs | min | max |",
            "|---|---|---:|---:|---:|",
        ]
        lines += [
            f"| {r.table} | {r.row} | {r.runs} | {r['min']:.2f} | {r['max']:.2f} |"
            for _, r in ratios.iterrows()
        ]
    lines += [
        "",
        f"Largest movement of a CI edge between the two runs: x{worst:.2f}; the timing tolerance is "
        f"x{TIMING_TOLERANCE:g} (a timed verdict needs its CI to clear the threshold by it).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("first", type=Path, help="results directory of the first run")
    ap.add_argument("second", type=Path, help="results directory of the second run (same grid and commit)")
    ap.add_argument("--out", type=Path, help="write the Markdown here too")
    args = ap.parse_args(argv)
    for d in (args.first, args.second):
        if not (d / "tables").is_dir():
            ap.error(f"{d}: no tables/ folder -- pass the results directory of a finished run")
    text = report(args.first, args.second)
    print(text)
    if args.out:
        write_text_atomic(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
