"""Run directories: layout, contents, atomicity, resume, determinism and the train/evaluate CLI.

A fake method (exact posterior marginals, optional permutation of the latents in learning
mode, a JSON "checkpoint") stands in for the real ones, so these tests exercise the run
machinery alone; one test runs the real AVI end to end when it is importable.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import cli

import noisyor_bench.inference.noisyor.registry as methods_pkg
from noisyor_bench.experiments.acp.runs import RunSpec, execute_run
from noisyor_bench.experiments.rundir import CURVE_FILE, METRICS_FILE, POSTERIOR_FILE, partial_dir, run_dir
from noisyor_bench.inference.fitting import EpochRecord, FitBudget
from noisyor_bench.inference.noisyor.base import InferenceMethod
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.io import load_npz, read_json, write_json_atomic, write_npz_atomic
from noisyor_bench.models.noisyor.exact import exact_elbo, exact_posterior
from noisyor_bench.models.noisyor.model import NoisyOR

# provenance: start/end time, and the sha256 of curve.csv (whose `seconds` column is a timing)
TIMING_KEYS = {"train_seconds", "val_seconds", "posterior_seconds", "eval_seconds", "provenance"}
DOCUMENTED_KEYS = {
    "nelbo",
    "f1",
    "em",
    "exact_nll",
    "exact_elbo",
    "exact_nelbo",
    "exact_gap",
    "iw_nll",
    "train_seconds",
    "eval_seconds",
    "epochs",
    "hparams",
    "dataset",
    "experiment",
    "method",
    "mode",
    "n_train",
    "seed",
    "n_test",
    "device",
    "threads",
    "noisyor_bench_version",
    "torch_version",
    "latent_matching",
    "eval_seed",
    "n_samples",
    "iw_samples",
    "dataset_sha256",
    "val_nelbo",
}


# ---------------------------------------------------------------------------------- fakes
class FakeMethod(InferenceMethod):
    """Exact posterior marginals of its generative model; learning mode permutes the latents.

    ``crash_at`` (class attribute, so it is not part of the run spec) raises inside ``fit``
    at that epoch, after the previous epochs were checkpointed.
    """

    name = "fake"
    amortized = True
    crash_at: int | None = None
    last_fit_data: tuple[np.ndarray, np.ndarray] | None = None  # (x_train, x_val) of the last fit

    def __init__(
        self, model: NoisyOR, mode: str, hparams: dict[str, Any], seed: int, device: Any = "cpu"
    ) -> None:
        super().__init__(model, mode, hparams, seed, device)
        self.truth = model
        self.sigma = (
            np.random.default_rng(seed).permutation(model.K) if mode == "learning" else np.arange(model.K)
        )
        self.best_epoch: int | None = None

    @property
    def generative(self) -> NoisyOR:
        p = self.truth.numpy()
        return NoisyOR.from_numpy(p["theta"][:, self.sigma], p["theta0"], p["mu"][self.sigma])

    def fit(
        self, x_train, x_val, budget: FitBudget, progress=None, checkpoint_path=None
    ) -> list[EpochRecord]:
        assert x_train.dtype == torch.uint8 and x_val.dtype == torch.uint8
        type(self).last_fit_data = (np.asarray(x_train), np.asarray(x_val))
        history: list[EpochRecord] = []
        if checkpoint_path is not None and Path(checkpoint_path).exists():
            history = [EpochRecord(**r) for r in json.loads(Path(checkpoint_path).read_text())]
        for epoch in range(len(history) + 1, budget.max_epochs + 1):
            if type(self).crash_at == epoch:
                raise RuntimeError("simulated crash")
            extra = {"temperature": 0.5 / epoch} if epoch > 1 else {"lr": 0.01}
            rec = EpochRecord(epoch, 10.0 / epoch, 12.0 / epoch if epoch % 2 == 0 else None, 0.0, extra)
            history.append(rec)
            if checkpoint_path is not None:
                write_json_atomic(checkpoint_path, [asdict(r) for r in history])
            if progress is not None:
                progress(rec)
        self.best_epoch = len(history)
        return history

    def posterior(self, x: torch.Tensor) -> torch.Tensor:
        return exact_posterior(self.generative, torch.as_tensor(x).double()).marginals.float()


class FakeNoCheckpoint(FakeMethod):
    name = "fake-nockpt"

    def fit(self, x_train, x_val, budget, progress=None):  # type: ignore[override]
        return super().fit(x_train, x_val, budget, progress)


FAKES = {"fake": FakeMethod, "fake-nockpt": FakeNoCheckpoint}


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    real = methods_pkg.get_method

    def get_method(name: str) -> type[InferenceMethod]:
        return FAKES[name] if name in FAKES else real(name)

    monkeypatch.setattr(methods_pkg, "get_method", get_method)
    monkeypatch.setattr(methods_pkg, "METHOD_NAMES", (*methods_pkg.METHOD_NAMES, *FAKES))
    monkeypatch.setattr(FakeMethod, "crash_at", None)


def make_spec(dataset: Path, out: Path, **kw: Any) -> RunSpec:
    base: dict[str, Any] = dict(
        dataset=dataset,
        method="fake",
        mode="inference",
        n_train=50,
        seed=3,
        out_dir=out,
        budget=FitBudget(max_epochs=4),
        n_samples=20,
        iw_samples=20,
    )
    base.update(kw)
    return RunSpec(**base)


def _interrupt_after_epoch_2(monkeypatch: pytest.MonkeyPatch, spec: RunSpec) -> None:
    """Run ``spec`` and kill it (KeyboardInterrupt) after epoch 2, as a killed job would stop."""
    from noisyor_bench.inference.progress import EpochProgress

    original = EpochProgress.__call__

    def crash_after_two(self: Any, record: EpochRecord) -> None:
        original(self, record)
        if record.epoch == 2:
            raise KeyboardInterrupt("killed")

    with monkeypatch.context() as patch:
        patch.setattr(EpochProgress, "__call__", crash_after_two)
        with pytest.raises(KeyboardInterrupt):
            execute_run(spec)


def without_timings(m: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in m.items() if k not in TIMING_KEYS}


# ---------------------------------------------------------------------------------- layout
def test_run_dir_layout(tmp_path: Path) -> None:
    assert (
        run_dir(tmp_path, "exp", "syn-pattern", "acp", 100, 2)
        == tmp_path / "runs/exp/syn-pattern/acp/n100/seed2"
    )
    assert partial_dir(tmp_path / "seed2") == tmp_path / "seed2.partial"


def test_execute_run_writes_documented_files(dataset: Path, tmp_path: Path) -> None:
    out = execute_run(make_spec(dataset, tmp_path / "run"))
    assert out == tmp_path / "run"
    assert sorted(p.name for p in out.iterdir()) == sorted([METRICS_FILE, POSTERIOR_FILE, CURVE_FILE])
    assert not partial_dir(out).exists()
    data = load_npz(dataset)
    x_fit, x_val = FakeMethod.last_fit_data
    np.testing.assert_array_equal(x_fit, data["x_train"][:50])  # the first N_train rows
    np.testing.assert_array_equal(x_val, data["x_val"])

    m = read_json(out / METRICS_FILE)
    assert DOCUMENTED_KEYS <= set(m)
    assert (m["dataset"], m["method"], m["mode"], m["n_train"], m["seed"], m["n_test"]) == (
        "toy",
        "fake",
        "inference",
        50,
        3,
        40,
    )
    assert m["latent_matching"] == "identity" and m["latent_permutation"] is None
    assert m["epochs"] == 4 and m["best_epoch"] == 4 and m["resumed"] is False
    assert m["exact_gap"] > 0  # exact marginals, but the posterior does not factorise
    assert m["exact_nelbo"] == pytest.approx(m["exact_nll"] + m["exact_gap"])
    assert m["iw_nll"] >= m["exact_nll"] - 0.5
    assert 0 <= m["f1"] <= 100 and 0 <= m["em"] <= 100
    assert m["nonfinite_metrics"] == []

    post = load_npz(out / POSTERIOR_FILE)
    assert set(post) == {"q", "theta", "theta0", "mu"}
    assert post["q"].shape == (40, 3) and post["q"].dtype == np.float64
    np.testing.assert_array_equal(post["theta"], data["theta"])
    truth = NoisyOR.from_numpy(data["theta"], data["theta0"], data["mu"])
    exact = (
        exact_posterior(truth, torch.as_tensor(data["x_test"]).double()).marginals.float().double().numpy()
    )
    np.testing.assert_array_equal(post["q"], exact)  # the test split, not train/val
    assert m["exact_nll"] == pytest.approx(
        float(-exact_posterior(truth, torch.as_tensor(data["x_test"]).double()).log_px.mean())
    )
    x_val_t = torch.as_tensor(data["x_val"]).double()
    val_exact = -float(
        exact_elbo(truth, x_val_t, exact_posterior(truth, x_val_t).marginals.float().double()).mean()
    )
    assert m["val_nelbo"] == pytest.approx(val_exact, abs=0.3)  # 20 MC samples on the validation split

    with open(out / CURVE_FILE, newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["epoch", "train_nelbo", "val_nelbo", "seconds", "lr", "temperature"]
    assert [r[0] for r in rows[1:]] == ["1", "2", "3", "4"]
    assert rows[1][2] == "" and float(rows[2][2]) == 6.0  # val only every 2nd epoch
    assert rows[1][4] == "0.01" and rows[1][5] == "" and float(rows[2][5]) == 0.25
    assert m["best_curve_val_nelbo"] == 3.0


def test_learning_mode_matches_latents(dataset: Path, tmp_path: Path) -> None:
    inf = read_json(execute_run(make_spec(dataset, tmp_path / "inf")) / METRICS_FILE)
    out = execute_run(make_spec(dataset, tmp_path / "learn", mode="learning"))
    m = read_json(out / METRICS_FILE)
    sigma = np.random.default_rng(3).permutation(3)  # the fake's learned column c = true column sigma[c]
    assert not np.array_equal(sigma, np.arange(3))
    assert m["latent_matching"] == "hungarian"
    np.testing.assert_array_equal(sigma[m["latent_permutation"]], np.arange(3))
    assert m["latent_match_cosine"] == pytest.approx(1.0)
    # after matching, the posterior is the inference-mode one: identical F1/EM draws
    assert (m["f1"], m["em"], m["f1_map"], m["em_map"]) == (
        inf["f1"],
        inf["em"],
        inf["f1_map"],
        inf["em_map"],
    )
    assert m["exact_nll"] == pytest.approx(inf["exact_nll"], rel=1e-9)  # permutation-invariant


def test_learning_with_other_k_has_no_f1(dataset: Path, tmp_path: Path) -> None:
    m = read_json(
        execute_run(make_spec(dataset, tmp_path / "k4", mode="learning", n_latent=4)) / METRICS_FILE
    )
    assert m["K"] == 4 and m["K_true"] == 3
    assert m["f1"] is None and m["em"] is None and m["latent_matching"] is None
    assert m["nelbo"] is not None
    with pytest.raises(ConfigError, match="n_latent"):
        execute_run(make_spec(dataset, tmp_path / "bad", n_latent=4))


# ---------------------------------------------------------------------------------- errors
def test_n_train_too_large_is_a_user_error(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(DataError, match=r"n_train=61 exceeds the training pool .*toy.npz \(60 rows\)"):
        execute_run(make_spec(dataset, out, n_train=61))
    assert not out.exists() and not partial_dir(out).exists()


def test_out_dir_layout_must_agree_with_spec(dataset: Path, tmp_path: Path) -> None:
    good = tmp_path / "runs/exp/toy/fake/n50/seed3"
    assert execute_run(make_spec(dataset, good, experiment="exp")) == good
    bad = tmp_path / "runs/exp/toy/fake/n40/seed3"
    with pytest.raises(ConfigError, match=r"n_train: path has 'n40', run has 'n50' \(--n-train\)"):
        execute_run(make_spec(dataset, bad, experiment="exp"))
    with pytest.raises(ConfigError, match="experiment: path has 'exp', run has 'default'"):
        execute_run(make_spec(dataset, good))
    assert good.exists() and not bad.exists()


def test_missing_dataset_and_bad_arrays(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        execute_run(make_spec(tmp_path / "nope.npz", tmp_path / "run"))
    bad = tmp_path / "bad.npz"
    write_npz_atomic(bad, x_train=np.zeros((3, 2), np.uint8))
    with pytest.raises(DataError, match="lacks arrays"):
        execute_run(make_spec(bad, tmp_path / "run"))


# ---------------------------------------------------------------------------------- atomicity
def test_crash_leaves_no_final_directory_then_resumes(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    execute_run(make_spec(dataset, out))  # an old, complete run of the same spec
    old = {p.name: p.read_bytes() for p in out.iterdir()}
    FakeMethod.crash_at = 3
    with pytest.raises(RuntimeError, match="simulated crash"):
        execute_run(make_spec(dataset, out))
    # The finished run is intact (replaced only at publish); no half-written new one.
    assert {p.name: p.read_bytes() for p in out.iterdir()} == old
    work = partial_dir(out)
    assert (work / "checkpoint.pt").exists() and not (work / METRICS_FILE).exists()

    FakeMethod.crash_at = None
    execute_run(make_spec(dataset, out))
    m = read_json(out / METRICS_FILE)
    assert m["resumed"] is True and m["epochs"] == 4
    assert not work.exists()
    assert sorted(p.name for p in out.iterdir()) == sorted([METRICS_FILE, POSTERIOR_FILE, CURVE_FILE])
    with open(out / CURVE_FILE) as fh:
        assert len(fh.read().splitlines()) == 5  # header + epochs 1..4 (two restored)


def test_changed_spec_discards_checkpoint(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    FakeMethod.crash_at = 3
    with pytest.raises(RuntimeError):
        execute_run(make_spec(dataset, out))
    FakeMethod.crash_at = None
    m = read_json(execute_run(make_spec(dataset, out, hparams={"x": 1})) / METRICS_FILE)
    assert m["resumed"] is False and m["hparams"] == {"x": 1}


def test_method_without_checkpoint_support(dataset: Path, tmp_path: Path) -> None:
    m = read_json(execute_run(make_spec(dataset, tmp_path / "run", method="fake-nockpt")) / METRICS_FILE)
    assert m["resumed"] is False and m["epochs"] == 4


# ---------------------------------------------------------------------------------- determinism
def test_same_seed_same_outputs(dataset: Path, tmp_path: Path) -> None:
    a = execute_run(make_spec(dataset, tmp_path / "a"))
    b = execute_run(make_spec(dataset, tmp_path / "b"))
    c = execute_run(make_spec(dataset, tmp_path / "c", seed=4))
    ma, mb, mc = (read_json(p / METRICS_FILE) for p in (a, b, c))
    assert without_timings(ma) == without_timings(mb)
    assert (a / POSTERIOR_FILE).read_bytes() == (b / POSTERIOR_FILE).read_bytes()
    assert ma["eval_seed"] != mc["eval_seed"] and ma["nelbo"] != mc["nelbo"]


# ---------------------------------------------------------------------------------- CLI
def train_argv(dataset: Path, out: Path, *extra: str) -> list[str]:
    return [
        "acp-train",
        "--dataset",
        str(dataset),
        "--method",
        "fake",
        "--mode",
        "inference",
        "--n-train",
        "40",
        "--seed",
        "1",
        "--max-epochs",
        "3",
        "--eval-samples",
        "10",
        "--iw-samples",
        "10",
        "--out",
        str(out),
        *extra,
    ]


def test_cli_train_and_evaluate(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs/exp/toy/fake/n40/seed1"
    code, stdout, _ = cli(
        train_argv(dataset, out, "--hparams", '{"a": 1}', "--experiment", "exp", "--threads", "1"), capsys
    )
    assert code == 0
    assert str(out) in stdout and "nelbo=" in stdout
    m = read_json(out / METRICS_FILE)
    assert m["experiment"] == "exp" and m["hparams"] == {"a": 1} and m["threads"] == 1
    assert m["budget"]["max_epochs"] == 3 and m["n_samples"] == 10

    code, stdout, _ = cli(["evaluate", str(out), "--dataset", str(dataset)], capsys)
    assert code == 0 and "reproduced" in stdout

    m["nelbo"] += 1e-3  # tampered record
    write_json_atomic(out / METRICS_FILE, m)
    code, stdout, _ = cli(["evaluate", str(out), "--dataset", str(dataset)], capsys)
    assert code == 1 and "MISMATCH" in stdout and "nelbo" in stdout

    other = tmp_path / "other.npz"
    arrays = load_npz(dataset)
    arrays["x_test"] = 1 - arrays["x_test"]
    write_npz_atomic(other, **arrays)
    code, _, err = cli(["evaluate", str(out), "--dataset", str(other)], capsys)
    assert code == 2 and "not the file the run used" in err


def test_cli_hparams_from_file(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hp = tmp_path / "hp.json"
    hp.write_text('{"b": 2.5}')
    code, _, _ = cli(train_argv(dataset, tmp_path / "run", "--hparams", f"@{hp}"), capsys)
    assert code == 0 and read_json(tmp_path / "run" / METRICS_FILE)["hparams"] == {"b": 2.5}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--hparams", "{lr: 1}"], "--hparams: not valid JSON"),
        (["--hparams", "[1, 2]"], "--hparams: expected a JSON object"),
        (["--hparams", "@/does/not/exist.json"], "--hparams: cannot read"),
        (["--patience", "0"], "--patience: must be an integer >= 1"),
        (["--latents", "4"], "--latents: only allowed with --mode learning"),
        (["--device", "gpu"], "device 'gpu' is not a valid torch device"),
    ],
)
def test_cli_argument_errors(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, _, err = cli(train_argv(dataset, tmp_path / "run", *extra), capsys)
    assert code == 2 and message in err


def test_cli_unknown_method_and_pool(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = train_argv(dataset, tmp_path / "run")
    argv[argv.index("fake")] = "nope"
    code, _, err = cli(argv, capsys)
    assert code == 2 and "unknown method 'nope'" in err and "acp" in err
    argv = train_argv(dataset, tmp_path / "run")
    argv[argv.index("40")] = "600"
    code, _, err = cli(argv, capsys)
    assert code == 2 and "n_train=600 exceeds the training pool" in err
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------------------------- real method
@pytest.mark.parametrize("mode", ["inference", "learning"])
def test_real_avi_end_to_end(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    pytest.importorskip("noisyor_bench.inference.noisyor.avi")
    out = tmp_path / "avi"
    argv = [
        "acp-train",
        "--dataset",
        str(dataset),
        "--method",
        "avi",
        "--mode",
        mode,
        "--n-train",
        "60",
        "--seed",
        "0",
        "--max-epochs",
        "2",
        "--batch-size",
        "32",
        "--eval-samples",
        "10",
        "--iw-samples",
        "10",
        "--hparams",
        '{"hidden_dim": 8}',
        "--out",
        str(out),
    ]
    code, _, err = cli(argv, capsys)
    assert code == 0, err
    m = read_json(out / METRICS_FILE)
    assert m["epochs"] == 2 and m["hparams_resolved"]["hidden_dim"] == 8
    assert m["latent_matching"] == ("identity" if mode == "inference" else "hungarian")
    code, stdout, _ = cli(["evaluate", str(out), "--dataset", str(dataset)], capsys)
    assert code == 0, stdout


def test_real_avi_resume_matches_uninterrupted(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kill AVI after epoch 2 (its checkpoint is written), rerun: same numbers as one go."""
    pytest.importorskip("noisyor_bench.inference.noisyor.avi")
    kw = dict(
        method="avi",
        n_train=60,
        seed=0,
        budget=FitBudget(max_epochs=4, batch_size=32),
        hparams={"hidden_dim": 8},
    )
    whole = read_json(execute_run(make_spec(dataset, tmp_path / "whole", **kw)) / METRICS_FILE)

    out = tmp_path / "resumed"
    _interrupt_after_epoch_2(monkeypatch, make_spec(dataset, out, **kw))
    assert not out.exists() and (partial_dir(out) / "checkpoint.pt").exists()
    resumed = read_json(execute_run(make_spec(dataset, out, **kw)) / METRICS_FILE)
    assert resumed["resumed"] is True and whole["resumed"] is False
    drop = TIMING_KEYS | {"resumed"}
    assert {k: v for k, v in resumed.items() if k not in drop} == {
        k: v for k, v in whole.items() if k not in drop
    }


