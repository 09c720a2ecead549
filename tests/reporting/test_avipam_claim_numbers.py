"""The aviPAM claims quote the paper's numbers from ``paper_numbers.yaml``, never a second copy:
each statement's "(paper ...)" numbers are the YAML's values, and follow an edit of the YAML."""

from __future__ import annotations

import re

import pytest

from noisyor_bench.experiments import papers
from noisyor_bench.reporting.avipam import claims

# claim -> the paper_numbers.yaml entries its statement quotes, in the order it quotes them
QUOTED = {
    claims.table1_order: [
        ("table1", "npmi", "avipam-pam4", "sub"),
        ("table1", "npmi", "avipam-pam5", "sub"),
        ("table1", "npmi", "pam4-gibbs", "sub"),
        ("table1", "npmi", "lda-gibbs", "sub"),
        ("table1", "npmi", "lda-online", "sub"),
    ],
    claims.ctm_below_pam: [
        ("table1", "npmi", "avipam-ctm", "sub"),
        ("table1", "npmi", "pam4-gibbs", "sub"),  # the lowest PAM
        ("table1", "npmi", "avipam-pam4", "sub"),  # the highest
    ],
    claims.molda_components: [
        ("table1", "npmi", "avipam-molda", "molda-10"),
        ("table1", "npmi", "avipam-molda", "molda-50"),
    ],
    claims.speedup: [("table2", "minutes", "avipam-pam4"), ("table2", "minutes", "pam4-gibbs")],
    claims.nips_small: [
        ("table3", "npmi", "pam4-gibbs", "sub"),
        ("table3", "npmi", "avipam-pam4", "sub"),
        ("table3", "npmi", "avipam-pam5", "sub"),
    ],
    claims.nips_large: [("table4", "npmi", "pam4-gibbs", "sub"), ("table4", "npmi", "avipam-pam4", "sub")],
}
# entries a statement reads without quoting them: CTM's PAM range spans the three PAMs
ALSO_READ = {claims.ctm_below_pam: [("table1", "npmi", "avipam-pam5", "sub")]}


def _value(numbers: dict, path: tuple[str, ...]) -> float:
    for key in path:
        numbers = numbers[key]
    return float(numbers)


def _quoted(check) -> list[float]:
    """The numbers of a claim's "(paper ...)" part (a claim without tables states it all the same)."""
    statement = check({}, "") if check in (claims.speedup, claims.speedup_converged) else check({})
    paper = re.search(r"\(paper:? ([^)]*)\)", statement.statement)
    assert paper is not None, statement.statement
    return [float(x) for x in re.findall(r"\d+(?:\.\d+)?", paper.group(1))]


@pytest.mark.parametrize("check", list(QUOTED), ids=lambda c: c.__name__)
def test_statement_quotes_the_paper_numbers(check) -> None:
    numbers = papers.paper_numbers("avipam")
    assert _quoted(check) == [_value(numbers, path) for path in QUOTED[check]]


@pytest.mark.parametrize("check", list(QUOTED), ids=lambda c: c.__name__)
def test_statement_follows_an_edit_of_the_paper_numbers(check, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every quoted number changed in the YAML (scaled by 1/2, so their order holds) changes in the
    statement: none is written a second time in the code."""
    numbers = papers.paper_numbers("avipam")
    for path in QUOTED[check] + ALSO_READ.get(check, []):
        *parents, last = path
        holder = numbers
        for key in parents:
            holder = holder[key]
        holder[last] = holder[last] / 2
    monkeypatch.setattr(claims, "paper_numbers", lambda: numbers)
    halved = [_value(numbers, path) for path in QUOTED[check]]
    assert _quoted(check) == pytest.approx(halved, abs=0.006)  # as printed: 2 or 3 decimals
