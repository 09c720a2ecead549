"""The papers this workflow reproduces: one :class:`Paper` entry each, the one list that every
other list is derived from.

A paper declares itself in its own folder (``experiments/<paper>/paper.py`` calls
:func:`register`) and is switched on by one line here (:data:`REGISTERED`).  From the entries come
the config schema's ``papers`` enum, ``--papers`` of the CLI, the Snakefile's ``include:`` of the
rules files, the filing of claims by their id prefix, the method labellers of reporting, the time
estimates, the smoke test's expected artifacts and the wheel test's paper-numbers files.  The
habit is ``torch.distributions``' ``register_kl`` and ``disentanglement_lib``'s study registry:
declared where it is defined, found by name.

This module imports nothing of a paper's code at import time (Snakemake imports it while it
parses the workflow): an entry names its modules and files as strings.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from noisyor_bench.infra.errors import ConfigError

REGISTERED: tuple[str, ...] = (
    "acp",
    "ape",
    "ape_noisyor",
    "avipam",
)
"""The papers' folder names under ``experiments/``, in the order tables and the claims list them.
Adding a paper is its own files plus one line here."""


@dataclass(frozen=True)
class Paper:
    """One reproduced paper (or a study of ours beyond the papers): everything the shared code
    needs to know about it, in one place."""

    id: str
    """The config's ``papers:`` value and the package folder name (``experiments/<id>/``)."""
    name: str
    """Short display name (``ACP``)."""
    title: str
    citation: str
    """Authors, venue and year, as a reader would cite it."""
    rules: tuple[str, ...]
    """Its Snakemake rules files, relative to the repository's ``rules/``, included in this order."""
    grid_sections: tuple[str, ...]
    """The keys of ``grids.<grid>`` that configure it."""
    claim_prefixes: tuple[str, ...]
    """A claim id starting with one of these is this paper's (the longest match wins)."""
    paper_numbers: str | None
    """Its published numbers: a package resource relative to ``noisyor_bench`` (``None``: none)."""
    run_kinds: tuple[str, ...]
    """Prefixes of the experiment folders under ``results/runs/`` its rules write (the longest
    registered prefix decides: ``ape-noisyor`` is not ``ape-``'s)."""
    docs: str
    """Its design note, relative to the repository."""
    labeller: str | None = None
    """``module:function`` giving display names of method ids (``None``: the method registry's)."""
    smoke_artifacts: tuple[str, ...] = ()
    """Files under the results directory that the smoke grid builds for it (the smoke test's list)."""
    table_command: tuple[str, ...] = ()
    """One table command that runs from its paper numbers alone (the wheel test calls it)."""
    runtime: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Time rows per grid, used where ``config/runtime_estimates.yaml`` has none for it (same keys,
    ``config_hash`` included: :mod:`noisyor_bench.experiments.config_hash`)."""
    costs: str | None = None
    """Its cost module (``jobs(cfg)``, ``COMPUTE_RULES``, optionally ``reference_jobs(cfg)``:
    :mod:`noisyor_bench.experiments.costs`); ``None``: no compute jobs to size."""
    cost_slices: str | None = None
    """Its calibration-slices module (``noisyor-bench calibrate-costs``:
    :mod:`noisyor_bench.experiments.cost_slices`); ``None``: no job of it is sliced."""
    run_verifier: str | None = None
    """A module with ``recompute(check) -> Recomputed``: what ``noisyor-bench verify`` recomputes
    from a run folder of this paper (``None``: its runs' files are checked, nothing recomputed)."""
    config_schema: str | None = None
    """Its config keys' schema, a package resource like :attr:`paper_numbers`: a YAML file with
    ``grid_sections`` (key of ``grids.<grid>`` -> schema) and ``$defs``, merged into the config
    schema so that a paper's keys live in its own folder."""
    config_checks: str | None = None
    """A module with the paper's config checks, each optional: ``adjust_schema(schema)`` (fill
    enums), ``validate(cfg)`` (cross-field checks; raises ConfigError) and ``warnings(cfg)``
    (schema-valid but doubtful settings, one line each)."""
    beyond_the_papers: bool = False
    """A study of ours, not a paper: its claims are reported apart, never counted as a paper's."""
    calibration_prefixes: tuple[str, ...] = ()
    """A claim id of this paper starting with one of these checks our own metric or pipeline (e.g.
    against another paper's published numbers), not a claim of the paper: reported in a
    "calibration" section, never counted among the paper's claims (:func:`is_calibration_claim`)."""
    claims_tables: tuple[str, ...] = ()
    """Its stage claims CSVs under the results directory (``tables/claims_<stage>.csv``): where
    the answer reads a paper's claims from its last run when a later run selected other papers."""
    references: tuple[str, ...] = ()
    """Its published paper-protocol reference runs (``noisyor-bench publish-reference`` folders,
    relative to the repository root): with the config's ``reference_dir: registered`` every run
    of the paper is compared with each of them (``tables/comparison.{csv,md}``)."""
    judge: str | None = None
    """``module:function`` building the paper's claims from a folder of table CSVs (a reference's
    or a run's ``tables/``) with today's claim code, as its claims steps do in a run (:func:`judge`);
    ``None``: the paper has no claims."""
    doc_blocks: Mapping[str, str] = field(default_factory=dict)
    """Generators of the docs' generated blocks that know this paper (``noisyor-bench docs-numbers``):
    block name -> ``module:function``, ``function(repository root, *arguments) -> str``."""

    def method_label(self, method: str, experiment: str) -> str | None:
        """The paper's display name of a method id, or None (its labeller does not name it)."""
        if self.labeller is None:
            return None
        module, _, function = self.labeller.partition(":")
        return getattr(importlib.import_module(module), function)(method, experiment)


_ENTRIES: dict[str, Paper] = {}


def register(paper: Paper) -> Paper:
    """Record a paper's entry (called by ``experiments/<paper>/paper.py``); returns it."""
    if paper.id in _ENTRIES and _ENTRIES[paper.id] != paper:
        raise ValueError(f"paper {paper.id!r} registered twice with different entries")
    _ENTRIES[paper.id] = paper
    return paper


def papers() -> tuple[Paper, ...]:
    """Every registered paper, in :data:`REGISTERED` order."""
    for pid in REGISTERED:
        if pid not in _ENTRIES:
            importlib.import_module(f"noisyor_bench.experiments.{pid}.paper")
            if pid not in _ENTRIES:
                raise ValueError(f"experiments/{pid}/paper.py registers no paper {pid!r}")
    return tuple(_ENTRIES[pid] for pid in REGISTERED)


def ids() -> tuple[str, ...]:
    """The ids of every registered paper (the config's ``papers:`` values)."""
    return tuple(p.id for p in papers())


def get(paper_id: str) -> Paper:
    """One paper's entry; an unknown id is a ConfigError naming the allowed ones."""
    for paper in papers():
        if paper.id == paper_id:
            return paper
    raise ConfigError(f"papers: unknown paper {paper_id!r}; allowed values: {list(ids())}")


def selected(paper_ids: Iterable[str]) -> tuple[Paper, ...]:
    """The entries of ``paper_ids`` in registry order (the order of tables and claims)."""
    wanted = set(paper_ids)
    for pid in wanted:
        get(pid)
    return tuple(p for p in papers() if p.id in wanted)


def _longest_prefix(name: str, prefixes_of: str) -> Paper | None:
    best: tuple[int, Paper] | None = None
    for paper in papers():
        for prefix in getattr(paper, prefixes_of):
            if name.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), paper)
    return None if best is None else best[1]


