"""What a user meets first: HTML table views, the software page, progress lines with an ETA,
the end-of-run summary, README's verdict table and the results page, the time estimate, CLI help, the
execution profiles and the conda environment file as Snakemake deploys it."""

from __future__ import annotations

import argparse
import base64
import html
import inspect
import logging
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO

from noisyor_bench.infra.errors import DataError, UserError
from noisyor_bench.reporting import htmltables, summary


# ------------------------------------------------------------------------------ HTML views
def _fig3a_like() -> pd.DataFrame:
    """Two rows the way aggregate.summarise writes them: stats columns and the paper's number."""
    return pd.DataFrame(
        {
            "artifact": ["fig3a", "fig3a"],
            "n_train": [1000, 10],
            "method": ["acp", "avi"],
            "paper_nelbo": [14.4, 16.1],
            "status": ["measured", "not run"],
            "n_seeds": [3, None],
            "nelbo_mean": [14.0212, None],
            "nelbo_std": [0.1, None],
            "nelbo_n": [3, None],
            "nelbo_ci95": [0.2484, None],
            "nelbo_values": ["0:13.9;1:14.0;2:14.1", None],
            "note": ["<b>x</b> & y", None],
        }
    )


def _cells(page: str) -> list[list[str]]:
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", page, flags=re.S)
    return [[html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r, flags=re.S)] for r in rows]


def test_view_puts_our_interval_beside_the_paper_and_hides_the_stat_columns():
    page = htmltables.table_page(_fig3a_like(), "Fig. 3a")
    header, first, second = _cells(page)[:3]
    i = header.index("nelbo (ours)")
    assert header[i + 1] == "nelbo (paper)"
    # 14.0212 ± 0.2484 at 2 digits, computed by hand
    assert first[i] == "14.02 ± 0.25" and first[i + 1] == "14.4"
    assert second[i] == "" and second[i + 1] == "16.1"
    assert not any(h.startswith("nelbo_") or h == "paper_nelbo" for h in header)
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt; &amp; y" in page  # cells escaped
    assert re.search(r'<tr class="notrun">', page)


def test_verdicts_are_coloured_by_class():
    claims = pd.DataFrame(
        {
            "claim_id": ["a", "b", "c", "d", "e"],
            "verdict": [
                "reproduced",
                "not reproduced",
                "inconclusive",
                "not tested",
                "inconclusive (budget)",
            ],
        }
    )
    page = htmltables.table_page(claims, "Claims")
    for verdict, cls in htmltables.VERDICT_CLASSES.items():
        assert re.search(rf'<td class="text {cls}">{re.escape(html.escape(verdict))}</td>', page), verdict
    assert ".ok {" in page or "td.ok" in page


def test_csv_to_html_embeds_the_csv_it_was_made_from(tmp_path: Path):
    csv = tmp_path / "fig3a.csv"
    _fig3a_like().to_csv(csv, index=False)
    out = htmltables.csv_to_html(csv, tmp_path / "fig3a.html")
    page = out.read_text()
    data = re.search(r'href="data:text/csv;base64,([^"]+)"', page).group(1)
    assert base64.b64decode(data).decode() == csv.read_text()
    assert "<script" not in page and "http" not in page.split("<body>")[1]  # self-contained


def test_unreadable_table_is_a_data_error(tmp_path: Path):
    from noisyor_bench.infra.errors import DataError

    with pytest.raises(DataError, match="missing.csv"):
        htmltables.csv_to_html(tmp_path / "missing.csv", tmp_path / "x.html")


def test_software_page_names_commit_packages_and_machine():
    from noisyor_bench.infra.provenance import environment

    env = environment()
    page = htmltables.software_page(env)
    assert "torch" in page and env["platform"]["machine"] in page
    if env["code"]["commit"]:
        assert env["code"]["commit"] in page


def test_cli_table_html_writes_next_to_each_csv(tmp_path: Path):
    from noisyor_bench.cli import main

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("x,verdict\n1,reproduced\n")
    b.write_text("y\n2\n")
    assert main(["table-html", "--tables", str(a), str(b)]) == 0
    assert (tmp_path / "a.html").is_file() and (tmp_path / "b.html").is_file()
    assert main(["table-html", "--tables", str(a), str(b), "--out-html", str(tmp_path / "only.html")]) == 2


