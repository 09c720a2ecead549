"""The evidence ladder: one headline verdict per claim from every source that judged it.

A claim is judged by several sources: this run (its grid's claims, ``tables/claims_run.csv``) and
every published reference of the selected papers (``reference/<name>/tables``), each reference
**re-judged from its tables by today's claim code** (:func:`judge_reference`, through the paper's
registered judge, :func:`noisyor_bench.experiments.papers.judge`); a reference's stored
``claims.csv`` is never read, so its verdicts cannot lag behind the rules.

Sources are ranked (:meth:`Judged.strength`), strongest first, by

1. the protocol (:func:`grid_rank`), of this run by its grid and of a reference folder by the
   grid its README's command names (``grid=...``) -- ``paper`` and any grid named ``paper...`` 3
   (the paper's protocol; the README says where it is reduced), ``extended`` and any grid named
   ``extended-...`` 2, ``quick`` 1, ``smoke`` 0, any other grid 1; a reference whose README names
   no grid ranks 3;
2. the seeds behind the claim (:func:`claim_n`): the smallest ``n=`` its numbers print (a CI
   ``(paired, n=5)``, a Welch ``n=5 vs 4``, a mean ``(n=3)``; the constant of ``vs constant`` is
   no seed); 0 when its numbers name none;
3. converged over unconverged: a claim without an ``unconverged`` qualifier and without a
   ``budget`` reason first;
4. at a tie, a published reference before this run, then by the source's name.

The **headline** of a claim (:func:`headline`) is its strongest source that *decides*
(reproduced / not reproduced); if none decides, its strongest source that tested it
(inconclusive); else this run's claim (not tested: its numbers say what its grid lacks). A
source that did not test a claim never outranks one that did. A deciding source is
**overruled** (:func:`overruling`) by a source of a stronger protocol that tested the claim
without deciding it when the two print the same comparison (the same label before an estimate
and its 95% CI, e.g. ``avipam-pam4 - pam4-gibbs: +0.088 [+0.058, +0.117]``) with disjoint
CIs: the reduced run's estimate does not survive the stronger protocol (a longer budget, the
paper's sizes), so its verdict cannot stand for the claim; the stronger source's inconclusive
claim is the headline and the disagreement says why. Where the CIs overlap, the stronger
source only measured less precisely and the deciding one stands. The headline row is the chosen source's claim (its verdict,
numbers and qualifiers) with four columns beside it (:data:`EVIDENCE_COLUMNS`): ``source`` (e.g.
``reference/paper-synpattern``, ``this run (quick)``), ``sources`` (every source's verdict,
strongest first), ``agreement`` and ``disagreement``:

* ``agreement``: ``conflict`` (two deciding sources with different verdicts), ``differs`` (a
  deciding source beside an inconclusive one), ``agree`` (every source that tested it says the
  same), ``one source`` (one source tested it) or ``none`` (no source tested it);
* ``disagreement``: for a conflict or difference, the reason when known, the headline's source
  against each source with another verdict: their seeds (``seeds n=5 vs n=2``), their protocols
  (``paper protocol vs grid quick``), a source's ``budget`` / ``unconverged`` qualifier and, for an
  inconclusive source, its ``low_power`` qualifier.

Outputs (:func:`write_evidence`): ``tables/claims.csv`` + ``.md`` (the headline, read by every
consumer of the claims: :func:`noisyor_bench.reporting.claims.read_claims` ignores the extra
columns), ``tables/claims_sources.csv`` (one row per claim and source, :data:`SOURCE_COLUMNS`)
and ``tables/claims_timing.csv`` (:data:`TIMING_COLUMNS`: the headline claims' wall-clock
measurements, :attr:`~noisyor_bench.reporting.claims.Claim.timing`). The two CSVs of verdicts
are the same in every run of one commit; the times differ between runs (machine, load), so
they are kept out of ``claims.csv`` and shown after the numbers in ``claims.md``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from noisyor_bench.infra.errors import DataError
from noisyor_bench.infra.io import write_text_atomic
from noisyor_bench.reporting.claim_tables import timing_path
from noisyor_bench.reporting.claims import (
    CLAIM_COLUMNS,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTED,
    REPRODUCED,
    Claim,
    verdict_label,
    write_claims,
)
from noisyor_bench.reporting.tables import markdown_table

if TYPE_CHECKING:
    from noisyor_bench.reporting.kept_claims import Kept

log = logging.getLogger(__name__)

DECIDING = (REPRODUCED, NOT_REPRODUCED)
"""Verdicts that decide a claim."""

REFERENCE = "reference"
RUN = "run"
"""The kinds of source: a published reference folder, or this run."""

REFERENCE_RANK = 3
"""A published reference whose README names no grid: taken as the paper's protocol."""

