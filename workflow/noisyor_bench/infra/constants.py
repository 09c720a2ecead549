"""Defaults shared by the CLI and the numerical modules, importable without torch.

The CLI builds its parsers at every start; keeping these here lets ``noisyor-bench --help``
and the light subcommands (datasets, tables, figures) start without importing torch.
"""

DEFAULT_N_SAMPLES = 100  # discrete samples of q per test point for the NELBO (supplement Sec. 3)
DEFAULT_IW_SAMPLES = 100  # importance samples per test point for the IW bound of a single run (CLI/API)
# The workflow's reported numbers use a tighter importance-weighted bound than a single run
# started by hand: 1,000 samples per test point (the paper profile's value) where the config
# sets none, both for the runs' test metrics (config ``evaluation.iw_samples``) and for the
# true model's reference scores (config ``baselines.iw_samples``, ``acp-baselines --iw-samples``).
WORKFLOW_IW_SAMPLES = 1000
BASELINE_IW_SAMPLES = 1000
BASELINE_MAX_ROWS = 500  # test rows scored by the true-model baseline (a fixed random subset)
BASELINE_MAX_ROUNDS = 200  # LB-CDI E-step rounds of the true-model baseline's proposal
MAX_EXACT_K = 20  # largest K for which 2^K enumeration is allowed
CALIBRATION_MAX_ROWS = 1000  # calibration panel rows of an enumerable dataset (a fixed seeded subset beyond)

# Names that become path components under results_dir (datasets, experiments, corpora): the
# one pattern behind the Snakefile's wildcard constraints, the config validation and the CLI's
# run paths, so no name can escape the results directory ('..', '/', '.').
NAME_PATTERN = r"[A-Za-z0-9_-]+"
