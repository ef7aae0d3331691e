"""How `perspectrum discover` shows a :class:`~perspectrum.pipeline.pipeline.Discovery` to a person.

Supporting and undermining perspectives stand side by side, as a debate is read, and
those whose side the models cannot tell stand apart below them ("side unclear"), never
forced onto a side. Each card shows its representative, its side and calibrated
confidence, its other phrasings, and the 3-sentence window of its best evidence paragraph
that states it (the whole paragraph with ``--full``; the rest is in ``--json``). Ids and
the ranker's and verifier's scores are internals: shown only with ``--explain``.

Everything shown here comes from outside: the claim, the pools' texts and ids, model
cards. It is shown literally: as :class:`~rich.text.Text`, never parsed as rich markup
(a claim holding ``[/]`` would raise, one holding ``[link=…]`` would turn into a
link), and through :func:`printable`, so no escape sequence in a pool reaches the
terminal raw.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import zip_longest

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from perspectrum._progress import literal, printable
from perspectrum.text.document import paragraphs
from perspectrum.text.matching import ArgumentMatch
from perspectrum.text.mining import MinedUnit
from perspectrum.cli.map_page import counted
from perspectrum.pipeline.map import MappedPerspective, PerspectiveMap
from perspectrum.pipeline.results import DiscoveredPerspective, Discovery, EvidenceHit

#: Characters of paragraph shown on either side of the highlighted window.
CONTEXT = 100
#: Evidence paragraphs shown per perspective (JSON output has them all).
SHOWN_EVIDENCE = 1
#: Candidates listed by --explain.
EXPLAINED = 25


def _evidence(hit: EvidenceHit, full: bool = False, internals: bool = False) -> Text:
    """The window of the paragraph that states the perspective, highlighted; with ``full``,
    the whole paragraph around it; with ``internals``, the paragraph's id and scores first.
    A paragraph whose window could not be placed shows its first :data:`CONTEXT` × 2
    characters (all of it with ``full``)."""
    text = hit.text
    placed = hit.window_start is not None and hit.window_end is not None
    start, end = (hit.window_start, hit.window_end) if placed else (0, len(text) if full else min(len(text), 2 * CONTEXT))
    left, right = (0, len(text)) if full else (start, end)
    out = Text()
    if internals:
        out.append(f"[{printable(str(hit.id))}] p={hit.probability:.2f} "
                   + (f"window={hit.window_score:.2f} " if hit.window_score is not None else ""), style="dim")
    out.append(("…" if left else "") + printable(text[left:start]), style="")
    if hit.window_start is not None:  # «» keep the highlight visible where colour is not (logs, pipes)
        out.append("«" + printable(text[start:end]) + "»", style="bold yellow")
    else:
        out.append(printable(text[start:end]))
    out.append(printable(text[end:right]) + ("…" if right < len(text) else ""))
    return out


#: Border colour of a card by the side it is shown on.
COLOUR = {"support": "green", "undermine": "red", "unclear": "yellow"}


def _side(found: DiscoveredPerspective) -> str:
    """How sure the models are of the card's side, in words a reader can check."""
    if found.stance == "unclear":
        lean = "support" if found.leans_support else "undermine"
        return f"side unclear (leans {lean}, {found.stance_confidence:.0%})"
    return f"{'supports' if found.stance == 'support' else 'undermines'} the claim: {found.stance_confidence:.0%} sure"


#: What a card says when evidence was looked for and none argues for it.
NO_EVIDENCE = "no evidence found in the pool for this perspective"


def _perspective(found: DiscoveredPerspective, full: bool = False, internals: bool = False,
                 looked: bool = False) -> RenderableType:
    facts = _side(found) + (f" · relevance {found.relevance:.2f} · id {printable(str(found.id))}" if internals else "")
    parts: list[RenderableType] = [literal(found.text, style="bold"), literal(facts, style="dim")]
    others = found.phrasings[1:]
    if others:
        parts.append(literal("also: " + " | ".join(p.text for p in others), style="italic"))
    parts += [_evidence(hit, full, internals) for hit in found.evidence[:SHOWN_EVIDENCE]]
    if len(found.evidence) > SHOWN_EVIDENCE:
        more = len(found.evidence) - SHOWN_EVIDENCE
        parts.append(Text(f"+{more} more paragraph{'s' if more > 1 else ''} (see --json)", style="dim"))
    if looked and not found.evidence:
        parts.append(Text(NO_EVIDENCE, style="dim italic"))
    return Panel(Group(*parts), border_style=COLOUR[found.stance])


def debate(result: Discovery, full: bool = False, internals: bool = False) -> RenderableType:
    """The two sides of the claim as one table, supporting left and undermining right, and
    the perspectives whose side is unclear below it. ``full`` shows whole evidence
    paragraphs, ``internals`` ids and scores (``--explain``)."""
    title = f"“{result.claim}” · {len(result.perspectives)} perspectives · {result.system} models"
    looked = "evidence" in result.timings  # the evidence stage ran
    table = Table(title=literal(title, style="table.title"), expand=True, show_lines=False, box=None, padding=(0, 1))
    table.add_column(f"supporting ({len(result.supporting)})", style="green", ratio=1)
    table.add_column(f"undermining ({len(result.undermining)})", style="red", ratio=1)
    for left, right in zip_longest(result.supporting, result.undermining):
        table.add_row(_perspective(left, full, internals, looked) if left else "",
                      _perspective(right, full, internals, looked) if right else "")
    if not result.unclear:
        return table
    unclear = Table(expand=True, box=None, padding=(0, 1))
    unclear.add_column(f"side unclear ({len(result.unclear)}): the models cannot tell which side these take",
                       style="yellow")
    for found in result.unclear:
        unclear.add_row(_perspective(found, full, internals, looked))
    return Group(table, unclear)


