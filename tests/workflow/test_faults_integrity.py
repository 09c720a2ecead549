"""Fault catalogue: integrity checked wherever results are consumed.

A hand-edited ``claims.csv`` (a verdict changed) must not spread into the HTML view, the end-of-run
summary, the README or a published reference; a hand-edited ``metrics.json`` (an impossible NELBO
or a plausible-looking one) must not pass ``provenance`` or be laundered into a table; an
impossible metric is refused where a run record is read.  Each case runs on a copy of the
faultworld template; the claims cases first build a small table and its claims with the CLI
(``convergence-table`` on the template run, then ``claims``), so every file has its sidecar.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from faultworld import RUN, Case, run_case

from noisyor_bench.cli import main
from noisyor_bench.experiments.rundir import write_metrics
from noisyor_bench.infra.io import read_json, write_json_atomic
from noisyor_bench.reporting.claims import NOT_REPRODUCED, REPRODUCED, VERDICTS

TABLES = Path("results/tables")
CLAIMS = TABLES / "claims.csv"
METRICS = RUN / "metrics.json"
EDITED = "edited after it was made"


def claims_world() -> None:
    """results/tables/{convergence,claims}.{csv,md} with their sidecars, built by the CLI."""
    table = ["--out-csv", str(TABLES / "convergence.csv"), "--out-md", str(TABLES / "convergence.md")]
    assert main(["convergence-table", "--runs", str(RUN), *table]) == 0
    out = ["--out-csv", str(CLAIMS), "--out-md", str(TABLES / "claims.md")]
    assert main(["acp-claims-synthetic", "--tables", str(TABLES / "convergence.csv"), *out]) == 0
    Path("README.md").write_text("# toy\n\n<!-- verdicts -->\n<!-- /verdicts -->\n")
    Path("docs").mkdir(exist_ok=True)
    Path("docs/results.md").write_text("# results\n\n<!-- results -->\n<!-- /results -->\n")


def edit_verdict(path: Path = CLAIMS) -> None:
    """The first claim's verdict changed by hand to another valid verdict ('reproduced', or
    'not reproduced' where it was 'reproduced'); every other byte of the file is kept."""
    text = path.read_text()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and "verdict" in rows[0], text[:200]
    columns = list(rows[0])

    def as_csv(table: list[dict[str, str]]) -> str:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(table)
        return buf.getvalue()

    assert as_csv(rows) == text  # the rewrite below changes the one cell and nothing else
    before = rows[0]["verdict"]
    assert before in VERDICTS, before
    rows[0]["verdict"] = REPRODUCED if before != REPRODUCED else NOT_REPRODUCED
    path.write_text(as_csv(rows))


def edited_claims(*argv: str) -> list[str]:
    claims_world()
    edit_verdict()
    return list(argv)


def published_then_edited(*argv: str) -> list[str]:
    """A published reference whose claims.csv was then edited by hand."""
    claims_world()
    assert main(["publish-reference", "--results", "results", "--out", "ref", "--command", "x"]) == 0
    edit_verdict(Path("ref/tables/claims.csv"))
    return list(argv)


def edit_metrics(key: str, value: float, seal: bool = False, older: bool = False) -> None:
    """Change one value of the template run's metrics.json: by hand (the self-hash no longer
    matches), through a writer bug (``seal``: re-sealed) or in a record older than self-hashes."""
    doc = read_json(METRICS)
    doc[key] = value
    if older:
        doc["provenance"].pop("self_sha256")
    (write_metrics if seal else write_json_atomic)(METRICS, doc)


def edited_metrics(key: str, value: float, *argv: str, **how: bool) -> list[str]:
    edit_metrics(key, value, **how)
    return list(argv)


def plausible_edit() -> float:
    """The template's NELBO lowered by 0.2 (like 38.1 -> 37.9): a value nothing could rule out."""
    return round(float(read_json(METRICS)["nelbo"]) - 0.2, 4)


CONVERGENCE = ["convergence-table", "--runs", str(RUN), "--out-csv", "t.csv", "--out-md", "t.md"]


def _claims_html_absent() -> None:
    assert not CLAIMS.with_suffix(".html").exists()


def _reference_not_written() -> None:
    assert not Path("ref").exists()


def _readme_untouched() -> None:
    assert "reproduced" not in Path("README.md").read_text()