# ------------------------------------------------------------------------------ progress
def test_progress_lines_are_throttled_and_carry_an_eta(caplog: pytest.LogCaptureFixture):
    from noisyor_bench.inference.fitting import EpochRecord
    from noisyor_bench.inference.progress import EpochProgress

    now = [100.0]
    progress = EpochProgress(total=10, desc="acp n10 s0", interval=5.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="noisyor_bench.inference.progress"):
        for epoch in range(1, 11):
            now[0] += 2.0  # 2 s per epoch
            progress(EpochRecord(epoch=epoch, train_nelbo=1.0, val_nelbo=None, seconds=2.0))
    progress.close()
    lines = [r.getMessage() for r in caplog.records if "epoch" in r.getMessage()]
    epochs = [int(re.search(r"epoch (\d+)/10", m).group(1)) for m in lines]
    # first epoch, then the first epoch at least 5 s after the previous line (every 3rd), and the last
    assert epochs == [1, 4, 7, 10]
    # at epoch 4: 8 s for 4 epochs, 6 left -> 12 s
    assert "elapsed 0:08" in lines[1] and "ETA <= 0:12" in lines[1]
    assert "ETA <= 0:00" in lines[-1]


def test_progress_eta_counts_only_this_process_epochs():
    from noisyor_bench.inference.progress import EpochProgress

    now = [0.0]
    progress = EpochProgress(total=100, desc="resumed", clock=lambda: now[0])
    progress.first_epoch = 51  # resumed after epoch 50
    assert progress.eta(60, 20.0) == pytest.approx(20.0 / 10 * 40)
    progress.close()


def test_progress_logs_under_the_callers_logger(caplog: pytest.LogCaptureFixture):
    """One logger for every trainer (ACP runs, aviPAM): the job log names the caller's module."""
    from noisyor_bench.inference.fitting import EpochRecord
    from noisyor_bench.inference.progress import EpochProgress

    caller = logging.getLogger("noisyor_bench.experiments.acp.runs")
    progress = EpochProgress(total=3, desc="aviPAM 4-PAM", logger=caller, bar=False)
    assert progress.bar is None
    with caplog.at_level(logging.INFO, logger=caller.name):
        progress(EpochRecord(epoch=1, train_nelbo=2.0, val_nelbo=1.5, seconds=1.0))
    progress.close()
    (record,) = [r for r in caplog.records if "epoch" in r.getMessage()]
    assert record.name == caller.name
    assert record.getMessage().startswith("aviPAM 4-PAM: epoch 1/3, train NELBO 2.0000, val NELBO 1.5000")


# ------------------------------------------------------------------------------ summaries
def _toy_results(tmp_path: Path) -> Path:
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    pd.DataFrame(
        {
            "claim_id": ["fig3a-c1", "fig3a-c2", "fig3a-c3"],  # ids with an ACP prefix
            "statement": ["ACP | beats AVI", "b", "c"],
            "verdict": ["reproduced", "reproduced", "inconclusive"],
        }
    ).to_csv(tables / "claims.csv", index=False)
    (tables / "fig3a.md").write_text("# Fig. 3a: inference\n\n| a |\n|---|\n| 1 |\n")
    return tmp_path / "results"


def test_run_summary_counts_verdicts(tmp_path: Path):
    text = summary.run_summary(_toy_results(tmp_path), "results/report.zip")
    assert "results/report.zip" in text
    # one line per paper, every verdict of the vocabulary counted (zeros too), the grid named
    assert text.startswith(
        "ACP: 2 of 3 claims reproduced, 0 not reproduced, 1 inconclusive, 0 not tested (grid unknown) -> "
    )
    assert "\nRun: grid unknown" in text  # the toy results directory has no run record


