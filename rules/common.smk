# Helpers shared by the rules: validated config, result paths, CLI invocation, JSON params.
import json
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from noisyor_bench.config import active_profile, raw_data_dir, validate_config
from noisyor_bench.errors import ConfigError

try:
    config = validate_config(config)
except ConfigError as err:
    raise WorkflowError(str(err)) from None

PROFILE = active_profile(config)
RESULTS = config["results_dir"]
RAW_DATA_DIR = raw_data_dir(config)

# Every rule calls the package CLI with the interpreter that runs Snakemake (the project's
# venv, or the conda env of `--sdm conda`), with the package importable from workflow/.
CLI = (
    f"PYTHONPATH={shlex.quote(str(Path(workflow.basedir) / 'workflow'))}${{PYTHONPATH:+:$PYTHONPATH}} "
    "python -m noisyor_bench"
)
CONDA_ENV = "../envs/environment.yaml"  # relative to rules/, for `--sdm conda`
RAW_ARG = f"--raw-data-dir {shlex.quote(str(RAW_DATA_DIR))}" if RAW_DATA_DIR else ""


def R(path):
    """A path under the configured results directory."""
    return f"{RESULTS}/{path}"


def json_param(obj):
    """A config value as a shell-quoted compact JSON argument (deterministic: sorted keys)."""
    return shlex.quote(json.dumps(obj, sort_keys=True, separators=(",", ":")))


def log_path(rule_name, stem):
    return R(f"logs/{rule_name}/{stem}.log")


def benchmark_path(rule_name, stem):
    return R(f"benchmarks/{rule_name}/{stem}.tsv")


def all_targets():
    """Everything `rule all` builds for the active profile."""
    targets = [R("tables/datasets.csv"), R("tables/datasets.md")]
    for name in PROFILE["datasets"]:
        targets.append(R(f"figures/patterns_{name}.png"))
    return targets
