"""The public facade. ``Memory`` delegates: the store keeps traces, the indexer derives units,
the engine retrieves. It holds no logic of its own beyond argument plumbing."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from .config import Config, default_db_path
from .errors import InvalidInput
from .store import TraceDraft, TraceStore
from .types import HistoryEvent, Scope, Trace

_UNSET: Any = object()
_DRAFT_FIELDS = set(TraceDraft.__slots__)


class Memory:
    """An agent's memory, backed by an embedded SQLite file (the source of record).

    >>> mem = Memory(":memory:")
    >>> tid = mem.add("I moved to Denver last week.", speaker="Ana", session="s1")
    >>> mem.get(tid).text
    'I moved to Denver last week.'
    """

    def __init__(self, path: str | Path | None = None, *, user: str | None = None,
                 agent: str | None = None, config: Config | None = None) -> None:
        self.config = config or Config()
        self.store = TraceStore(path if path is not None else default_db_path(),
                                max_text_chars=self.config.max_text_chars)
        self.scope = Scope(user, agent)
        self._engines: dict[tuple[str, str], Any] = {}
        self._encoders: Any = None

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self.store.path

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _scope(self, user: Any, agent: Any) -> Scope:
        return Scope(self.scope.user if user is _UNSET else user,
                     self.scope.agent if agent is _UNSET else agent)

    # -- writes -------------------------------------------------------------------------
    def add(self, text: str, *, session: str | None = None, speaker: str | None = None,
            role: str | None = None, session_time: Any = None, event_time: Any = None,
            seq: int | None = None, source_id: str | None = None,
            metadata: Mapping[str, Any] | None = None, attachments: Iterable[str] | None = None,
            user: str | None = _UNSET, agent: str | None = _UNSET) -> str:
        """Store one trace verbatim and return its short id (e.g. ``'t42'``)."""
        draft = TraceDraft(text=text, session=session, speaker=speaker, role=role,
                           session_time=session_time, event_time=event_time, seq=seq,
                           source_id=source_id, metadata=metadata, attachments=attachments)
        return self.store.add_many([draft], self._scope(user, agent))[0]

    def add_many(self, traces: Iterable[Mapping[str, Any] | TraceDraft], *,
                 user: str | None = _UNSET, agent: str | None = _UNSET) -> list[str]:
        """Store a batch (e.g. a whole conversation) in one transaction: all or nothing."""
        if isinstance(traces, (str, bytes, Mapping)):
            raise InvalidInput("add_many takes a list of traces (dicts with at least 'text')")
        drafts = [_to_draft(item, index) for index, item in enumerate(traces)]
        return self.store.add_many(drafts, self._scope(user, agent))

    def update(self, trace_id: str, *, text: str | None = None,
               metadata: Mapping[str, Any] | None = None,
               user: str | None = _UNSET, agent: str | None = _UNSET) -> Trace:
        """Replace a trace's text and/or metadata; the old version stays in its history."""
        return self.store.update(trace_id, self._scope(user, agent), text=text, metadata=metadata)

    def delete(self, trace_id: str, *, user: str | None = _UNSET, agent: str | None = _UNSET) -> None:
        """Delete one trace; it leaves every index at the next read."""
        self.store.delete(trace_id, self._scope(user, agent))

    def delete_scope(self, *, user: str | None = _UNSET, agent: str | None = _UNSET) -> int:
        """Delete everything stored for one (user, agent) scope, and only that scope."""
        return self.store.delete_scope(self._scope(user, agent))

    # -- reads --------------------------------------------------------------------------
    def get(self, trace_id: str, *, user: str | None = _UNSET, agent: str | None = _UNSET) -> Trace:
        """Return one trace by id (NotFound if it is not in this scope)."""
        return self.store.get(trace_id, self._scope(user, agent))

    def list(self, *, session: str | None = None, since: Any = None, until: Any = None,
             metadata: Mapping[str, Any] | None = None, limit: int | None = None,
             offset: int = 0, user: str | None = _UNSET, agent: str | None = _UNSET) -> list[Trace]:
        """Traces of one scope in conversation order, filtered by session, time and metadata."""
        return self.store.list(self._scope(user, agent), session=session, since=since,
                               until=until, metadata=dict(metadata) if metadata else None,
                               limit=limit, offset=offset)

    def history(self, trace_id: str, *, user: str | None = _UNSET,
                agent: str | None = _UNSET) -> list[HistoryEvent]:
        """Every add / update / delete event of a trace, oldest first."""
        return self.store.history(trace_id, self._scope(user, agent))

    def stats(self, *, all_scopes: bool = False, user: str | None = _UNSET,
              agent: str | None = _UNSET) -> dict[str, Any]:
        """Counts of traces, sessions, history events and derived units."""
        return self.store.stats(None if all_scopes else self._scope(user, agent))


def _to_draft(item: Any, index: int) -> TraceDraft:
    if isinstance(item, TraceDraft):
        return item
    if not isinstance(item, Mapping):
        raise InvalidInput(f"trace #{index} must be a dict with at least 'text', got {type(item).__name__}")
    unknown = set(item) - _DRAFT_FIELDS
    if unknown:
        raise InvalidInput(f"trace #{index} has unknown fields {sorted(unknown)}; "
                           f"allowed: {sorted(_DRAFT_FIELDS)}")
    if "text" not in item:
        raise InvalidInput(f"trace #{index} has no 'text'")
    return TraceDraft(**item)
