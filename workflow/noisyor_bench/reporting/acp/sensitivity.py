"""Fig. 3a sensitivity: held-out metrics of SVI and LB-CDI against their per-datapoint steps.

In Fig. 3a (inference mode, ground truth fixed) SVI and LB-CDI optimise their variational
parameters directly on the held-out points (Section 4.2).  Run to convergence they land
within a few hundredths of a nat of the exact ``-log p(x)``, far better than the paper's
rows; this module measures how the test NELBO, F1 and EM depend on how many optimisation
steps each point gets, so the reader can see which budget the paper's numbers correspond to.

The step count is capped through the methods' own hyperparameters (:data:`STEP_HPARAMS`):
SVI ``posterior_steps`` (Adam steps on the per-datapoint logits, learning rate
``lr_local``) and LB-CDI ``max_rounds`` (E-step rounds: ``r_iters`` monotone r-steps and
the exact q-step; round 0 is already a q-step for ``r`` tight at the prior mean).  Every
other hyperparameter, the evaluation seed and the sample counts are the Fig. 3a run's own
(read from its ``metrics.json``), and the metrics come from
:func:`noisyor_bench.evaluation.run_metrics.evaluate_posterior`, the code path of every run -- so the row
``setting == "fig3a"`` (the run's own cap, e.g. SVI's default 300 steps) reproduces the run's recorded numbers
exactly.  Both methods are deterministic in inference mode: one run (the lowest seed) per
method suffices; other seeds differ only in the evaluation's Monte Carlo draws.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from noisyor_bench.data.loading import ground_truth, has_truth, load_dataset
from noisyor_bench.evaluation.run_metrics import evaluate_posterior
from noisyor_bench.inference.noisyor.registry import get_method
from noisyor_bench.inference.seeding import stream_seed
from noisyor_bench.infra.errors import ConfigError, DataError
from noisyor_bench.infra.hashing import sha256_file
from noisyor_bench.reporting.acp.paper import paper_numbers
from noisyor_bench.reporting.collect import read_metrics
from noisyor_bench.reporting.methods import method_label, method_rank
from noisyor_bench.reporting.tables import markdown_table

ARTIFACT = "fig3a_sensitivity"
STEP_HPARAMS: dict[str, str] = {"svi": "posterior_steps", "lb-cdi": "max_rounds"}
STEP_UNITS: dict[str, str] = {
    "svi": "Adam steps on the per-datapoint logits",
    "lb-cdi": "E-step rounds (r-steps + exact q-step)",
}
DEFAULT_STEPS: tuple[int, ...] = (0, 1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 100, 200)
METRICS: tuple[str, ...] = ("nelbo", "f1", "em")
# Direction in which a metric is better: the paper's number is "matched" once ours is at least as good.
LOWER_IS_BETTER: dict[str, bool] = {"nelbo": True, "f1": False, "em": False}
COLUMNS: tuple[str, ...] = (
    "artifact",
    "dataset",
    "method",
    "method_label",
    "setting",
    "step_hparam",
    "steps_cap",
    "steps_taken",
    "stopped_by_tol",
    "seed",
    "nelbo",
    "f1",
    "em",
    "f1_map",
    "em_map",
    "exact_nll",
    "exact_nelbo",
    "exact_gap",
    "paper_nelbo",
    "paper_f1",
    "paper_em",
    "posterior_seconds",
)


def parse_steps(values: Sequence[int] | None) -> list[int]:
    """Sorted distinct step caps (>= 0); the default grid when none are given."""
    steps = list(DEFAULT_STEPS if not values else values)
    bad = [s for s in steps if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0]
    if bad:
        raise ConfigError(f"--steps: step counts must be integers >= 0; got {bad}")
    return sorted({int(s) for s in steps})


def select_runs(paths: Sequence[str]) -> dict[str, dict[str, Any]]:
    """One Fig. 3a run per method of :data:`STEP_HPARAMS` (the lowest seed), from ``metrics.json`` files."""
    by_method: dict[str, dict[str, Any]] = {}
    for path in paths:
        row = read_metrics(path)
        if row["method"] not in STEP_HPARAMS:
            raise DataError(
                f"{path}: method {row['method']!r} has no step cap here; allowed: {', '.join(STEP_HPARAMS)}"
            )
        if row.get("mode") != "inference":
            raise DataError(
                f"{path}: expected an inference-mode run (Fig. 3a), found mode {row.get('mode')!r}"
            )
        kept = by_method.get(row["method"])
        if kept is None or row["seed"] < kept["seed"]:
            by_method[row["method"]] = row
    if not by_method:
        raise DataError("no SVI or LB-CDI runs given")
    datasets = {r["dataset"] for r in by_method.values()}
    if len(datasets) > 1:
        raise DataError(f"runs come from several datasets {sorted(datasets)}; give the runs of one")
    return by_method


def capped_posterior(
    method: str, truth: Any, x: torch.Tensor, hparams: Mapping[str, Any], seed: int, cap: int
) -> tuple[np.ndarray, int, bool, float]:
    """``q`` on ``x`` with at most ``cap`` per-datapoint steps, all other hyperparameters as given.

    Returns ``(q, steps taken, stopped by the tolerance, seconds)``.
    """
    params = {**hparams, STEP_HPARAMS[method]: int(cap)}
    instance = get_method(method)(truth, "inference", params, seed, "cpu")
    start = time.perf_counter()
    q = instance.posterior(x).detach().cpu().double().numpy()
    seconds = time.perf_counter() - start
    progress = instance.posterior_progress
    return q, int(progress.steps), bool(progress.converged), seconds


def _evaluation_args(run: Mapping[str, Any]) -> tuple[int, int, int]:
    """``(n_samples, iw_samples, exact_max_k)`` the run was evaluated with."""
    try:
        n_samples = int(run["n_samples"])
        iw = run.get("iw_samples")
        exact_max_k = int(run["exact_max_k"])
    except (KeyError, TypeError, ValueError):
        raise DataError(
            f"{run['run_dir']}: metrics.json lacks n_samples / exact_max_k (an old run? rerun it)"
        ) from None
    return n_samples, int(iw or 0), exact_max_k


def resolved_cap(method: str, hparams: Mapping[str, Any]) -> int:
    """The run's own step cap: its hyperparameter, else the method's default."""
    from importlib import import_module

    defaults = import_module(get_method(method).__module__).DEFAULTS
    return int(hparams.get(STEP_HPARAMS[method], defaults[STEP_HPARAMS[method]]))


class _Posteriors:
    """Capped posteriors of one method, computed once each.

    Both methods are deterministic in inference mode, so a fit that its tolerance stopped
    after ``t`` steps is also the fit of every cap ``>= t``: such caps reuse it.
    """

    def __init__(
        self, method: str, truth: Any, x: torch.Tensor, hparams: Mapping[str, Any], seed: int
    ) -> None:
        self.args = (method, truth, x, hparams, seed)
        self.done: dict[int, tuple[np.ndarray, int, bool, float]] = {}

    def __call__(self, cap: int) -> tuple[np.ndarray, int, bool, float]:
        for result in self.done.values():
            if result[2] and result[1] <= cap:
                return result
        if cap not in self.done:
            self.done[cap] = capped_posterior(*self.args, cap)
        return self.done[cap]


def method_rows(
    run: Mapping[str, Any], data: Mapping[str, np.ndarray], steps: Sequence[int]
) -> list[dict[str, Any]]:
    """Rows of one method: one per step cap, then the run's own setting (``setting == "fig3a"``)."""
    method, seed = run["method"], int(run["seed"])
    hparams = (
        json.loads(run["hparams"]) if isinstance(run.get("hparams"), str) else dict(run.get("hparams") or {})
    )
    truth = ground_truth(data)
    x = torch.as_tensor(data["x_test"])
    n_samples, iw_samples, exact_max_k = _evaluation_args(run)
    eval_seed = stream_seed(seed, "evaluation")
    paper = {(int(r["n_train"]), r["method"]): r for r in paper_numbers()["fig3a"]["rows"]}.get(
        (0, method), {}
    )
    posteriors = _Posteriors(method, truth, x, hparams, seed)
    rows = []
    for cap, setting in [*((c, "capped") for c in steps), (resolved_cap(method, hparams), "fig3a")]:
        q, taken, by_tol, seconds = posteriors(cap)
        metrics = evaluate_posterior(
            {"q": q, **truth.numpy()}, data, "inference", n_samples, iw_samples, exact_max_k, eval_seed
        )
        rows.append(
            {
                "artifact": ARTIFACT,
                "dataset": run["dataset"],
                "method": method,
                "method_label": method_label(method),
                "setting": setting,
                "step_hparam": STEP_HPARAMS[method],
                "steps_cap": cap,
                "steps_taken": taken,
                "stopped_by_tol": by_tol,
                "seed": seed,
                **{
                    k: metrics.get(k)
                    for k in (
                        "nelbo",
                        "f1",
                        "em",
                        "f1_map",
                        "em_map",
                        "exact_nll",
                        "exact_nelbo",
                        "exact_gap",
                    )
                },
                "paper_nelbo": paper.get("nelbo"),
                "paper_f1": paper.get("f1"),
                "paper_em": paper.get("em"),
                "posterior_seconds": seconds,
            }
        )
    _check_reproduces(run, rows[-1])
    return rows


