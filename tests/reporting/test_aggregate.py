"""Run directories to tables: collecting runs (noisyor_bench.reporting.collect), the synthetic tables
(noisyor_bench.reporting.acp.synthetic_tables) and the aggregate CLI end to end; they share the fake-run builder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from noisyor_bench.cli import main
from noisyor_bench.infra.errors import DataError, UserError
from noisyor_bench.infra.io import write_json_atomic, write_npz_atomic
from noisyor_bench.reporting.acp.synthetic_tables import (
    fig3a_markdown,
    fig3a_table,
    parse_missing_reasons,
    table4_markdown,
    table4_table,
)
from noisyor_bench.reporting.collect import METRIC_KEYS, collect_runs


def make_run(
    root: Path,
    experiment: str,
    dataset: str,
    method: str,
    n_train: int,
    seed: int,
    *,
    mode: str = "inference",
    posterior: dict | None = None,
    curve: str | None = None,
    **metrics,
) -> Path:
    """A run directory as the training stage writes it (metrics.json [+ posterior_test.npz, curve.csv])."""
    run = root / "runs" / experiment / dataset / method / f"n{n_train}" / f"seed{seed}"
    record = {
        "dataset": dataset,
        "experiment": experiment,
        "method": method,
        "mode": mode,
        "n_train": n_train,
        "seed": seed,
        "n_test": 1000,
        "device": "cpu",
        "threads": 1,
        "hparams": {"lr": 0.001},
        **{k: None for k in METRIC_KEYS},
    }
    record.update(metrics)
    write_json_atomic(run / "metrics.json", record)
    if posterior is not None:
        write_npz_atomic(run / "posterior_test.npz", **posterior)
    if curve is not None:
        (run / "curve.csv").write_text(curve)
    return run


def test_collect_runs_and_errors(tmp_path):
    r0 = make_run(tmp_path, "inference", "syn-pattern", "acp", 20, 0, nelbo=22.0, f1=70.0)
    r1 = make_run(tmp_path, "inference", "syn-pattern", "avi", 20, 0, nelbo=37.0, mc_gap=0.5)
    df = collect_runs([r1 / "metrics.json", r0])  # files and directories both accepted
    assert list(df["method"]) == ["avi", "acp"]  # paper method order
    assert df.loc[0, "nelbo"] == 37.0 and math.isnan(df.loc[0, "f1"])
    assert df.loc[0, "mc_gap"] == 0.5 and json.loads(df.loc[0, "hparams"]) == {"lr": 0.001}

    with pytest.raises(DataError, match="duplicate"):
        collect_runs([r0, r0])
    bad = tmp_path / "bad" / "metrics.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    with pytest.raises(DataError, match=str(bad)):
        collect_runs([bad])
    bad.write_text(json.dumps({"dataset": "d", "experiment": "e", "method": "acp", "seed": 0}))
    with pytest.raises(DataError, match="n_train"):
        collect_runs([bad])
    bad.write_text(
        json.dumps(
            {"dataset": "d", "experiment": "e", "method": "acp", "seed": 0, "n_train": 5, "nelbo": "12.0"}
        )
    )
    with pytest.raises(DataError, match="nelbo"):
        collect_runs([bad])
    with pytest.raises(DataError, match="not found"):
        collect_runs([tmp_path / "nowhere" / "metrics.json"])
    moved = make_run(tmp_path, "inference", "syn-pattern", "acp", 100, 1, nelbo=1.0)
    record = json.loads((moved / "metrics.json").read_text())
    record["n_train"] = 20
    (moved / "metrics.json").write_text(json.dumps(record))
    with pytest.raises(DataError, match="disagree"):
        collect_runs([moved])
    with pytest.raises(UserError):
        collect_runs([])


def _fig3a_runs(root: Path) -> list[Path]:
    runs = []
    values = {
        (20, "acp"): [22.0, 22.4],
        (20, "avi"): [37.0, 38.0],
        (0, "svi"): [22.6],
        (200, "acp"): [19.0, 19.2],
    }
    for (n, m), vs in values.items():
        for seed, v in enumerate(vs):
            runs.append(
                make_run(
                    root,
                    "inference",
                    "syn-pattern",
                    m,
                    n,
                    seed,
                    nelbo=v,
                    f1=60.0 + seed,
                    em=40.0,
                    exact_nll=13.5,
                    exact_gap=v - 13.5,
                )
            )
    return runs


def test_fig3a_table_order_paper_columns_and_missing(tmp_path):
    table = fig3a_table(collect_runs(_fig3a_runs(tmp_path)))
    keys = list(zip(table["n_train"], table["method"]))
    assert keys == [
        (1000, "avi"),
        (1000, "acp"),
        (200, "acp"),
        (100, "avi"),
        (100, "acp"),
        (20, "avi"),
        (20, "acp"),
        (0, "svi"),
        (0, "lb-cdi"),
        (0, "ub-cdi"),
    ]
    row = table.set_index(["n_train", "method"]).loc[(20, "acp")]
    assert row["paper_nelbo"] == 22.2 and row["paper_f1"] == 76.1 and row["status"] == "measured"
    assert row["nelbo_mean"] == pytest.approx(22.2)
    assert row["nelbo_ci95"] == pytest.approx(
        stats.t.ppf(0.975, 1) * np.std([22.0, 22.4], ddof=1) / math.sqrt(2)
    )
    assert table.set_index(["n_train", "method"]).loc[(1000, "avi"), "status"] == "not run"
    md = fig3a_markdown(table)
    assert "| - | SVI | 22.60 (deterministic) | 22.6 |" in md  # inference-mode SVI: one setting
    assert "| 1000 | AVI | not run | 14.0 |" in md
    inference_and_learning = collect_runs(
        [make_run(tmp_path / "x", "e", "syn-pattern", "acp", 20, 0, mode="learning", nelbo=1.0)]
    )
    with pytest.raises(DataError, match="inference"):
        fig3a_table(inference_and_learning)


def test_fig3a_table_puts_each_generator_variant_beside_the_paper_rows(tmp_path):
    """Runs on SYN-PATTERN and on a generator variant: one block of rows per dataset, the
    paper's dataset first, every block beside the paper's numbers; the Markdown has a section
    per variant; a cell's statistics come from its own dataset's runs only."""
    runs = collect_runs(
        [make_run(tmp_path / "v", "fig3a", "syn-pattern-leak2", "acp", 20, s, nelbo=30.0 + s) for s in (0, 1)]
        + [make_run(tmp_path / "p", "fig3a", "syn-pattern", "acp", 20, s, nelbo=20.0 + s) for s in (0, 1)]
    )
    table = fig3a_table(runs)
    assert list(dict.fromkeys(table["dataset"])) == ["syn-pattern", "syn-pattern-leak2"]
    cell = table.set_index(["dataset", "n_train", "method"])
    assert cell.loc[("syn-pattern", 20, "acp"), "nelbo_mean"] == pytest.approx(20.5)
    assert cell.loc[("syn-pattern-leak2", 20, "acp"), "nelbo_mean"] == pytest.approx(30.5)
    assert cell.loc[("syn-pattern-leak2", 20, "acp"), "paper_nelbo"] == 22.2  # the paper's row beside it
    assert cell.loc[("syn-pattern-leak2", 1000, "avi"), "status"] == "not run"
    md = fig3a_markdown(table)
    assert md.startswith("# Fig. 3a: inference on syn-pattern")
    assert md.count("## Generator variant syn-pattern-leak2") == 1
    assert md.index("20.50") < md.index("## Generator variant") < md.index("30.50")


def test_table4_missing_reasons(tmp_path):
    runs = [
        make_run(tmp_path, "gen", "syn-random-7", m, 1000, s, mode="learning", nelbo=150.0 + s)
        for m in ("avi", "acp", "lb-cdi")
        for s in (0, 1)
    ]
    reasons = parse_missing_reasons(["not run: budget", "lb-cdi=not run: LB-CDI above 1k skipped (budget)"])
    table = table4_table(collect_runs(runs), reasons).set_index(["n_train", "method"])
    assert table.loc[(1000, "acp"), "status"] == "measured"
    assert table.loc[(1000, "svi"), "note"] == "not run: budget"
    assert table.loc[(5000, "lb-cdi"), "note"] == "not run: LB-CDI above 1k skipped (budget)"
    assert table.loc[(5000, "lb-cdi"), "paper_note"] == "not run in the paper: computational complexity"
    assert table.loc[(40000, "acp"), "paper_nelbo"] == 149.5
    assert table.index.get_level_values(0).unique().tolist() == [40000, 20000, 10000, 5000, 1000]
    md = table4_markdown(table.reset_index())
    assert "| 1000 | not run: budget |" not in md and "150.50 ± " in md


def _syn_pattern(root: Path) -> tuple[Path, np.ndarray]:
    theta = np.zeros((64, 4))
    for k in range(4):
        theta[8 * k : 8 * k + 8, k] = -math.log(0.2)  # four horizontal bars
    path = root / "data" / "syn-pattern.npz"
    write_npz_atomic(path, theta=theta, theta0=np.full(64, 0.01), mu=np.full(4, 0.125))
    write_json_atomic(
        path.with_suffix(".json"), {"name": "syn-pattern", "image_shape": [8, 8], "D": 64, "K": 4}
    )
    return path, theta


def _check_figure(png: Path, pdf: Path) -> None:
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 1000


def test_cli_end_to_end(tmp_path):
    rng = np.random.default_rng(0)
    out = tmp_path / "out"
    fig3a_runs = _fig3a_runs(tmp_path)
    assert (
        main(
            [
                "acp-table-fig3a",
                "--runs",
                *map(str, fig3a_runs),
                "--out-csv",
                str(out / "fig3a.csv"),
                "--out-md",
                str(out / "fig3a.md"),
            ]
        )
        == 0
    )

    t4 = [
        make_run(tmp_path, "gen", "syn-random-7", m, 1000, s, mode="learning", nelbo=v + 0.1 * s)
        for m, v in (("avi", 159.0), ("acp", 157.0), ("svi", 158.0))
        for s in (0, 1, 2)
    ]
    assert (
        main(
            [
                "acp-table4",
                "--runs",
                *map(str, t4),
                "--missing-reason",
                "not run: budget",
                "--out-csv",
                str(out / "table4.csv"),
                "--out-md",
                str(out / "table4.md"),
            ]
        )
        == 0
    )

    f5 = [
        make_run(
            tmp_path,
            "gen",
            ds,
            m,
            n,
            s,
            mode="learning",
            nelbo=40 + 10 / math.log10(n) + (m == "avi") * 50 / n + rng.normal(0, 0.05),
        )
        for ds in ("syn-random-1", "syn-random-2")
        for m in ("avi", "acp")
        for n in (100, 1000)
        for s in (0, 1, 2)  # 3 seeds: a CI with 2 degrees of freedom decides
    ]
    assert (
        main(
            [
                "acp-figure-fig5",
                "--runs",
                *map(str, f5),
                "--out-png",
                str(out / "fig5.png"),
                "--out-pdf",
                str(out / "fig5.pdf"),
                "--out-csv",
                str(out / "fig5.csv"),
            ]
        )
        == 0
    )
    _check_figure(out / "fig5.png", out / "fig5.pdf")

    header = "epoch,train_nelbo,val_nelbo,seconds,ll_ub,elbo\n"
    ub = []
    for s in (0, 1):
        rows = "".join(
            f"{r},{13 - 2 * 0.5**r},{40 + 40 * (1 - 0.5**r)},0.1,{-13 + 2 * 0.5**r},{-40 - 40 * (1 - 0.5**r) - s}\n"
            for r in range(6 + s)
        )
        ub.append(
            make_run(tmp_path, "inference", "syn-pattern", "ub-cdi", 0, s, nelbo=80.0, curve=header + rows)
        )
    assert (
        main(
            [
                "acp-figure-fig3b",
                "--runs",
                *map(str, ub),
                "--out-png",
                str(out / "fig3b.png"),
                "--out-pdf",
                str(out / "fig3b.pdf"),
                "--out-csv",
                str(out / "fig3b.csv"),
            ]
        )
        == 0
    )
    _check_figure(out / "fig3b.png", out / "fig3b.pdf")

    data, theta = _syn_pattern(tmp_path)
    learned = []
    for m in ("avi", "acp"):
        for s in (0, 1):
            th = theta[:, rng.permutation(4)] + rng.uniform(0, 0.02, theta.shape)
            if m == "avi":
                th[:, 0] = th[:, 0] + th[:, 1]  # a merge: AVI misses patterns
                th[:, 1] = 0.05
            learned.append(
                make_run(
                    tmp_path,
                    "learning",
                    "syn-pattern",
                    m,
                    200,
                    s,
                    mode="learning",
                    nelbo=20.0,
                    val_nelbo=21.0 - s,
                    posterior={
                        "q": np.zeros((3, 4)),
                        "theta": th,
                        "theta0": np.full(64, 0.02),
                        "mu": np.full(4, 0.1),
                    },
                )
            )
    assert (
        main(
            [
                "acp-figure-patterns",
                "--runs",
                *map(str, learned),
                "--dataset",
                str(data),
                "--out-png",
                str(out / "fig4.png"),
                "--out-pdf",
                str(out / "fig4.pdf"),
                "--out-csv",
                str(out / "recovery.csv"),
                "--out-md",
                str(out / "recovery.md"),
            ]
        )
        == 0
    )
    _check_figure(out / "fig4.png", out / "fig4.pdf")
    rec = pd.read_csv(out / "recovery.csv")
    assert rec.set_index(["method", "seed"])["recovered"].to_dict() == {
        ("avi", 0): 2,
        ("avi", 1): 2,
        ("acp", 0): 4,
        ("acp", 1): 4,
    }
    assert rec.groupby("method")["n_all_recovered"].first().to_dict() == {"avi": 0, "acp": 2}
    assert rec.loc[rec["selected"], "seed"].tolist() == [1, 1]  # lowest validation NELBO (21 - seed)
    assert "seeds recovering all" in (out / "recovery.md").read_text()

    tables = [out / f for f in ("fig3a.csv", "table4.csv", "fig5.csv", "fig3b.csv", "recovery.csv")]
    assert (
        main(
            [
                "acp-claims-synthetic",
                "--tables",
                *map(str, tables),
                "--out-csv",
                str(out / "claims.csv"),
                "--out-md",
                str(out / "claims.md"),
            ]
        )
        == 0
    )
    verdicts = pd.read_csv(out / "claims.csv").set_index("claim_id")["verdict"]
    # two seeds: a paired t with 1 degree of freedom decides nothing
    assert verdicts["fig3a-acp-beats-avi-n20"] == "inconclusive"
    low_power = pd.read_csv(out / "claims.csv").set_index("claim_id")["low_power"]
    assert "1 degree of freedom" in low_power["fig3a-acp-beats-avi-n20"]
    assert verdicts["fig3a-acp-beats-avi-n100"] == "not tested"  # no data at N=100
    assert verdicts["fig3b-ubcdi-tighter-bound-worse-elbo"] == "reproduced"
    assert verdicts["table4-acp-lowest-every-row"] == "inconclusive"  # 1 of the paper's 11 comparisons run
    assert verdicts["fig5-acp-advantage-grows-syn-random-1"] == "reproduced"
    # the runs selected on validation NELBO (seed 1 of each) decide: ACP's recovers all
    # 4, AVI's merges two patterns
    assert verdicts["fig4-acp-recovers-all-avi-misses-n200"] == "reproduced"
    assert verdicts["fig5-acp-advantage-grows-syn-random-6"] == "not tested"  # syn-random-6 not in this grid

    other = out / "text_claims.csv"
    other.write_text("claim_id,statement,location,verdict,numbers,rule\ntable5-t1,s,l,reproduced,n,r\n")
    assert (
        main(
            [
                "claims-merge",
                "--claims",
                str(out / "claims.csv"),
                str(other),
                "--out-csv",
                str(out / "all.csv"),
                "--out-md",
                str(out / "all.md"),
            ]
        )
        == 0
    )
    merged = pd.read_csv(out / "all.csv", keep_default_na=False)
    assert len(merged) == 11 + 4 * 6 + 1  # an older 6-column claims CSV merges (empty qualifiers)
    assert "statistical_verdict" not in merged.columns
    assert merged.set_index("claim_id").loc["table5-t1", "unconverged"] == ""


def test_cli_user_errors(tmp_path, capsys):
    data, _ = _syn_pattern(tmp_path)
    run = make_run(
        tmp_path,
        "learning",
        "multi-mnist",
        "acp",
        200,
        0,
        mode="learning",
        nelbo=1.0,
        posterior={"theta": np.ones((64, 4))},
    )
    assert (
        main(
            [
                "acp-figure-patterns",
                "--runs",
                str(run),
                "--dataset",
                str(data),
                "--out-png",
                str(tmp_path / "a.png"),
                "--out-csv",
                str(tmp_path / "a.csv"),
            ]
        )
        == 2
    )
    assert "multi-mnist" in capsys.readouterr().err
    assert (
        main(
            [
                "acp-table-fig3a",
                "--runs",
                str(tmp_path / "missing"),
                "--out-csv",
                str(tmp_path / "t.csv"),
                "--out-md",
                str(tmp_path / "t.md"),
            ]
        )
        == 2
    )
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    assert (
        main(
            [
                "acp-claims-synthetic",
                "--tables",
                str(tmp_path / "t.csv"),
                "--out-csv",
                str(tmp_path / "c.csv"),
            ]
        )
        == 2
    )
    assert "artifact" in capsys.readouterr().err


def test_cli_default_threshold_is_recovery_default():
    from noisyor_bench.cli import build_parser
    from noisyor_bench.evaluation.recovery import DEFAULT_THRESHOLD

    args = build_parser().parse_args(
        ["acp-figure-patterns", "--runs", "r", "--dataset", "d", "--out-png", "p", "--out-csv", "c"]
    )
    assert args.threshold == DEFAULT_THRESHOLD


def test_recovery_table_scores_each_generator_variant_against_its_own_truth(tmp_path, capsys):
    """acp-figure-patterns with SYN-PATTERN and a generator variant (other true patterns): each
    run is matched against its own dataset's truth, the variant's rows stand beside the paper's
    counts, and runs of a dataset not given are refused by name."""
    data, theta = _syn_pattern(tmp_path)
    variant_theta = theta[::-1].copy()  # the bars moved: a run learning SYN-PATTERN's bars misses them
    variant = tmp_path / "data" / "syn-pattern-overlap.npz"
    write_npz_atomic(variant, theta=variant_theta, theta0=np.full(64, 0.01), mu=np.full(4, 0.125))
    write_json_atomic(
        variant.with_suffix(".json"), {"name": "syn-pattern-overlap", "image_shape": [8, 8], "D": 64, "K": 4}
    )
    post = {"q": np.zeros((3, 4)), "theta0": np.full(64, 0.02), "mu": np.full(4, 0.1)}
    runs = [
        make_run(
            tmp_path,
            "fig4",
            ds,
            "acp",
            200,
            0,
            mode="learning",
            nelbo=20.0,
            val_nelbo=21.0,
            posterior={**post, "theta": truth.copy()},
        )
        for ds, truth in (("syn-pattern", theta), ("syn-pattern-overlap", variant_theta))
    ]
    out = tmp_path / "out"
    args = [
        "acp-figure-patterns",
        "--runs",
        *map(str, runs),
        "--dataset",
        str(data),
        str(variant),
        "--out-png",
        str(out / "fig4.png"),
        "--out-csv",
        str(out / "rec.csv"),
        "--out-md",
        str(out / "rec.md"),
    ]
    assert main(args) == 0
    rec = pd.read_csv(out / "rec.csv").set_index("dataset")
    assert rec["recovered"].to_dict() == {"syn-pattern": 4, "syn-pattern-overlap": 4}
    assert rec.loc["syn-pattern-overlap", "paper_recovered"] == 8  # the paper's ACP at 200, beside it
    md = (out / "rec.md").read_text()
    assert "and its generator variants syn-pattern-overlap" in md and "| syn-pattern-overlap | ACP |" in md
    only_paper = [a for a in args if a != str(variant)]
    assert main(only_paper) == 2
    assert (
        "--runs are from dataset(s) ['syn-pattern-overlap'] not given by --dataset" in capsys.readouterr().err
    )
