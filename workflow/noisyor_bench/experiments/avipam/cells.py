"""The aviPAM grid: which runs ``grids.<grid>.avipam`` asks for (no torch, no tomotopy).

Experiments (run directories ``results/runs/avipam-<experiment>/<corpus>/<method>/n<N>/seed<s>``,
the project's layout; ``N`` = ``max_train_docs`` of the grid, 0 = all training documents):

* ``small``: the Table 1 / Table 3 sizes (50 sub-topics, 2 super-topics, 2 super-duper topics,
  MoLDA components of 10 and 50 topics);
* ``large``: the Table 2 / Table 4 sizes (100 sub-topics, 50 super-topics, 10 super-duper
  topics, MoLDA 50 + 100);
* ``collapse``: the normalisation study (method ``avipam-lda`` with a normalisation variant and
  a learning rate per run, method directory ``<variant>-lr<lr>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from noisyor_bench.experiments.rundir import RunKey
from noisyor_bench.infra.errors import ConfigError

CORPORA = ("20news", "nips", "mnist")
CORPUS_LABELS = {
    "20news": "20 Newsgroups",
    "nips": "NIPS substitute (NeurIPS abstracts)",
    "mnist": "MNIST digits (stand-in for Omniglot)",
}
TABLE_EXPERIMENTS = ("small", "large")
TEXT_CORPORA = ("20news", "nips")  # NPMI is scored on these (MNIST pixels have no words)
# method name -> (label, family): the rows of Tables 1-4, in the paper's column order
METHODS: dict[str, tuple[str, str]] = {
    "lda-gibbs": ("LDA Gibbs", "baseline"),
    "lda-online": ("LDA DMFVI (online)", "baseline"),
    "lda-batch": ("LDA DMFVI (batch)", "baseline"),
    "pam4-gibbs": ("4-PAM Gibbs", "baseline"),
    "avipam-pam4": ("aviPAM 4-PAM", "avipam"),
    "avipam-pam5": ("aviPAM 5-PAM", "avipam"),
    "avipam-ctm": ("aviPAM CTM", "avipam"),
    "avipam-molda": ("aviPAM MoLDA", "avipam"),
    # ablation: 4-PAM with the encoder batch-norm's learnable gain, the paper's eq. 5
    # reading (the default is AVITM's batch-norm without gain)
    "avipam-pam4-gain": ("aviPAM 4-PAM, BN with gain (ablation)", "ablation"),
    # calibration rows: AVITM's published K = 50 topics (no training; seed s = published
    # run s + 1) and AVITM's ProdLDA / NVLDA with AVITM's settings, on 20 Newsgroups
    "avitm-published": ("AVITM published topics (calibration)", "calibration"),
    "prodlda": ("ProdLDA, AVITM's settings (calibration)", "calibration"),
    "nvlda": ("NVLDA, AVITM's settings (calibration)", "calibration"),
}
COLLAPSE_METHOD = "avipam-lda"
# encoder-output normalisation of the collapse study (inference.topics.avipam_norm.OUTPUT_NORMS)
VARIANTS = ("batchnorm", "norm", "none", "batchnorm-nogain")
# The paper's sizes (Section 5): Table 1/3 and Table 2/4.
PAPER_SIZES = {
    "small": {"sub": 50, "super": 2, "superduper": 2, "molda": [10, 50]},
    "large": {"sub": 100, "super": 50, "superduper": 10, "molda": [50, 100]},
}


@dataclass(frozen=True)
class RunCell:
    experiment: str  # small | large | collapse
    corpus: str
    method: str  # METHODS key, or "<variant>-lr<lr>" in the collapse study
    seed: int
    n_train: int = 0  # max_train_docs, 0 = all training documents

    @property
    def run_experiment(self) -> str:
        return f"avipam-{self.experiment}"

    @property
    def key(self) -> RunKey:
        """The run's key: experiment ``avipam-<experiment>``, dataset = the corpus."""
        return RunKey(self.run_experiment, self.corpus, self.method, self.n_train, self.seed)

    @property
    def path(self) -> str:
        """``avipam-<experiment>/<corpus>/<method>/n<N>/seed<s>``: the run's place under runs/."""
        return self.key.path


def section(config: Mapping[str, Any]) -> dict[str, Any]:
    """``grids.<grid>.avipam`` of the active grid ({} when the grid has none)."""
    grid = config.get("grids", {}).get(config.get("grid", "quick"), {})
    return dict(grid.get("avipam") or {})