def test_run_summary_lists_a_study_beyond_the_papers_apart(tmp_path: Path):
    results = _toy_results(tmp_path)
    frame = pd.read_csv(results / "tables" / "claims.csv")
    frame.loc[2, "claim_id"] = "ape-noisyor-ranking"
    frame.to_csv(results / "tables" / "claims.csv", index=False)
    text = summary.run_summary(results)
    lines = text.splitlines()
    assert lines[0].startswith(
        "ACP: 2 of 2 claims reproduced, 0 not reproduced, 0 inconclusive, 0 not tested"
    )
    assert lines[1].startswith("Beyond the papers")  # the study is counted apart, after the papers
    assert lines[2].startswith("  APE on noisy-OR: 0 of 1 claim reproduced, 0 not reproduced, 1 inconclusive")


def _pages(tmp_path: Path) -> tuple[Path, Path]:
    """A README with the verdict-table markers and a results page with the results and reference markers."""
    readme = tmp_path / "README.md"
    readme.write_text(
        f"# Title\n\nbefore\n\n{summary.VERDICTS_BEGIN}\nold table\n{summary.VERDICTS_END}\n\nafter\n"
    )
    page = tmp_path / "docs" / "results.md"
    page.parent.mkdir()
    page.write_text(
        f"# Results\n\n{summary.BEGIN}\nold text\n{summary.END}\n\n"
        f"{summary.REFERENCE_BEGIN}\nkept\n{summary.REFERENCE_END}\n\nend\n"
    )
    return readme, page


def test_readme_gets_the_verdict_table_and_the_results_page_every_claim(tmp_path: Path):
    results = _toy_results(tmp_path)
    readme, page = _pages(tmp_path)
    assert summary.update_readme(readme, results) == [readme, page]  # default page: docs/results.md
    text = readme.read_text()
    assert text.startswith("# Title\n\nbefore\n\n") and text.endswith("\n\nafter\n")
    assert "old table" not in text and "[docs/results.md](docs/results.md)" in text
    assert (
        "- **ACP**: 2 of 3 claims reproduced, 0 not reproduced, 1 inconclusive, 0 not tested (grid unknown)"
        " -> [claims](docs/results.md#claims-acp)" in text
    )
    assert "Not in this run: APE, aviPAM, APE on noisy-OR." in text
    assert "| fig3a-c1 |" not in text  # the claims one by one are on the results page only
    body = page.read_text()
    assert body.startswith("# Results\n\n") and body.endswith("\n\nend\n")
    assert "old text" not in body and "kept" in body  # the reference block is left alone
    assert "The papers: 2 of 3 claims reproduced, 0 not reproduced, 1 inconclusive" in body
    assert "| fig3a-c1 | reproduced | ACP \\| beats AVI |" in body
    assert "#### Fig. 3a: inference" in body  # the table's heading demoted below the page's
    assert summary.update_readme(readme, results) == []  # idempotent
    readme.write_text("no markers\n")
    with pytest.raises(UserError, match="verdicts -->"):
        summary.update_readme(readme, results)
    assert "kept" in page.read_text()  # nothing written when a marker is missing


def test_verdict_table_files_each_claim_under_its_paper_and_the_study_apart(tmp_path: Path):
    results = _toy_results(tmp_path)
    pd.DataFrame(
        {
            "claim_id": ["fig3a-x", "ape-a", "ape-b", "ape-noisyor-c", "ape-noisyor-d"],
            "statement": ["s"] * 5,
            "verdict": ["reproduced", "not tested", "not reproduced", "reproduced", None],
        }
    ).to_csv(results / "tables" / "claims.csv", index=False)
    assert summary.paper_of("ape-noisyor-c") == "ape_noisyor"
    assert summary.paper_of("ape-a") == "ape" and summary.paper_of("fig3a-x") == "acp"
    block = summary.verdicts_block(results)
    bullets = [line for line in block.splitlines() if line.startswith("- ")]
    assert [b.split(":")[0] for b in bullets] == ["- **ACP**", "- **APE**", "- **APE on noisy-OR**"]
    assert bullets[0].startswith(
        "- **ACP**: 1 of 1 claim reproduced, 0 not reproduced, 0 inconclusive, 0 not tested"
    )
    # the study's claims are not APE's; a claim without a verdict is counted, not dropped
    assert bullets[1].startswith(
        "- **APE**: 0 of 2 claims reproduced, 1 not reproduced, 0 inconclusive, 1 not tested"
    )
    assert bullets[2].startswith(
        "- **APE on noisy-OR**: 1 of 2 claims reproduced, 0 not reproduced, 0 inconclusive, 0 not tested, 1 no verdict"
    )
    assert block.index("Beyond the papers") < block.index("- **APE on noisy-OR**")  # counted apart, after
    assert "Not in this run: aviPAM." in block