def _check_reproduces(run: Mapping[str, Any], row: Mapping[str, Any]) -> None:
    """The uncapped row is the run's own setting: its NELBO must be the recorded one."""
    recorded = run.get("nelbo")
    if recorded is None or not math.isfinite(recorded) or row["nelbo"] is None:
        return
    if not math.isclose(row["nelbo"], recorded, rel_tol=1e-9, abs_tol=1e-9):
        logging.getLogger(__name__).warning(
            "%s: the run's own setting gives NELBO %.6f here but %.6f in its metrics.json (other device or code?)",
            run["run_dir"],
            row["nelbo"],
            recorded,
        )


def sensitivity_table(paths: Sequence[str], dataset: str, steps: Sequence[int] | None = None) -> pd.DataFrame:
    """The whole table: per method (SVI, LB-CDI), one row per step cap and one for the Fig. 3a setting."""
    runs = select_runs(paths)
    data = load_dataset(dataset)
    if not has_truth(data):
        raise DataError(
            f"dataset {dataset} has no ground truth; the Fig. 3a sensitivity needs a synthetic dataset"
        )
    sha = sha256_file(dataset)
    for run in runs.values():
        if run.get("dataset_sha256") not in (None, sha):
            raise DataError(f"{run['run_dir']} was trained on another file than {dataset} (sha256 differs)")
    grid = parse_steps(steps)
    rows = [row for m in sorted(runs, key=method_rank) for row in method_rows(runs[m], data, grid)]
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    return table.astype({"steps_cap": "int64", "steps_taken": "int64", "seed": "int64"})


