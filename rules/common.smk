# Helpers shared by the rules: validated config, result paths, CLI invocation, JSON params.
import json
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from noisyor_bench.config import active_profile, raw_data_dir, validate_config
from noisyor_bench.errors import ConfigError
from snakemake.exceptions import WorkflowError

try:
    config = validate_config(config)
except ConfigError as err:
    raise WorkflowError(str(err)) from None

PROFILE = active_profile(config)
RESULTS = config["results_dir"]
RAW_DATA_DIR = raw_data_dir(config)


def R(path):
    """A path under the configured results directory."""
    return f"{RESULTS}/{path}"


# Every rule calls the package CLI `noisyor-bench`, installed in the project's venv (`make`)
# or in the conda env of `--sdm conda` (envs/environment.yaml installs the package).
CONDA_ENV = "../envs/environment.yaml"  # relative to rules/, for `--sdm conda`
RAW_ARG = f"--raw-data-dir {shlex.quote(str(RAW_DATA_DIR))}" if RAW_DATA_DIR else ""
CACHE_DIR = R("raw")


def json_param(obj):
    """A config value as a shell-quoted compact JSON argument (deterministic: sorted keys)."""
    return shlex.quote(json.dumps(obj, sort_keys=True, separators=(",", ":")))


def log_path(rule_name, stem):
    return R(f"logs/{rule_name}/{stem}.log")


def benchmark_path(rule_name, stem):
    return R(f"benchmarks/{rule_name}/{stem}.tsv")


def raw_inputs(*keys):
    """Locations of raw inputs (mirror files, or <results>/raw files made by fetch_raw)."""
    from noisyor_bench.rawdata import expected_location

    return [str(expected_location(key, RAW_DATA_DIR, CACHE_DIR)) for key in keys]


def pmi_reference_input():
    """The PMI reference corpus: a raw-input key of the registry, or a user path."""
    from noisyor_bench.rawdata import REGISTRY

    ref = config["pmi"]["reference"]
    return raw_inputs(ref) if ref in REGISTRY else [ref]


def all_targets():
    """Everything `rule all` builds for the active profile."""
    targets = [R("tables/datasets.csv"), R("tables/datasets.md"), R("pmi/cooccurrence.npz"), R("data/reuters.npz")]
    for name in PROFILE["datasets"]:
        targets.append(R(f"figures/patterns_{name}.png"))
    return targets


def dataset_raw_inputs(wildcards):
    """Raw files a dataset is built from (for provenance and rerun triggers)."""
    from noisyor_bench.rawdata import dataset_raw_keys

    spec = config["datasets"][wildcards.name]
    return raw_inputs(*dataset_raw_keys(spec))
