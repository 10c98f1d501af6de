"""Public value types: what goes into memory (Trace) and what comes out (Evidence)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = ("user", "assistant", "tool", "system")
# The metadata key of a trace's title (a note's, page's or ticket's name): a query that names
# the title finds the trace, and the title links the trace to the entity of that name.
TITLE_KEY = "title"
MAX_TITLE_CHARS = 300


@dataclass(frozen=True, slots=True)
class Scope:
    """The namespace a trace lives in. Either part may be None; together they isolate memory."""

    user: str | None = None
    agent: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.user or "", self.agent or "")


@dataclass(frozen=True, slots=True)
class Trace:
    """One stored unit of interaction, kept verbatim. Times are ISO 8601 strings."""

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
    """Where a piece of evidence came from: one stored trace."""

    trace_id: str
    session: str | None
    speaker: str | None
    time: str | None
    source_id: str | None
    seq: int


@dataclass(frozen=True, slots=True)
class Evidence:
    """A retrieved unit: verbatim text plus provenance for every trace it covers.

    ``level`` is the granularity that matched ('turn', 'span', 'window', 'episode');
    ``why`` breaks the score into the signals that produced it.
    """

    text: str
    trace_ids: tuple[str, ...]
    provenance: tuple[Provenance, ...]
    score: float
    level: str = "turn"
    why: dict[str, Any] = field(default_factory=dict)
    annotations: tuple[str, ...] = ()
    superseded_by: str | None = None

    @property
    def session(self) -> str | None:
        return self.provenance[0].session if self.provenance else None

    @property
    def speaker(self) -> str | None:
        return self.provenance[0].speaker if self.provenance else None

    @property
    def time(self) -> str | None:
        return self.provenance[0].time if self.provenance else None
