# Two commands do all the set-up on a fresh machine:
#   make reproduce   create .venv, install the pinned dependencies, run the quick grid, build the report
#   make test        same set-up, then the test suite, snakemake --lint and dry runs
# Variables: GRID (experiment grid: a key of config/config.yaml's `grids`), PAPERS (which papers: registered ids, e.g. acp ape,
# space- or comma-separated; `noisyor-bench estimate-time --help` lists them; default: config.yaml's `papers`), SMK_PROFILE (how jobs run: the
# Snakemake execution profile profiles/<name>: default = local, gpu, slurm), CORES (overrides
# the Snakemake profile's cores), TORCH (PyTorch build: cpu, or a CUDA build such as cu126).
# PROFILE=<grid> is the old spelling of GRID: still accepted, with a note.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

PYTHON ?= python3
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
CORES ?=
ifdef PROFILE
$(info note: PROFILE is deprecated for the experiment grid: use GRID=$(PROFILE))
GRID := $(PROFILE)
endif
GRID ?= quick
SMK_PROFILE ?= default
REPORT ?= results/report.zip
# Raw-data mirror: $NOISYOR_RAW_DATA if set, else ../shared/data when present, else download.
NOISYOR_RAW_DATA ?= $(if $(wildcard ../shared/data/README.md),$(abspath ../shared/data),)
export NOISYOR_RAW_DATA
# PyTorch build: cpu (default: the CPU wheel from PyTorch's CPU index, no CUDA libraries) or
# a CUDA build of PyTorch's index, e.g. TORCH=cu126 (then pip also installs the nvidia-*
# runtime packages that build needs; the pinned torch==2.13.0 matches 2.13.0+cpu/+cu126).
TORCH ?= cpu
TORCH_INDEX ?= https://download.pytorch.org/whl/$(TORCH)
# The installers themselves are pinned too (never "upgrade pip" to whatever is newest).
INSTALLER_PINS := pip==26.3 setuptools==84.2.1 wheel==0.48.0
PAPERS ?=
comma := ,
PAPERS_CONFIG := $(if $(strip $(PAPERS)),'papers=[$(subst $(eval) ,$(comma),$(strip $(subst $(comma), ,$(PAPERS))))]')
SNAKEMAKE := $(BIN)/snakemake --workflow-profile profiles/$(SMK_PROFILE) $(if $(CORES),--cores $(CORES))

.PHONY: setup reproduce test lint format dryrun report bench bench-throughput bench-batched bench-startup lock clean readme-results architecture

# pip's own output (notices about the machine's pip configuration, e.g. an extra index without a
# package) goes to $(VENV)/install.log, not the console; a failing install prints
# that log's last 40 lines and stops.
INSTALL_LOG = $(VENV)/install.log
PIP_LOGGED = $(BIN)/python -m pip install --quiet
$(VENV)/.installed: envs/requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@log=$(INSTALL_LOG); : > $$log; \
	run() { "$$@" >> $$log 2>&1 || { echo "setup failed: $$*" >&2; tail -n 40 $$log >&2; echo "(whole log: $$log)" >&2; exit 1; }; }; \
	run $(PIP_LOGGED) $(INSTALLER_PINS); \
	if $(BIN)/python -c "import urllib.request; urllib.request.urlopen('$(TORCH_INDEX)/torch/', timeout=15)" 2>/dev/null; then \
		echo "torch: the $(TORCH) build, from $(TORCH_INDEX)"; \
		run $(PIP_LOGGED) --extra-index-url $(TORCH_INDEX) -r envs/requirements.txt; \
	elif [ "$(TORCH)" = cpu ]; then \
		echo "torch: $(TORCH_INDEX) is not reachable; installing torch==2.13.0 from the configured pip index"; \
		echo "       (a stock PyPI gives the CUDA build on Linux: set PIP_EXTRA_INDEX_URL or a local wheel)"; \
		run $(PIP_LOGGED) -r envs/requirements.txt; \
	else \
		echo "error: TORCH=$(TORCH) needs $(TORCH_INDEX), which is not reachable" >&2; exit 1; \
	fi; \
	run $(PIP_LOGGED) --no-deps --no-build-isolation -e .; \
	echo "setup: $(VENV) ready (pip's output: $$log)"
	touch $@

setup: $(VENV)/.installed

# The console of `make reproduce`: CONSOLE=compact (default) prints the plan, one line
# per finished job (its paper, progress, ETA) and failures in full, and keeps Snakemake's whole
# output in SMK_LOG; CONSOLE=full streams Snakemake's own output. The last lines are the answer
# per paper (noisyor-bench run-summary), after the report.
CONSOLE ?= compact
SMK_LOG ?= results/logs/snakemake.log
REPORT_LOG ?= results/logs/report.log

reproduce: setup
	@$(BIN)/noisyor-bench estimate-time --grid $(GRID) $(if $(CORES),--cores $(CORES)) $(if $(strip $(PAPERS)),--papers $(subst $(comma), ,$(PAPERS))) || true
	@start=$$(date +%s); \
	if [ "$(CONSOLE)" = full ]; then \
		$(SNAKEMAKE) --config grid=$(GRID) $(PAPERS_CONFIG); \
	else \
		$(SNAKEMAKE) --config grid=$(GRID) $(PAPERS_CONFIG) 2>&1 | $(BIN)/noisyor-bench console --log $(SMK_LOG) --grid $(GRID); \
	fi; \
	echo "reproduce ($(GRID) grid): total wall time $$(( $$(date +%s) - start )) s"
	@$(MAKE) --no-print-directory report GRID=$(GRID) PROFILE=  # PROFILE= : the deprecation note once
	@$(BIN)/noisyor-bench run-summary --results results --report $(REPORT)