GRID_RANKS = {"paper": 3, "extended": 2, "quick": 1, "smoke": 0}
"""Protocol rank of this run by its grid; a grid named ``paper...`` ranks 3, ``extended-...`` 2,
any other 1."""

EVIDENCE_COLUMNS = ("source", "sources", "agreement", "disagreement")
"""Columns of the headline ``claims.csv`` beside the claim's own (:data:`CLAIM_COLUMNS`)."""

TIMING_COLUMN = "timing"
"""The claim column the headline ``claims.csv`` leaves out: wall-clock times, in ``claims_timing.csv``."""
HEADLINE_CLAIM_COLUMNS = tuple(c for c in CLAIM_COLUMNS if c != TIMING_COLUMN)
"""The claim's columns of the headline ``claims.csv``: every one but :data:`TIMING_COLUMN`."""
TIMING_COLUMNS = ("claim_id", "source", TIMING_COLUMN)
"""Columns of ``tables/claims_timing.csv``: one row per headline claim with wall-clock times."""

SOURCE_COLUMNS = (
    "claim_id",
    "source",
    "kind",
    "grid",
    "rank",
    "verdict",
    "numbers",
    "margin",
    "n",
    "qualifiers",
)
"""Columns of ``tables/claims_sources.csv``: every source's verdict of every claim."""

AGREE, CONFLICT, DIFFERS, ONE_SOURCE, NONE = "agree", "conflict", "differs", "one source", "none"
DISAGREEMENTS = (CONFLICT, DIFFERS)
"""``agreement`` values the console, the landing page and the claims pages list."""

_QUALIFIER_CHARS = 60  # a qualifier quoted in a disagreement's reason is cut to this length


def grid_rank(grid: str) -> int:
    """The protocol rank of this run's grid (:data:`GRID_RANKS`)."""
    if grid in GRID_RANKS:
        return GRID_RANKS[grid]
    if grid.startswith("paper"):
        return REFERENCE_RANK
    return GRID_RANKS["extended"] if grid.startswith("extended-") else 1


_N = re.compile(r"\(([^()]*?)\bn=(\d+)(?: vs (\d+|constant))?\)")


def claim_n(claim: Claim) -> int:
    """Seeds behind a claim: the smallest ``n=`` its numbers print (of ``n=5 vs 4`` the smaller
    side; the constant of a comparison ``vs constant`` is no seed); 0 when they print none."""
    counts = []
    for match in _N.finditer(claim.numbers):
        kind, first, second = match.groups()
        sides = [int(first)]
        if second and second != "constant" and "vs constant" not in kind:
            sides.append(int(second))
        counts.append(min(sides))
    return min(counts, default=0)


@dataclass(frozen=True)
class Source:
    """Where verdicts come from: this run, or a published reference folder."""

    label: str  # "this run (quick)", "reference/paper-synpattern"
    kind: str  # RUN | REFERENCE
    grid: str  # the grid it ran (a reference: its README's grid=, else its folder name)
    rank: int

    @property
    def protocol(self) -> str:
        """``paper protocol`` (a reference at rank 3) or ``grid <name>``."""
        return (
            "paper protocol"
            if self.kind == REFERENCE and self.rank == REFERENCE_RANK
            else f"grid {self.grid}"
        )


def run_source(grid: str) -> Source:
    return Source(f"this run ({grid})", RUN, grid, grid_rank(grid))


def reference_source(folder: str | Path) -> Source:
    """A published reference, ranked by the grid its README's command names (an extended-grid
    reference is extended evidence, not the paper's protocol)."""
    from noisyor_bench.reporting.compare import reference_grid

    name = Path(folder).name
    grid = reference_grid(folder)
    return Source(f"reference/{name}", REFERENCE, grid or name, grid_rank(grid) if grid else REFERENCE_RANK)


