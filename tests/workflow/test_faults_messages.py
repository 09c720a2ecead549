"""Fault catalogue: results that were silently wrong, and messages that were unclear.

A hand-run ``compare`` must not replace the workflow's comparison; a misspelt ``reference_dir``
must not drop the comparison without a word; the runtime table counts the current workflow's
jobs, each once; a number given to a nested key on the command line is the number; a job out of
memory, killed by a signal or facing a read-only results directory says so in one line.
The CLI cases run in process on the catalogue's world (``tests/faultworld.py``); the Snakemake
cases use a toy Snakefile or stop while the DAG is built, so each takes seconds.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from faultworld import FINISHED, Case, run_case, smoke_snakemake, train_argv

WORKFLOW_COMPARISON = Path("results/tables/comparison.csv")
EARLIER_COMPARISON = "table,cell,metric\nfig5,the workflow's own,nelbo\n"


# ---------------------------------------------------------------------------------- helpers
def _results_and_reference() -> None:
    """A results table (fig5.csv), the same table in a reference folder ``ref/``, and the
    workflow's own comparison of an earlier run."""
    table = "artifact,dataset,n_train,method,nelbo_mean,nelbo_ci95,nelbo_n\nfig5,toy,60,svi,9.35,0.1,3\n"
    for root in ("results", "ref"):
        Path(root, "tables").mkdir(parents=True, exist_ok=True)
        Path(root, "tables", "fig5.csv").write_text(table)
    WORKFLOW_COMPARISON.write_text(EARLIER_COMPARISON)


def _hand_comparison_written() -> None:
    assert WORKFLOW_COMPARISON.read_text() == EARLIER_COMPARISON, "the workflow's comparison was replaced"
    rows = list(csv.DictReader(Path("results/comparisons/ref.csv").open()))
    assert rows and {r["table"] for r in rows} == {"fig5"}
    assert Path("results/comparisons/ref.md").is_file()


