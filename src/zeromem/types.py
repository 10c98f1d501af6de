"""Public value types: what goes into memory (Trace) and what comes out (Evidence), the time
values every method takes (``TimeLike``) and the ``SAME_SCOPE`` default of ``user`` / ``agent``."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, TypeAlias

# A time a method takes: text (ISO 8601, or a date with its year written out: see store/dates.py),
# a datetime, a date, epoch seconds (int or float, read as UTC), or None for "not given". Text
# zeromem cannot read exactly is an InvalidInput, never a guess. Stored times come back as
# ISO 8601 strings.
TimeLike: TypeAlias = str | datetime | date | int | float | None

ROLES = ("user", "assistant", "tool", "system")
# The metadata key of a trace's title (a note's, page's or ticket's name): a query that names
# the title finds the trace, and the title links the trace to the entity of that name.
TITLE_KEY = "title"
MAX_TITLE_CHARS = 300


class SameScope(enum.Enum):
    """The type of ``SAME_SCOPE``: the default of every ``user=`` / ``agent=`` parameter."""

    SAME_SCOPE = "SAME_SCOPE"

    def __repr__(self) -> str:
        return "zeromem.SAME_SCOPE"


# "This Memory's own user (or agent)", as given to ``Memory(user=..., agent=...)``. Passing
# None instead means "no user" (or "no agent"): a different scope.
SAME_SCOPE = SameScope.SAME_SCOPE


@dataclass(frozen=True, slots=True)
class Scope:
    """The namespace a trace lives in. Either part may be None; together they isolate memory."""

    user: str | None = None
    agent: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        """(user, agent) with None as ``""``: how the store keys the scope."""
        return (self.user or "", self.agent or "")


@dataclass(frozen=True, slots=True)
class Trace:
    """One stored unit of interaction, kept verbatim. Times are ISO 8601 strings.

    ``id`` is its short public id; ``session_time`` when its session took place, ``event_time``
    when it was said (if known), ``recorded_at`` when it was stored; ``seq`` its place in the
    session; ``source_id`` the caller's own id; ``version`` counts its updates from 1.
    """

    id: str
    text: str
    user: str | None
    agent: str | None
    session: str | None
    session_time: str | None
    speaker: str | None
    role: str
    event_time: str | None
    recorded_at: str
    seq: int
    source_id: str | None
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: tuple[str, ...] = ()
    version: int = 1

    @property
    def scope(self) -> Scope:
        """The (user, agent) scope the trace lives in."""
        return Scope(self.user, self.agent)

    @property
    def title(self) -> str | None:
        """The trace's title (``metadata["title"]``), if it has one."""
        value = self.metadata.get(TITLE_KEY)
        return value if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """One change to a trace: 'add', 'update' or 'delete', with the text before and after."""

    trace_id: str
    event: str
    at: str
    old_text: str | None
    new_text: str | None
    old_metadata: dict[str, Any] | None
    new_metadata: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a piece of evidence came from: one stored trace, its session, speaker, time
    (event time, else session time; ISO 8601), the caller's ``source_id`` and its ``seq``."""

    trace_id: str
    session: str | None
    speaker: str | None
    time: str | None
    source_id: str | None
    seq: int


@dataclass(frozen=True, slots=True)
class Evidence:
    """One retrieved turn: the verbatim text of one stored trace, with its provenance.

    ``trace_id`` is the trace it comes from (``Memory.get(ev.trace_id)`` returns it);
    ``provenance`` says where that trace sits (session, speaker, time, source id, seq);
    ``score`` ranks it; ``why`` breaks the score into the signals that produced it;
    ``annotations`` are the resolved dates of relative expressions in the text;
    ``superseded_by`` is the id of a newer trace that updates this one, if any.
    """

    trace_id: str
    text: str
    score: float
    provenance: Provenance
    why: dict[str, Any] = field(default_factory=dict)
    annotations: tuple[str, ...] = ()
    superseded_by: str | None = None

    @property
    def session(self) -> str | None:
        """The session of the trace (``provenance.session``)."""
        return self.provenance.session

    @property
    def speaker(self) -> str | None:
        """Who said it (``provenance.speaker``)."""
        return self.provenance.speaker

    @property
    def time(self) -> str | None:
        """When it was said, ISO 8601 (``provenance.time``)."""
        return self.provenance.time
