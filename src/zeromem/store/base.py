"""The storage interface every backend implements: traces, their history, per-file facts.

``TraceStoreBase`` is what the rest of zeromem may rely on whatever holds the data (the
embedded SQLite file today; a server database later). It is backend independent by contract:

* every write is atomic: it lands whole or not at all, and a failed write changes nothing;
* ids are opaque strings (``"t4k2x9q7m"``: a keyed permutation of the internal row number,
  store/ids.py), never reused, and a scope never sees or touches another scope's traces (an id
  from another scope is ``NotFound``);
* errors are ``InvalidInput`` (bad arguments, nothing changed), ``NotFound`` (no such trace in
  this scope) or ``StoreError`` (the backend could not complete the operation).

Input checks (``clean``) live here, so that every backend refuses exactly the same inputs
before anything is written. Backends are opened by ``store.factory.open_store``, the one place
that knows them.

Derived rows (units, vectors, mentions, segments) get their own methods here later; today they
are reached through the SQLite backend's ``read`` / ``transaction``.

Erasure (``delete``, ``delete_session``, ``delete_scope``; ``update(keep_history=False)``):
the text leaves every table — the trace, its history events (kept as tombstones: id, time,
event), every derived unit, vector, mention and entity vector made from it, and the scope's
persisted index — and the backend's files as far as it can promise (``DeleteReceipt``).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from ..errors import InvalidInput, StoreError
from ..types import HistoryEvent, Scope, Trace
from . import validate
from .ids import ID_KEY, TraceIdCodec
from .keys import ApiKey

# How long a write waits for another connection's write lock before it fails with StoreError
# (Config.lock_timeout_s): long enough for any single zeromem write, short enough that a
# stuck writer is reported instead of waited on in silence.
DEFAULT_LOCK_TIMEOUT_S = 5.0

# Every table that can hold a trace's text or something derived from it, in the order a
# receipt lists them (SQLite; PostgreSQL keeps vectors in ``units`` and has no unit_vectors).
ERASABLE_TABLES = ("traces", "trace_history", "trace_signals", "units", "unit_vectors",
                   "unit_mentions", "entity_vectors", "dirty_sessions", "session_changes",
                   "scope_snapshots", "scope_snapshot_parts", "store_meta")


@dataclass(frozen=True, slots=True)
class DeleteReceipt:
    """What a delete removed and where: the claim an erasure can be checked against.

    * ``kind``: ``"trace"``, ``"session"`` or ``"scope"``; ``trace_ids``: the traces removed.
    * ``rows``: ``(table, rows)`` for every table that can hold text or what was derived from
      it (``ERASABLE_TABLES``), zeros included, so the receipt also says what was checked. For
      ``trace_history`` it counts the events emptied of text (tombstones) or removed (scope).
    * ``history_text_purged``: no history event of these traces holds text or metadata any
      more; False when the caller kept the history (``keep_history=True``).
    * ``secure_delete``: the backend overwrote the freed bytes (SQLite ``secure_delete``).
    * ``checkpointed``: SQLite's write-ahead log was copied into the file and truncated, so
      the ``-wal`` file holds no copy of the old pages.
    * ``retained``: what may still hold the text, one sentence each; empty when nothing does.
    """

    kind: str
    trace_ids: tuple[str, ...]
    rows: tuple[tuple[str, int], ...]
    history_text_purged: bool
    secure_delete: bool
    checkpointed: bool
    retained: tuple[str, ...] = ()

    @property
    def traces(self) -> int:
        """How many traces were removed."""
        return len(self.trace_ids)

    def as_dict(self) -> dict[str, Any]:
        """The receipt as plain JSON values (``rows`` as an object), for the CLI and the API."""
        return {"kind": self.kind, "traces": self.traces, "trace_ids": list(self.trace_ids),
                "rows": dict(self.rows), "history_text_purged": self.history_text_purged,
                "secure_delete": self.secure_delete, "checkpointed": self.checkpointed,
                "retained": list(self.retained)}


def make_receipt(kind: str, trace_ids: Sequence[str], counts: Mapping[str, int], *,
                 history_text_purged: bool, secure_delete: bool, checkpointed: bool,
                 retained: Sequence[str] = ()) -> DeleteReceipt:
    """A ``DeleteReceipt`` listing every erasable table in a fixed order (missing ones as 0)."""
    return DeleteReceipt(kind, tuple(trace_ids),
                         tuple((table, int(counts.get(table, 0))) for table in ERASABLE_TABLES),
                         history_text_purged, secure_delete, checkpointed, tuple(retained))


def retained_identifiers(kind: str, erased: bool, scope_keys: int) -> list[str]:
    """What a delete leaves of the erased traces' identifiers, and why, one sentence each.

    An erasing delete removes the session name (once no trace of the session is left),
    speaker, source id, title and metadata keys from every table; what stays names the scope:
    the history's tombstones and the scope's version row until the scope itself is deleted,
    and the API keys made for it.
    """
    if not erased:
        return ["the history keeps the text and metadata, and the change log (session_changes) "
                "the session's name (keep_history=True)"]
    if kind == "scope":
        if not scope_keys:
            return []
        return [f"api_keys: {scope_keys} API key(s) made for this scope keep its user and agent "
                "(a revoked key stays listed); the keys are not part of the memory"]
    return ["trace_history keeps one tombstone per deleted trace (event, time, row number and "
            "the scope's user and agent; no text, metadata, session, speaker or source id), and "
            "scope_versions the scope's user and agent, while the scope exists: delete_scope "
            "removes both"]


def check_flag(value: Any, name: str) -> bool:
    """A boolean option such as ``keep_history``: a real bool, so that a stray string such as
    ``"false"`` is refused instead of read as True."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be True or False, got {value!r}")
    return value


