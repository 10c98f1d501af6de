"""Render evidence as a prompt block: chronological, with session dates, speakers, and the
resolved dates of relative expressions shown as annotations beside the verbatim text."""

from __future__ import annotations

from dataclasses import dataclass

from ..encoders.token_count import count_budget_tokens as count_tokens
from ..lifecycle.active import ActiveEntry
from ..types import Evidence


@dataclass(frozen=True)
class RenderedContext:
    """The prompt block and the evidence it shows (a subset when the budget was tight)."""

    text: str
    evidence: tuple[Evidence, ...]
    tokens: int
    # What the search behind it had to do without (``SearchResult.degraded``); empty when
    # every model worked or the evidence came from elsewhere.
    degraded: tuple[str, ...] = ()
    # Active memory shown before the evidence (``render_context(include_active=True)``),
    # in conversation order.
    active: tuple[ActiveEntry, ...] = ()


def _line(ev: Evidence) -> str:
    speaker = f"{ev.speaker}: " if ev.speaker else ""
    note = f"  [{'; '.join(ev.annotations)}]" if ev.annotations else ""
    stale = f"  [superseded by {ev.superseded_by}]" if ev.superseded_by else ""
    return f"{speaker}{ev.text}{note}{stale}"


def render(evidence: list[Evidence], *, budget_tokens: int | None = None,
           captions: dict[str, tuple[str, ...]] | None = None) -> RenderedContext:
    """Chronological grouping by session; evidence is admitted best-first until the budget.

    The block never holds more than ``budget_tokens`` tokens: admission estimates each item's
    cost (its line plus 12 for its id and a share of a session header); when image captions
    or headers make the block cost more, the lowest-ranked items leave until it fits.
    """
    captions = captions or {}
    admitted: list[Evidence] = []
    used = 0
    for ev in evidence:
        cost = count_tokens(_line(ev)) + 12
        if budget_tokens is not None and used + cost > budget_tokens:
            continue
        admitted.append(ev)
        used += cost
    block = _block(admitted, captions)
    while budget_tokens is not None and admitted and count_tokens(block) > budget_tokens:
        admitted.pop()  # admitted holds the evidence best first: the last is the weakest
        block = _block(admitted, captions)
    return RenderedContext(block, tuple(admitted), count_tokens(block))


def _text(ev: Evidence, captions: dict[str, tuple[str, ...]]) -> str:
    text = _line(ev)
    for caption in captions.get(ev.trace_id, ()):
        text += f" [image: {caption}]"
    return text


def _block(admitted: list[Evidence], captions: dict[str, tuple[str, ...]]) -> str:
    ordered = sorted(admitted, key=lambda e: (e.time or "", e.session or "", e.provenance.seq))
    lines: list[str] = []
    current = None
    for ev in ordered:
        header = (ev.session, ev.time[:10] if ev.time else None)
        if header != current:
            when = ev.time.replace("T", " ")[:16] if ev.time else "undated"
            lines.append(f"--- {ev.session or 'no session'} ({when}) ---")
            current = header
        lines.append(f"[{ev.trace_id}] {_text(ev, captions)}")
    return "\n".join(lines)