def test_verdict_table_refuses_a_claim_no_paper_claims(tmp_path: Path):
    results = _toy_results(tmp_path)
    pd.DataFrame({"claim_id": ["nobody-1"], "verdict": ["reproduced"]}).to_csv(
        results / "tables" / "claims.csv", index=False
    )
    with pytest.raises(DataError, match=r"claims\.csv: claim 'nobody-1'"):
        summary.verdicts_block(results)


def test_reference_block_shows_the_reference_claims_with_their_numbers(tmp_path: Path):
    reference = _toy_results(tmp_path)
    claims = pd.read_csv(reference / "tables" / "claims.csv").assign(numbers=["x = 1 | y", "2", "3"])
    claims.to_csv(reference / "tables" / "claims.csv", index=False)
    (reference / "tables" / "fig4_recovery.md").write_text("# Recovery\n\n| r |\n|---|\n| 8 |\n")
    readme, page = _pages(tmp_path)
    before = readme.read_text()
    assert summary.update_readme(readme, None, reference, results_page=page) == [page]
    assert readme.read_text() == before
    text = page.read_text()
    assert "old text" in text and "kept" not in text  # only the reference block changed
    assert (
        "| fig3a-c1 | reproduced | x = 1 \\| y |" in text
        and "#### Recovery" in text
        and "#### Fig. 3a" in text
    )
    assert summary.update_readme(readme, None, reference) == []
    with pytest.raises(UserError, match="publish a reference"):
        summary.update_readme(readme, None, tmp_path / "nothing")


def test_readme_results_command_writes_both_pages(tmp_path: Path):
    from noisyor_bench.cli import main

    results = _toy_results(tmp_path)
    readme, _ = _pages(tmp_path)
    page = tmp_path / "elsewhere.md"
    page.write_text(f"{summary.BEGIN}\n{summary.END}\n{summary.REFERENCE_BEGIN}\n{summary.REFERENCE_END}\n")
    args = ["readme-results", "--results", str(results), "--readme", str(readme), "--results-page", str(page)]
    assert main(args) == 0
    assert (
        "[elsewhere.md](elsewhere.md)" in readme.read_text()
        and "| fig3a-c2 | reproduced | b |" in page.read_text()
    )


def test_repository_pages_have_the_generated_blocks():
    text = (REPO / "README.md").read_text()
    assert text.count(summary.VERDICTS_BEGIN) == 1 and text.count(summary.VERDICTS_END) == 1
    assert summary.BEGIN not in text and summary.REFERENCE_BEGIN not in text  # moved to the results page
    page = (REPO / summary.RESULTS_PAGE).read_text()
    assert page.count(summary.BEGIN) == 1 and page.count(summary.END) == 1
    assert page.count(summary.REFERENCE_BEGIN) == 1 and page.count(summary.REFERENCE_END) == 1
    assert len((REPO / "README.md").read_bytes()) <= 15_000  # the front door stays short


def test_time_estimate_uses_the_measurement_or_scales_the_compute():
    table = {
        "machine": "m",
        "grids": {
            "quick": {
                "paper": "acp",  # the grid's own keys: ACP's row
                "wall_seconds": 600,
                "core_seconds": 1100,
                "longest_job_seconds": 50,
                "cores": 2,
                "how": "measured",
            }
        },
    }
    assert "about 10 min" in summary.estimate_time(table, "quick", 2)
    assert "about 50 s" in summary.estimate_time(table, "quick", 64)  # longest job bounds it
    assert "about 18 min" in summary.estimate_time(table, "quick", 1)
    assert "none recorded" in summary.estimate_time(table, "paper", 2)
    real = summary.load_estimates(REPO / "config" / "runtime_estimates.yaml")
    assert {"quick", "paper"} <= set(real["grids"]) and real["machine"]


