"""What a job imports before its first step: only the module that registers its command, no
parser that loads torch or pyro, and table and claims steps that run without them (every job
is a fresh process, so its imports are paid once per job).  Checked on ``sys.modules`` in a
fresh interpreter, never by timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from test_rule_commands import rule_commands

from noisyor_bench.cli import build_parser
from noisyor_bench.commands import catalogue
from noisyor_bench.infra.io import write_json_atomic
from noisyor_bench.reporting.collect import METRIC_KEYS

HEAVY = ("torch", "pyro")

# Each command's parser as a job builds it (``-h``), in one fresh interpreter: the heavy packages
# loaded after each (a package loaded once stays, so the first command that loads it is named).
PARSERS = """
import contextlib, io, json, sys
from noisyor_bench import cli
loaded = {}
for command in sys.argv[1:]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        cli.main([command, "-h"])
    loaded[command] = [m for m in ("torch", "pyro") if m in sys.modules]
print(json.dumps(loaded))
"""

# One command run to its end, as a job runs it; the heavy packages it loaded, on the last line.
RUN = """
import json, sys
from noisyor_bench.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": [m for m in ("torch", "pyro") if m in sys.modules]}))
"""


def test_a_job_imports_only_the_module_that_registers_its_command():
    """A rule's command loads its own module only; any command loads at least its own (a module
    that merely quotes another command's name, like verify's ``"provenance"``, is loaded too)."""
    commands = [c for c in build_parser().commands if c.name != "steps"]  # steps: the CLI's own
    called = set().union(*rule_commands().values())
    assert len(commands) > 60
    wrong = {
        name: (catalogue.modules_for(name), c.module)
        for c in commands
        for name in (c.name, *c.aliases)
        if c.module not in catalogue.modules_for(name)
        or (name in called and catalogue.modules_for(name) != [c.module])
    }
    assert wrong == {}


def test_an_unnamed_command_falls_back_to_its_whole_group():
    shared = [m for m in catalogue.stage_modules() if catalogue.paper_of_module(m) is None]
    assert catalogue.modules_for("no-such-command") == shared
    acp = catalogue.modules_for("acp-no-such-step")
    assert acp and all(catalogue.paper_of_module(m) == "acp" for m in acp)
    assert build_parser("acp-no-such-step").commands == build_parser().commands  # the full choice list


def test_no_rule_commands_parser_imports_torch_or_pyro():
    called = sorted(set().union(*rule_commands().values()))
    assert len(called) > 40
    proc = subprocess.run(
        [sys.executable, "-c", PARSERS, *called], capture_output=True, text=True, check=True, cwd=REPO
    )
    loaded = json.loads(proc.stdout)
    first = next(((c, ms) for c, ms in loaded.items() if ms), None)
    assert first is None, f"building the parser of {first[0]} imports {first[1]}"


def _run(argv: list[str], cwd: Path) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", RUN, *argv], capture_output=True, text=True, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, proc.stderr[-2000:]
    return result["loaded"]


def _metrics(root: Path, method: str, seed: int, nelbo: float) -> Path:
    """A run's metrics.json as the training step writes it (the fields a table reads)."""
    path = root / "runs" / "table4" / "syn-random-7" / method / "n200" / f"seed{seed}" / "metrics.json"
    record = {k: None for k in METRIC_KEYS}
    record.update(
        dataset="syn-random-7",
        experiment="table4",
        method=method,
        mode="learning",
        n_train=200,
        seed=seed,
        n_test=100,
        device="cpu",
        threads=1,
        hparams={"lr": 0.001},
        nelbo=nelbo,
    )
    write_json_atomic(path, record)
    return path


@pytest.mark.parametrize("step", ["acp-table4", "claims-merge"])
def test_table_and_claims_steps_run_without_torch(tmp_path, step):
    out = tmp_path / "out"
    if step == "acp-table4":
        runs = [
            _metrics(tmp_path, m, s, v + 0.1 * s) for m, v in (("avi", 159.0), ("acp", 157.0)) for s in (0, 1)
        ]
        argv = ["acp-table4", "--runs", *map(str, runs)]
    else:
        claims = []
        for i in (1, 2):
            claims.append(tmp_path / f"claims{i}.csv")
            claims[-1].write_text(
                f"claim_id,statement,location,verdict,numbers,rule\ntable5-c{i},s,l,reproduced,n,r\n",
                encoding="utf-8",
            )
        argv = ["claims-merge", "--claims", *map(str, claims)]
    loaded = _run([*argv, "--out-csv", str(out / "t.csv"), "--out-md", str(out / "t.md")], tmp_path)
    assert (out / "t.csv").is_file() and loaded == []


def test_the_search_selection_step_runs_without_torch(tmp_path):
    """``acp-search-select`` (one job per searched cell) reads the chunk tables and writes
    search.csv and best.json: no model to train, so no torch (about 1 CPU-s to import)."""
    chunks = []
    for i, rows in enumerate([[(0, 9.0, ""), (1, 8.5, "")], [(2, "inf", "diverged: nan loss")]]):
        chunks.append(tmp_path / "chunks" / f"{i}.csv")
        chunks[-1].parent.mkdir(exist_ok=True)
        chunks[-1].write_text(
            "draw,val_nelbo,epochs,train_seconds,hparams,reason,n_draws\n"
            + "".join(f'{d},{v},{"" if r else 3},0.5,"{{""lr"": {d / 10}}}",{r},3\n' for d, v, r in rows),
            encoding="utf-8",
        )
    out = tmp_path / "search"
    loaded = _run(["acp-search-select", "--chunks", *map(str, chunks), "--out-dir", str(out)], tmp_path)
    assert loaded == []
    assert json.loads((out / "best.json").read_text(encoding="utf-8"))["draw"] == 1


def test_the_html_table_step_runs_without_scipy_stats(tmp_path):
    """``table-html`` (dozens of jobs a run) reads a CSV and writes HTML: no interval to compute,
    so ``scipy.stats`` (about 1 CPU-s to import) stays unloaded."""
    table = tmp_path / "t.csv"
    table.write_text("method,nelbo_mean,nelbo_ci95\navi,10.5,0.2\n", encoding="utf-8")
    code = (
        "import json, sys\n"
        "from noisyor_bench.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(json.dumps({'code': code, 'stats': 'scipy.stats' in sys.modules}))\n"
    )
    argv = ["table-html", "--tables", str(table), "--out-html", str(tmp_path / "t.html")]
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "stats": False}, proc.stderr[-2000:]
    assert (tmp_path / "t.html").is_file()