def paper_of_claim(claim_id: str) -> str:
    """The paper a claim id belongs to, by the longest registered prefix.

    An id no paper claims is an error: a claim is never filed under a paper by default.
    """
    paper = _longest_prefix(claim_id, "claim_prefixes")
    if paper is None:
        known = sorted(f"{prefix}..." for p in papers() for prefix in p.claim_prefixes)
        raise ValueError(f"claim {claim_id!r}: no registered paper has its prefix; known prefixes: {known}")
    return paper.id


def is_calibration_claim(claim_id: str) -> bool:
    """Whether a claim id is a calibration row of its paper (:attr:`Paper.calibration_prefixes`),
    not a claim of the paper; an id no paper claims is not."""
    paper = _longest_prefix(claim_id, "claim_prefixes")
    return paper is not None and any(claim_id.startswith(p) for p in paper.calibration_prefixes)


def paper_of_experiment(experiment: str) -> Paper | None:
    """The paper whose run kinds name an experiment folder of ``runs/`` (longest prefix), or None."""
    return _longest_prefix(experiment, "run_kinds")


def doc_block_generators() -> dict[str, Callable[..., str]]:
    """Every paper's docs-block generators by block name (:attr:`Paper.doc_blocks`)."""
    out: dict[str, Callable[..., str]] = {}
    for entry in papers():
        for name, target in entry.doc_blocks.items():
            module, _, function = target.partition(":")
            out[name] = getattr(importlib.import_module(module), function)
    return out