@dataclass(frozen=True)
class Judged:
    """One source's claim."""

    source: Source
    claim: Claim

    @property
    def verdict(self) -> str:
        return self.claim.verdict

    @property
    def n(self) -> int:
        return claim_n(self.claim)

    @property
    def converged(self) -> bool:
        return not self.claim.unconverged and not self.claim.budget

    def verdict_text(self) -> str:
        """The verdict as people read it: ``inconclusive (budget)`` where a budget held it back."""
        return verdict_label(self.claim)

    def strength(self) -> tuple[Any, ...]:
        """Sort key, strongest first (module docstring): deciding, tested, protocol, seeds,
        converged, a reference before this run, the source's name. Among sources that did not
        test the claim this run comes first: its numbers say what its grid lacks."""
        tested = 2 if self.verdict in DECIDING else 1 if self.verdict == INCONCLUSIVE else 0
        if not tested:
            return (0, self.source.kind != RUN, self.source.label)
        return (
            -tested,
            -self.source.rank,
            -self.n,
            not self.converged,
            self.source.kind != REFERENCE,
            self.source.label,
        )

    def compact(self) -> str:
        return f"{self.source.label}: {self.verdict_text()}" + (f" (n={self.n})" if self.n else "")

    def qualifiers(self) -> str:
        tags = self.claim.tags()
        budget = f"[budget: {self.claim.budget}]" if self.claim.budget else ""
        return " ".join(t for t in (tags, budget) if t)


@dataclass(frozen=True)
class Headline:
    """A claim's headline: the chosen source's claim, every source (strongest first), agreement."""

    chosen: Judged
    judged: tuple[Judged, ...]
    agreement: str
    disagreement: str

    @property
    def claim(self) -> Claim:
        return self.chosen.claim

    def sources_text(self) -> str:
        """Every source's verdict, strongest first; those that did not test it named last, together:
        ``reference/paper-synpattern: reproduced (n=5); this run (quick): inconclusive (n=2);
        not tested: reference/paper-fig5-table4``."""
        tested = [j.compact() for j in self.judged if j.verdict != NOT_TESTED]
        untested = [j.source.label for j in self.judged if j.verdict == NOT_TESTED]
        return "; ".join([*tested, *([f"{NOT_TESTED}: {', '.join(untested)}"] if untested else [])])

    def row(self) -> dict[str, str]:
        """The headline ``claims.csv`` row: the chosen claim's columns, then :data:`EVIDENCE_COLUMNS`."""
        return {
            **asdict(self.claim),
            "source": self.chosen.source.label,
            "sources": self.sources_text(),
            "agreement": self.agreement,
            "disagreement": self.disagreement,
        }


def _cut(text: str) -> str:
    return text if len(text) <= _QUALIFIER_CHARS else text[: _QUALIFIER_CHARS - 3].rstrip() + "..."


def _why(head: Judged, other: Judged) -> list[str]:
    """What differs between the headline's source and another source with another verdict."""
    why = []
    if head.n and other.n and head.n != other.n:
        why.append(f"seeds n={head.n} vs n={other.n}")
    if head.source.protocol != other.source.protocol:
        why.append(f"{head.source.protocol} vs {other.source.protocol}")
    for j in (head, other):
        if j.claim.budget:
            why.append(f"{j.source.label} budget: {_cut(j.claim.budget)}")
        if j.claim.unconverged:
            why.append(f"{j.source.label} unconverged: {_cut(j.claim.unconverged)}")
    if other.verdict == INCONCLUSIVE and other.claim.low_power:
        why.append(f"{other.source.label} low power: {_cut(other.claim.low_power)}")
    return why


_ESTIMATE = re.compile(
    r"(?P<est>[+-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*\[(?P<lo>[+-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?),\s*"
    r"(?P<hi>[+-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\]"
)


def estimates(numbers: str) -> dict[tuple[str, int], tuple[float, float, float]]:
    """Every ``<label> <estimate> [<low>, <high>]`` a claim's numbers print, keyed by (the text
    before the estimate in its ``;``-separated part, its occurrence): ``{("avipam-pam4 -
    pam4-gibbs:", 0): (0.088, 0.058, 0.117)}``. Two sources of one claim, judged by one code,
    print the same labels for the same comparison."""
    out: dict[tuple[str, int], tuple[float, float, float]] = {}
    for part in numbers.split(";"):
        seen: dict[str, int] = {}
        for match in _ESTIMATE.finditer(part):
            label = " ".join(part[: match.start()].split())
            if not label:
                continue
            k = seen[label] = seen.get(label, -1) + 1
            out[(label, k)] = (float(match["est"]), float(match["lo"]), float(match["hi"]))
    return out


def _interval(est: tuple[float, float, float]) -> str:
    return f"{est[0]:+g} [{est[1]:+g}, {est[2]:+g}]"