def _better_or_equal(value: float, paper: float, metric: str) -> bool:
    return value <= paper if LOWER_IS_BETTER[metric] else value >= paper


def crossings(table: pd.DataFrame) -> pd.DataFrame:
    """Per method and metric: the first step cap at which our number is at least as good as the paper's.

    ``first_step``: the smallest cap of the grid that matches (``None``: none does);
    ``step_interp``: where the straight line between the last cap that does not match and the
    first that does meets the paper's number (on a log(1 + steps) axis); ``None`` when already
    the smallest cap matches or none does.
    """
    out = []
    capped = table[table["setting"] == "capped"]
    for method, g in capped.groupby("method", sort=False):
        g = g.sort_values("steps_cap")
        for metric in METRICS:
            paper = g[f"paper_{metric}"].iloc[0]
            row: dict[str, Any] = {
                "method": method,
                "metric": metric,
                "paper": paper,
                "first_step": None,
                "step_interp": None,
                "value_at_first": None,
            }
            if paper is None or (isinstance(paper, float) and math.isnan(paper)):
                out.append(row)
                continue
            caps, values = g["steps_cap"].to_numpy(float), g[metric].to_numpy(float)
            hits = [
                i for i, v in enumerate(values) if math.isfinite(v) and _better_or_equal(v, paper, metric)
            ]
            if hits:
                i = hits[0]
                row.update(first_step=int(caps[i]), value_at_first=float(values[i]))
                if i > 0 and values[i] != values[i - 1]:
                    a, b = math.log1p(caps[i - 1]), math.log1p(caps[i])
                    frac = (paper - values[i - 1]) / (values[i] - values[i - 1])
                    row["step_interp"] = float(math.expm1(a + frac * (b - a)))
            out.append(row)
    return pd.DataFrame(
        out, columns=["method", "metric", "paper", "first_step", "step_interp", "value_at_first"]
    )


