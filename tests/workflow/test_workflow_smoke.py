"""The smoke grid of the Snakemake DAG, end to end: every rule executes once.

This is the test that proves the workflow, not just the package: datasets, ingestion, the
random search, training of all five methods and the ablation ACP-SG, aggregation, figures and
claims, through the same `noisyor-bench` commands a user runs.  It takes a few minutes on 2 cores.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def snakemake(repo: Path, results: Path, mirror: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["NOISYOR_RAW_DATA"] = str(mirror)
    cmd = [
        str(Path(sys.executable).parent / "snakemake"),
        "--cores",
        "2",
        "--config",
        "grid=smoke",
        f"results_dir={results}",
        *extra,
    ]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory, request):
    from conftest import MIRROR, REPO

    if MIRROR is None:
        pytest.skip("raw-data mirror not found")
    results = tmp_path_factory.mktemp("smoke") / "results"
    proc = snakemake(REPO, results, MIRROR)
    if proc.returncode != 0:
        logs = sorted(results.glob("logs/**/*.log"))
        tails = "\n".join(f"--- {p}\n{p.read_text()[-1500:]}" for p in logs if "rror" in p.read_text())
        pytest.fail(f"smoke DAG failed:\n{proc.stderr[-4000:]}\n{tails}")
    return results


def test_every_artifact_is_built(smoke_results):
    """The shared outputs, and each registered paper's smoke artifacts (its registry entry's list)."""
    from noisyor_bench.experiments import papers

    expected = [
        "tables/claims.csv",
        "tables/claims.md",
        "tables/claims.html",
        "tables/convergence.md",
        "software.html",
    ]
    expected += [a for paper in papers.papers() for a in paper.smoke_artifacts]
    missing = [
        p for p in expected if not (smoke_results / p).is_file() or (smoke_results / p).stat().st_size == 0
    ]
    assert not missing


def test_runs_have_finite_metrics_and_the_public_files(smoke_results):
    from conftest import REPO

    from noisyor_bench.experiments.acp import grid
    from noisyor_bench.experiments.config import load_config

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    synthetic = set(grid.experiments(cfg))
    metrics_files = sorted(
        p for p in smoke_results.glob("runs/*/*/*/n*/seed*/metrics.json") if p.parts[-6] in synthetic
    )
    assert len(metrics_files) == len(grid.cells(cfg)) * len(grid.seeds(cfg))
    methods = set()
    for path in metrics_files:
        m = json.loads(path.read_text())
        methods.add(m["method"])
        assert math.isfinite(m["nelbo"]) and m["nelbo"] > 0, path
        assert m["test_evaluated"] is True
        for name in ("posterior_test.npz", "curve.csv"):
            assert (path.parent / name).is_file(), path.parent / name
    assert methods == {"avi", "acp", "svi", "lb-cdi", "ub-cdi", "acp-sg"}


def test_search_never_touches_the_test_set(smoke_results):
    draws = sorted(smoke_results.glob("search/*/*/*/n*/chunks/*/draw*/metrics.json"))  # search_chunk jobs
    assert draws
    for path in draws:
        m = json.loads(path.read_text())
        assert m["test_evaluated"] is False and m.get("nelbo") is None
        assert not (path.parent / "posterior_test.npz").exists()
        assert math.isfinite(m["val_nelbo"])
    best = json.loads(next(smoke_results.glob("search/*/*/*/n*/best.json")).read_text())
    assert {"draw", "hparams", "val_nelbo"} <= set(best)


def test_claims_table_has_a_verdict_per_claim(smoke_results):
    with open(smoke_results / "tables" / "claims.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) >= 8
    assert {r["verdict"] for r in rows} <= {"reproduced", "not reproduced", "inconclusive", "not tested"}
    assert "mechanism-gradient-through-q-fig4-syn-pattern" in {
        r["claim_id"] for r in rows
    }  # the ablation's claim
    # the smoke budget (2 epochs) leaves learning runs unconverged: a qualifier beside the verdict says so
    assert "statistical_verdict" not in rows[0]
    for r in rows:
        converged, _, runs = r["evidence"].partition(" runs converged")[0].partition("/")
        if runs and int(converged) < int(runs):
            assert r["unconverged"], r["claim_id"]


def test_runs_record_convergence_and_tables_count_it(smoke_results):
    """Every run's metrics.json says whether it converged; the tables carry n_runs / n_converged.
    APE's evaluation runs train nothing (method ``all``, N = 0): there is nothing to converge."""
    from noisyor_bench.experiments.ape.evaluate import EXPERIMENT as APE_EVALUATION

    runs = sorted(
        p for p in smoke_results.glob("runs/*/*/*/n*/seed*/metrics.json") if p.parts[-6] != APE_EVALUATION
    )
    for path in runs:
        m = json.loads(path.read_text())
        assert m["converged"] in (True, False, None) and m["convergence"]["rule"], path
        if m["mode"] == "learning":
            assert m["converged"] is not None, path
    with open(smoke_results / "tables" / "fig5.csv", newline="") as fh:
        fig5 = list(csv.DictReader(fh))
    measured = [r for r in fig5 if r["status"] == "measured"]  # baseline reference rows have no runs
    assert measured and all(int(r["n_converged"]) <= int(r["n_runs"]) for r in measured)
    with open(smoke_results / "tables" / "convergence.csv", newline="") as fh:
        summary = {(r["experiment"], r["method"]): r for r in csv.DictReader(fh)}
    assert int(summary[("all", "all")]["n_runs"]) == sum(
        json.loads(p.read_text())["mode"] == "learning" for p in runs
    )


