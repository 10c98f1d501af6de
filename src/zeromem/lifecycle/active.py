"""Active memory: the token-budgeted working set an agent puts into every prompt (docs/design.md#active-memory).

Selection, a pure function of the trace sequence (and of the clock only for expiries):

1. Out of the running: traces the caller archived, traces whose ``expires_at`` has passed,
   and older states superseded by a newer assertion (``supersede.py``). They stay stored and
   searchable; ``ActiveMemory.archived`` lists why each left.
2. Pinned traces (``restore``) come first, oldest first, while they fit.
3. The recency floor: the live thread — the last ``RECENT_TURNS`` traces of the newest
   session — as long as it takes at most ``RECENT_SHARE`` of the budget.
4. Then the highest Ω_eff first (ties: the newer trace), each admitted if it still fits:
   the lowest Ω_eff is what leaves first, so acknowledgements go early and constraints and
   preferences late (their Ω is high and their decay slow).

A longer trace is held by its sentences that carry a standing signal (constraint, preference,
current state, correction, replacement), verbatim, joined by " … " (``excerpt``): the
working set stays small while its source stays one ``trace_id`` away.

The result is shown in conversation order. Budgets count ``count_budget_tokens`` tokens
(words and punctuation) of each entry's rendered line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..encoders.token_count import count_budget_tokens
from .survival import SurvivalLaw

RECENT_TURNS = 4  # the live thread kept whatever its scores
RECENT_SHARE = 0.25  # ... but never more than this share of the budget
ACTIVE_HEADING = "## Active memory"  # the block's headings when shown with searched evidence
EVIDENCE_HEADING = "## Evidence"


@dataclass(frozen=True)
class ActiveEntry:
    """One trace held in active memory, verbatim, with why it is there."""

    trace_id: str
    text: str
    tokens: int  # count_budget_tokens of its rendered line, the budget's unit
    omega: float  # Ω, the static survival score
    omega_eff: float  # Ω_eff after ``newer`` newer traces
    newer: int  # Δn
    signals: dict[str, Any]
    reason: str  # "pinned", "recent" or "score"
    session: str | None
    speaker: str | None
    time: str | None
    seq: int
    excerpt: bool = False  # ``text`` holds only the sentences that carry its signals


@dataclass(frozen=True)
class ActiveMemory:
    """The working set of one scope at one point of its history."""

    entries: tuple[ActiveEntry, ...]
    budget_tokens: int
    used_tokens: int
    considered: int  # traces up to the point asked for
    archived: dict[str, str] = field(default_factory=dict)  # trace id → why it is not active
    tokenizer: str = "words and punctuation marks (zeromem.encoders.token_count.count_budget_tokens)"

    @property
    def trace_ids(self) -> tuple[str, ...]:
        """The ids of the entries' traces, in conversation order."""
        return tuple(e.trace_id for e in self.entries)

    @property
    def text(self) -> str:
        """The prompt block: one line per entry, in conversation order."""
        return "\n".join(entry_line(e.trace_id, e.speaker, e.text) for e in self.entries)


@dataclass(slots=True)
class Candidate:
    """What selection needs of one trace (built by ``lifecycle.service``)."""

    trace_id: str
    text: str
    speaker: str | None
    session: str | None
    time: str | None
    seq: int
    omega: float
    signals: dict[str, Any]
    pinned: bool = False
    excluded: str | None = None  # "archived", "expired", "superseded by tN"
    excerpt: bool = False  # ``text`` is the trace's signal-bearing sentences, not all of it
    tokens: int | None = None  # cost of its line; computed by ``select_active`` when None


def entry_line(trace_id: str, speaker: str | None, text: str) -> str:
    return f"[{trace_id}] {speaker}: {text}" if speaker else f"[{trace_id}] {text}"


def select_active(candidates: Sequence[Candidate], budget_tokens: int, law: SurvivalLaw,
                  *, recent_turns: int = RECENT_TURNS, recent_share: float = RECENT_SHARE) -> ActiveMemory:
    """Choose the working set of ``candidates`` (in conversation order) within the budget."""
    n = len(candidates)
    cost = [c.tokens if c.tokens is not None else count_budget_tokens(entry_line(c.trace_id, c.speaker, c.text))
            for c in candidates]
    effective = [law.effective(c.omega, n - 1 - i) for i, c in enumerate(candidates)]
    chosen: dict[int, str] = {}
    used = 0

    def admit(i: int, reason: str, limit: int) -> bool:
        nonlocal used
        if i in chosen or candidates[i].excluded or used + cost[i] > limit:
            return False
        chosen[i] = reason
        used += cost[i]
        return True

    for i, c in enumerate(candidates):
        if c.pinned:
            admit(i, "pinned", budget_tokens)
    live = _live_thread(candidates, recent_turns)
    floor = used + math.floor(budget_tokens * recent_share)
    for i in reversed(live):
        if not admit(i, "recent", min(floor, budget_tokens)):
            break  # the thread must not have a hole in it
    # Constraints leave last, preferences just before them: everything else is evicted first.
    for i in sorted(range(n), key=lambda j: (-_tier(candidates[j]), -effective[j], -j)):
        admit(i, "score", budget_tokens)
    entries = tuple(
        ActiveEntry(c.trace_id, c.text, cost[i], round(c.omega, 6), round(effective[i], 6), n - 1 - i,
                    c.signals, chosen[i], c.session, c.speaker, c.time, c.seq, c.excerpt)
        for i, c in enumerate(candidates) if i in chosen)
    archived = {c.trace_id: c.excluded or "budget" for i, c in enumerate(candidates) if i not in chosen}
    return ActiveMemory(entries, budget_tokens, used, n, archived)


def _tier(candidate: Candidate) -> int:
    """2 for a standing rule (constraint), 1 for a taste (preference), 0 otherwise."""
    found = set(candidate.signals.get("dialogue", ()))
    return 2 if "constraint" in found else 1 if "preference" in found else 0


def _live_thread(candidates: Sequence[Candidate], turns: int) -> list[int]:
    """Indexes of the last ``turns`` candidates of the newest session, oldest first."""
    if not candidates or turns <= 0:
        return []
    newest = candidates[-1].session
    out: list[int] = []
    for i in range(len(candidates) - 1, -1, -1):
        if candidates[i].session != newest or len(out) == turns:
            break
        out.append(i)
    return out[::-1]