CASES = [
    # ---- a hand-edited claims.csv does not spread
    Case(
        "edited-claims-refused-by-table-html",
        lambda t, m: edited_claims("table-html", "--tables", str(CLAIMS)),
        2,
        (str(CLAIMS), EDITED, "rerun"),
        after=_claims_html_absent,
    ),
    Case(
        "edited-claims-refused-by-run-summary",
        lambda t, m: edited_claims("run-summary", "--results", "results"),
        2,
        (str(CLAIMS), EDITED),
    ),
    Case(
        "edited-claims-refused-by-readme-results",
        lambda t, m: edited_claims("readme-results", "--results", "results", "--readme", "README.md"),
        2,
        (str(CLAIMS), EDITED),
        after=_readme_untouched,
    ),
    Case(
        "edited-claims-refused-by-publish-reference",
        lambda t, m: edited_claims(
            "publish-reference", "--results", "results", "--out", "ref", "--command", "x"
        ),
        2,
        (str(CLAIMS), EDITED),
        after=_reference_not_written,
    ),
    Case(
        "edited-reference-claims-refused-by-compare",
        lambda t, m: published_then_edited("compare", "--results", "results", "--reference", "ref"),
        2,
        ("ref/tables/claims.csv", EDITED),
    ),
    Case(
        "edited-claims-reported-by-provenance",
        lambda t, m: edited_claims("provenance", str(CLAIMS)),
        1,
        (),
        out_words=("claims.csv  [CHANGED since recorded]", "differ from their provenance record"),
    ),
    # ---- a hand-edited metrics.json is not laundered
    Case(
        "edited-metrics-impossible-nelbo-reported-by-provenance",
        lambda t, m: edited_metrics("nelbo", -4.61, "provenance", str(RUN)),
        1,
        (),
        out_words=("1 file(s) differ", f"{METRICS}: CHANGED since recorded"),
    ),
    Case(
        "edited-metrics-plausible-nelbo-reported-by-provenance",
        lambda t, m: edited_metrics("nelbo", plausible_edit(), "provenance", str(RUN)),
        1,
        (),
        out_words=(f"{METRICS}: CHANGED since recorded",),
    ),
    Case(
        "edited-metrics-impossible-nelbo-refused-by-table",
        lambda t, m: edited_metrics("nelbo", -4.61, *CONVERGENCE),
        2,
        (str(METRICS), "edited after it was written", "delete"),
    ),
    Case(
        "edited-metrics-plausible-nelbo-refused-by-table",
        lambda t, m: edited_metrics("nelbo", plausible_edit(), *CONVERGENCE),
        2,
        (str(METRICS), "edited after it was written"),
    ),
    # ---- impossible metrics refused where run records are read
    Case(
        "impossible-nelbo-sealed-by-a-writer-bug-refused-by-table",
        lambda t, m: edited_metrics("nelbo", -4.61, *CONVERGENCE, seal=True),
        2,
        (str(METRICS), "impossible metric nelbo=-4.61"),
    ),
    Case(
        "impossible-f1-in-an-older-record-refused-by-table",
        lambda t, m: edited_metrics("f1", 140.0, *CONVERGENCE, older=True),
        2,
        (str(METRICS), "impossible metric f1=140.0", "outside [0, 100]"),
    ),
    Case(
        "count-above-its-total-refused-by-table",
        lambda t, m: edited_metrics("best_epoch", 99, *CONVERGENCE, seal=True),
        2,
        (str(METRICS), "best_epoch=99", "above its total epochs"),
    ),
    # ---- an untouched world passes
    Case(
        "untouched-run-passes-provenance",
        lambda t, m: ["provenance", str(RUN)],
        0,
        (),
        out_words=("every recorded sha256 matches",),
    ),
    Case(
        "untouched-claims-pass-every-consumer",
        lambda t, m: (
            claims_world(),
            main(["table-html", "--tables", str(CLAIMS)]) == 0 or pytest.fail("table-html"),
            main(["readme-results", "--results", "results", "--readme", "README.md"]) == 0
            or pytest.fail("readme-results"),
            ["publish-reference", "--results", "results", "--out", "ref", "--command", "x"],
        )[-1],
        0,
        (),
        out_words=("published",),
        after=lambda: (
            main(["compare", "--results", "results", "--reference", "ref"]) == 0 or pytest.fail("compare")
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_fault(
    case: Case,
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_case(case, template, tmp_path, monkeypatch, capsys)


def test_refusal_is_one_line(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The refusal of an edited claims.csv is one error line naming the file, no traceback."""
    import shutil

    shutil.copytree(template, tmp_path / "world", symlinks=True)
    monkeypatch.chdir(tmp_path / "world")
    claims_world()
    edit_verdict()
    capsys.readouterr()
    assert main(["run-summary", "--results", "results"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and str(CLAIMS) in errors[0] and "Traceback" not in err