# Snakemake's self-contained report of the last run: every table and figure with its caption,
# grouped by paper (categories "ACP - ...", "APE - ...", "aviPAM - ...", "Beyond the papers - ...",
# "All papers - ..."), the claims pages and the runtime per rule, with the project's stylesheet
# (docs/report/report.css). A zip (one folder of files and report.html), not a single .html: the
# figures would make one HTML file slow to open. Snakemake's output goes to REPORT_LOG; any
# docutils error or warning in it (a caption, docs/captions/*.rst) fails the target.
report: setup
	@mkdir -p $(dir $(REPORT_LOG))
	@$(SNAKEMAKE) --config grid=$(GRID) $(PAPERS_CONFIG) --report $(REPORT) --report-stylesheet docs/report/report.css \
		> $(REPORT_LOG) 2>&1 || { tail -40 $(REPORT_LOG); echo "report: failed (full output: $(REPORT_LOG))" >&2; exit 1; }
	@if grep -E "\((ERROR|WARNING|SEVERE)/[0-9]\)" $(REPORT_LOG); then \
		echo "report: docutils error(s)/warning(s) above, in captions (docs/captions/*.rst); full output: $(REPORT_LOG)" >&2; exit 1; fi
	@echo "report: $(REPORT) (unzip it and open report/report.html; Snakemake's output: $(REPORT_LOG))"

# Three workers on two cores: the real-SLURM module and the GPU-lock tests mostly wait (for the
# scheduler, for a lock), and a third worker keeps the CPUs busy meanwhile; whole modules go to a
# worker (loadfile: module fixtures such as the smoke DAG are built once), longest first
# (tests/conftest.py). The 15 slowest tests are listed at the end, so a slow CI machine shows
# where its time went; a test hung for 30 minutes fails with its stacks (pyproject's timeout).
test: setup lint dryrun
	$(BIN)/python -m pytest -q -n 3 --dist loadfile --durations=15

# Style (CI enforces it through make test): ruff lint + format for Python, snakefmt for the
# Snakefile and rules, Snakemake's own linter. `make format` applies the formatters and redraws
# the import picture of docs/architecture.md.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check .
	$(SNAKEMAKE) --lint

format: setup architecture
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	$(BIN)/snakefmt .

dryrun: setup
	$(SNAKEMAKE) --dry-run --quiet --config grid=quick
	$(SNAKEMAKE) --dry-run --quiet --config grid=paper results_dir=results-paper  # results/ belongs to one grid (docs/faults.md)

# Regenerate envs/requirements.txt from the current venv (after changing pyproject.toml).
lock: setup
	{ echo "# Exact pins installed by 'make' into .venv (pip freeze; torch is the CPU wheel 2.13.0)."; \
	  echo "# Regenerate after changing pyproject.toml: make lock"; \
	  $(BIN)/python -m pip freeze --exclude-editable | grep -v '^-e' | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; \
	} > envs/requirements.txt
	# envs/environment.yaml (conda, --sdm conda): its header up to "- pip:", then the same pins.
	{ sed '/^  - pip:$$/q' envs/environment.yaml; \
	  printf '      - %s\n' "--extra-index-url https://download.pytorch.org/whl/cpu" $(filter-out pip==%,$(INSTALLER_PINS)); \
	  grep -v -e '^#' -e '^$$' envs/requirements.txt | sed 's/^/      - /'; \
	} > envs/environment.yaml.new && mv envs/environment.yaml.new envs/environment.yaml

clean:
	# Everything the workflow wrote (results/README.md is tracked and stays; results/raw holds downloads).
	rm -rf results/data results/raw_verified results/pmi results/search results/hparams results/runs results/tables results/figures \
		results/logs results/benchmarks results/baselines results/params results/software.html results/.noisyor-bench.lock \
		$(REPORT) .snakemake

# README's per-paper verdict table and docs/results.md (every claim, the main tables, the published
# reference), regenerated from the outputs in results/ (run after make reproduce).
readme-results: setup
	$(BIN)/noisyor-bench readme-results --results results --readme README.md --results-page docs/results.md \
		$(if $(wildcard reference/paper-synpattern/tables/claims.csv),--reference reference/paper-synpattern)

# Floor benchmark: every heavy unit of the product (noisy-OR step, Fig. 5 cell epoch, aviPAM 4-PAM
# epoch, APE step and evaluation, 4-PAM Gibbs sweep) beside a minimal implementation of the same
# mathematics, timed side by side in one process; prints the ratios and rewrites the generated
# block of docs/performance.md (~7 min on 2 cores). BENCH_DATA: where the datasets are (a finished
# run's results/data); BENCH_ARGS: e.g. --quick (~2 min). See benchmarks/README.md.
BENCH_DATA ?= results/data
BENCH_ARGS ?=
bench: setup
	$(BIN)/python benchmarks/floor.py --data-dir $(BENCH_DATA) --write-doc docs/performance.md $(BENCH_ARGS)

# Throughput of the project's trainers against a dense reference (examples per second, peak
# memory, the sparse kernels' FLOP rates); see benchmarks/README.md.
bench-throughput: setup
	$(BIN)/python benchmarks/bench.py

# Start-up CPU of every command the rules call (a fresh process: parser and the command's own
# imports), per command family; rewrites the generated block of docs/performance.md (~3 min).
bench-startup: setup
	$(BIN)/python benchmarks/startup.py --write-doc docs/performance.md

# Runs per hour: one run per process against R runs batched in one; datasets are built
# into results/data/ if missing. See benchmarks/README.md.
bench-batched: setup
	$(BIN)/python benchmarks/batched.py

# docs/architecture.md's import graph, redrawn from the package's real imports (stdlib only, no
# venv needed); tests/test_architecture.py fails while it is stale.
architecture:
	$(PYTHON) docs/architecture_graph.py