def test_a_finished_dag_has_nothing_left_to_do(smoke_results):
    """Params are deterministic: a second invocation finds every output up to date."""
    from conftest import MIRROR, REPO

    proc = snakemake(REPO, smoke_results, MIRROR, "--dry-run", "--quiet", "rules")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_runtime_table_counts_every_job(smoke_results):
    """The report's runtime section reads one benchmark file per job, training included."""
    from conftest import REPO

    from noisyor_bench.experiments.acp import grid
    from noisyor_bench.experiments.config import load_config

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    with open(smoke_results / "tables" / "runtime.csv", newline="") as fh:
        rules = {r["rule"]: r for r in csv.DictReader(fh)}
    assert int(rules["train_cell"]["jobs"]) == len(grid.cells(cfg))
    assert float(rules["train_cell"]["total_s"]) > 0
    assert {"make_dataset", "search_chunk", "train_cell_corpus", "claims_merge"} <= set(rules)
    assert "slowest jobs" in (smoke_results / "tables" / "runtime.md").read_text()


def test_report_builds_with_every_paper_artifact(smoke_results):
    """`snakemake --report` (make report) on the smoke results: a zip with results and captions."""
    from conftest import MIRROR, REPO

    from noisyor_bench.experiments.config import load_config

    report = smoke_results / "report.zip"
    proc = snakemake(REPO, smoke_results, MIRROR, "--report", str(report))
    assert proc.returncode == 0, proc.stderr[-3000:]
    # no docutils error or warning in any caption (what `make report` refuses too)
    messages = re.findall(r".*\((?:ERROR|WARNING|SEVERE)/\d\).*", proc.stdout + proc.stderr)
    assert messages == [], messages
    with zipfile.ZipFile(report) as zf:
        names = zf.namelist()
        html = zf.read("report/report.html").decode()
    assert "System Message" not in html
    # the landing page: one answer line per paper, linking each paper's claims page
    for paper_id, name in (("acp", "ACP"), ("ape", "APE"), ("avipam", "aviPAM")):
        assert f"{paper_id}_claims.html" in html and any(
            n.endswith(f"/{paper_id}_claims.html") for n in names
        )
        assert f"<strong>{name}</strong>: " in html, name
    # tables as their HTML views (rendered inline by the report), figures as images
    for artifact in (
        "claims.html",
        "fig3a.html",
        "fig3b.png",
        "fig3a_sensitivity.png",
        "fig3a_sensitivity.html",
        "fig5.png",
        "table4.html",
        "datasets.html",
        "fig4_patterns.png",
        "suppfig2_patterns.png",
        "table5.html",
        "classification.png",
        "fig4_recovery.html",
        "tsne.html",
        "runtime.html",
        "runtime.png",
        "software.html",
        "convergence.html",
        "convergence_fig5.html",
        "ablation_acp_sg.html",
    ):
        assert any(n.endswith("/" + artifact) for n in names), artifact
    assert not any(n.endswith(".csv") for n in names)
    for category in (
        "4.1 Datasets",
        "4.2 Inference",
        "4.3 Parameter estimation",
        "4.4 Generative modeling",
        "4.5 Topic models / supplement 5.1",
        "Claims",
        "Convergence",
        "Runtime",
        "Software",
        "Ablation (ours)",
    ):
        assert category in html, category
    # captions name the paper artifact; their Jinja is rendered with each job's wildcards and params
    folds = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})["grids"]["smoke"]["acp"]["text"][
        "classification"
    ]["folds"]
    for caption in (
        "Paper Fig. 3b",
        "Paper Tables 2 and 3",
        "Supplement Fig. 2 (Section 4.3",
        "Paper claims",
        f"by {folds}-fold cross-validation",
    ):
        assert caption in html, caption
    assert "snakemake.wildcards" not in html and "snakemake.params" not in html


