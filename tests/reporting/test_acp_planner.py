"""The decidability planner of the ACP claims: every claim the builders emit has its cells, the
cells a grid lacks, their order by price, the budget's summary, the command and its errors."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from conftest import REPO, cli

from noisyor_bench.experiments.acp import grid
from noisyor_bench.experiments.acp.grid import corpora as corpus_grid
from noisyor_bench.experiments.config import load_config
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.reporting.acp.claim_cells import (
    MIN_SEEDS,
    CellNeed,
    builder_claim_ids,
    claim_cells,
    grid_view,
)
from noisyor_bench.reporting.acp.planner import (
    PLANNED,
    ClaimRow,
    format_plan,
    missing_text,
    plan,
    read_claims,
    with_cells,
)


# ------------------------------------------------------------------------------ every claim planned
@pytest.fixture(scope="module")
def config() -> dict:
    return load_config(REPO / "config" / "config.yaml")


def test_every_claim_id_the_builders_emit_has_its_cells(config):
    """A new claim (or a new Fig. 5 panel, a new ACP-SG cell in a grid) without an entry in
    claim_cells fails here instead of being left out of the plan."""
    ids = builder_claim_ids(config)
    assert len(ids) > 40 and any(i.startswith("mechanism-gradient-through-q-") for i in ids)
    paper = grid_view(config, "paper")
    for name in config["grids"]:
        view = grid_view(config, name, None if name == "paper" else paper)
        unplanned = [i for i in ids if claim_cells(i, view) is None or not claim_cells(i, view).cells]
        assert unplanned == [], f"grid {name}: no cells for {unplanned}"
    assert claim_cells("fig9-made-up-claim", paper) is None
    assert claim_cells("fig5-on-par-large-n-syn-random-99", paper) is None


def test_cells_follow_the_builders_values(config):
    paper = grid_view(config, "paper")
    quick = grid_view(config, "quick", paper)
    fig3a = claim_cells("fig3a-svi-worse-than-amortized-n1000", quick).cells
    assert CellNeed("fig3a", "syn-pattern", "svi", 0, 1) in fig3a  # deterministic: one seed
    assert CellNeed("fig3a", "syn-pattern", "acp", 1000, MIN_SEEDS) in fig3a
    on_par = {c.n_train for c in claim_cells("fig5-on-par-large-n-syn-random-4", quick).cells}
    assert max(on_par) == 10000 and len(on_par) == 2  # the paper's largest N_train and one more
    table4 = claim_cells("table4-acp-lowest-every-row", quick).cells
    assert {(c.method, c.n_train) for c in table4} >= {("svi", 40000), ("lb-cdi", 1000), ("acp", 5000)}
    assert ("lb-cdi", 5000) not in {
        (c.method, c.n_train) for c in table4
    }  # a '-' in the paper: no comparison
    # quick's suppfig1 writes Fig. 4's recovery rows: its cells count as fig4's
    assert all(quick.covers(c) for c in claim_cells("suppfig1-lbcdi-svi-do-not-recover-n1000", quick).cells)


def test_the_builders_decide_on_exactly_the_declared_cells(config):
    """The NELBO claims (Fig. 3a, Fig. 5, Table 4) given a table of just their declared cells, at
    just their seeds: every one judged (no "not tested", no CI short of degrees of freedom); one
    cell less and the claim is not decided."""
    import numpy as np
    import pandas as pd

    from noisyor_bench.reporting.acp.synthetic_claims import synthetic_claims
    from noisyor_bench.reporting.tables import format_values

    quick = grid_view(config, "quick", grid_view(config, "paper"))
    rng = np.random.default_rng(0)
    level = {"acp": 100.0, "avi": 101.0, "svi": 103.0, "lb-cdi": 103.0}

    def judged(cid: str, cells) -> object:
        rows = [
            dict(
                artifact=c.experiment,
                experiment=c.experiment,
                dataset=c.dataset,
                method=c.method,
                n_train=c.n_train,
                nelbo_values=format_values(range(c.seeds), level[c.method] + rng.normal(0, 0.01, c.seeds)),
                deterministic=c.n_train == 0,
                status="measured",
            )
            for c in cells
        ]
        tables = {c.experiment: pd.DataFrame(rows) for c in cells}
        return next(c for c in synthetic_claims(tables) if c.claim_id == cid)

    ids = [c.claim_id for c in synthetic_claims({}) if c.claim_id.startswith(("fig3a-", "fig5-", "table4-"))]
    assert len(ids) == 30
    for cid in ids:
        cells = claim_cells(cid, quick).cells
        claim = judged(cid, cells)
        assert claim.verdict != "not tested", (cid, claim.numbers)
        assert "degree of freedom" not in claim.low_power and "n=1" not in claim.low_power, cid
        assert judged(cid, cells[1:]).verdict in ("not tested", "inconclusive"), cid


# ------------------------------------------------------------------------------ a hand-made grid
def _exp(mode: str, datasets: list[str], runs: dict, seeds: list[int] | None = None) -> dict:
    out = {"mode": mode, "datasets": datasets, "runs": runs}
    if seeds is not None:
        out["seeds"] = seeds
    return out


TEXT = {"seeds": [0, 1, 2, 3, 4], "methods": ["avi", "acp"], "topics": {"K": 20, "n_train": [2000]}}

TINY = {
    "grid": "tiny",
    "grids": {
        "tiny": {
            "acp": {
                "seeds": [0, 1],
                "experiments": {
                    "fig3a": _exp("inference", ["syn-pattern"], {"avi": [20], "acp": [20], "svi": [0]}),
                    "fig5": _exp(
                        "learning", ["syn-random-1"], {"avi": [30, 1000], "acp": [30, 1000]}, [0, 1, 2]
                    ),
                },
                "text": TEXT,
            }
        },
        "big": {
            "acp": {
                "seeds": [0, 1, 2],
                "experiments": {
                    "fig5": _exp(
                        "learning", ["syn-random-1", "syn-random-2"], {"avi": [30, 1000], "acp": [30, 1000]}
                    ),
                },
            }
        },
        "paper": {
            "acp": {
                "seeds": [0, 1, 2, 3, 4],
                "experiments": {
                    "fig3a": _exp("inference", ["syn-pattern"], {"avi": [20], "acp": [20], "svi": [0]}),
                    "fig4": _exp("learning", ["syn-pattern"], {"avi": [200], "acp": [200], "acp-sg": [200]}),
                    "fig5": _exp(
                        "learning",
                        ["syn-random-1", "syn-random-2"],
                        {"avi": [10, 30, 10000], "acp": [10, 30, 10000]},
                    ),
                },
                "text": {
                    **TEXT,
                    "classification": {"K": [50, 100], "n_train": [100, 500, 1000], "folds": 5},
                    "tsne": {"n_train": [1000, 500, 100], "perplexity": 30},
                },
            }
        },
    },
}


def price(cfg) -> float:
    """A stand-in for the cost model: N_train x seeds of every cell."""
    return float(sum(n * s for (_, _, _, n), s in grid_view(cfg, cfg["grid"]).seeds.items()))


ROWS = [
    ClaimRow("fig5-acp-better-small-n-syn-random-2", "not tested", "this run (tiny)"),
    ClaimRow("fig5-on-par-large-n-syn-random-1", "not tested", "this run (tiny)"),
    ClaimRow(
        "fig3a-acp-beats-avi-n20", "inconclusive", "this run (tiny)", "this run (tiny): inconclusive (n=2)"
    ),
    ClaimRow(
        "table5-acp-higher-mean-pmi-n2000",
        "inconclusive",
        "this run (tiny)",
        "this run (tiny): inconclusive (n=5)",
        "CI half-width 0.1 > |effect| 0.02; n>=8 would resolve it",
    ),
    ClaimRow(
        "mechanism-gradient-through-q-fig4-syn-pattern",
        "inconclusive",
        "reference/x",
        "reference/x: inconclusive (n=5); this run (tiny): not tested",
    ),
    ClaimRow("fig4-both-recover-all-n1000", "reproduced", "reference/x"),
]


def _plan(budget: float = 200.0):
    return plan(ROWS, TINY, "tiny", price, budget, grids=("tiny", "big", "paper"))


def test_missing_cells_and_their_price():
    result = _plan()
    by_id = {p.claim.claim_id: p for p in result.claims}
    assert "fig4-both-recover-all-n1000" not in by_id  # decided: not planned
    small = by_id["fig5-acp-better-small-n-syn-random-2"]
    assert [(m.need.key, m.need.seeds, m.have) for m in small.missing] == [
        (("fig5", "syn-random-2", "avi", 30), MIN_SEEDS, 0),
        (("fig5", "syn-random-2", "acp", 30), MIN_SEEDS, 0),
    ]
    assert small.extra_seconds == 2 * 30 * 3  # the fig5 experiment's 3 seeds
    assert small.cheapest_grid == "big" and small.status == "decidable in tiny for +180 s"
    # inconclusive with 2 seeds: a third seed of the dataset's cells (deterministic SVI stays at one)
    seeds = by_id["fig3a-acp-beats-avi-n20"]
    assert [(m.need.method, m.have, m.need.seeds) for m in seeds.missing] == [("acp", 2, 3), ("avi", 2, 3)]
    assert seeds.extra_seconds == 20 + 20
    on_par = by_id["fig5-on-par-large-n-syn-random-1"]
    assert [m.need.n_train for m in on_par.missing] == [10000, 10000]
    assert on_par.cheapest_grid == "paper"
    assert on_par.status.startswith("paper grid only (its cells at the paper's protocol: ")
    # the claim's own power estimate (n>=8) raises the text seeds from 5 to 8
    pmi = by_id["table5-acp-higher-mean-pmi-n2000"]
    assert {(m.have, m.need.seeds) for m in pmi.missing} == {(5, 8)}
    assert pmi.extra_seconds == 2 * 2000 * 3 and pmi.cheapest_grid is None
    assert missing_text(pmi.missing) == "table5/neurips-titles: acp, avi n2000 (5 -> 8 seeds)"
    # inconclusive at n=5 with no estimate: power, not cells
    mechanism = by_id["mechanism-gradient-through-q-fig4-syn-pattern"]
    assert mechanism.extra_seconds is None and mechanism.status.startswith("power: inconclusive at n=5")


def test_cheapest_first_and_the_budget_summary():
    result = _plan(200.0)
    assert [p.claim.claim_id for p in result.claims] == [
        "fig3a-acp-beats-avi-n20",
        "fig5-acp-better-small-n-syn-random-2",
        "table5-acp-higher-mean-pmi-n2000",
        "fig5-on-par-large-n-syn-random-1",
        "mechanism-gradient-through-q-fig4-syn-pattern",
    ]
    assert [p.decidable for p in result.claims] == [True, True, False, False, False]
    assert result.together == ["fig3a-acp-beats-avi-n20"] and result.together_seconds == 40  # 40 + 180 > 200
    assert _plan(300.0).together_seconds == 220
    text = format_plan(result)
    assert (
        "| fig3a-acp-beats-avi-n20 | inconclusive | fig3a/syn-pattern: acp, avi n20 (2 -> 3 seeds) | +40 s |"
        in text
    )
    assert text.splitlines()[-1] == (
        "Budget 200 s: tiny would decide 1 of 5 claims together for +40 s (fig3a-acp-beats-avi-n20)."
    )


def test_with_cells_adds_to_a_copy_of_the_grid():
    added = with_cells(TINY, "tiny", [CellNeed("fig4", "syn-pattern", "acp-sg", 200, 3)], ("big", "paper"))
    assert added["grid"] == "tiny" + PLANNED
    assert "fig4" not in TINY["grids"]["tiny"]["acp"]["experiments"]  # the grid itself untouched
    cells = grid.cells(added)
    assert [(c.experiment, c.method, c.n_train) for c in cells if c.experiment == "fig4"] == [
        ("fig4", "acp-sg", 200)
    ]
    assert grid.seeds(added, "fig4", "syn-pattern") == [0, 1, 2]  # the grid's 2 seeds, raised to 3
    # a t-SNE panel: the classification and t-SNE parts copied from the paper grid without their cells
    added = with_cells(TINY, "tiny", [CellNeed("classification-K100", "reuters", "acp", 500, 1, "tsne")])
    assert [c.path for c in corpus_grid.cells(added, "classification-K100")] == [
        "classification-K100/reuters/avi/n500",
        "classification-K100/reuters/acp/n500",
    ]
    assert corpus_grid.tsne_n_train(added) == [500] and corpus_grid.seeds(added) == [0, 1, 2, 3, 4]
    with pytest.raises(ConfigError, match="no grid of the config has an ACP experiment 'fig9'"):
        with_cells(TINY, "tiny", [CellNeed("fig9", "syn-pattern", "acp", 200, 3)])


# ------------------------------------------------------------------------------ inputs and errors
def _write(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_read_claims_keeps_acp_rows_and_names_what_is_missing(tmp_path):
    path = _write(
        tmp_path / "claims.csv",
        [
            {"claim_id": "fig5-on-par-large-n-syn-random-4", "verdict": "not tested", "paper": "acp"},
            {"claim_id": "ape-agreement-mdreviews", "verdict": "inconclusive", "paper": "ape"},
        ],
    )
    assert [r.claim_id for r in read_claims(path)] == ["fig5-on-par-large-n-syn-random-4"]
    with pytest.raises(DataError, match="nope.csv: no such claims table"):
        read_claims(tmp_path / "nope.csv")
    bad = _write(tmp_path / "bad.csv", [{"claim": "x", "verdict": "not tested"}])
    with pytest.raises(DataError, match=r"bad.csv: no column claim_id"):
        read_claims(bad)
    with pytest.raises(ConfigError, match="grids.nope: no such grid"):
        plan(ROWS, TINY, "nope", price)


def test_command_prints_the_plan(tmp_path, capsys):
    claims = _write(
        tmp_path / "claims.csv",
        [
            {"claim_id": "fig5-on-par-large-n-syn-random-4", "verdict": "not tested", "paper": "acp"},
            {"claim_id": "fig3a-acp-beats-avi-n20", "verdict": "reproduced", "paper": "acp"},
        ],
    )
    code, out, _ = cli(["acp-plan", "--claims", str(claims), "--grid", "quick", "--repo", str(REPO)], capsys)
    assert code == 0
    assert "| fig5-on-par-large-n-syn-random-4 | not tested | fig5/syn-random-4: " in out
    assert out.splitlines()[-1].startswith("Budget 120 s: quick would decide ")
    code, _, err = cli(["acp-plan", "--claims", str(tmp_path / "none.csv"), "--repo", str(REPO)], capsys)
    assert code == 2 and "none.csv: no such claims table" in err
    code, _, err = cli(["acp-plan", "--claims", str(claims), "--grid", "nope", "--repo", str(REPO)], capsys)
    assert code == 2 and "nope" in err