@pytest.mark.parametrize(
    ("method", "mode", "hparams"),
    [
        ("svi", "learning", {"posterior_steps": 20}),
        ("lb-cdi", "learning", {}),
        ("ub-cdi", "inference", {"max_rounds": 6, "tol": 0.0}),
    ],
)
def test_real_classical_resume_matches_uninterrupted(
    dataset: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    mode: str,
    hparams: dict[str, Any],
) -> None:
    """The classical methods checkpoint too (methods/fitloop.py): killed after epoch 2, rerun, same numbers."""
    kw = dict(
        method=method,
        mode=mode,
        n_train=60,
        seed=0,
        hparams=hparams,
        budget=FitBudget(max_epochs=4, batch_size=32, patience=100),
    )
    whole = execute_run(make_spec(dataset, tmp_path / "whole", **kw))
    out = tmp_path / "resumed"
    _interrupt_after_epoch_2(monkeypatch, make_spec(dataset, out, **kw))
    assert (partial_dir(out) / "checkpoint.pt").exists()
    execute_run(make_spec(dataset, out, **kw))
    m_resumed, m_whole = read_json(out / METRICS_FILE), read_json(whole / METRICS_FILE)
    assert m_resumed["resumed"] is True and m_whole["resumed"] is False
    assert m_whole["stop_reason"] in ("max_epochs", "converged")
    drop = TIMING_KEYS | {"resumed"}
    assert {k: v for k, v in m_resumed.items() if k not in drop} == {
        k: v for k, v in m_whole.items() if k not in drop
    }
    assert (out / POSTERIOR_FILE).read_bytes() == (whole / POSTERIOR_FILE).read_bytes()