def crossing_sentence(cross: pd.DataFrame) -> str:
    """One sentence per method saying at which step count the paper's numbers are matched."""
    names = {"nelbo": "NELBO", "f1": "F1", "em": "EM"}
    parts = []
    for method, g in cross.groupby("method", sort=False):
        items = []
        for r in g.to_dict("records"):
            if r["first_step"] is None or (
                isinstance(r["first_step"], float) and math.isnan(r["first_step"])
            ):
                items.append(f"{names[r['metric']]} never within the grid")
            elif r["step_interp"] is None or (
                isinstance(r["step_interp"], float) and math.isnan(r["step_interp"])
            ):
                items.append(f"{names[r['metric']]} {r['paper']:g} already at {int(r['first_step'])} steps")
            else:
                items.append(
                    f"{names[r['metric']]} {r['paper']:g} at ≈{r['step_interp']:.1f} steps "
                    f"(first grid point {int(r['first_step'])})"
                )
        parts.append(f"{method_label(method)} matches the paper's " + "; ".join(items) + ".")
    return " ".join(parts)


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{float(value):.{digits}f}"


def sensitivity_markdown(table: pd.DataFrame, digits: int = 2) -> str:
    """The table for people, with the sentence saying where the paper's numbers are matched."""
    header = [
        "Method",
        "steps (cap)",
        "steps taken",
        "NELBO",
        "F1",
        "EM",
        "exact gap",
        "NELBO (paper)",
        "F1 (paper)",
        "EM (paper)",
    ]
    rows = []
    for r in table.to_dict("records"):
        cap = (
            f"Fig. 3a setting ({int(r['steps_cap'])})"
            if r["setting"] == "fig3a"
            else str(int(r["steps_cap"]))
        )
        taken = f"{int(r['steps_taken'])}" + (" (tol)" if r["stopped_by_tol"] else "")
        rows.append(
            [
                r["method_label"],
                cap,
                taken,
                _fmt(r["nelbo"], digits),
                _fmt(r["f1"], 1),
                _fmt(r["em"], 1),
                _fmt(r["exact_gap"], 4),
                _fmt(r["paper_nelbo"], 1),
                _fmt(r["paper_f1"], 1),
                _fmt(r["paper_em"], 1),
            ]
        )
    dataset = table["dataset"].iloc[0] if len(table) else ""
    exact = table["exact_nll"].dropna()
    exact_text = f" Exact held-out −log p(x) under the true model: {exact.iloc[0]:.3f}." if len(exact) else ""
    units = "; ".join(
        f"{method_label(m)}: {u} (hyperparameter `{STEP_HPARAMS[m]}`)" for m, u in STEP_UNITS.items()
    )
    return (
        f"# Fig. 3a sensitivity: SVI and LB-CDI against per-datapoint optimisation steps ({dataset})\n\n"
        "Held-out NELBO (nats per point, lower is better), F1 and EM (percent, higher is better) computed exactly "
        "as in the Fig. 3a table (same evaluation code, seed and sample counts) with the number of per-datapoint "
        f"optimisation steps capped. Steps: {units}. 'Fig. 3a setting' = the run's own setting (stops at its "
        "tolerance, '(tol)', or its cap). exact gap = exact NELBO − exact −log p(x) = mean KL(q ‖ p(z|x))."
        f"{exact_text}\n\n"
        f"**Where the paper's numbers are matched:** {crossing_sentence(crossings(table))}\n\n"
        + markdown_table(header, rows)
    )


__all__ = [
    "ARTIFACT",
    "COLUMNS",
    "DEFAULT_STEPS",
    "STEP_HPARAMS",
    "capped_posterior",
    "crossing_sentence",
    "crossings",
    "method_rows",
    "parse_steps",
    "resolved_cap",
    "select_runs",
    "sensitivity_markdown",
    "sensitivity_table",
]