def seeds(sec: Mapping[str, Any]) -> list[int]:
    return [int(s) for s in sec.get("seeds", [0])]


def n_limit(sec: Mapping[str, Any]) -> int:
    """The run directories' N: ``max_train_docs`` (0 = all training documents)."""
    return int(sec.get("max_train_docs") or 0)


def lr_name(lr: float) -> str:
    """A learning rate as a path-safe name: 0.002 -> '0.002', 1e-05 -> '1e-05'."""
    return f"{float(lr):g}"


def collapse_method(variant: str, lr: float) -> str:
    if variant not in VARIANTS:
        raise ConfigError(f"avipam collapse: variant {variant!r} not in {list(VARIANTS)}")
    return f"{variant}-lr{lr_name(lr)}"


def parse_collapse_method(method: str) -> tuple[str, float]:
    variant, _, lr = method.rpartition("-lr")
    if variant not in VARIANTS or not lr:
        raise ConfigError(f"avipam collapse: {method!r} is not '<variant>-lr<learning rate>'")
    return variant, float(lr)


EXPERIMENTS = (*TABLE_EXPERIMENTS, "collapse")
# settings["sizes"] entries each fitted method reads (the fit adapters of .methods)
NEEDED_SIZES: dict[str, tuple[str, ...]] = {
    "lda-gibbs": ("sub",),
    "lda-online": ("sub",),
    "lda-batch": ("sub",),
    "pam4-gibbs": ("super", "sub"),
    "avipam-pam4": ("super", "sub"),
    "avipam-pam5": ("superduper", "super", "sub"),
    "avipam-ctm": ("sub",),
    "avipam-molda": ("molda",),
    "avipam-pam4-gain": ("super", "sub"),
    "avitm-published": (),
    "prodlda": ("sub",),
    "nvlda": ("sub",),
    COLLAPSE_METHOD: ("sub",),
}
GIBBS_METHODS = ("lda-gibbs", "pam4-gibbs")


def check_run_settings(experiment: str, method: str, settings: Mapping[str, Any]) -> None:
    """``--method`` must be the method the settings fit (the run records ``--method``), and
    the settings must hold what that fit reads; ConfigError naming both otherwise (once,
    ``--method lda-gibbs`` was recorded while lda-online was fitted)."""
    fitted = settings.get("method")
    if experiment == "collapse":
        variant, lr = parse_collapse_method(method)
        stated = {"method": COLLAPSE_METHOD, "variant": variant, "lr": lr}
    else:
        if method not in METHODS:
            raise ConfigError(f"--method {method!r}: not an aviPAM table method; known: {', '.join(METHODS)}")
        stated = {"method": method}
    for key, value in stated.items():
        got = settings.get(key)
        same = got == value if key != "lr" else isinstance(got, (int, float)) and float(got) == value
        if not same:
            raise ConfigError(
                f"--method {method!r} disagrees with --settings: {key} is {got!r} there, {value!r} for "
                f"--method in the {experiment} experiment"
            )
    sizes = settings.get("sizes")
    missing = [k for k in NEEDED_SIZES[str(fitted)] if not isinstance(sizes, Mapping) or k not in sizes]
    if missing:
        raise ConfigError(f"--settings: {fitted} needs sizes {missing}; got sizes {sizes!r}")
    if fitted in GIBBS_METHODS and not isinstance(settings.get("gibbs"), Mapping):
        raise ConfigError(f"--settings: {fitted} needs a 'gibbs' section")


def table_cells(sec: Mapping[str, Any], experiment: str) -> list[RunCell]:
    exp = (sec.get("tables") or {}).get(experiment)
    if not exp:
        return []
    cells = []
    for corpus in exp["corpora"]:
        for method in exp["methods"].get(corpus, []):
            if method not in METHODS:
                raise ConfigError(f"grids.*.avipam.tables.{experiment}: unknown method {method!r}")
            cells += [
                RunCell(experiment, corpus, method, s, n_limit(sec)) for s in method_seeds(sec, exp, method)
            ]
    return cells


def method_seeds(sec: Mapping[str, Any], exp: Mapping[str, Any], method: str) -> list[int]:
    """A table method's seeds: ``tables.<experiment>.method_seeds.<method>`` where the grid sets
    them (a costly calibration row with fewer seeds), else the grid's seeds."""
    own = (exp.get("method_seeds") or {}).get(method)
    return [int(s) for s in own] if own is not None else seeds(sec)


