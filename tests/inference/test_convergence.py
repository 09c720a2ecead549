"""Convergence as a recorded fact: the rule on hand-made curves, and
real small runs whose metrics.json says whether they converged."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from toydata import write_toy_dataset

from noisyor_bench.experiments.acp.runs import RunSpec, execute_run
from noisyor_bench.experiments.rundir import METRICS_FILE
from noisyor_bench.inference.convergence import (
    BEST_AT_LIMIT,
    EARLY_STOPPING,
    METHOD_CRITERION,
    NO_FIT,
    NOT_APPLICABLE,
    PLATEAU,
    STILL_IMPROVING,
    TOO_FEW_EVALUATIONS,
    assess,
    relative_improvement,
)
from noisyor_bench.inference.fitting import (
    EpochRecord,
    FitBudget,
    budget_from_mapping,
    check_budget,
    fit_budget_fields,
)
from noisyor_bench.infra.errors import ConfigError
from noisyor_bench.infra.io import read_json


def curve(vals: list[float | None], train: list[float] | None = None) -> list[EpochRecord]:
    train = train or [10.0] * len(vals)
    return [EpochRecord(i + 1, t, v, 0.0) for i, (t, v) in enumerate(zip(train, vals))]


def budget(window: int = 3, rel_tol: float = 0.01, max_epochs: int = 100) -> FitBudget:
    return FitBudget(max_epochs=max_epochs, convergence_window=window, convergence_rel_tol=rel_tol)


# ------------------------------------------------------------------------------ the rule by hand
def test_relative_improvement_by_hand() -> None:
    # best before the window of 2 = 10 (values 12, 10), best within = 9.5 -> (10 - 9.5) / 10 = 0.05
    before, within, rel = relative_improvement([12.0, 10.0, 9.7, 9.5], 2)
    assert (before, within) == (10.0, 9.5) and rel == pytest.approx(0.05)
    # the window does not improve: non-positive improvement
    assert relative_improvement([9.0, 10.0, 11.0], 2)[2] == pytest.approx(-1 / 9)
    # a negative NELBO-like value: relative to |best before|
    assert relative_improvement([-4.0, -4.2], 1)[2] == pytest.approx(0.05)
    assert relative_improvement([1.0, 2.0], 2) == (None, None, None)  # fewer than W + 1 values
    assert (
        relative_improvement([0.0, 0.0], 1)[2] == 0.0 and relative_improvement([0.0, -1.0], 1)[2] == math.inf
    )


@pytest.mark.parametrize(
    "vals, stop, expect, rule",
    [
        # improvement over the last 3 evaluations: (10 - 9.95) / 10 = 0.005 < 0.01 -> plateau
        ([12.0, 10.0, 9.99, 9.97, 9.95], "max_epochs", True, PLATEAU),
        # (10 - 9.85) / 10 = 0.015 >= 0.01 -> still improving
        ([12.0, 10.0, 9.95, 9.9, 9.85], "max_epochs", False, STILL_IMPROVING),
        # a window that got worse is converged (no improvement at all)
        ([10.0, 10.5, 10.6, 10.7], "max_epochs", True, PLATEAU),
        # W + 1 = 4 evaluations needed; 3 at the limit -> not converged
        ([10.0, 10.0, 10.0], "max_epochs", False, TOO_FEW_EVALUATIONS),
        # early stopping and the method's own criterion decide by themselves, whatever the curve
        ([12.0, 10.0, 9.0, 8.0, 7.0], "patience", True, EARLY_STOPPING),
        ([12.0, 11.0], "converged", True, METHOD_CRITERION),
        # no stop reason (a third-party method): judged like the epoch limit
        ([12.0, 10.0, 9.99, 9.97, 9.95], None, True, PLATEAU),
    ],
)
def test_rule_on_hand_made_curves(vals: list[float], stop: str | None, expect: bool, rule: str) -> None:
    v = assess(curve(vals), stop, 2, budget(window=3, rel_tol=0.01))
    assert (v.converged, v.rule, v.stop_reason, v.evaluations) == (expect, rule, stop, len(vals))


def test_exactly_at_the_tolerance_is_not_converged() -> None:
    # (8 - 7.5) / 8 = 0.0625 = 1/16 exactly in binary: not below a tolerance of 1/16 (best at epoch 4)
    vals = [9.0, 8.0, 8.0, 7.5, 7.6]
    assert assess(curve(vals), "max_epochs", 4, budget(window=3, rel_tol=0.0625)).converged is False
    assert assess(curve(vals), "max_epochs", 4, budget(window=3, rel_tol=0.0626)).converged is True


def test_window_counts_evaluations_not_epochs() -> None:
    # eval_every = 2: epochs without a validation value are skipped; 4 evaluations of 7 epochs
    vals = [None, 12.0, None, 10.0, None, 9.98, 9.99]
    v = assess(curve(vals), "max_epochs", 6, budget(window=2, rel_tol=0.01))
    assert v.evaluations == 4 and v.monitored == "val_nelbo" and v.epochs == 7
    assert v.best_before_window == 10.0 and v.best_within_window == 9.98 and v.converged is True
    # the same values one window wider: best before = 12 -> (12 - 9.98) / 12 > 0.01
    assert assess(curve(vals), "max_epochs", 6, budget(window=3, rel_tol=0.01)).converged is False


def test_training_curve_is_used_without_validation_and_infinite_values_are_skipped() -> None:
    v = assess(
        curve([None] * 4, train=[5.0, 4.0, 3.99, 3.99]), "max_epochs", 3, budget(window=2, rel_tol=0.01)
    )
    assert v.monitored == "train_nelbo" and v.converged is True
    v = assess(curve([math.inf, 10.0, 9.0, 8.0]), "max_epochs", 4, budget(window=2, rel_tol=0.01))
    assert v.evaluations == 3 and v.best_before_window == 10.0 and v.converged is False


def test_no_fit_and_not_applicable_are_null() -> None:
    assert (
        assess([], None, None, budget()).converged is None and assess([], None, None, budget()).rule == NO_FIT
    )
    held_out = assess(curve([12.0, 11.0, 10.0, 9.0, 8.0]), "max_epochs", None, budget(), applicable=False)
    assert (held_out.converged, held_out.rule) == (None, NOT_APPLICABLE)
    assert held_out.relative_improvement is not None  # the numbers are still recorded
    own = assess(curve([12.0, 11.0]), "converged", None, budget(), applicable=False)
    assert (own.converged, own.rule) == (True, METHOD_CRITERION)


# ------------------------------------------------------------------------------ budget keys
def test_budget_keys_validated_and_kept_out_of_fingerprints() -> None:
    assert FitBudget().convergence_window == 5 and FitBudget().convergence_rel_tol == 1e-3
    b = budget_from_mapping({"convergence_window": 3, "convergence_rel_tol": 0.02})
    assert (b.convergence_window, b.convergence_rel_tol) == (3, 0.02)
    check_budget(b)
    for bad, key in [
        ({"convergence_window": 0}, "convergence_window"),
        ({"convergence_rel_tol": 0}, "convergence_rel_tol"),
        ({"convergence_rel_tol": -1e-3}, "convergence_rel_tol"),
        ({"convergence_rel_tol": "x"}, "convergence_rel_tol"),
        ({"convergence_rel_tol": math.nan}, "convergence_rel_tol"),
        ({"convergence_window": 2.5}, "convergence_window"),
    ]:
        with pytest.raises(ConfigError, match=f"budget.{key} must be"):
            check_budget(FitBudget(**bad), "budget.")
    assert (
        "convergence_window" not in fit_budget_fields(b)
        and fit_budget_fields(b)["max_epochs"] == b.max_epochs
    )
    with pytest.raises(ConfigError, match="convergence_rel_tol"):
        RunSpec(
            dataset=Path("x.npz"),
            method="avi",
            mode="learning",
            n_train=1,
            seed=0,
            out_dir=Path("o"),
            budget=FitBudget(convergence_rel_tol=0.0),
        ).validate()


def test_grid_layers_convergence_keys() -> None:
    from noisyor_bench.experiments.acp import grid

    cfg = {
        "grid": "p",
        "grids": {
            "p": {
                "acp": {
                    "budget": {"max_epochs": 9, "convergence_window": 4},
                    "method_budget": {"acp": {"convergence_rel_tol": 0.01}},
                    "experiments": {
                        "e": {
                            "mode": "learning",
                            "datasets": ["d"],
                            "runs": {"avi": [5], "acp": [5]},
                            "budget": {"convergence_window": 7},
                        }
                    },
                }
            }
        },
    }
    avi, acp = grid.cells(cfg)
    assert grid.budget(cfg, avi)["convergence_window"] == 7 and "convergence_rel_tol" not in grid.budget(
        cfg, avi
    )
    assert grid.budget(cfg, acp)["convergence_rel_tol"] == 0.01
    b = budget_from_mapping(grid.budget(cfg, acp))
    assert (b.convergence_window, b.convergence_rel_tol, b.max_epochs) == (7, 0.01, 9)


# ------------------------------------------------------------------------------ real runs
@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("toy") / "toy.npz")


def _run(
    toy: Path,
    out: Path,
    fit_budget: FitBudget,
    hparams: dict,
    method: str = "avi",
    mode: str = "learning",
    n_train: int = 60,
) -> dict:
    spec = RunSpec(
        dataset=toy,
        method=method,
        mode=mode,
        n_train=n_train,
        seed=0,
        out_dir=out,
        budget=fit_budget,
        hparams=hparams,
        n_samples=10,
        iw_samples=0,
    )
    return read_json(execute_run(spec) / METRICS_FILE)


def test_real_avi_at_its_epoch_limit_with_a_falling_curve_is_not_converged(toy: Path, tmp_path: Path) -> None:
    m = _run(
        toy,
        tmp_path / "limit",
        FitBudget(max_epochs=8, patience=50, batch_size=32),
        {"hidden_dim": 8, "lr": 1e-3},
    )
    c = m["convergence"]
    # a falling curve: its best evaluation is the last one, so it is never converged
    assert m["stop_reason"] == "max_epochs" and m["converged"] is False and c["rule"] == BEST_AT_LIMIT
    # the numbers behind it, checked against curve.csv independently of the code
    import pandas as pd

    vals = pd.read_csv(tmp_path / "limit" / "curve.csv")["val_nelbo"].tolist()
    before, within = min(vals[:-5]), min(vals[-5:])
    assert c["best_before_window"] == before and c["best_within_window"] == within
    assert c["best_at_limit"] is True and vals[-1] == min(vals) and c["abs_tol"] == 0.01
    assert c["last_window_nats"] == pytest.approx(before - within)
    assert c["relative_improvement"] == pytest.approx((before - within) / abs(before)) and within < before
    assert c["relative_improvement"] >= c["rel_tol"] == 1e-3
    assert (c["epochs"], c["max_epochs"], c["window"], c["evaluations"]) == (8, 8, 5, 8)
    assert c["best_epoch"] == m["best_epoch"]


def test_real_avi_stopped_by_patience_is_converged(toy: Path, tmp_path: Path) -> None:
    m = _run(
        toy,
        tmp_path / "pat",
        FitBudget(max_epochs=300, patience=3, batch_size=32),
        {"hidden_dim": 8, "lr": 3e-2},
    )
    assert m["stop_reason"] == "patience" and m["epochs"] < 300
    assert m["converged"] is True and m["convergence"]["rule"] == EARLY_STOPPING


def test_real_runs_with_a_lenient_tolerance_and_held_out_classical(toy: Path, tmp_path: Path) -> None:
    # the falling curve of the first test: a relative tolerance of 10% no longer calls it a plateau
    # (ACP runs are judged in nats, and a best evaluation at the limit never converged)
    lenient = FitBudget(max_epochs=8, patience=50, batch_size=32, convergence_rel_tol=0.1)
    m = _run(toy, tmp_path / "lenient", lenient, {"hidden_dim": 8, "lr": 1e-3})
    c = m["convergence"]
    assert c["relative_improvement"] < 0.1 and m["budget"]["convergence_rel_tol"] == 0.1
    assert m["converged"] is False and c["rule"] == BEST_AT_LIMIT
    # SVI on the held-out rows in inference mode: no training budget, converged only by its own rule
    m = _run(toy, tmp_path / "svi", FitBudget(max_epochs=2), {}, method="svi", mode="inference", n_train=0)
    assert m["convergence"]["rule"] in (NOT_APPLICABLE, METHOD_CRITERION)
    assert m["converged"] is (None if m["convergence"]["rule"] == NOT_APPLICABLE else True)
    # SVI learning: FitLoop applies the same rule (2 evaluations < W + 1 at the limit)
    m = _run(toy, tmp_path / "svil", FitBudget(max_epochs=2, batch_size=32), {"val_steps": 5}, method="svi")
    assert m["converged"] is False and m["convergence"]["rule"] == TOO_FEW_EVALUATIONS


# ------------------------------------------------------------------------------ convergence tables
def _fake_run(
    root: Path,
    experiment: str,
    method: str,
    mode: str,
    n: int,
    seed: int,
    converged,
    rule: str,
    rel: float | None,
) -> Path:
    from noisyor_bench.infra.io import write_json_atomic

    run = root / "runs" / experiment / "syn-random-1" / method / f"n{n}" / f"seed{seed}"
    write_json_atomic(
        run / "metrics.json",
        {
            "experiment": experiment,
            "dataset": "syn-random-1",
            "method": method,
            "mode": mode,
            "n_train": n,
            "seed": seed,
            "nelbo": 10.0 + seed,
            "epochs": 15,
            "best_epoch": 15,
            "stop_reason": "max_epochs",
            "converged": converged,
            "convergence": {
                "converged": converged,
                "rule": rule,
                "max_epochs": 15,
                "window": 5,
                "rel_tol": 1e-3,
                "evaluations": 15,
                "relative_improvement": rel,
                "best_before_window": 11.0,
                "best_within_window": 11.0 * (1.0 - (rel or 0.0)),  # nats: 11 * rel over the window
            },
        },
    )
    return run


def test_convergence_table_and_summary_cli(tmp_path: Path) -> None:
    import pandas as pd

    from noisyor_bench.cli import main

    fig5 = [
        _fake_run(tmp_path, "fig5", "avi", "learning", 30, 0, True, PLATEAU, 1e-4),
        _fake_run(tmp_path, "fig5", "avi", "learning", 30, 1, False, STILL_IMPROVING, 0.02),
        _fake_run(tmp_path, "fig5", "acp", "learning", 30, 0, False, STILL_IMPROVING, 0.05),
        _fake_run(tmp_path, "fig5", "acp", "learning", 30, 1, True, EARLY_STOPPING, 0.01),
    ]
    fig3a = [
        _fake_run(tmp_path, "fig3a", "svi", "inference", 0, s, None, NOT_APPLICABLE, 0.2) for s in (0, 1)
    ]
    out = tmp_path / "tables"
    for name, runs in (("fig5", fig5), ("fig3a", fig3a)):
        assert (
            main(
                [
                    "convergence-table",
                    "--runs",
                    *map(str, runs),
                    "--out-csv",
                    str(out / f"convergence_{name}.csv"),
                    "--out-md",
                    str(out / f"convergence_{name}.md"),
                ]
            )
            == 0
        )
    table = pd.read_csv(out / "convergence_fig5.csv")
    assert list(table.columns)[:10] == [
        "artifact",
        "experiment",
        "dataset",
        "method",
        "mode",
        "n_train",
        "seed",
        "converged",
        "rule",
        "stop_reason",
    ]
    assert table.set_index(["method", "seed"])["converged"].to_dict() == {
        ("avi", 0): True,
        ("avi", 1): False,
        ("acp", 0): False,
        ("acp", 1): True,
    }
    md = (out / "convergence_fig5.md").read_text()
    assert "4 runs: 2 converged, 2 not converged (2 still improving), 0 not applicable" in md
    assert "learning mode: 2/4 converged (50%)" in md
    assert (
        main(
            [
                "convergence-summary",
                "--tables",
                str(out / "convergence_fig5.csv"),
                str(out / "convergence_fig3a.csv"),
                "--out-csv",
                str(out / "convergence.csv"),
                "--out-md",
                str(out / "convergence.md"),
            ]
        )
        == 0
    )
    summary = pd.read_csv(out / "convergence.csv").set_index(["experiment", "method"])
    assert summary.loc[("fig5", "avi"), ["n_runs", "n_converged", "n_unconverged"]].tolist() == [2, 1, 1]
    assert summary.loc[("fig3a", "svi"), ["n_not_applicable", "n_converged"]].tolist() == [2, 0]
    assert summary.loc[("all", "all"), ["n_runs", "n_converged"]].tolist() == [4, 2]  # learning mode only
    assert "Learning mode overall: 2 of 4 runs converged (50%)" in (out / "convergence.md").read_text()
    # a table of two experiments is refused
    assert (
        main(
            [
                "convergence-table",
                "--runs",
                str(fig5[0]),
                str(fig3a[0]),
                "--out-csv",
                str(out / "x.csv"),
                "--out-md",
                str(out / "x.md"),
            ]
        )
        == 2
    )


# ------------------------------------------------------------------------------ judged in nats
def test_best_evaluation_last_at_the_limit_is_never_converged() -> None:
    """A plateau by either tolerance, but the last evaluation is the best: still improving when stopped."""
    from noisyor_bench.inference.convergence import BEST_AT_LIMIT

    vals = [12.0, 10.0, 10.0, 10.0, 9.9999]
    for best in (5, None):  # the trainer's best epoch, or read off the curve
        v = assess(curve(vals), "max_epochs", best, budget(window=3, rel_tol=0.5), abs_tol=1.0)
        assert (v.converged, v.rule, v.best_at_limit) == (False, BEST_AT_LIMIT, True)
    # a tie with an earlier value is not a new best; early stopping is never "at the limit"
    assert assess(curve([12.0, 10.0, 10.0, 10.0, 10.0]), "max_epochs", None, budget()).best_at_limit is False
    assert assess(curve(vals), "patience", 5, budget()).converged is True


def test_absolute_tolerance_in_nats_per_point() -> None:
    """The same relative improvement (1e-4) is 0.004 nats at 40 nats and 0.024 nats at 240 nats."""
    b = budget(window=3, rel_tol=1e-3)
    for scale, expect in ((40.0, True), (240.0, False)):
        vals = [scale * 1.1, scale, scale, scale * (1 - 1e-4), scale * (1 - 5e-5)]
        v = assess(curve(vals), "max_epochs", 4, b, abs_tol=0.01)
        assert v.last_window_nats == pytest.approx(scale * 1e-4)
        assert v.relative_improvement == pytest.approx(1e-4) and v.abs_tol == 0.01
        assert v.converged is expect and v.rule == (PLATEAU if expect else STILL_IMPROVING)
        # the relative rule alone called both converged
        assert assess(curve(vals), "max_epochs", 4, b).converged is True


def test_rejudge_absolute_reads_verdicts_recorded_under_the_relative_rule() -> None:
    from dataclasses import replace

    from noisyor_bench.inference.convergence import BEST_AT_LIMIT, rejudge_absolute

    vals = [264.0, 240.0, 240.0, 239.976, 239.988]  # 0.024 nats over the window; relative 1e-4
    old = replace(assess(curve(vals), "max_epochs", 4, budget(rel_tol=1e-3)), last_window_nats=None)
    assert old.converged is True
    new = rejudge_absolute(old)
    assert (new.converged, new.rule, new.abs_tol) == (False, STILL_IMPROVING, 0.01)
    assert new.last_window_nats == pytest.approx(0.024)
    assert rejudge_absolute(old, abs_tol=0.05).converged is True
    stuck = replace(old, best_at_limit=True)
    assert (rejudge_absolute(stuck).converged, rejudge_absolute(stuck).rule) == (False, BEST_AT_LIMIT)
    early = assess(curve(vals), "patience", 4, budget())
    assert rejudge_absolute(early).converged is True  # early stopping stands


def test_tables_count_runs_judged_in_nats_also_from_old_records() -> None:
    """collect.convergence_counts: a run recorded as converged by the relative rule at 240 nats,
    and one at its limit with its best epoch the last one, count as unconverged; the cell's
    largest last-window improvement is recorded."""
    import pandas as pd

    from noisyor_bench.reporting.collect import convergence_counts, run_converged

    rows = pd.DataFrame(
        [
            # early stopping: converged whatever the numbers
            {
                "converged": True,
                "convergence_rule": "early-stopping",
                "convergence_best_before_window": 40.0,
                "convergence_best_within_window": 40.5,
            },
            # relative plateau at 240 nats, 0.024 nats over the window: not converged in nats
            {
                "converged": True,
                "convergence_rule": "plateau",
                "convergence_best_before_window": 240.0,
                "convergence_best_within_window": 239.976,
                "convergence_stop_reason": "max_epochs",
                "convergence_best_epoch": 90,
                "convergence_epochs": 100,
            },
            # 0.004 nats, best epoch the last one: never converged
            {
                "converged": True,
                "convergence_rule": "plateau",
                "convergence_best_before_window": 40.0,
                "convergence_best_within_window": 39.996,
                "convergence_stop_reason": "max_epochs",
                "convergence_best_epoch": 100,
                "convergence_epochs": 100,
            },
            # inference-mode SVI: not applicable
            {"converged": None, "convergence_rule": "not-applicable"},
        ]
    )
    assert [run_converged(r) for r in rows.to_dict("records")] == [True, False, False, None]
    c = convergence_counts(rows)
    assert (c["n_runs"], c["n_converged"]) == (4, 2)
    assert c["max_last_window_nats"] == pytest.approx(0.024)
