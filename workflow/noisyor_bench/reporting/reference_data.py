"""Whether a published reference was made on the datasets today's config builds.

Why: a reference is re-judged by today's claim code and ranked above a quick run, so a reference
made on another draw of a synthetic dataset (a changed seed, seed rule or generator) would answer
for data the workflow no longer builds, and a quick run on today's data would disagree with it
for no reason a reader could see.  The evidence ladder judges such a reference without its rows
of those datasets (:func:`without_datasets`); its other claims stand.

A reference's ``tables/datasets.csv`` records each dataset's seed (tables written before that
column: its exact expected sparsity, printed with two decimals), compared here with today's
config without building anything.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

log = logging.getLogger(__name__)

#: datasets.csv prints expected sparsity with two decimals.
PRINTED_TOLERANCE = 0.005 + 1e-9


def expected_sparsity_today(name: str, spec: Mapping[str, Any]) -> float | None:
    """Today's exact expected sparsity (percent) of a dataset whose parameters need no raw data;
    None for the others (MULTI-MNIST's patterns come from the MNIST files)."""
    from noisyor_bench.data.synthetic.sparsity import expected_sparsity

    if spec.get("family") == "random":
        from noisyor_bench.data.synthetic.synrandom import params_rng, random_parameters

        return 100 * expected_sparsity(*random_parameters(spec, params_rng(int(spec["seed"])), name=name))
    if spec.get("family") == "pattern":
        from noisyor_bench.data.synthetic.patterns import SHAPE_SETS, pattern_parameters

        if spec.get("patterns") in SHAPE_SETS:
            theta, theta0, mu, _ = pattern_parameters(spec, None, "/nonexistent")
            return 100 * expected_sparsity(theta, theta0, mu)
    return None


def stale_datasets(tables_dir: str | Path, datasets: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Dataset -> why, for every dataset of a reference's ``datasets.csv`` that today's config
    (``datasets``: the config's ``datasets`` section) draws differently; empty when all agree or the
    folder has no datasets table."""
    path = Path(tables_dir) / "datasets.csv"
    if not path.is_file():
        return {}
    frame = pd.read_csv(path)
    stale: dict[str, str] = {}
    for _, row in frame.iterrows():
        name = str(row["dataset"])
        spec = datasets.get(name)
        if spec is None:
            continue
        if "seed" in frame and pd.notna(row["seed"]) and "seed" in spec:
            if int(row["seed"]) != int(spec["seed"]):
                stale[name] = (
                    f"drawn with seed {int(row['seed'])}, today's config draws seed {int(spec['seed'])}"
                )
            continue
        today = expected_sparsity_today(name, spec)
        published = row.get("expected_sparsity")
        if today is not None and pd.notna(published) and abs(today - float(published)) > PRINTED_TOLERANCE:
            stale[name] = f"expected sparsity {float(published):.2f}%, today's config builds {today:.2f}%"
    return stale


def without_datasets(tables_dir: str | Path, stale: Mapping[str, str], into: str | Path) -> Path:
    """A copy of a tables folder whose CSVs lack the rows of the ``stale`` datasets (a CSV
    without a ``dataset`` column is copied as it is, with its provenance record); returns the copy's
    folder.  A filtered CSV goes without its record: the record's sha256 is the published file's,
    checked here before the rows are dropped."""
    from noisyor_bench.infra.integrity import verify_recorded_file
    from noisyor_bench.infra.io import copy_file_atomic, write_text_atomic

    source, target = Path(tables_dir), Path(into)
    target.mkdir(parents=True, exist_ok=True)
    filtered: set[str] = set()
    for path in sorted(source.glob("*.csv")):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        if "dataset" in frame:
            verify_recorded_file(path)
            write_text_atomic(
                target / path.name, frame[~frame["dataset"].isin(list(stale))].to_csv(index=False)
            )
            filtered.add(path.name)
    for path in sorted(source.iterdir()):
        record_of = path.name.removesuffix(".prov.json")
        if path.is_file() and path.name not in filtered and record_of not in filtered:
            copy_file_atomic(path, target / path.name)
    return target