def _out_of_memory(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """The fit fails as it does under ``ulimit -v 650000`` (the limit reported as that)."""
    import noisyor_bench.experiments.acp.runs as runs
    import noisyor_bench.infra.errors as errors

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(runs, "_fit", fail)
    monkeypatch.setattr(errors, "address_space_limit", lambda: 650000 * 1024)


def _out_of_memory_at_import(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """Importing the command's modules fails, as torch's import does under ``ulimit -v 400000``."""
    import noisyor_bench.commands.catalogue as catalogue
    import noisyor_bench.infra.errors as errors

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(catalogue, "register_modules", fail)
    monkeypatch.setattr(errors, "address_space_limit", lambda: 400000 * 1024)


def _benchmarks() -> list[str]:
    """Benchmark files of two current jobs and a stale one of an earlier layout; the argv of
    runtime-table listing the current ones (one of them twice)."""
    header = "s\th:m:s\tmax_rss\tcpu_time\n"
    for path, seconds in (("train/a.tsv", 2.0), ("search_chunk/cell/draws0-3.tsv", 3.0)):
        Path("b", path).parent.mkdir(parents=True, exist_ok=True)
        Path("b", path).write_text(f"{header}{seconds}\t0:00:0{seconds:.0f}\t10\t1\n")
    Path("b/search_chunk/cell/chunk0-of-2.tsv").write_text(f"{header}145.8\t0:02:25\t10\t1\n")
    current = ["b/train/a.tsv", "b/search_chunk/cell/draws0-3.tsv", "b/train/a.tsv", "b/gone/x.tsv"]
    return [
        "runtime-table",
        "--benchmarks",
        "b",
        "--jobs",
        *current,
        "--out-csv",
        "r.csv",
        "--out-md",
        "r.md",
    ]


def _runtime_counts_current_jobs() -> None:
    rules = {r["rule"]: r for r in csv.DictReader(Path("r.csv").open())}
    assert {name: int(r["jobs"]) for name, r in rules.items()} == {"train": 1, "search_chunk": 1}
    assert float(rules["search_chunk"]["total_s"]) == 3.0
    assert "1 of its jobs have no benchmark file" in Path("r.md").read_text()


def _check(tmp: Path, *settings: str) -> list[str]:
    argv = ["check-config", str(REPO / "config" / "config.yaml"), "--set", "grid=smoke"]
    return [*argv, *(a for s in settings for a in ("--set", s))]


CASES = [
    # ---- silently wrong
    Case(
        "compare-by-hand-keeps-workflow-comparison",
        lambda t, m: (_results_and_reference(), ["compare", "--results", "results", "--reference", "ref"])[1],
        0,
        (),
        after=_hand_comparison_written,
        out_words=("details: results/comparisons/ref.md",),
    ),
    Case(
        "config-reference-dir-misspelt",
        lambda t, m: _check(t, "reference_dir=referense/paper-synpattern"),
        2,
        ("reference_dir: 'referense/paper-synpattern' does not exist", "or null for no comparison"),
    ),
    Case(
        "config-reference-dir-without-tables",
        lambda t, m: _check(t, "reference_dir=docs"),
        2,
        ("reference_dir: 'docs' has no tables/ folder",),
    ),
    Case(
        "runtime-table-counts-current-jobs-once",
        lambda t, m: _benchmarks(),
        0,
        (),
        after=_runtime_counts_current_jobs,
    ),
    # ---- unclear messages
    Case(
        "config-nested-number-as-text",  # what `--config 'grids={smoke: {acp: ...}}'` passes
        lambda t, m: _check(t, "grids={smoke: {acp: {budget: {max_epochs: '3'}}}}"),
        0,
        (),
        out_words=("valid (grid smoke",),
    ),
    Case(
        "check-config-dotted-key",
        lambda t, m: _check(t, "grids.smoke.acp.budget.max_epochs=3"),
        0,
        (),
        out_words=("valid (grid smoke",),
    ),
    Case(
        "check-config-dotted-key-bad-value",
        lambda t, m: _check(t, "grids.smoke.acp.budget.max_epochs=three"),
        2,
        ("grids.smoke.acp.budget.max_epochs: 'three' is not of type 'integer'",),
    ),
    Case(
        "rerun-out-of-memory-system-error",
        lambda t, m: (_out_of_memory(m, SystemError("error return without exception set")), train_argv())[1],
        2,
        ("error: out of memory (SystemError", "ulimit -v 650000", "run the same command again"),
        keep=FINISHED,
    ),
    Case(
        "rerun-out-of-memory-library-not-mapped",
        lambda t, m: (
            _out_of_memory(m, ImportError("libtorch_cpu.so: failed to map segment from shared object")),
            train_argv(),
        )[1],
        2,
        ("error: out of memory (ImportError", "virtual-memory limit of 634 MiB"),
        keep=FINISHED,
    ),
    Case(
        "out-of-memory-importing-the-command-system-error",
        lambda t, m: (
            _out_of_memory_at_import(
                m, SystemError("<built-in function> returned NULL without setting an exception")
            ),
            train_argv(),
        )[1],
        2,
        ("noisyor-bench acp-train: error: out of memory (SystemError", "ulimit -v 400000"),
        keep=FINISHED,
    ),
    Case(
        "rerun-memory-error",
        lambda t, m: (_out_of_memory(m, MemoryError()), train_argv())[1],
        2,
        ("error: out of memory (MemoryError)",),
        keep=FINISHED,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fault(case, template, tmp_path, monkeypatch, capsys):
    run_case(case, template, tmp_path, monkeypatch, capsys)


def test_killed_job_is_named_on_the_console():
    """Snakemake's block for a job killed by SIGKILL gets one line saying what 137 means."""
    from noisyor_bench.reporting.console import Console

    shown: list[str] = []
    console = Console({}, shown.append)
    block = [
        "Error in rule train_cell:",
        "    message: None",
        "    jobid: 7",
        "    shell:",
        "        noisyor-bench acp-train-cell ... > results/logs/train_cell/x.log 2>&1",
        "        (command exited with non-zero exit status 137)",
        "",
    ]
    for line in block:
        console.line(line)
    killed = [line for line in shown if "killed" in line]
    assert killed == [
        "    killed (signal 9, SIGKILL): out of memory? (the kernel's OOM killer: dmesg | grep -i oom); "
        "run fewer jobs at once (--cores N) and the same command again"
    ]
    assert shown.index(killed[0]) == block.index("        (command exited with non-zero exit status 137)") + 1


def test_local_profiles_retry_a_failed_job_once():
    """A job killed by the OOM killer gets a second attempt on this machine (and a GPU machine)."""
    for name in ("default", "gpu"):
        assert yaml.safe_load((REPO / "profiles" / name / "config.yaml").read_text())["retries"] == 1


def test_real_virtual_memory_limit_is_one_line(tmp_path):
    """Under a real ``ulimit -v`` too small for torch, a training command fails while it imports
    its modules (before, outside the CLI's handler: a traceback) with one out-of-memory line."""
    import resource

    from toydata import write_toy_dataset

    write_toy_dataset(tmp_path / "data" / "toy.npz")
    limit = 400 * 2**20  # python, numpy and scipy fit; torch's libraries do not

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {"PYTHONPATH": str(REPO / "workflow"), "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "noisyor_bench", *train_argv()]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, preexec_fn=limited
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (line,) = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert line.startswith("noisyor-bench acp-train: error: out of memory (") and "(ulimit -v 409600)" in line


# ---------------------------------------------------------------------------------- Snakemake
TOY_SNAKEFILE = """
from noisyor_bench.reporting.runtime import upstream_benchmarks

rule all:
    input: "table.txt"

rule step:
    output: "{name}.out"
    benchmark: "bench/step/{name}.tsv"
    shell: "touch {output}"

rule table:
    input: "a.out", "b.out"
    output: "table.txt"
    params: files=lambda w: " ".join(upstream_benchmarks(workflow.dag, "table"))
    shell: "echo {params.files} > {output}"
"""


@pytest.mark.slow
def test_runtime_table_lists_the_benchmarks_of_the_dag(tmp_path):
    """The runtime table's job list comes from Snakemake's DAG: the jobs upstream of it, each
    once, and not a stale file of an earlier layout in the same directory."""
    (tmp_path / "Snakefile").write_text(TOY_SNAKEFILE)
    (tmp_path / "bench" / "step").mkdir(parents=True)
    (tmp_path / "bench" / "step" / "old-layout.tsv").write_text("s\n145.8\n")
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--quiet", "all"]
    env = {"PYTHONPATH": str(REPO / "workflow"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "table.txt").read_text().split() == ["bench/step/a.tsv", "bench/step/b.tsv"]


@pytest.mark.slow
def test_unwritable_results_dir_is_one_line(tmp_path):
    """A results directory that cannot be written (here under /sys, refused even to root) stops
    the run before any job with one line naming it, not an OSError traceback."""
    if not Path("/sys/kernel").is_dir():
        pytest.skip("no /sys to stand for an unwritable location")
    results = "/sys/noisyor-bench-results"
    proc = smoke_snakemake(tmp_path, results, None, f"{results}/tables/fig3a.csv", config=("papers=[acp]",))
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert lines == [
        f"Error: results_dir {results} cannot be written: Operation not permitted (EPERM) ({results}); "
        "make it writable, or choose another results_dir (--config results_dir=...)"
    ], proc.stderr[-2000:]


@pytest.mark.slow
def test_read_only_results_dir_with_nothing_to_do_is_one_line(tmp_path):
    """A finished results directory mounted read-only: a run with nothing to do stops with the same
    one line (the results lock cannot be taken there), not a PermissionError traceback; every
    file is kept."""
    from diskfull import read_only_view
    from test_fault_catalogue import _fake_dataset

    source = tmp_path / "finished"
    for name in ("syn-pattern", "multi-mnist", "syn-random-1", "syn-random-7"):
        _fake_dataset(source, name)
    (source / "tables").mkdir()
    (source / "tables" / "datasets.csv").write_text("finished\n")  # newer than its inputs
    kept = {p.relative_to(source): p.read_bytes() for p in source.rglob("*") if p.is_file()}
    (tmp_path / "work").mkdir()
    with read_only_view(source, tmp_path / "results") as results:
        target = f"{results}/tables/datasets.csv"
        proc = smoke_snakemake(tmp_path / "work", results, None, "--allowed-rules=dataset_table", target)
        assert {p.relative_to(results): p.read_bytes() for p in results.rglob("*") if p.is_file()} == kept
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert lines == [
        f"Error: results_dir {results} cannot be written: Read-only file system (EROFS) "
        f"({results}/.noisyor-bench.lock); make it writable, or choose another results_dir "
        "(--config results_dir=...)"
    ], proc.stderr[-2000:]
