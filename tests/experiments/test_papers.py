"""The paper registry (noisyor_bench.experiments.papers): the one list every other list derives from."""

from __future__ import annotations

import pytest
from conftest import REPO

from noisyor_bench.experiments import papers
from noisyor_bench.infra.errors import ConfigError


def test_registered_papers_in_order_with_their_files() -> None:
    assert papers.ids() == ("acp", "ape", "ape_noisyor", "avipam")
    for paper in papers.papers():
        for rules in paper.rules:
            assert (REPO / "rules" / rules).is_file(), f"{paper.id}: rules/{rules} missing"
        assert (REPO / paper.docs).is_file(), f"{paper.id}: {paper.docs} missing"
        assert paper.claim_prefixes and paper.run_kinds
    assert [p.id for p in papers.papers() if p.beyond_the_papers] == ["ape_noisyor"]


def test_claims_are_filed_by_the_longest_registered_prefix() -> None:
    assert papers.paper_of_claim("fig5-acp-better-small-n-syn-random-4") == "acp"
    assert papers.paper_of_claim("suppfig4-6-acp-separates-categories-small-n") == "acp"
    assert papers.paper_of_claim("mechanism-gradient-through-q-fig4-syn-pattern") == "acp"
    assert papers.paper_of_claim("ape-nuts-not-below-vi") == "ape"
    assert papers.paper_of_claim("ape-noisyor-ranking-agreement") == "ape_noisyor"  # not APE's
    assert papers.paper_of_claim("avipam-pam4-beats-lda") == "avipam"


def test_a_claim_with_an_unregistered_prefix_is_an_error_never_acp() -> None:
    with pytest.raises(ValueError, match="'vae4-x'.*no registered paper"):
        papers.paper_of_claim("vae4-x")


def test_experiments_map_to_their_paper() -> None:
    of = {
        e: (p.id if (p := papers.paper_of_experiment(e)) else None)
        for e in (
            "fig3a",
            "suppfig2",
            "table5",
            "classification-K50",
            "ape-train",
            "ape-noisyor",
            "avipam-small",
            "other",
        )
    }
    assert of == {
        "fig3a": "acp",
        "suppfig2": "acp",
        "table5": "acp",
        "classification-K50": "acp",
        "ape-train": "ape",
        "ape-noisyor": "ape_noisyor",
        "avipam-small": "avipam",
        "other": None,
    }


def test_selection_is_in_registry_order_and_unknown_ids_are_config_errors() -> None:
    assert [p.id for p in papers.selected(["avipam", "acp"])] == ["acp", "avipam"]
    with pytest.raises(ConfigError, match="unknown paper 'nope'; allowed values"):
        papers.selected(["nope"])


def test_paper_numbers_are_one_loader_and_a_fresh_copy() -> None:
    for paper in papers.papers():
        if paper.paper_numbers is None:
            with pytest.raises(ValueError, match="no paper-numbers file"):
                papers.paper_numbers(paper.id)
            continue
        numbers = papers.paper_numbers(paper.id)
        assert isinstance(numbers, dict) and numbers
        numbers.clear()
        assert papers.paper_numbers(paper.id), "the loader must hand out copies"


def test_the_rules_files_are_every_registered_papers() -> None:
    files = papers.rules_files()
    assert files[0] == "rules/acp.smk" and "rules/avipam.smk" in files
    assert sorted(files) == sorted(
        f"rules/{p.name}"
        for p in (REPO / "rules").glob("*.smk")
        if p.name.split("_")[0].split(".")[0] in {"acp", "ape", "avipam"}
    )


def test_each_entry_names_real_modules_and_its_schema_sections() -> None:
    """The entry's module names import, and a paper with its own config schema declares exactly
    the grid sections that schema adds (the two would otherwise drift apart)."""
    import importlib

    for paper in papers.papers():
        for module in filter(None, (paper.run_verifier, paper.config_checks)):
            importlib.import_module(module)
        if paper.labeller is not None:
            module, _, function = paper.labeller.partition(":")
            assert callable(getattr(importlib.import_module(module), function))
        fragment = papers.config_schema(paper)
        if fragment:
            assert tuple(fragment["grid_sections"]) == paper.grid_sections, paper.id