def overruling(head: Judged, tested: Sequence[Judged]) -> tuple[Judged, str] | None:
    """The source that overrules a deciding ``head`` (module docstring) and why: the strongest
    source of a stronger protocol that tested the claim without deciding it and prints one of
    ``head``'s comparisons with a 95% CI disjoint from ``head``'s; ``None`` if there is none."""
    if head.verdict not in DECIDING:
        return None
    ours = estimates(head.claim.numbers)
    for other in tested:
        if other.source.rank <= head.source.rank or other.verdict in DECIDING:
            continue
        theirs = estimates(other.claim.numbers)
        for key in ours.keys() & theirs.keys():
            a, b = ours[key], theirs[key]
            if a[2] < b[1] or b[2] < a[1]:
                return other, (
                    f"overruled: {head.source.label} decides {head.verdict_text()} on {key[0]} "
                    f"{_interval(a)}, {other.source.label} ({other.source.protocol}) estimates "
                    f"{_interval(b)}: disjoint 95% CIs, the reduced run's estimate does not hold "
                    "at the stronger protocol"
                )
    return None


def with_generator_evidence(head: Judged, ranked: Sequence[Judged]) -> Judged:
    """The chosen source; where it did not run the generator variants of the paper's synthetic
    data, its claim with the per-generator verdicts of the strongest source that did, named in
    front ("(reference/extended-acp) syn-pattern: reproduced; ..."), so that a verdict resting on
    details of the data the paper does not give is never silent in the headline."""
    if head.claim.generators:
        return head
    donor = next((j for j in ranked if j.claim.generators), None)
    if donor is None:
        return head
    label = f"({donor.source.label}) "
    sensitive = donor.claim.generator_sensitive
    claim = replace(
        head.claim,
        generators=label + donor.claim.generators,
        generator_sensitive=label + sensitive if sensitive else "",
    )
    return Judged(head.source, claim)


def headline(judged: Iterable[Judged]) -> Headline:
    """The headline of one claim from its sources' claims (module docstring)."""
    ranked = tuple(sorted(judged, key=Judged.strength))
    if not ranked:
        raise ValueError("a claim's headline needs at least one source")
    head = ranked[0]
    tested = [j for j in ranked if j.verdict != NOT_TESTED]
    overruled = overruling(head, tested)
    if overruled is not None:
        head = overruled[0]
    deciding = {j.verdict for j in tested if j.verdict in DECIDING}
    if not tested:
        agreement = NONE
    elif len(tested) == 1:
        agreement = ONE_SOURCE
    elif len(deciding) > 1:
        agreement = CONFLICT
    elif deciding and any(j.verdict not in DECIDING for j in tested):
        agreement = DIFFERS
    else:
        agreement = AGREE
    reasons = [overruled[1]] if overruled is not None else []
    if agreement in DISAGREEMENTS:
        for other in tested:
            if other is not head and other.verdict != head.verdict:
                why = _why(head, other)
                reasons.append(f"vs {other.source.label}: " + (", ".join(why) if why else "reason unknown"))
    return Headline(with_generator_evidence(head, ranked), ranked, agreement, "; ".join(reasons))


def ladder(sources: Sequence[tuple[Source, Sequence[Claim]]]) -> list[Headline]:
    """The headline of every claim any source judged: claims in the order the sources list them
    (this run's first when it comes first), each with every source that judged it."""
    by_claim: dict[str, list[Judged]] = {}
    for source, claims in sources:
        seen = set()
        for claim in claims:
            if claim.claim_id in seen:
                raise DataError(f"{source.label}: claim {claim.claim_id} judged twice")
            seen.add(claim.claim_id)
            by_claim.setdefault(claim.claim_id, []).append(Judged(source, claim))
    return [headline(judged) for judged in by_claim.values()]


Judge = Callable[[str, Path], Sequence[Claim]]
"""``(paper id, tables folder) -> claims``: the paper's claim code run on a folder of tables."""


def _registered_judge(paper_id: str, tables_dir: Path) -> Sequence[Claim]:
    from noisyor_bench.experiments import papers

    return papers.judge(paper_id, tables_dir)


def _registers(paper_id: str, folder: Path) -> bool:
    """Whether a paper registers a reference of the folder's name (``Paper.references``)."""
    from noisyor_bench.experiments import papers

    return any(Path(r).name == folder.name for r in papers.get(paper_id).references)