def planned_jobs(dry_run_output: str) -> set[tuple[str, str]]:
    """(rule, wildcards) of every job a non-quiet dry run lists."""
    jobs, current = set(), None
    for line in dry_run_output.splitlines():
        head = re.match(r"^(?:local)?rule (\S+):$", line)
        if head:
            if current:
                jobs.add(tuple(current))
            current = [head.group(1), ""]
        elif current and (wc := re.match(r"^\s+wildcards: (.*)$", line)):
            current[1] = ",".join(sorted(wc.group(1).split(", ")))
    if current:
        jobs.add(tuple(current))
    return jobs


def _has_reference(cfg) -> bool:
    from conftest import REPO

    from noisyor_bench.experiments import papers

    return bool(papers.reference_dirs(cfg.get("reference_dir"), cfg["papers"], REPO))


def _cell_wildcards(cell) -> str:
    return ",".join(
        sorted(
            [
                f"experiment={cell.experiment}",
                f"dataset={cell.dataset}",
                f"method={cell.method}",
                f"n={cell.n_train}",
            ]
        )
    )


@pytest.mark.parametrize(
    "overlay, experiment, downstream",
    [
        # a fit budget: the experiment's searches and trainings, then its figure
        (
            {"experiments": {"fig5": {"budget": {"max_epochs": 3}}}},
            "fig5",
            [
                ("figure_fig5", ""),
                ("table_html_fig5", ""),
                ("convergence_table", "experiment=fig5"),
                ("table_html_convergence_experiment", "experiment=fig5"),
            ],
        ),
        # the number of search draws: the searches, and the trainings that read their best.json
        (
            {"experiments": {"fig4": {"search": {"draws": 3}}}},
            "fig4",
            [
                ("figure_patterns", "experiment=fig4"),
                ("table_html_experiment_recovery", "experiment=fig4"),
                ("convergence_table", "experiment=fig4"),
                ("table_html_convergence_experiment", "experiment=fig4"),
                ("ablation_table", ""),
                ("table_html_ablation_acp_sg", ""),
            ],
        ),
    ],
)
def test_a_changed_hyperparameter_reruns_exactly_the_runs_it_affects(
    smoke_results, tmp_path, overlay, experiment, downstream
):
    """Rule params are plain deterministic values, so Snakemake's params trigger is exact:
    changing one experiment's setting plans its search/train jobs and what aggregates them,
    and no job of any other experiment."""
    import yaml
    from conftest import MIRROR, REPO
    from snakemake.utils import update_config

    from noisyor_bench.experiments import papers
    from noisyor_bench.experiments.acp import grid
    from noisyor_bench.experiments.config import load_config

    (tmp_path / "overlay.yaml").write_text(yaml.safe_dump({"grids": {"smoke": {"acp": overlay}}}))
    proc = snakemake(REPO, smoke_results, MIRROR, "--dry-run", "--configfile", str(tmp_path / "overlay.yaml"))
    assert proc.returncode == 0, proc.stderr[-3000:]

    cfg = load_config(REPO / "config" / "config.yaml", {"grid": "smoke"})
    update_config(cfg["grids"]["smoke"]["acp"], overlay)
    cells = grid.cells(cfg, experiment)
    searched = [c for c in cells if grid.n_draws(cfg, c) > 1]
    # a new budget reaches every cell; new draws only the cells with a search
    trained = cells if "budget" in overlay["experiments"][experiment] else searched
    expected = (
        {("search_chunk", ",".join(sorted([*_cell_wildcards(c).split(","), "chunk=0"]))) for c in searched}
        | {("search_select", _cell_wildcards(c)) for c in searched}
        | {("train_cell", _cell_wildcards(c)) for c in trained}
        | set(downstream)
        | {
            ("claims_synthetic", ""),
            ("claims_merge", ""),
            ("claims_evidence", ""),
            ("convergence_summary", ""),
            ("runtime_table", ""),
            ("all", ""),
        }
        | {
            ("table_html_claims", ""),
            ("table_html_runtime", ""),
            ("table_html_runtime_jobs", ""),
            ("table_html_convergence", ""),
        }
        # the comparison with the published reference (config key reference_dir) reads the tables
        | ({("compare", ""), ("table_html_comparison", "")} if _has_reference(cfg) else set())
        # every paper's claims page reads the merged claims; the search table reads every search
        | {(f"claims_pages_{p.id}", "") for p in papers.selected(cfg["papers"])}
        | ({("search_table", "")} if searched else set())
    )
    assert trained and len(trained) < len(grid.cells(cfg))
    assert planned_jobs(proc.stdout) == expected


