"""The trace role: the source of record — verbatim traces, their history, listing.

Every write is atomic (it lands whole or not at all, and a failed write changes nothing); ids
are opaque strings (``"t4k2x9q7m"``: a keyed permutation of the internal row number,
store/ids.py), never reused, and a scope never sees or touches another scope's traces (an id
from another scope is ``NotFound``). Errors are ``InvalidInput`` (bad arguments, nothing
changed), ``NotFound`` (no such trace in this scope) or ``StoreError`` (the backend could not
complete the operation). Input checks (``clean``) live here, so that every backend refuses
exactly the same inputs before anything is written.

Erasure (``delete``, ``delete_session``, ``delete_scope``; ``update(keep_history=False)``):
the text leaves every table — the trace, its history events (kept as tombstones: id, time,
event), every derived unit, vector, mention and entity vector made from it, and the scope's
persisted index — and the backend's files as far as it can promise (``DeleteReceipt``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import InvalidInput
from ...types import HistoryEvent, Scope, Trace
from .. import validate
from ..checks import scope_key
from ..ids import TraceIdCodec
from ..receipts import DeleteReceipt


@dataclass(slots=True)
class TraceDraft:
    """What a caller supplies for a new trace; checked and normalized before storing."""

    text: Any
    session: Any = None
    speaker: Any = None
    role: Any = None
    session_time: Any = None
    event_time: Any = None
    seq: Any = None
    source_id: Any = None
    metadata: Any = None
    attachments: Any = None


@dataclass(slots=True)
class CleanDraft:
    """A draft that passed every check: each field can be stored by every backend as is."""

    text: str
    session: str
    has_session: bool
    speaker: str | None
    role: str
    session_time: str | None
    event_time: str | None
    seq: int | None
    source_id: str | None
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: tuple[str, ...] = ()


class TraceRecords(ABC):
    """Traces of every scope: checked writes, erasure, reads, history and listing.

    Attributes every backend sets: ``path`` (where the data lives, shown to users: a file
    path, ``":memory:"``, or a URL without its password), ``max_text_chars`` (the longest
    text ``clean`` accepts) and ``ids`` (the store's trace id codec: every conversion between a
    trace's row number and its public id goes through ``ids.format`` / ``ids.parse``).
    """

    path: str
    max_text_chars: int
    ids: TraceIdCodec

    def clean(self, draft: TraceDraft) -> CleanDraft:
        """Check and normalize one draft; raises InvalidInput naming the bad field."""
        limit = self.max_text_chars
        session = validate.clean_session(draft.session)
        return CleanDraft(
            text=validate.clean_text(draft.text, max_chars=limit),
            session=session or "",
            has_session=session is not None,
            speaker=validate.clean_optional_str(draft.speaker, "speaker"),
            role=validate.clean_role(draft.role),
            session_time=validate.clean_time(draft.session_time, "session_time"),
            event_time=validate.clean_time(draft.event_time, "event_time"),
            seq=validate.clean_seq(draft.seq),
            source_id=validate.clean_optional_str(draft.source_id, "source_id"),
            metadata=validate.clean_metadata(draft.metadata),
            attachments=validate.clean_attachments(draft.attachments, max_chars=limit),
        )

    def clean_batches(self, batches: Sequence[tuple[Sequence[TraceDraft], Scope]]
                      ) -> list[tuple[list[CleanDraft], tuple[str, str]]]:
        """``clean`` every draft of every batch and check every scope, before any write.

        Errors name the trace (``trace #3``), and the batch too when there are several.
        """
        if not isinstance(batches, (list, tuple)):
            raise InvalidInput("add_batches takes a list of (traces, scope) pairs")
        out = []
        for number, batch in enumerate(batches):
            prefix = f"batch #{number}, " if len(batches) > 1 else ""
            if not (isinstance(batch, tuple) and len(batch) == 2):
                raise InvalidInput(f"{prefix}each batch must be a (traces, scope) pair")
            drafts, scope = batch
            if not isinstance(drafts, (list, tuple)):
                raise InvalidInput(f"{prefix}add_many takes a list of traces")
            try:
                key = scope_key(scope)
            except InvalidInput as exc:
                raise InvalidInput(f"{prefix}{exc}") from None
            cleaned = []
            for index, draft in enumerate(drafts):
                try:
                    if not isinstance(draft, TraceDraft):
                        raise InvalidInput(f"must be a TraceDraft, got {type(draft).__name__}")
                    cleaned.append(self.clean(draft))
                except InvalidInput as exc:
                    raise InvalidInput(f"{prefix}trace #{index}: {exc}") from None
            out.append((cleaned, key))
        return out

    # -- writes ----------------------------------------------------------------------------
    def add_many(self, drafts: Sequence[TraceDraft], scope: Scope) -> list[str]:
        """Store ``drafts`` in ``scope`` in one transaction, all or nothing; returns their ids.

        Every draft is checked first (InvalidInput naming ``trace #i``). A draft without
        ``seq`` gets the next position in its session.
        """
        if not isinstance(drafts, (list, tuple)):
            raise InvalidInput("add_many takes a list of traces")
        return self.add_batches([(drafts, scope)])[0]

    @abstractmethod
    def add_batches(self, batches: Sequence[tuple[Sequence[TraceDraft], Scope]]) -> list[list[str]]:
        """Store several batches, each in its own scope, in ONE transaction; ids per batch.

        This is what makes a multi-conversation import all-or-nothing: a failure anywhere
        (bad input, or the backend refusing a row) stores none of the batches.
        Implementations check everything with ``clean_batches`` before writing.
        """

    @abstractmethod
    def update(self, tid: str, scope: Scope, *, text: Any = None, metadata: Any = None,
               keep_history: bool = True) -> Trace:
        """Replace a trace's text and/or metadata (at least one); returns the new version.

        The version counter goes up by one and the history gains an 'update' event holding the
        text and metadata before and after: by design, so that a change can be audited.
        ``keep_history=False`` erases instead: every earlier version's text and metadata leave
        the history (its events stay as tombstones: time and event) and the backend's files as
        ``delete`` does; the new event records only the new version. NotFound if ``tid`` is not
        in ``scope``.
        """

    @abstractmethod
    def delete(self, tid: str, scope: Scope, *, keep_history: bool = False) -> DeleteReceipt:
        """Remove a trace and erase its text; NotFound if it is not in ``scope``.

        The text leaves the trace table, every history event of the trace (they stay as
        tombstones: time and event, then a 'delete' event), every derived row made from it and
        the scope's persisted index (every process's in-memory index is rebuilt from the store
        at its next search). ``keep_history=True`` keeps the old text and metadata in the
        history instead (a 'delete' event holding them), as before erasure existed.
        """

    @abstractmethod
    def delete_session(self, session: str, scope: Scope, *, keep_history: bool = False) -> DeleteReceipt:
        """Remove every trace of one session of ``scope`` as ``delete`` removes one; NotFound
        if the scope has no trace in that session."""

    @abstractmethod
    def delete_scope(self, scope: Scope) -> DeleteReceipt:
        """Remove every trace, history event, derived row and per-scope fact (such as the
        embedder fingerprint) of ``scope``, and nothing of any other scope."""

    # -- reads -----------------------------------------------------------------------------
    @abstractmethod
    def get(self, tid: str, scope: Scope) -> Trace:
        """The trace ``tid`` of ``scope``; NotFound if it does not exist there."""

    @abstractmethod
    def get_rowids(self, rowids: Sequence[int]) -> dict[int, Trace]:
        """Traces by internal row number, across scopes (for derived-index lookups); missing
        rows are simply absent from the result."""

    @abstractmethod
    def history(self, tid: str, scope: Scope) -> list[HistoryEvent]:
        """Every 'add' / 'update' / 'delete' event of a trace, oldest first; it outlives a
        delete (as tombstones without text or metadata, unless the delete kept the history).
        NotFound if the trace never existed in ``scope``."""

    @abstractmethod
    def count(self, scope: Scope) -> int:
        """How many traces ``scope`` holds (cheap: ``stats`` does much more)."""

    @abstractmethod
    def scopes(self) -> list[Scope]:
        """Every scope that holds at least one trace, sorted by (user, agent)."""

    @abstractmethod
    def sessions(self, scope: Scope) -> list[dict[str, Any]]:
        """The sessions of ``scope`` in conversation order, each ``{"session", "traces",
        "first_time", "last_time"}`` (times as for ``list``'s filters)."""

    @abstractmethod
    def trace_versions(self, scope: Scope) -> list[tuple[int, int]]:
        """(rowid, version) of every trace of the scope, in ``list`` order: what changed since
        a cached copy, without reading the texts."""

    @abstractmethod
    def expiring(self, scope: Scope) -> dict[int, Any]:
        """rowid → metadata ``expires_at`` of the scope's traces that carry one (the memory
        lifecycle's TTL; few traces have one, so this is a filtered scan)."""

    # ``list`` comes last: inside this class body the name shadows the builtin.
    @abstractmethod
    def list(self, scope: Scope, *, session: str | None = None, since: Any = None,
             until: Any = None, metadata: dict[str, Any] | None = None,
             limit: int | None = None, offset: int = 0) -> list[Trace]:
        """Traces of ``scope`` in conversation order (session time, session, seq).

        Filters: ``session`` (exact), ``since`` / ``until`` (inclusive, on event time, else
        session time, else recording time), ``metadata`` (top-level keys equal to scalar
        values); ``limit`` / ``offset`` page through the result.
        """
