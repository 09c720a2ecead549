"""One authority for where a run lives: the rules spell no run path of their own (they call
``RUN`` of rules/common.smk, which calls :func:`noisyor_bench.experiments.rundir.run_path`),
every run folder the smoke DAG declares is a :class:`RunKey`, and every job that writes run
folders is told exactly the folders its rule declares (``--out-dir``)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from conftest import REPO, smoke_dry_run

from noisyor_bench.experiments.ape.evaluate import eval_key
from noisyor_bench.experiments.rundir import RUNS_DIR, RunKey

RUN_PATH_HELPER = "common.smk"


def test_only_the_helper_spells_a_run_path() -> None:
    spelled = {
        path.name: path.read_text(encoding="utf-8").count(f"{RUNS_DIR}/")
        for path in sorted((REPO / "rules").glob("*.smk"))
    }
    assert spelled.pop(RUN_PATH_HELPER) >= 1  # RUN's docstring: the one place
    assert {name: n for name, n in spelled.items() if n} == {}


class Job:
    """One job of a dry run: its rule, output files and shell command."""

    def __init__(self, rule: str) -> None:
        self.rule, self.outputs, self.shell = rule, [], ""


def _jobs(text: str) -> list[Job]:
    jobs: list[Job] = []
    for line in text.splitlines():
        if line.startswith(("rule ", "localrule ")):
            jobs.append(Job(line.split()[1].rstrip(":")))
        elif line.startswith("    output: ") and jobs:
            jobs[-1].outputs = line.removeprefix("    output: ").split(", ")
        elif line.startswith("Shell command: ") and jobs:
            jobs[-1].shell = line.removeprefix("Shell command: ")
    return jobs


def _out_dirs(shell: str) -> list[str]:
    """The values of ``--out-dir`` of a shell command (before its redirections)."""
    words = shlex.split(shell.split(" > ", 1)[0])
    if "--out-dir" not in words:
        return []
    values = words[words.index("--out-dir") + 1 :]
    return values[: next((i for i, w in enumerate(values) if w.startswith("--")), len(values))]


@pytest.fixture(scope="module")
def smoke_jobs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Job]]:
    results = tmp_path_factory.mktemp("run-paths")
    return results, _jobs(smoke_dry_run(results, print_shell=True))


def _run_folders(results: Path, files: list[str]) -> list[str]:
    runs = results / RUNS_DIR
    return list(dict.fromkeys(str(Path(f).parent) for f in files if Path(f).is_relative_to(runs)))


def test_every_run_folder_of_the_smoke_dag_is_a_run_key(smoke_jobs: tuple[Path, list[Job]]) -> None:
    results, jobs = smoke_jobs
    folders = [d for job in jobs for d in _run_folders(results, job.outputs)]
    kinds = {RunKey.from_path(d).experiment for d in folders}
    assert {"fig3a", "ape-train", "ape-vi", "ape-eval", "ape-noisyor", "avipam-small"} <= kinds
    for folder in folders:
        assert str(RunKey.from_path(folder).directory(results)) == folder
    evals = [RunKey.from_path(d) for d in folders if RunKey.from_path(d).experiment == "ape-eval"]
    assert evals and all(key == eval_key(key.dataset, key.seed) for key in evals)


def test_every_run_writer_gets_the_folders_its_rule_declares(smoke_jobs: tuple[Path, list[Job]]) -> None:
    results, jobs = smoke_jobs
    writers = [job for job in jobs if _run_folders(results, job.outputs)]
    assert {"train_cell", "ape_evaluate", "ape_noisyor_train", "avipam_run"} <= {j.rule for j in writers}
    for job in writers:
        assert _out_dirs(job.shell) == _run_folders(results, job.outputs), job.rule