#: Run kinds whose metrics only re-running recomputes: verify checks their files and exits 3.
VERIFY_NOT_SUPPORTED = {"ape-train", "ape-vi", "ape-nuts"}


def test_verify_and_provenance_work_on_every_run_and_table(smoke_results, capsys):
    """``verify`` on every run directory of every paper (0, or 3 = not supported for
    its kind, said so), ``provenance`` on every run directory and table: no failure."""
    from conftest import cli

    from noisyor_bench.commands.verify import NOT_SUPPORTED

    runs = sorted(p.parent for p in smoke_results.glob("runs/**/metrics.json"))
    kinds = {run.relative_to(smoke_results / "runs").parts[0] for run in runs}
    assert {"ape-noisyor", "ape-eval", "ape-train", "avipam-small", "fig3a"} <= kinds
    failures = []
    for run in runs:
        kind = run.relative_to(smoke_results / "runs").parts[0]
        code, out, err = cli(["verify", run], capsys)
        want = NOT_SUPPORTED if kind in VERIFY_NOT_SUPPORTED else 0
        if code != want or (code == NOT_SUPPORTED and "not supported for this run kind: " not in out):
            failures.append(f"verify {run}: exit {code} (want {want}): {(out + err)[-400:]}")
        code, out, err = cli(["provenance", run], capsys)
        if code != 0:
            failures.append(f"provenance {run}: exit {code}: {(out + err)[-400:]}")
    tables = sorted(smoke_results.glob("tables/*.csv"))
    assert any(t.name.startswith("avipam_table") for t in tables)
    for table in tables:
        code, out, err = cli(["provenance", table], capsys)
        if code != 0:
            failures.append(f"provenance {table}: exit {code}: {(out + err)[-400:]}")
    assert not failures, "\n".join(failures)


def _mirror_copy(mirror: Path, dest: Path) -> Path:
    """The raw-data mirror at another path: the same bytes, fresh mtimes."""
    shutil.copytree(mirror, dest, copy_function=shutil.copyfile)
    return dest


def test_another_mirror_path_reruns_nothing(smoke_results, tmp_path):
    """The same results (Snakemake's metadata recorded) read from a mirror at another path with the
    same files: the mirror's location is in no job's params or inputs, so nothing is rerun."""
    from conftest import MIRROR, REPO

    other = _mirror_copy(MIRROR, tmp_path / "mirror")
    proc = snakemake(REPO, smoke_results, other, "--dry-run", "--quiet", "rules")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]


def test_a_copied_results_dir_with_another_mirror_path_plans_no_job(smoke_results, tmp_path):
    """The finished results copied elsewhere with their mtimes (cp -a) and run as another
    results_dir, with the mirror at another path: `snakemake -n` plans 0 jobs."""
    from conftest import MIRROR, REPO

    copy = tmp_path / "moved" / "results"
    shutil.copytree(smoke_results, copy, symlinks=True)  # copy2: mtimes kept
    other = _mirror_copy(MIRROR, tmp_path / "mirror")
    proc = snakemake(REPO, copy, other, "--dry-run", "--quiet", "rules")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]
