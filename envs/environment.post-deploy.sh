#!/usr/bin/env bash
# Run by `snakemake --sdm conda` inside the new environment, in the workflow's working
# directory, after creating it from environment.yaml: installs the noisyor_bench package
# (the `noisyor-bench` CLI every rule calls) from this checkout, without touching the pins.
set -euo pipefail
if ! grep -q '^name = "noisyor-bench"' pyproject.toml 2>/dev/null; then
    echo "environment.post-deploy.sh: run snakemake from the noisyor-bench repository root (found no pyproject.toml of noisyor-bench in $PWD)" >&2
    exit 1
fi
python -m pip install --no-deps --no-build-isolation -e .
