"""The per-generator verdict table of docs/patterns.md (reporting/acp/generator_table.py): it reads
back exactly what the claims write (``with_generators``), and refuses what it cannot read."""

from __future__ import annotations

import pandas as pd
import pytest

from noisyor_bench.infra.errors import UserError
from noisyor_bench.reporting.acp.generator_table import generator_verdicts, parse_generators
from noisyor_bench.reporting.acp.synthetic_claims import with_generators
from noisyor_bench.reporting.claims import CLAIM_COLUMNS, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Claim


def _claim(verdict: str, margin: str = "") -> Claim:
    return Claim("fig3a-acp-beats-avi-n20", "s", "l", verdict, "n", "r", margin=margin)


def test_the_table_reads_back_what_the_claims_write(tmp_path):
    judged = with_generators(
        _claim(REPRODUCED, "0.20 nats"),
        "syn-pattern",
        {
            "syn-pattern-leak2": _claim(NOT_REPRODUCED, "1.5 nats"),
            "syn-pattern-overlap": _claim(INCONCLUSIVE),
        },
    )
    assert parse_generators(judged.generators) == {
        "syn-pattern": (REPRODUCED, "0.20 nats"),
        "syn-pattern-leak2": (NOT_REPRODUCED, "1.5 nats"),
        "syn-pattern-overlap": (INCONCLUSIVE, ""),
    }
    plain = Claim("fig3b-ubcdi-tighter-bound-worse-elbo", "s", "l", REPRODUCED, "n", "r")
    tables = tmp_path / "reference" / "ext" / "tables"
    tables.mkdir(parents=True)
    pd.DataFrame([judged.__dict__, plain.__dict__], columns=CLAIM_COLUMNS).to_csv(
        tables / "claims_run.csv", index=False
    )
    text = generator_verdicts(tmp_path, "ext")
    assert "| claim | syn-pattern | syn-pattern-leak2 | syn-pattern-overlap | generator-sensitive |" in text
    assert (
        "| fig3a-acp-beats-avi-n20 | reproduced (0.20 nats) | not reproduced (1.5 nats) | inconclusive | yes |"
        in text
    )
    assert "fig3b-ubcdi" not in text  # judged on one generator only: not a row


def test_unreadable_generators_text_and_missing_files_are_named(tmp_path):
    with pytest.raises(UserError, match="cannot read 'syn-pattern reproduced'"):
        parse_generators("syn-pattern reproduced")
    with pytest.raises(UserError, match="claims_run.csv not found"):
        generator_verdicts(tmp_path, "nowhere")