def explain(result: Discovery) -> Iterable[RenderableType]:
    """Per-stage timings, the settings used, and every retrieved candidate's scores."""
    timings = Table(title="stage timings")
    timings.add_column("stage")
    timings.add_column("ms", justify="right")
    for stage, seconds in result.timings.items():
        timings.add_row(stage, f"{seconds * 1000:.0f}")
    yield timings
    trace = result.trace or {}
    yield Text("settings (tuned on dev): " + json.dumps(trace.get("settings", {})), style="dim")
    rows = sorted(trace.get("candidates", []), key=lambda r: -r["score"])
    candidates = Table(title=f"relevance of the best {min(EXPLAINED, len(rows))} of {len(rows)} retrieved "
                             "candidates (model blended with cosine; all are in --json)")
    for column in ("id", "model", "cosine", "score", "kept"):
        candidates.add_column(column, justify="right")
    for row in rows[:EXPLAINED]:
        candidates.add_row(literal(row["id"]), f"{row['model']:.3f}", f"{row['cosine']:.3f}", f"{row['score']:.3f}",
                           "✓" if row["kept"] else "")
    yield candidates


#: Styles of a mined unit by stance, in the highlighted text and the table.
STANCE_STYLE = {"support": "bold green", "undermine": "bold red"}


def mined(text: str, units: Iterable[MinedUnit]) -> RenderableType:
    """The paragraphs of ``text`` that hold units, each unit highlighted by its stance and
    numbered as in the table below them; paragraphs without units are left out ("…").
    Offsets index the original text, so it is cut at them before any character is made
    printable (an escape is longer than the character it stands for)."""
    units = list(units)
    if not units:
        return Text("no argument units found for the claim", style="dim")
    shown = Text()
    for para in paragraphs(text):
        inside = [(n, u) for n, u in enumerate(units, 1) if para.start <= u.start < para.end]
        if not inside:
            continue
        if shown:
            shown.append("\n…\n")
        cursor = para.start
        for n, unit in inside:
            shown.append(printable(text[cursor:unit.start]))
            shown.append(f"[{n}]", style="dim")
            shown.append(printable(text[unit.start:unit.end]), style=STANCE_STYLE[unit.stance])
            cursor = unit.end
        shown.append(printable(text[cursor:para.end]))
    table = Table(title="argument units (start–end are character offsets)")
    for column, justify in (("#", "right"), ("stance", "left"), ("score", "right"), ("start–end", "right"),
                            ("unit", "left")):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for n, unit in enumerate(units, 1):
        table.add_row(str(n), Text(unit.stance, style=STANCE_STYLE[unit.stance]), f"{unit.score:.2f}",
                      f"{unit.start}–{unit.end}", literal(unit.text))
    return Group(Panel(shown, title="units in the text", title_align="left"), table)


def matched(results: Iterable[ArgumentMatch]) -> Table:
    """One row per argument: made or not, its score, and the sentence that makes it best."""
    table = Table(title="arguments the text makes")
    for column, justify in (("made", "left"), ("score", "right"), ("argument", "left"),
                            ("best sentence (offsets)", "left")):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for found in results:
        where = Text() if found.sentence is None else literal(
            f"{found.sentence.text} ({found.sentence.start}–{found.sentence.end})", "dim" if not found.made else "")
        table.add_row(Text("yes", style="bold green") if found.made else Text("no", style="dim"),
                      f"{found.score:.2f}", literal(found.argument), where)
    return table


#: Documents named in a map table's "made by" column; the rest are counted (``--json`` lists all).
MADE_BY_SHOWN = 3


def mapped(result: PerspectiveMap) -> RenderableType:
    """A :class:`~perspectrum.pipeline.map.PerspectiveMap` as tables: the perspectives
    the documents take, most prevalent first (side, key point, documents, share), then
    those a single document makes ("also mentioned")."""
    def table(title: str, rows: list[MappedPerspective]) -> Table:
        out = Table(title=literal(title, "table.title"), title_justify="left")
        for column, justify in (("#", "right"), ("side", "left"), ("perspective (key point), made by", "left"),
                                ("documents", "right"), ("share", "right")):
            out.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
        for n, found in enumerate(rows, 1):
            shown = f"{found.side} {found.confidence:.0%}" if found.side != "unclear" else "side unclear"
            names = ", ".join(found.made_by[:MADE_BY_SHOWN]) + (
                f" and {len(found.made_by) - MADE_BY_SHOWN} more" if len(found.made_by) > MADE_BY_SHOWN else "")
            point = literal(found.key_point)
            point.append("\n" + names, style="dim")
            out.add_row(str(n), Text(shown, style=COLOUR[found.side]), point,
                        f"{found.documents} ({counted(found.units, 'unit')})", f"{found.share:.0%}")
        return out

    if not result.perspectives and not result.also_mentioned:
        return Text("no argument units found for the claim in these documents", style="dim")
    parts: list[RenderableType] = []
    if result.perspectives:
        parts.append(table(f"perspectives on “{result.claim}” across {result.documents} documents",
                           result.perspectives))
    if result.also_mentioned:
        parts.append(table("also mentioned (by one document)", result.also_mentioned))
    return Group(*parts)
