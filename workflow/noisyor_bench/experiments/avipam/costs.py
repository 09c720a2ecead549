"""aviPAM's compute jobs for the cost model (:mod:`noisyor_bench.experiments.costs`).

Why here: a Gibbs chain costs ~ sweeps x topics; amortized training (aviPAM, the collapse
study) ~ epochs x documents x topics; mean-field LDA ~ its passes x topics.  ``n0`` (all
training documents) counts :data:`ALL_DOCUMENTS` documents.  Gibbs and mean-field runs are
CPU-only; the amortized ones can use a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from noisyor_bench.experiments.avipam import cells as avipam_cells
from noisyor_bench.experiments.costs import BASE_MEM_MB, Job

COMPUTE_RULES = ("avipam_run",)
#: Documents of ``n0`` (all training documents; 20 Newsgroups has ~11,000, the MNIST stand-in 10,000).
ALL_DOCUMENTS = 10_000
#: Length of a run that stops early (Gibbs ``stop_on_rule``, mean-field ``stop_on_rule``, AVI
#: ``stop_on_plateau``): its measured seconds stand for these sweeps, passes or epochs, not the
#: cap.  The shortest of the quick grid's runs on 20 Newsgroups (3 seeds, 2026-11-25: LDA Gibbs
#: 270-310 of 500 sweeps, 4-PAM Gibbs 150-180, online LDA 13-14 of 20 passes, aviPAM 34-56 of
#: 150 epochs): the shortest makes the scaled estimate an upper bound, not a middle.
EARLY_STOP_LENGTH = {"lda-gibbs": 270, "pam4-gibbs": 150, "lda-online": 13, "lda-batch": 13, "amortized": 34}


#: Epochs of the calibration rows (inference.topics.prodlda.AVITM; not imported here: torch at DAG time)
AVITM_EPOCHS = {"prodlda": 200, "nvlda": 300}


def is_cuda_method(method: str) -> bool:
    """Amortized methods (aviPAM encoders, the collapse study's variants) can use a GPU."""
    return not (method.endswith("-gibbs") or method.startswith("lda-") or method == "avitm-published")


#: Cost of a 4-PAM Gibbs sweep at the large sizes (50 x 100) over the small ones (2 x 50): ~14 s
#: against ~1.8 s an iteration on 20 Newsgroups (the paper's Mallet timings); the sum of topics (x3)
#: would understate it.  tomotopy's ratio is larger: the calibration slice of the large chain
#: (:mod:`.slices`) measures it beside the small one, and its row prices the paper grid's chains.
PAM_LARGE_SWEEP_RATIO = 14 / 1.8


def _topics(sizes: Mapping[str, Any]) -> int:
    return int(sizes.get("sub", 1)) + int(sizes.get("super", 0)) + int(sizes.get("superduper", 0))


def _gibbs_sweep_cost(method: str, sizes: Mapping[str, Any]) -> float:
    """Relative cost of one sweep: LDA ~ topics; 4-PAM measured at the paper's two sizes."""
    if method.startswith("pam") and int(sizes.get("super", 0)) >= avipam_cells.PAPER_SIZES["large"]["super"]:
        return PAM_LARGE_SWEEP_RATIO * _topics(avipam_cells.PAPER_SIZES["small"])
    return float(_topics(sizes))


def run_steps(sec: Mapping[str, Any], cell: avipam_cells.RunCell) -> tuple[int, float]:
    """(sweeps, passes or epochs a run is charged, the work of one of them): a calibration slice
    times a few of these steps, so its work is in the same unit.  A Gibbs chain's ``burn_in`` is
    tomotopy's hyperparameter burn-in, sweeps within ``iterations``, not extra ones."""
    settings = avipam_cells.cell_settings(sec, cell)
    docs = cell.n_train or ALL_DOCUMENTS
    topics = _topics(settings["sizes"])
    method = settings["method"]
    if method.endswith("-gibbs"):
        g = settings["gibbs"]
        sweeps = _length(int(g.get("iterations", 1)), bool(g.get("stop_on_rule")), method)
        return sweeps, _gibbs_sweep_cost(method, settings["sizes"]) * docs
    if method.startswith("lda-"):
        mf = settings["mean_field"]
        return _length(int(mf.get("max_iter", 1)), bool(mf.get("stop_on_rule")), method), float(topics * docs)
    if method == "avitm-published":  # calibration row: published topics, no training
        return 1, 1.0
    if method in AVITM_EPOCHS:  # calibration rows: AVITM's fixed epochs
        return int((settings.get("prodlda") or {}).get("epochs", AVITM_EPOCHS[method])), float(topics * docs)
    avi = {**settings["avi"], **settings["corpus"]}  # a corpus's settings override `avi`, as in a run
    epochs = _length(int(avi.get("max_epochs", 1)), bool(avi.get("stop_on_plateau")), "amortized")
    return epochs, float(topics * docs)


def _work(sec: Mapping[str, Any], cell: avipam_cells.RunCell) -> float:
    steps, per_step = run_steps(sec, cell)
    return float(steps) * per_step


def _length(cap: int, stops_early: bool, family: str) -> int:
    """Sweeps, passes or epochs a run's measured seconds stand for: the cap, or the early-stopped
    length of :data:`EARLY_STOP_LENGTH` (a paper-grid run is charged its full cap)."""
    return min(cap, EARLY_STOP_LENGTH.get(family, cap)) if stops_early else cap


def _family(cell: avipam_cells.RunCell) -> str:
    return avipam_cells.COLLAPSE_METHOD if cell.experiment == "collapse" else cell.method


def job_name(cell: avipam_cells.RunCell) -> str:
    """The benchmark stem of a run's job."""
    return f"{cell.experiment}-{cell.corpus}-{cell.method}-n{cell.n_train}-seed{cell.seed}"


def jobs(cfg: Mapping[str, Any]) -> list[Job]:
    """aviPAM's compute jobs in the active grid of ``cfg``."""
    sec = avipam_cells.section(cfg)
    if not sec:
        return []
    return [
        Job(
            "avipam_run",
            job_name(c),
            _work(sec, c),
            key=(_family(c), c.corpus, c.experiment),
            size=float(c.n_train or ALL_DOCUMENTS),
            cuda=is_cuda_method(c.method),
            mem_mb=BASE_MEM_MB + 2000,
            family=_family(c),
        )
        for c in avipam_cells.all_cells(sec)
    ]