def judge_reference(
    folder: str | Path,
    paper_ids: Sequence[str],
    judge: Judge | None = None,
    datasets: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Claim]:
    """A reference's claims, re-judged by today's claim code from its tables (never its stored
    verdicts): every claim of the selected papers that register a reference of its name; a
    folder none of them registers (given by hand) is judged for every selected paper, keeping
    only the claims it tested.

    ``datasets`` (today's config ``datasets``): a reference made on another draw of one of them
    is judged without its rows of that dataset (:mod:`noisyor_bench.reporting.reference_data`):
    it answers nothing for data the workflow no longer builds; a warning names the datasets."""
    import tempfile

    from noisyor_bench.reporting.reference_data import stale_datasets, without_datasets

    folder = Path(folder)
    judge = judge or _registered_judge
    own = [p for p in paper_ids if _registers(p, folder)]
    stale = stale_datasets(folder / "tables", datasets) if datasets else {}
    with tempfile.TemporaryDirectory(prefix="reference-tables-") as scratch:
        tables = folder / "tables"
        if stale:
            log.warning(
                "reference/%s was made on other data than today's config builds (%s): its rows of "
                "%s are left out of its claims; re-run it (its README names the command)",
                folder.name,
                "; ".join(f"{name}: {why}" for name, why in stale.items()),
                ", ".join(stale),
            )
            tables = without_datasets(tables, stale, Path(scratch) / "tables")
        claims: list[Claim] = []
        for paper_id in own or paper_ids:
            judged = list(judge(paper_id, tables))
            claims += [c for c in judged if own or c.verdict != NOT_TESTED]
    return claims


def evidence_ladder(
    run_claims: Sequence[Claim],
    grid: str,
    references: Sequence[str | Path],
    paper_ids: Sequence[str],
    judge: Judge | None = None,
    datasets: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Headline]:
    """Every claim's headline from this run's claims (of grid ``grid``) and each reference
    folder re-judged for the selected papers ``paper_ids`` (on today's ``datasets``: see
    :func:`judge_reference`)."""
    sources: list[tuple[Source, Sequence[Claim]]] = [(run_source(grid), run_claims)]
    for folder in references:
        claims = judge_reference(folder, paper_ids, judge, datasets)
        sources.append((reference_source(folder), [c for c in claims if c.paper in paper_ids]))
    return ladder(sources)


def source_rows(headlines: Sequence[Headline]) -> pd.DataFrame:
    """``claims_sources.csv``: one row per claim and source, strongest source first."""
    rows = [
        {
            "claim_id": j.claim.claim_id,
            "source": j.source.label,
            "kind": j.source.kind,
            "grid": j.source.grid,
            "rank": str(j.source.rank),
            "verdict": j.verdict_text(),
            "numbers": j.claim.numbers,
            "margin": j.claim.margin,
            "n": str(j.n) if j.n else "",
            "qualifiers": j.qualifiers(),
        }
        for h in headlines
        for j in h.judged
    ]
    return pd.DataFrame(rows, columns=list(SOURCE_COLUMNS))


def disagreement_lines(frame: pd.DataFrame, indent: str = "  ") -> list[str]:
    """The disagreements of a headline ``claims.csv`` (as a frame): a head line, then one line
    per claim whose sources disagree (claim id, every source's verdict, the reason); [] when
    the table has no ``agreement`` column or no disagreement."""
    if "agreement" not in frame.columns:
        return []
    rows = frame[frame["agreement"].fillna("").astype(str).isin(DISAGREEMENTS)]
    if rows.empty:
        return []
    conflicts = int((rows["agreement"] == CONFLICT).sum())
    lines = [
        f"Sources disagree on {len(rows)} claim{'s' if len(rows) != 1 else ''} ({conflicts} conflicting "
        "verdicts; the headline is the strongest deciding source, tables/claims_sources.csv lists every one):"
    ]
    for r in rows.to_dict("records"):
        reason = _text(r.get("disagreement"))
        lines.append(
            f"{indent}{_text(r.get('claim_id'))} [{_text(r.get('agreement'))}]: {_text(r.get('sources'))}"
            + (f" -- {reason}" if reason else "")
        )
    return lines


def disagreement_rst(frame: pd.DataFrame) -> str:
    """:func:`disagreement_lines` for the report's landing page (reStructuredText: a paragraph,
    then a bullet per claim); '' when the sources agree."""
    from noisyor_bench.reporting.answer import _rst

    lines = disagreement_lines(frame, indent="")
    if not lines:
        return ""
    return "\n".join([_rst(lines[0]), "", *(f"- {_rst(line)}" for line in lines[1:])])


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()