def test_time_estimate_adds_the_papers_rows():
    table = {
        "machine": "m",
        "grids": {
            "quick": {
                "paper": "acp",
                "core_seconds": 1200,  # ACP's row (the grid's own keys, named by `paper`)
                "longest_job_seconds": 100,
                "cores": 1,
                "how": "acp basis",
                "papers": {
                    "ape": {"wall_seconds": 300, "core_seconds": 600, "cores": 2, "how": "ape basis"},
                    "avipam": {"wall_seconds": 240, "core_seconds": 480, "cores": 2, "how": "avipam basis"},
                },
            }
        },
    }
    # 2 cores: ACP 1200/2 = 600 s, APE and aviPAM as measured (300 + 240): 1140 s = 19 min
    both = summary.estimate_time(table, "quick", 2)
    assert "about 19 min" in both and "per paper: ACP 10 min, APE 5 min, aviPAM 4 min" in both
    assert "ape basis" in both and "avipam basis" in both
    assert "about 5 min" in summary.estimate_time(table, "quick", 2, ["ape"])
    # 1 core: the measured wall times scale by their core count (600 + 480 core-seconds = 18 min)
    assert "about 18 min" in summary.estimate_time(table, "quick", 1, ["ape", "avipam"])
    one = summary.estimate_time(
        {"grids": {"quick": {"papers": {"ape": table["grids"]["quick"]["papers"]["ape"]}}}}, "quick", 2
    )
    assert "about 5 min" in one and "ACP not recorded (not included)" in one
    assert "none recorded" in summary.estimate_time(table, "quick", 2, ["nope"])
    real = summary.load_estimates(REPO / "config" / "runtime_estimates.yaml")
    assert {"ape", "avipam"} <= set(real["grids"]["quick"]["papers"])


def test_estimate_time_cli_takes_papers(capsys):
    from noisyor_bench.cli import main

    table = str(REPO / "config" / "runtime_estimates.yaml")
    assert (
        main(["estimate-time", "--grid", "quick", "--cores", "2", "--papers", "ape,avipam", "--table", table])
        == 0
    )
    out = capsys.readouterr().out
    assert "per paper: APE" in out and "aviPAM" in out and "ACP" not in out


def test_estimate_time_takes_the_grid_and_the_deprecated_profile(capsys):
    from noisyor_bench.cli import main

    table = str(REPO / "config" / "runtime_estimates.yaml")
    assert main(["estimate-time", "--grid", "paper", "--cores", "2", "--table", table]) == 0
    new = capsys.readouterr()
    assert "Time estimate (paper grid, 2 cores)" in new.out and "deprecated" not in new.err
    assert main(["estimate-time", "--profile", "paper", "--cores", "2", "--table", table]) == 0
    old = capsys.readouterr()
    assert old.out == new.out
    assert "estimate-time --profile is deprecated: use --grid paper" in old.err