def judge(paper: Paper | str, tables_dir: str | Path) -> list[Any]:
    """The paper's claims (``reporting.claims.Claim``) judged by today's claim code from the table
    CSVs in ``tables_dir``, never from a stored verdict; empty when the paper has no judge or the
    folder holds none of its claim tables."""
    entry = get(paper) if isinstance(paper, str) else paper
    if entry.judge is None:
        return []
    module, _, function = entry.judge.partition(":")
    return list(getattr(importlib.import_module(module), function)(Path(tables_dir)))


def config_check(paper: Paper, name: str) -> Any:
    """The paper's config check ``name`` (see :attr:`Paper.config_checks`), or None."""
    if paper.config_checks is None:
        return None
    return getattr(importlib.import_module(paper.config_checks), name, None)


def rules_files(paper_ids: Sequence[str] | None = None) -> list[str]:
    """Every registered paper's rules files (``rules/<file>``), for the Snakefile's includes.

    All papers' rules are included whatever the selection: a rule is only a recipe, and the
    selection decides the targets.
    """
    chosen = papers() if paper_ids is None else selected(paper_ids)
    return [f"rules/{f}" for p in chosen for f in p.rules]


@cache
def _paper_numbers_cached(paper_id: str) -> Any:
    paper = get(paper_id)
    if paper.paper_numbers is None:
        raise ValueError(f"paper {paper_id!r} has no paper-numbers file")
    text = resources.files("noisyor_bench").joinpath(paper.paper_numbers).read_text("utf-8")
    return yaml.safe_load(text)


def config_schema(paper: Paper) -> dict[str, Any]:
    """A paper's config-schema fragment (``grid_sections``, ``$defs``); empty without one."""
    if paper.config_schema is None:
        return {}
    return yaml.safe_load(resources.files("noisyor_bench").joinpath(paper.config_schema).read_text("utf-8"))


def paper_numbers(paper_id: str) -> Any:
    """A paper's published numbers (its ``paper_numbers`` YAML, read as package data so that a
    wheel install finds it too); a fresh copy the caller may change.  The one loader of every
    paper's numbers."""
    return copy.deepcopy(_paper_numbers_cached(paper_id))


REGISTERED_REFERENCES = "registered"
"""The config's ``reference_dir`` value naming the selected papers' own references."""


def reference_dirs(setting: str | None, paper_ids: Sequence[str], root: str | Path) -> list[Path]:
    """The reference folders a run is compared with (config key ``reference_dir``): ``registered``
    = the selected papers' registered references (:attr:`Paper.references`), a path = that folder,
    ``None`` = none; only folders that hold a ``tables/`` directory, each once, in paper order."""
    if setting is None:
        return []
    if setting == REGISTERED_REFERENCES:
        rels = [r for p in selected(paper_ids) for r in p.references]
    else:
        rels = [setting]
    dirs = [Path(root) / r for r in dict.fromkeys(rels)]
    return [d for d in dirs if (d / "tables").is_dir()]