def evidence_markdown(frame: pd.DataFrame) -> str:
    """The Markdown section that claims.md ends with: where each headline verdict comes from
    (``frame``: the headline ``claims.csv`` rows, :meth:`Headline.row`)."""
    rows = [
        [
            _text(r["claim_id"]),
            verdict_label(r),
            _text(r["source"]),
            _text(r["agreement"]),
            _text(r["sources"]),
        ]
        for r in frame.to_dict("records")
    ]
    disagreements = disagreement_lines(frame, indent="- ")
    text = (
        "## Where each verdict comes from\n\n"
        "Each claim is judged by every source: this run and each published reference of its paper, "
        "re-judged from its tables by today's claim code. The headline verdict is the strongest "
        "source that decides (paper protocol before extended before quick, then more seeds, then "
        "converged runs); if none decides, the strongest that tested the claim.\n\n"
        + markdown_table(["id", "verdict", "source", "agreement", "every source"], rows)
    )
    if disagreements:
        text += "\n\n" + disagreements[0] + "\n\n" + "\n".join(disagreements[1:])
    return text + "\n"


def timing_rows(headlines: Sequence[Headline]) -> pd.DataFrame:
    """``claims_timing.csv``: per headline claim with wall-clock times, its source and the times."""
    rows = [
        {"claim_id": h.claim.claim_id, "source": h.chosen.source.label, TIMING_COLUMN: h.claim.timing}
        for h in headlines
        if h.claim.timing.strip()
    ]
    return pd.DataFrame(rows, columns=list(TIMING_COLUMNS))


def write_evidence(
    headlines: Sequence[Headline],
    csv_path: str | Path,
    md_path: str | Path | None,
    sources_csv: str | Path,
    title: str = "Claims of the papers and verdicts",
    timing_csv: str | Path | None = None,
    kept: Kept | None = None,
) -> None:
    """The headline ``claims.csv`` without the claims' ``timing`` (+ its Markdown view,
    :func:`write_claims`'s with the timing after the numbers, then the sources section),
    ``claims_sources.csv`` and ``claims_timing.csv`` (``timing_csv``, default :func:`timing_path`).
    ``kept``: earlier headline rows of papers this run did not judge, written beside the new ones
    (papers in registry order; :mod:`noisyor_bench.reporting.kept_claims`)."""
    from noisyor_bench.reporting.kept_claims import in_registry_order

    claims = [h.claim for h in headlines] + list(kept.claims if kept else ())
    paper_of_claim = {c.claim_id: c.paper for c in claims}
    columns = [*HEADLINE_CLAIM_COLUMNS, *EVIDENCE_COLUMNS]
    frame = pd.DataFrame([h.row() for h in headlines], columns=columns)
    sources = source_rows(headlines)
    timing = timing_rows(headlines)
    if kept is not None:  # the papers in registry order, each paper's rows in their own
        frame = pd.concat([frame, kept.rows.reindex(columns=columns, fill_value="")])
        sources = pd.concat([sources, kept.sources.reindex(columns=list(SOURCE_COLUMNS), fill_value="")])
        timing = pd.concat([timing, kept.timing.reindex(columns=list(TIMING_COLUMNS), fill_value="")])
        frame, sources, timing = (in_registry_order(f, paper_of_claim) for f in (frame, sources, timing))
        order = {i: k for k, i in enumerate(frame["claim_id"])}
        claims.sort(key=lambda c: order[c.claim_id])
    write_claims(claims, csv_path, md_path, title=title)
    write_text_atomic(csv_path, frame.to_csv(index=False, lineterminator="\n"))
    if md_path is not None:
        text = Path(md_path).read_text(encoding="utf-8").rstrip("\n")
        write_text_atomic(md_path, text + "\n\n" + evidence_markdown(frame))
    write_text_atomic(sources_csv, sources.to_csv(index=False, lineterminator="\n"))
    path = timing_path(csv_path) if timing_csv is None else Path(timing_csv)
    write_text_atomic(path, timing.to_csv(index=False, lineterminator="\n"))


def headline_counts(headlines: Sequence[Headline]) -> Mapping[str, int]:
    """How many headline verdicts each source gives (for the log)."""
    out: dict[str, int] = {}
    for h in headlines:
        out[h.chosen.source.label] = out.get(h.chosen.source.label, 0) + 1
    return out
