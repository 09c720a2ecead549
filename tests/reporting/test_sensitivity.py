"""Fig. 3a sensitivity (noisyor_bench.reporting.acp.sensitivity): the step cap, the table, the crossings, the CLI."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from toydata import write_toy_dataset

from noisyor_bench.cli import main
from noisyor_bench.data.loading import ground_truth, load_dataset
from noisyor_bench.experiments.acp.runs import RunSpec, execute_run
from noisyor_bench.experiments.rundir import run_dir
from noisyor_bench.inference.fitting import FitBudget
from noisyor_bench.inference.noisyor.jj_lower_solver import lb_round, lb_start
from noisyor_bench.inference.noisyor.svi import SVI
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import read_json
from noisyor_bench.models.noisyor.jj_lower import PositiveEntries
from noisyor_bench.reporting.acp.sensitivity import (
    COLUMNS,
    capped_posterior,
    crossings,
    parse_steps,
    sensitivity_markdown,
    sensitivity_table,
)

STEPS = [0, 1, 5]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A toy dataset and its Fig. 3a-style SVI / LB-CDI runs (inference mode, N_train = 0)."""
    root = tmp_path_factory.mktemp("sens")
    dataset = write_toy_dataset(root / "toy.npz")
    runs = {}
    for method in ("svi", "lb-cdi"):
        out = run_dir(root, "fig3a", "toy", method, 0, 0)
        execute_run(
            RunSpec(
                dataset=dataset,
                method=method,
                mode="inference",
                n_train=0,
                seed=0,
                out_dir=out,
                experiment="fig3a",
                budget=FitBudget(max_epochs=2),
                n_samples=20,
                iw_samples=0,
                device="cpu",
            )
        )
        runs[method] = out / "metrics.json"
    data = load_dataset(dataset)
    return {
        "root": root,
        "dataset": dataset,
        "runs": runs,
        "data": data,
        "truth": ground_truth(data),
        "x": torch.as_tensor(data["x_test"]),
    }


@pytest.fixture(scope="module")
def table(setup: dict) -> pd.DataFrame:
    return sensitivity_table([str(p) for p in setup["runs"].values()], str(setup["dataset"]), STEPS)


# ---------------------------------------------------------------------------------- the cap
def test_svi_cap_of_one_is_one_hand_run_adam_step(setup: dict) -> None:
    """One capped step = one Adam step from q = prior on the lower-bounded ELBO (first Adam step:
    m_hat = g, v_hat = g^2, so the logits move by about -lr * sign(g))."""
    truth, x = setup["truth"], setup["x"].double()
    q1, taken, by_tol, _ = capped_posterior("svi", truth, setup["x"], {}, 0, 1)
    assert taken == 1 and not by_tol

    svi = SVI(truth, "inference", {}, 0, "cpu")
    lr = svi.hparams["lr_local"]
    logits0 = torch.logit(truth.mu).expand(x.shape[0], truth.K).clone().requires_grad_(True)
    pos = PositiveEntries.of(x)
    # The fit first evaluates the objective at the start (tightening r once), then steps with
    # r warm-started from there (tightened once more at the step's own evaluation).
    _, r = svi._objective(truth, x, pos, logits0.detach(), None)
    obj, _ = svi._objective(truth, x, pos, logits0, r)
    (grad,) = torch.autograd.grad(-obj.sum(), logits0)
    b1, b2, eps = 0.9, 0.999, 1e-8  # textbook Adam, first step from zero moments
    m_hat = (1 - b1) * grad / (1 - b1)
    v_hat = (1 - b2) * grad * grad / (1 - b2)
    expected = torch.sigmoid(logits0.detach() - lr * m_hat / (v_hat.sqrt() + eps))
    np.testing.assert_allclose(q1, expected.numpy(), rtol=1e-10, atol=1e-12)
    moved = torch.logit(torch.as_tensor(q1)) - logits0.detach()
    big = grad.abs() > 1e-4  # where eps is negligible the first step is lr * sign(-grad)
    np.testing.assert_allclose(moved[big].numpy(), (-lr * grad.sign())[big].numpy(), rtol=1e-3)

    q_conv, taken_conv, _, _ = capped_posterior("svi", truth, setup["x"], {}, 0, 300)
    assert taken_conv > 1
    assert np.abs(q_conv - q1).max() > 1e-3  # the cap really stopped it