def collapse_cells(sec: Mapping[str, Any]) -> list[RunCell]:
    study = sec.get("collapse")
    if not study:
        return []
    study_seeds = [int(s) for s in study.get("seeds", seeds(sec))]
    limit = int(study.get("max_train_docs") or n_limit(sec))
    return [
        RunCell("collapse", corpus, collapse_method(v, lr), s, limit)
        for corpus in study["corpora"]
        for v in study["variants"]
        for lr in study["learning_rates"]
        for s in study_seeds
    ]


def all_cells(sec: Mapping[str, Any]) -> list[RunCell]:
    return [c for e in TABLE_EXPERIMENTS for c in table_cells(sec, e)] + collapse_cells(sec)


def corpora_used(sec: Mapping[str, Any]) -> list[str]:
    return sorted({c.corpus for c in all_cells(sec)})


def cell_settings(sec: Mapping[str, Any], cell: RunCell) -> dict[str, Any]:
    """Everything a run needs besides its data: sizes, method settings, budget (JSON-able)."""
    if cell.experiment == "collapse":
        study = dict(sec["collapse"])
        variant, lr = parse_collapse_method(cell.method)
        return {
            "method": COLLAPSE_METHOD,
            "sizes": {"sub": int(study["topics"])},
            "variant": variant,
            "lr": lr,
            "topic_bn": bool(study.get("topic_bn", True)),
            "avi": {**(sec.get("avi") or {}), **(study.get("avi") or {}), "lr": lr},
            "corpus": dict((sec.get("corpus_settings") or {}).get(cell.corpus) or {}),
            "max_train_docs": cell.n_train or None,
            "collapse_threshold": study.get("collapse_threshold"),
            "threads": int(sec.get("threads", 1)),
            **_device(sec),
        }
    exp = sec["tables"][cell.experiment]
    sizes = {**PAPER_SIZES[cell.experiment], **(exp.get("sizes") or {})}
    return {
        "method": cell.method,
        "sizes": sizes,
        "gibbs": gibbs_settings(exp.get("gibbs") or {}, cell.method),
        "mean_field": dict(sec.get("mean_field") or {}),
        "avi": {**(sec.get("avi") or {}), **(exp.get("avi") or {})},
        **({"timing_only": True} if exp.get("timing_only") else {}),
        "corpus": dict((sec.get("corpus_settings") or {}).get(cell.corpus) or {}),
        **_coherence_plateau(sec, cell),
        **({"prodlda": dict(sec.get("prodlda") or {})} if cell.method in ("prodlda", "nvlda") else {}),
        "max_train_docs": sec.get("max_train_docs"),
        "threads": int(sec.get("threads", 1)),
        **_device(sec),
    }


def _coherence_plateau(sec: Mapping[str, Any], cell: RunCell) -> dict[str, Any]:
    """``{"coherence_plateau_epoch": E}`` for an aviPAM run on a corpus the grid's
    ``coherence_plateau`` names (the epoch at which the measured coherence-vs-epoch curve
    plateaus: a topic-quality claim counts the run converged when it trained that long), else
    nothing (Gibbs chains and scikit-learn fits are judged on their own traces)."""
    plateau = (sec.get("coherence_plateau") or {}).get(cell.corpus)
    if plateau is None or not cell.method.startswith("avipam-"):
        return {}
    return {"coherence_plateau_epoch": int(plateau)}


def _device(sec: Mapping[str, Any]) -> dict[str, Any]:
    """``{"device": ...}`` when the grid sets one (aviPAM's amortized runs; default cpu), else
    nothing, so the settings of grids without the key, hence their runs, stay as they were."""
    return {"device": str(sec["device"])} if "device" in sec else {}


def gibbs_settings(gibbs: Mapping[str, Any], method: str) -> dict[str, Any]:
    """The Gibbs settings one method's run gets (one set for LDA and 4-PAM: with
    ``stop_on_rule`` each chain stops where the convergence rule holds, ``iterations`` a cap;
    docs/avipam.md, "Budgets of the quick grid"); ``by_method`` gives a method its own
    ``iterations`` / ``max_minutes``."""
    if "pam_iterations" in gibbs:
        raise ConfigError(
            "grids.*.avipam.tables.*.gibbs.pam_iterations is gone: chains stop on the convergence rule "
            "(gibbs.stop_on_rule: true) with one iteration cap for LDA and 4-PAM"
        )
    out = {k: v for k, v in gibbs.items() if k != "by_method"}
    out.update((gibbs.get("by_method") or {}).get(method) or {})  # e.g. the reference's 4-PAM chain
    return out