# ------------------------------------------------------------------------------ CLI help
def _options_without_help(parser: argparse.ArgumentParser, path: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options_without_help(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction) and (
            not action.help or action.help == argparse.SUPPRESS
        ):
            yield f"{path} {'/'.join(action.option_strings) or action.dest}"


def test_every_cli_option_has_help_text():
    from noisyor_bench.cli import build_parser

    assert list(_options_without_help(build_parser(), "noisyor-bench")) == []


# ------------------------------------------------------------------------------ profiles
@pytest.mark.parametrize("profile", sorted(p.name for p in (REPO / "profiles").iterdir() if p.is_dir()))
def test_profiles_show_failed_logs(profile: str):
    settings = yaml.safe_load((REPO / "profiles" / profile / "config.yaml").read_text())
    assert settings.get("show-failed-logs") is True


# ------------------------------------------------------------------------------ conda env
def test_snakemake_copies_the_env_file_and_runs_the_post_deploy_script():
    """The assumption the next test rests on, read from the installed Snakemake's source."""
    from snakemake.deployment import conda

    source = inspect.getsource(conda.Env.create)
    assert "copy_permission_safe(env_file, target_env_file)" in source
    assert 'env_path + ".post-deploy.sh"' in source


def _pip_references(entries: list[str]) -> list[str]:
    """Files a pip requirements entry points at (-r/-c/-e, local paths, file: URLs)."""
    refs = []
    for entry in entries:
        parts = entry.split()
        if parts[0] in ("-r", "--requirement", "-c", "--constraint", "-e", "--editable") and len(parts) > 1:
            refs.append(parts[1])
        elif parts[0].startswith((".", "/", "file:")):
            refs.append(parts[0])
    return refs


def test_conda_env_file_resolves_where_snakemake_copies_it(tmp_path: Path):
    env_file = REPO / "envs" / "environment.yaml"
    deployed = tmp_path / "repo" / ".snakemake" / "conda" / "0123456789abcdef.yaml"  # <prefix>/<hash>.yaml
    deployed.parent.mkdir(parents=True)
    shutil.copy(env_file, deployed)
    spec = yaml.safe_load(deployed.read_text())
    pip = [e for dep in spec["dependencies"] if isinstance(dep, dict) for e in dep.get("pip", [])]
    unresolved = [r for r in _pip_references(pip) if not (deployed.parent / r.removeprefix("file:")).exists()]
    assert unresolved == []
    # the same pins as the reference environment
    from noisyor_bench.infra.provenance import pinned_requirements

    reference = pinned_requirements(REPO / "envs" / "requirements.txt")
    pins = dict(e.split("==", 1) for e in pip if "==" in e and not e.startswith("-"))
    assert {k: v for k, v in pins.items() if k in reference} == reference


def test_conda_post_deploy_installs_the_package_from_the_working_directory(tmp_path: Path):
    script = REPO / "envs" / "environment.post-deploy.sh"
    deployed = tmp_path / "0123456789abcdef.post-deploy.sh"  # Snakemake runs a copy
    shutil.copy(script, deployed)
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python").write_text('#!/bin/sh\necho "python $*"\n')
    (stub / "python").chmod(0o755)
    env = {"PATH": f"{stub}:/usr/bin:/bin"}
    ok = subprocess.run(["bash", str(deployed)], cwd=REPO, env=env, capture_output=True, text=True)
    assert (
        ok.returncode == 0
        and ok.stdout.strip() == "python -m pip install --no-deps --no-build-isolation -e ."
    )
    elsewhere = subprocess.run(["bash", str(deployed)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert elsewhere.returncode == 1 and "repository root" in elsewhere.stderr


def test_list_options_read_at_files(tmp_path: Path):
    """The workflow passes long run lists as ``--runs @<params>.txt`` (one path a line)."""
    from noisyor_bench.cli import main

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("x\n1\n")
    b.write_text("y\n2\n")
    listing = tmp_path / "tables.txt"
    listing.write_text(f"{a}\n\n{b}\n")
    assert main(["table-html", "--tables", f"@{listing}"]) == 0
    assert (tmp_path / "a.html").is_file() and (tmp_path / "b.html").is_file()
    assert main(["table-html", "--tables", f"@{tmp_path / 'missing.txt'}"]) == 2


def test_an_old_claims_csv_is_counted_in_todays_vocabulary(tmp_path: Path):
    """A claims CSV written before qualifiers were named: budget-limited counts as its statistical verdict, "no data" as not tested."""
    results = _toy_results(tmp_path)
    pd.DataFrame(
        {
            "claim_id": ["fig3a-a", "fig3a-b", "fig3a-c"],
            "verdict": ["budget-limited", "inconclusive", "inconclusive"],
            "numbers": ["n", "no data: fig3a", "n"],
            "statistical_verdict": ["reproduced", "inconclusive", "inconclusive"],
        }
    ).to_csv(results / "tables" / "claims.csv", index=False)
    assert summary.verdict_counts(results / "tables" / "claims.csv") == {
        "reproduced": 1,
        "not tested": 1,
        "inconclusive": 1,
    }