def check_lock_timeout(value: Any) -> float:
    """``lock_timeout_s``: a positive, finite number of seconds (at most a day)."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not 0 < float(value) <= 86_400):
        raise InvalidInput(f"lock_timeout_s must be a number of seconds above 0 (at most 86400), "
                           f"got {value!r}")
    return float(value)


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


def scope_key(scope: Any) -> tuple[str, str]:
    """``(user, agent)`` as stored (None → ``""``), after checking both parts can be stored."""
    if not isinstance(scope, Scope):
        raise InvalidInput("scope must be a zeromem Scope")
    validate.clean_scope_part(scope.user, "user")
    validate.clean_scope_part(scope.agent, "agent")
    return scope.key


def not_found_message(tid: str, scope: Scope) -> str:
    """The NotFound message for trace ``tid`` in ``scope``: names both and the fix."""
    where = f"user={scope.user!r}, agent={scope.agent!r}"
    return f"no trace {tid!r} in scope ({where}): check the id and the --user/--agent you passed"


class TraceStoreBase(ABC):
    """The source of record: verbatim traces, their history, scope versions, per-file facts.

    Attributes every backend sets: ``path`` (where the data lives, shown to users: a file
    path, ``":memory:"``, or a URL without its password), ``max_text_chars`` (the longest
    text ``clean`` accepts) and ``ids`` (the store's trace id codec: every conversion between a
    trace's row number and its public id goes through ``ids.format`` / ``ids.parse``).
    """

    path: str
    max_text_chars: int
    ids: TraceIdCodec

    # -- checks (shared by every backend) ------------------------------------------------
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

    @abstractmethod
    def compact(self) -> dict[str, Any]:
        """Make the backend drop from its files what erasures freed (SQLite: VACUUM; PostgreSQL:
        VACUUM FULL, ANALYZE, CHECKPOINT); returns what it did and, for PostgreSQL, what it
        cannot remove (``retained``). Slow on a large store, and it locks the tables meanwhile."""

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
    def scope_version(self, scope: Scope) -> int:
        """A counter that goes up with every write to ``scope`` (0 for a scope never written)."""

    @abstractmethod
    def count(self, scope: Scope) -> int:
        """How many traces ``scope`` holds (cheap: ``stats`` does much more)."""

    @abstractmethod
    def size_bytes(self) -> int:
        """Bytes the whole store takes in its backend (file + write-ahead log for SQLite, the
        database for PostgreSQL): what a benchmark reports as storage size."""

    @abstractmethod
    def scopes(self) -> list[Scope]:
        """Every scope that holds at least one trace, sorted by (user, agent)."""

    @abstractmethod
    def stats(self, scope: Scope | None = None) -> dict[str, Any]:
        """Counts for ``scope`` (or the whole store when None).

        Keys: ``path``, ``traces``, ``sessions``, ``characters``, ``scopes``, ``speakers``
        ({speaker: traces}), ``history_events`` ({event: count}), ``first_time``,
        ``last_time`` and ``units`` ({level: derived units}).
        """

    @abstractmethod
    def sessions(self, scope: Scope) -> list[dict[str, Any]]:
        """The sessions of ``scope`` in conversation order, each ``{"session", "traces",
        "first_time", "last_time"}`` (times as for ``list``'s filters)."""

    # -- API keys of the service (store/keys.py) ------------------------------------------
    @abstractmethod
    def add_api_key(self, key_id: str, key_hash: str, scope: Scope, label: str | None) -> ApiKey:
        """Store a new key's hash bound to ``scope``; InvalidInput if the id or hash exists."""

    @abstractmethod
    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this hash, revoked or not; None when there is none."""

    @abstractmethod
    def api_keys(self) -> list[ApiKey]:
        """Every key (revoked ones too), oldest first."""

    @abstractmethod
    def revoke_api_key(self, key_id: str) -> ApiKey:
        """Mark a key revoked (it stays listed); NotFound for an unknown id."""

    # -- per-file facts (store_meta) -------------------------------------------------------
    @abstractmethod
    def get_meta(self, key: str) -> str | None:
        """The value stored under ``key``, or None."""

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key``, replacing any earlier value (one atomic write)."""

    @abstractmethod
    def setdefault_meta(self, key: str, value: str) -> str:
        """Store ``value`` under ``key`` unless a value is there already; return the stored
        value. Atomic: of two concurrent callers exactly one value wins and both see it."""

    @abstractmethod
    def delete_meta(self, key: str) -> bool:
        """Remove ``key``; True if it was there."""

    # -- lifecycle -------------------------------------------------------------------------
    @abstractmethod
    def close(self) -> None:
        """Release the connection; the object must not be used afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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


_META_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def clean_list_filters(metadata: Any, limit: Any, offset: Any) -> dict[str, Any]:
    """``list``'s metadata filter (plain keys, scalar values) and paging, checked once for
    every backend so all refuse the same inputs; returns the cleaned metadata filter."""
    filters = validate.clean_metadata(metadata, "metadata filter")
    for key, value in filters.items():
        if not _META_KEY_RE.match(key):
            raise InvalidInput(f"metadata filter key {key!r} must be a plain identifier")
        if not isinstance(value, (str, int, float, bool)) and value is not None:
            raise InvalidInput(f"metadata filter value for {key!r} must be a scalar")
    for name, number in (("limit", limit), ("offset", offset)):
        if number is None and name == "limit":
            continue
        if (isinstance(number, bool) or not isinstance(number, int) or number < 0
                or number > validate.MAX_INT):
            shown = validate.int_text(number) if type(number) is int else repr(number)
            raise InvalidInput(f"{name} must be a non-negative int below 2**63, got {shown}")
    return filters


def check_meta_key(key: Any) -> str:
    """A ``store_meta`` key: a non-empty string that can be stored."""
    if not isinstance(key, str) or not key:
        raise InvalidInput(f"a store_meta key is a non-empty string, got {key!r}")
    validate.check_unicode(key, "store_meta key")
    return key


# The highest version a deleted scope's row reached (a ``store_meta`` key of every backend): a
# deleted scope leaves no version row, so that its user and agent leave the store; the row a
# later write makes for a scope of the same name starts above this, so no index of the
# deleted scope is ever taken as current.
VERSION_FLOOR_KEY = "scope_version_floor"


def check_meta_write(key: Any) -> str:
    """A ``store_meta`` key that may be written or removed: any but the trace id key, which is
    made once with the store (changing it would change every id), and the version floor."""
    key = check_meta_key(key)
    if key == ID_KEY:
        raise InvalidInput(f"store_meta key {ID_KEY!r} is the store's trace id key: it cannot be "
                           "changed or removed (every trace id depends on it)")
    if key == VERSION_FLOOR_KEY:
        raise InvalidInput(f"store_meta key {VERSION_FLOOR_KEY!r} is kept by delete_scope: it cannot "
                           "be changed or removed (in-memory indexes of other processes rely on it)")
    return key


def id_codec(key_hex: str | None, path: str) -> TraceIdCodec:
    """The trace id codec of the store at ``path`` from its ``store_meta`` key (StoreError if
    the store has none: its schema migration makes one)."""
    if key_hex is None:
        raise StoreError(f"{path} has no trace id key ({ID_KEY} in store_meta): the store is "
                         "damaged; restore it from a backup")
    return TraceIdCodec(key_hex)


def check_meta_value(value: Any) -> str:
    """A ``store_meta`` value: a string that can be stored."""
    if not isinstance(value, str):
        raise InvalidInput(f"a store_meta value is a string, got {type(value).__name__}")
    validate.check_unicode(value, "store_meta value")
    return value


def scope_meta_key(prefix: str, scope: Scope) -> str:
    """The ``store_meta`` key of a per-scope fact, e.g. ``embedder:["ana",""]``.

    ``delete_scope`` removes every key made here for its scope, whatever the prefix. The scope
    part is JSON, so no two scopes share a key whatever characters their ids hold.
    """
    if not isinstance(prefix, str) or not prefix or ":" in prefix:
        raise InvalidInput(f"a per-scope meta prefix is a non-empty string without ':', got {prefix!r}")
    return f"{prefix}:{scope_meta_suffix(scope)}"


def scope_meta_suffix(scope: Scope) -> str:
    """What follows the first ``:`` in every per-scope ``store_meta`` key of ``scope``."""
    return json.dumps(list(scope_key(scope)), ensure_ascii=False, separators=(",", ":"))


class TraceRows:
    """A scope's traces as read in one go, by rowid, made into ``Trace`` objects only when one
    is asked for: opening a 100k-trace scope needs a few fields of every turn (``fields``) but
    whole traces only for the evidence it returns (``trace``)."""

    def __init__(self, rows: dict[int, Any], to_trace: Callable[[Any], Trace],
                 to_fields: Callable[[Any], tuple]) -> None:
        self._rows = rows
        self._to_trace = to_trace
        self._to_fields = to_fields

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, rowid: object) -> bool:
        return rowid in self._rows

    def trace(self, rowid: int) -> Trace | None:
        row = self._rows.get(rowid)
        return None if row is None else self._to_trace(row)

    def fields(self, rowid: int) -> tuple | None:
        """(text, attachments, speaker, session, event_time, session_time, recorded_at, role)."""
        row = self._rows.get(rowid)
        return None if row is None else self._to_fields(row)


@dataclass(slots=True)
class DerivedUnit:
    """One derived unit as a backend stores it (indexes/units.py makes them)."""

    level: str
    position: int
    text: str
    text_hash: str
    rowids: tuple[int, ...]
    first_seq: int
    last_seq: int
    speaker: str | None
    time: str | None
    vector: bytes | None  # float32 little-endian
    mentions: tuple[tuple[str, str, str, int], ...] = ()  # (entity, label, surface, count), turns


class DerivedStoreBase(ABC):
    """Derived rows, rebuildable from the traces: what the indexer writes and retrieval reads.

    Every method is scoped; a backend never reads or writes across scopes.
    """

    @abstractmethod
    def dirty_sessions(self, scope: Scope) -> list[str]:
        """Sessions whose traces changed since they were last derived."""

    @abstractmethod
    def reset_derived(self, scope: Scope) -> None:
        """Drop every derived row of the scope and mark all its sessions dirty (reindex)."""

    @abstractmethod
    def stored_encodings(self, scope: Scope, text_hashes: Sequence[str]
                         ) -> tuple[dict[str, bytes], dict[str, list[tuple]]]:
        """(vector by text hash, mentions by text hash) already stored in the scope."""

    @abstractmethod
    def entities_with_vectors(self, scope: Scope, names: Sequence[str]) -> set[str]:
        """Which of ``names`` already have an entity vector in the scope."""

    @abstractmethod
    def commit_session(self, scope: Scope, session: str, expected: Sequence[tuple[int, int]],
                       units: Sequence[DerivedUnit], entity_vectors: dict[str, bytes]) -> bool:
        """In one transaction: if the session's traces are still ``expected`` ((rowid, version)
        in conversation order), replace its derived rows, add the entity vectors its mentions
        need, clear its dirty mark and log the change; else change nothing, return False."""

    @abstractmethod
    def trace_entities(self, scope: Scope, rowid: int, limit: int = 20
                       ) -> tuple[list[tuple[str, str, str, int, int]], list[tuple[int, list[str]]]]:
        """The trace's place in the entity graph: its turn's mentions ``(entity, label,
        surface, count, turns of the scope mentioning it)`` and up to ``limit`` other turns
        sharing an entity ``(rowid, shared entities)``, most shared first (rowid breaks ties).
        Empty until the trace's session is derived."""

    @abstractmethod
    def add_encoder_timings(self, seconds: dict[str, float], items: dict[str, int]) -> None:
        """Accumulate encoder time and items (reported by ``zeromem stats``)."""

    @abstractmethod
    def trace_signals(self, scope: Scope, *, missing_only: bool = False) -> dict[int, str | None]:
        """Each trace of the scope (rowid) → its lifecycle signals (JSON) stored for its
        current version, or None when they still have to be computed; ``missing_only``
        returns only the None ones (a refresh after a write reads no other row)."""

    @abstractmethod
    def trace_versions(self, scope: Scope) -> list[tuple[int, int]]:
        """(rowid, version) of every trace of the scope, in ``list`` order: what changed since
        a cached copy, without reading the texts."""

    @abstractmethod
    def expiring(self, scope: Scope) -> dict[int, Any]:
        """rowid → metadata ``expires_at`` of the scope's traces that carry one (the memory
        lifecycle's TTL; few traces have one, so this is a filtered scan)."""

    @abstractmethod
    def put_signals(self, scope: Scope, rows: Sequence[tuple[int, int, str]]) -> None:
        """Store (trace rowid, version, signals JSON) rows; rows of deleted traces go."""

    @abstractmethod
    def read_changes(self, scope: Scope, since: int, known_entities: set[str]) -> dict:
        """In one read transaction, what an in-memory index at version ``since`` lacks:
        ``version``, ``full`` (rebuild from scratch), ``sessions``, their ``traces`` ((rowid, Trace)),
        ``units`` rows (id, session, level, position, text, text_hash, rowids JSON, vector),
        ``mentions`` rows (unit id, entity, label, surface, count), and the vectors of
        mentioned ``entities`` not in ``known_entities``."""

    @abstractmethod
    def save_snapshot(self, scope: Scope, version: int, facts: str, parts: dict[str, bytes],
                      format: int = 1) -> None:
        """Replace the scope's persisted in-memory index (retrieval/persist.py).

        Nothing is written when ``version`` is older than the scope's last wipe (an erasing
        delete, ``delete_scope``, ``reindex``): such an index could hold words of erased
        traces, and ``load_snapshot`` would ignore it anyway. A read-only store writes nothing.
        """

    @abstractmethod
    def load_snapshot(self, scope: Scope, format: int = 1
                      ) -> tuple[int, str, dict[str, bytes], TraceRows] | None:
        """(version, facts, parts, the scope's traces) in one read, or None if there is none
        of this ``format`` or a wipe made it useless."""

    @abstractmethod
    def snapshot_version(self, scope: Scope, format: int = 1) -> int | None:
        """The version of the scope's persisted index of this ``format``, if any."""


class StoreBase(TraceStoreBase, DerivedStoreBase):
    """What a backend implements: the traces (source of record) and their derived rows."""
