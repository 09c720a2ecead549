"""The smoke grid with a cell trained one job per seed and each seed as segment jobs, beside the
same cell trained as one job: what the per-seed and segment tests (local Snakemake and the live
SLURM) run and compare."""

from __future__ import annotations

# Two seeds and a bound no job meets: every cell with two seeds trains one job per seed, each seed
# as segment jobs of one epoch (at most one per epoch; the smoke grid trains 2) before its own.
SEGMENTED = "grids:\n  smoke:\n    acp:\n      seeds: [0, 1]\n      search:\n        max_job_hours: 0.00001\n"
# The same two seeds in the cell's one training job.
ONE_JOB = "grids:\n  smoke:\n    acp:\n      seeds: [0, 1]\n"
# The cell both compare.
CELL = "fig5/syn-random-1/svi/n10"
# Metrics that differ between the two by construction: timings, provenance (the command line) and
# whether the fit resumed (a segmented seed resumes its last segment's state).
NOT_COMPARED = {
    "train_seconds",
    "val_seconds",
    "posterior_seconds",
    "eval_seconds",
    "nll_seconds",
    "provenance",
    "resumed",
}