def test_lbcdi_cap_counts_estep_rounds(setup: dict) -> None:
    """Cap 0 = the initial q-step (r tight at the prior mean); cap 1 = one lb_round after it."""
    truth, x = setup["truth"], setup["x"].double()
    pos = PositiveEntries.of(x)
    q0_hand, r0, _ = lb_start(truth, x, pos, None, 1e-6)
    q1_hand, _, _ = lb_round(
        truth, x, pos, q0_hand, r0, 3, 1e-6
    )  # LB-CDI defaults: r_iters 3, leak_floor 1e-6
    q0, taken0, _, _ = capped_posterior("lb-cdi", truth, setup["x"], {}, 0, 0)
    q1, taken1, _, _ = capped_posterior("lb-cdi", truth, setup["x"], {}, 0, 1)
    assert (taken0, taken1) == (0, 1)
    np.testing.assert_allclose(q0, q0_hand.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(q1, q1_hand.numpy(), rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------- the table
def test_table_has_one_row_per_method_and_cap_plus_the_run_setting(table: pd.DataFrame) -> None:
    assert list(table.columns) == list(COLUMNS)
    assert set(table["artifact"]) == {"fig3a_sensitivity"}
    for method, hparam in (("svi", "posterior_steps"), ("lb-cdi", "max_rounds")):
        g = table[table["method"] == method]
        assert list(g["setting"]) == ["capped"] * len(STEPS) + ["fig3a"]
        assert list(g["steps_cap"][:-1]) == STEPS
        assert set(g["step_hparam"]) == {hparam}
        assert (g["steps_taken"] <= g["steps_cap"]).all()
    assert table[table["method"] == "svi"]["paper_nelbo"].iloc[0] == pytest.approx(22.6)


def test_run_setting_row_reproduces_the_runs_metrics(setup: dict, table: pd.DataFrame) -> None:
    for method, path in setup["runs"].items():
        recorded = read_json(path)
        row = table[(table["method"] == method) & (table["setting"] == "fig3a")].iloc[0]
        for key in ("nelbo", "f1", "em", "exact_gap"):
            assert row[key] == pytest.approx(recorded[key], rel=1e-12, abs=1e-12), (method, key)


def test_more_steps_do_not_hurt(table: pd.DataFrame) -> None:
    for method in ("svi", "lb-cdi"):
        g = table[table["method"] == method].set_index("setting")
        one = table[(table["method"] == method) & (table["steps_cap"] == 1)].iloc[0]
        converged = g.loc["fig3a"]
        assert converged["nelbo"] <= one["nelbo"] + 1e-9
        assert converged["exact_nelbo"] <= one["exact_nelbo"] + 1e-9
        assert converged["exact_gap"] >= 0
    svi = table[table["method"] == "svi"]
    assert (
        svi[svi["steps_cap"] == 1]["exact_nelbo"].iloc[0]
        > svi[svi["setting"] == "fig3a"]["exact_nelbo"].iloc[0] + 1e-3
    )


# ---------------------------------------------------------------------------------- crossings
def _hand_table(values: list[float], caps: list[int], paper: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "method": "svi",
            "setting": "capped",
            "steps_cap": caps,
            "nelbo": values,
            "f1": 50.0,
            "em": 50.0,
            "paper_nelbo": paper,
            "paper_f1": 40.0,
            "paper_em": 60.0,
        }
    )


def test_crossing_interpolates_on_log1p_steps() -> None:
    cross = crossings(_hand_table([30.0, 20.0, 10.0], [0, 1, 3], paper=25.0)).set_index("metric")
    assert cross.loc["nelbo", "first_step"] == 1
    # halfway from log1p(0) to log1p(1): expm1(log(2) / 2) = sqrt(2) - 1
    assert cross.loc["nelbo", "step_interp"] == pytest.approx(math.sqrt(2) - 1)
    assert cross.loc["f1", "first_step"] == 0 and pd.isna(cross.loc["f1", "step_interp"])  # already at 0
    assert pd.isna(cross.loc["em", "first_step"])  # 50 < 60 everywhere


def test_markdown_states_where_the_paper_is_matched(table: pd.DataFrame) -> None:
    md = sensitivity_markdown(table)
    assert "Where the paper's numbers are matched" in md and "Fig. 3a setting" in md


# ---------------------------------------------------------------------------------- input errors
def test_bad_inputs_are_named(setup: dict) -> None:
    with pytest.raises(ConfigError, match="integers >= 0"):
        parse_steps([3, -1])
    assert parse_steps([5, 1, 5]) == [1, 5]
    other = write_toy_dataset(setup["root"] / "other.npz", n_test=41)
    with pytest.raises(DataError, match="sha256"):
        sensitivity_table([str(setup["runs"]["svi"])], str(other), [1])


def test_cli_writes_table_figure_and_provenance(setup: dict, tmp_path: Path) -> None:
    out = {k: tmp_path / f"s.{k}" for k in ("csv", "md", "png")}
    code = main(
        [
            "acp-figure-fig3a-sensitivity",
            "--runs",
            *map(str, setup["runs"].values()),
            "--dataset",
            str(setup["dataset"]),
            "--steps",
            "0",
            "2",
            "--out-csv",
            str(out["csv"]),
            "--out-md",
            str(out["md"]),
            "--out-png",
            str(out["png"]),
        ]
    )
    assert code == 0
    written = pd.read_csv(out["csv"])
    assert len(written) == 2 * 3
    for path in out.values():
        assert path.stat().st_size > 0
        assert Path(f"{path}.prov.json").is_file()
