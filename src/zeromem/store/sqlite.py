"""SQLite trace store: the embedded source of record.

Every public write runs in one ``BEGIN IMMEDIATE`` transaction (WAL mode), so a batch lands
whole or not at all, even if the process is killed mid-write, and several processes can write
to one file: SQLite serializes them. A write waits at most ``lock_timeout_s`` for another
connection's write lock, then fails with a StoreError that says so (never a silent wait).

Erasure: ``secure_delete`` is on for every connection (freed bytes are overwritten with
zeros), and an erasing delete checkpoints the write-ahead log with TRUNCATE afterwards, so the
text leaves the ``-wal`` file too (``DeleteReceipt.checkpointed``). secure_delete does not reach
the unused space of pages SQLite rebuilt while rebalancing a b-tree (old copies of rows stay
there): after an erasure the file is rewritten with VACUUM when it is at most
``Config.erase_rewrite_mb`` (``DeleteReceipt.compacted``); for a larger file the receipt's
``retained`` says what may remain there and the fix (``zeromem compact``).

A store whose file or folder is not writable (or opened with ``read_only=True``) opens for
reading (``mode=ro``, else ``immutable=1``); its writes raise StoreError "this store is
read-only".
"""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import NotFound, StoreError
from ..types import Scope, Trace
from . import derived, validate
from . import sqlite_portable as portable
from .checks import (
    DEFAULT_ERASE_REWRITE_MB,
    DEFAULT_LOCK_TIMEOUT_S,
    check_flag,
    check_lock_timeout,
    clean_list_filters,
    id_codec,
    not_found_message,
    scope_key,
    scope_meta_suffix,
)
from .derived import bump_version, purge_units_of_trace, read_changes
from .ids import ID_KEY, TraceIdCodec
from .receipts import DeleteReceipt, make_receipt, retained_identifiers
from .roles import CleanDraft, DerivedUnit, ExportRows, HeldRows, Replacing, Restored, TraceDraft
from .rows import (
    COLUMNS,
    dump_attachments,
    dump_metadata,
    no_session_message,
    now,
    number_drafts,
    session_name,
    to_trace,
)
from .schema import SCHEMA_VERSION, migrate
from .sqlstore import Run, SQLStore, T

__all__ = ["SQLiteStore", "TraceDraft", "TraceStore"]

# Between two attempts at the write lock when SQLite returned "busy" without waiting (it does
# not call its busy handler in every case); the deadline is lock_timeout_s all the same.
_LOCK_POLL_S = 0.05
# What a failed statement can raise besides sqlite3's own errors: a value the driver cannot
# bind (an int over 64 bits, a lone surrogate). Input checks refuse these first; this is the
# backstop that keeps such a failure a rolled-back StoreError.
_WRITE_ERRORS = (sqlite3.Error, OverflowError, UnicodeError)
# A list of trace row ids bound as one JSON parameter (see derived._IN_JSON).
_IN_JSON = "IN (SELECT value FROM json_each(?))"


def _is_lock_error(exc: sqlite3.Error) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


def read_only_reason(path: str, requested: bool) -> str | None:
    """Why the store at ``path`` must be opened read-only, or None when it can be written.

    A folder that is not writable counts too: SQLite creates the ``-wal`` and ``-shm`` files
    beside the database, so a writable file there still cannot take a write.
    """
    if requested:
        return "opened with read_only=True"
    if path == ":memory:":
        return None
    file = Path(path)
    if not file.exists():
        return None  # a new store: creating it says whether the folder is writable
    if not os.access(file, os.W_OK):
        return "the file is not writable"
    if not os.access(file.resolve().parent, os.W_OK | os.X_OK):
        return "its folder is not writable, so SQLite cannot create the -wal and -shm files there"
    return None


class SQLiteStore(SQLStore):
    """Verbatim traces, their history, scope versions, and the connection for derived tables."""

    def __init__(self, path: str | Path, *, max_text_chars: int = validate.DEFAULT_MAX_TEXT_CHARS,
                 lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S, read_only: bool = False,
                 erase_rewrite_bytes: int = DEFAULT_ERASE_REWRITE_MB << 20) -> None:
        self.path = str(path) if str(path) == ":memory:" else str(Path(path).expanduser())
        # An erasure rewrites the file (VACUUM) when it is at most this large (Config.erase_rewrite_mb).
        self.erase_rewrite_bytes = erase_rewrite_bytes
        self.max_text_chars = max_text_chars
        self.lock_timeout_s = check_lock_timeout(lock_timeout_s)
        self.read_only = read_only_reason(self.path, check_flag(read_only, "read_only"))
        if self.read_only is not None:
            self.conn = self._open_read_only()
        else:
            self.conn = self._open_writable()
        self._lock = threading.RLock()
        self._closed = False
        try:
            key = self.read("SELECT value FROM store_meta WHERE key=?", (ID_KEY,))
            self.ids = id_codec(key[0][0] if key else None, self.path)
        except StoreError:
            self.conn.close()
            raise

    def _open_writable(self) -> sqlite3.Connection:
        if self.path != ":memory:":
            parent = Path(self.path).expanduser().resolve().parent
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder for {self.path}: {exc}") from None
        conn = None
        try:
            conn = sqlite3.connect(self.path, timeout=self.lock_timeout_s, isolation_level=None,
                                   check_same_thread=False)
            self._configure(conn)
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            migrate(conn)
        except (sqlite3.DatabaseError, StoreError) as exc:
            if conn is not None:
                conn.close()  # a refused file must not stay open
            if isinstance(exc, StoreError):
                raise
            if _is_lock_error(exc):
                raise StoreError(self._locked_message()) from None
            raise StoreError(f"cannot open {self.path} as a zeromem store: {exc}") from None
        return conn

    def _open_read_only(self) -> sqlite3.Connection:
        """``mode=ro`` first: it still sees what another process writes (through the -wal).
        Where SQLite cannot open even that — a WAL database whose -shm cannot be created in a
        read-only folder — ``immutable=1``: the file as it is, without locks (read-only media;
        a -wal a crashed writer left there is not read)."""
        file = Path(self.path)
        if not file.exists():
            raise StoreError(f"no zeromem store at {self.path}: a read-only open cannot create one")
        uri = file.resolve().as_uri()  # percent-encodes ?, # and spaces
        failure = ""
        for query in ("mode=ro", "immutable=1"):
            conn = None
            try:  # SQLite may refuse at connect or only at the first read
                conn = sqlite3.connect(f"{uri}?{query}", uri=True, timeout=self.lock_timeout_s,
                                       isolation_level=None, check_same_thread=False)
                self._configure(conn)
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            except sqlite3.DatabaseError as exc:
                if conn is not None:
                    conn.close()
                failure = str(exc)
                continue
            if version != SCHEMA_VERSION:
                conn.close()
                raise StoreError(self._version_message(version))
            return conn
        raise StoreError(f"cannot open {self.path} for reading ({self.read_only}): {failure}")

    def _version_message(self, version: int) -> str:
        if version > SCHEMA_VERSION:
            return (f"{self.path} has schema version {version}, newer than this zeromem understands "
                    f"({SCHEMA_VERSION}): upgrade zeromem to open it")
        if version == 0:
            return f"{self.path} is not a zeromem store (or an empty file), and it is read-only ({self.read_only})"
        return (f"{self.path} has schema version {version} and this zeromem needs {SCHEMA_VERSION}; "
                f"it is read-only ({self.read_only}), so it cannot be upgraded: open it once with "
                "write access")

    def _configure(self, conn: sqlite3.Connection) -> None:
        """Per-connection settings: the lock wait, foreign keys (cascades to vectors and
        mentions) and secure_delete, which overwrites freed bytes with zeros whatever the
        build's default (many builds leave it off)."""
        conn.execute(f"PRAGMA busy_timeout = {int(self.lock_timeout_s * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")

    # -- plumbing -----------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._closed = True
            self.conn.close()

    def _check_writable(self) -> None:
        if self.read_only is not None:
            raise StoreError(f"this store is read-only: {self.path} ({self.read_only}); nothing was "
                             "changed. Open it from a writable file and folder to change it")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: BEGIN IMMEDIATE, waiting at most ``lock_timeout_s`` for the lock."""
        with self._lock:
            self._check_open()
            self._check_writable()
            self._begin()
            try:
                yield self.conn
            except _WRITE_ERRORS as exc:
                self._rollback()
                if isinstance(exc, sqlite3.Error) and _is_lock_error(exc):
                    raise StoreError(self._locked_message()) from None
                raise StoreError(f"write failed on {self.path}, nothing was changed: {exc}") from None
            except BaseException:
                self._rollback()
                raise
            else:
                try:
                    self.conn.execute("COMMIT")
                except sqlite3.DatabaseError as exc:
                    self._rollback()
                    raise StoreError(f"commit failed on {self.path}: {exc}") from None

    def _begin(self) -> None:
        """Take the write lock: SQLite's busy handler waits up to the timeout; where it returns
        "busy" at once instead, poll until the same deadline."""
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not _is_lock_error(exc):
                    raise StoreError(f"cannot start a write on {self.path}: {exc}") from None
                if time.monotonic() >= deadline:
                    raise StoreError(self._locked_message()) from None
                time.sleep(_LOCK_POLL_S)

    def _checkpoint(self) -> bool:
        """Copy the write-ahead log into the file and truncate it, so that the old page images
        it holds (copies of erased text) leave the -wal file. It waits at most lock_timeout_s for
        other connections' reads to end; False when one still needs the old pages: they go at
        the first checkpoint after that read ends."""
        if self.path == ":memory:":
            return True  # no file, no log
        with self._lock:
            try:
                busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.DatabaseError:
                return False
        return int(busy) == 0

    def _rollback(self) -> None:
        # SQLite may already have rolled back by itself (e.g. disk full); a second ROLLBACK
        # would raise and hide the original error.
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    # -- derived rows (DerivedStoreBase; the SQL is in derived.py) ------------------------
    def dirty_sessions(self, scope: Scope) -> list[str]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.dirty_sessions(self.conn, user, agent)

    def reset_derived(self, scope: Scope) -> None:
        user, agent = scope_key(scope)
        with self.transaction() as conn:
            derived.reset_derived(conn, user, agent)

    def stored_encodings(self, scope: Scope, text_hashes: Sequence[str], sessions: Sequence[str] = ()
                         ) -> tuple[dict[str, bytes], dict[str, list[tuple]]]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.stored_encodings(self.conn, user, agent, text_hashes, sessions)

    def entities_with_vectors(self, scope: Scope, names: Sequence[str]) -> set[str]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.entities_with_vectors(self.conn, user, agent, names)

    def commit_session(self, scope: Scope, session: str, expected: Sequence[tuple[int, int]],
                       units: Sequence[DerivedUnit], entity_vectors: dict[str, bytes],
                       replacing: Replacing | None = None) -> int | None:
        user, agent = scope_key(scope)
        if self.read_only is not None:
            raise StoreError(f"this store is read-only: {self.path} ({self.read_only}), and session "
                             f"{validate.printable(session)!r} is not derived yet; run `zeromem index` "
                             "once with write access, then it can be searched read-only")
        with self.transaction() as conn:
            return derived.commit_session(conn, user, agent, session, expected, units, entity_vectors, replacing)

    def turn_vectors(self, scope: Scope, session: str) -> dict[int, bytes]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.turn_vectors(self.conn, user, agent, session)

    def trace_entities(self, scope: Scope, rowid: int, limit: int = 20
                       ) -> tuple[builtins.list[tuple[str, str, str, int, int]],
                                  builtins.list[tuple[int, builtins.list[str]]]]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.trace_entities(self.conn, user, agent, rowid, limit)

    def add_encoder_timings(self, seconds: dict[str, float], items: dict[str, int]) -> None:
        with self.transaction() as conn:
            derived.add_encoder_timings(conn, seconds, items)

    def trace_signals(self, scope: Scope, *, missing_only: bool = False,
                      rowids: Sequence[int] | None = None) -> dict[int, str | None]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.trace_signals(self.conn, user, agent, missing_only=missing_only, rowids=rowids)

    def expiring(self, scope: Scope) -> dict[int, Any]:
        user, agent = scope_key(scope)
        with self._lock:
            self._check_open()
            return derived.expiring(self.conn, user, agent)

    def put_signals(self, scope: Scope, rows: Sequence[tuple[int, int, str]]) -> None:
        user, agent = scope_key(scope)
        with self.transaction() as conn:
            derived.put_signals(conn, user, agent, rows)

    def read_changes(self, scope: Scope, since: int, known_entities: set[str],
                     held: HeldRows | None = None) -> dict:
        """The derived rows an in-memory index at version ``since`` lacks, read in one read
        transaction: a consistent version of the scope, whatever other writers do meanwhile
        (WAL readers see the database as of their first read). See ``derived.read_changes``."""
        user, agent = scope_key(scope)
        out = self._consistent(
            lambda run: read_changes(self.conn, user, agent, since, known_entities, COLUMNS, held))
        out["traces"] = [(row[0], to_trace(row, self.ids)) for row in out["traces"]]
        return out

    def save_snapshot(self, scope: Scope, version: int, facts: str, parts: dict[str, bytes],
                      format: int = 1) -> None:
        """Replace the scope's persisted index (derived, disposable) in one transaction; nothing
        is written for an index older than the scope's last wipe, or on a read-only store."""
        user, agent = scope_key(scope)
        if self.read_only is not None:
            return  # a cache: a read-only store simply does without
        with self.transaction() as conn:
            if derived.snapshot_predates_wipe(conn, user, agent, version):
                return
            conn.execute("DELETE FROM scope_snapshot_parts WHERE user_key=? AND agent_key=?", (user, agent))
            conn.executemany("INSERT INTO scope_snapshot_parts VALUES (?,?,?,?)",
                             [(user, agent, name, blob) for name, blob in sorted(parts.items())])
            conn.execute("INSERT OR REPLACE INTO scope_snapshots VALUES (?,?,?,?,?)",
                         (user, agent, version, format, facts.encode("utf-8")))

    # -- SQLStore's hooks ---------------------------------------------------------------
    _SESSION_OF_SCOPE = "user_key||'\x1f'||agent_key||'\x1f'||session"

    def _scoped(self, scope: Scope, alias: str = "") -> tuple[str, tuple[str, ...]]:
        prefix = f"{alias}." if alias else ""
        return f"{prefix}user_key = ? AND {prefix}agent_key = ?", scope_key(scope)

    def _transact(self, fn: Callable[[Run], T]) -> T:
        with self.transaction() as conn:
            return fn(conn.execute)

    def _consistent(self, fn: Callable[[Run], T]) -> T:
        """``fn`` inside one read transaction: WAL readers see the database as of their first read."""
        with self._lock:
            self._check_open()
            try:
                self.conn.execute("BEGIN")
                try:
                    return fn(self.conn.execute)
                finally:
                    self.conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"read failed on {self.path}: {exc}") from None

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.read(sql, params)

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            self._check_open()
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                if _is_lock_error(exc):
                    raise StoreError(self._locked_message()) from None
                raise StoreError(f"read failed on {self.path}: {exc}") from None

    # -- writes -------------------------------------------------------------------------
    def add_batches(self, batches: Sequence[tuple[Sequence[TraceDraft], Scope]]) -> list[list[str]]:
        """Check every draft of every batch first, then store all of them in one transaction."""
        cleaned = self.clean_batches(batches)
        if not any(drafts for drafts, _ in cleaned):
            return [[] for _ in cleaned]
        stamp = now()
        out: list[list[str]] = []
        with self.transaction() as conn:
            touched: set[tuple[str, str]] = set()
            for drafts, (user, agent) in cleaned:
                out.append(_insert(conn, drafts, user, agent, stamp, self.ids))
                if drafts:
                    touched.add((user, agent))
            for user, agent in sorted(touched):
                bump_version(conn, user, agent)
        return out

    def update(self, tid: str, scope: Scope, *, text: Any = None, metadata: Any = None,
               keep_history: bool = True) -> Trace:
        """Replace text and/or metadata. The previous version stays in the history (auditable),
        unless ``keep_history=False``: then every earlier version is erased (see the base)."""
        new_text, new_meta, keep = self._clean_update(text, metadata, keep_history)
        rowid = self.ids.parse(tid)
        user, agent = scope_key(scope)
        with self.transaction() as conn:
            old_text, old_meta, session = _owned_row(conn, rowid, tid, scope)
            text_out = new_text if new_text is not None else old_text
            meta_out = dump_metadata(new_meta) if new_meta is not None else old_meta
            conn.execute("UPDATE traces SET text=?, metadata=?, version=version+1 WHERE rowid_=?",
                         (text_out, meta_out, rowid))
            if not keep:
                _purge_history(conn, user, agent, [rowid])
                old_text = old_meta = None
            conn.execute(
                "INSERT INTO trace_history (trace_rowid, user_key, agent_key, event, at, old_text,"
                " new_text, old_metadata, new_metadata) VALUES (?,?,?,?,?,?,?,?,?)",
                (rowid, user, agent, "update", now(), old_text, text_out, old_meta, meta_out))
            _mark_dirty(conn, user, agent, session)
            purge_units_of_trace(conn, user, agent, session, rowid)
            _end_write(conn, user, agent, erase=not keep)
        if not keep:
            self._checkpoint()
            self._scrub()
        return self.get(tid, scope)

    def delete(self, tid: str, scope: Scope, *, keep_history: bool = False) -> DeleteReceipt:
        """Remove a trace and erase its text from every table and, with secure_delete and a
        checkpoint, from the files (see the base); ``keep_history=True`` keeps it in history."""
        rowid = self.ids.parse(tid)
        keep = check_flag(keep_history, "keep_history")
        user, agent = scope_key(scope)
        with self.transaction() as conn:
            session = _owned_row(conn, rowid, tid, scope)[2]
            counts = _remove_traces(conn, user, agent, [rowid], keep_history=keep)
            counts += purge_units_of_trace(conn, user, agent, session, rowid)
            if not keep and _session_is_empty(conn, user, agent, session):
                # Its last trace: the name goes too (the wipe below rebuilds other processes'
                # indexes, so they need no change-log row to drop the session).
                counts += derived.forget_session(conn, user, agent, session)
            else:
                _mark_dirty(conn, user, agent, session)
            counts += _end_write(conn, user, agent, erase=not keep)
        return self._receipt("trace", [tid], counts, erased=not keep, scope=scope)

    def delete_session(self, session: str, scope: Scope, *, keep_history: bool = False) -> DeleteReceipt:
        """Remove every trace of one session as ``delete`` removes one (see the base)."""
        name = session_name(session)
        keep = check_flag(keep_history, "keep_history")
        user, agent = scope_key(scope)
        with self.transaction() as conn:
            rowids = [r[0] for r in conn.execute(
                "SELECT rowid_ FROM traces WHERE user_key=? AND agent_key=? AND session=? AND has_session=1"
                " ORDER BY rowid_", (user, agent, name))]
            if not rowids:
                raise NotFound(no_session_message(name, scope))
            counts = _remove_traces(conn, user, agent, rowids, keep_history=keep)
            counts += derived.purge_units_of_session(conn, user, agent, name)
            if keep:
                derived.note_session_change(conn, user, agent, name)
            else:
                counts += derived.forget_session(conn, user, agent, name)
            counts += _end_write(conn, user, agent, erase=not keep)
        return self._receipt("session", [self.ids.format(r) for r in rowids], counts, erased=not keep,
                             scope=scope)

    def delete_scope(self, scope: Scope) -> DeleteReceipt:
        """Remove every trace, history event, derived row and per-scope fact (the embedder
        fingerprint) of one scope, then checkpoint (see the base)."""
        user, agent = scope_key(scope)
        suffix = scope_meta_suffix(scope)
        with self.transaction() as conn:
            rowids = [r[0] for r in conn.execute(
                "SELECT rowid_ FROM traces WHERE user_key=? AND agent_key=? ORDER BY rowid_", (user, agent))]
            counts: Counter[str] = Counter()
            for table in ("unit_vectors", "unit_mentions"):
                counts[table] = conn.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE unit_id IN"
                    " (SELECT id FROM units WHERE user_key=? AND agent_key=?)", (user, agent)).fetchone()[0]
            for table in ("traces", "trace_history", "trace_signals", "units", "dirty_sessions",
                          "entity_vectors", "session_changes", "scope_snapshots", "scope_snapshot_parts"):
                counts[table] = conn.execute(f"DELETE FROM {table} WHERE user_key=? AND agent_key=?",
                                             (user, agent)).rowcount
            counts["store_meta"] = conn.execute(
                "DELETE FROM store_meta WHERE instr(key, ':') > 0"
                " AND substr(key, instr(key, ':') + 1) = ?", (suffix,)).rowcount
            derived.forget_scope(conn, user, agent)
        return self._receipt("scope", [self.ids.format(r) for r in rowids], counts, erased=True,
                             scope=scope)

    def _receipt(self, kind: str, trace_ids: Sequence[str], counts: Counter[str], *,
                 erased: bool, scope: Scope) -> DeleteReceipt:
        """The receipt of a committed delete; an erasing one checkpoints the log first."""
        checkpointed = self._checkpoint() if erased else False
        compacted, unused = self._scrub() if erased else (False, [])
        retained = retained_identifiers(kind, erased, self._scope_keys(scope))
        if erased and not checkpointed:
            retained.append(f"{self.path} and its -wal may keep copies of the old pages until the "
                            "next checkpoint: another connection was reading the database")
        retained += unused
        return make_receipt(kind, trace_ids, counts, history_text_purged=erased,
                            secure_delete=True, checkpointed=checkpointed, retained=retained,
                            compacted=compacted)

    def _scrub(self) -> tuple[bool, builtins.list[str]]:
        """After an erasure: clear the old copies of rows SQLite leaves in the unused space of
        the pages it rebuilt while rebalancing (``rebuildPage`` in btree.c does not clear it, and
        secure_delete reaches only deleted cells and freed pages) by rewriting the file (VACUUM)
        when it is at most ``erase_rewrite_bytes``. Returns whether it was rewritten and what
        may remain, one sentence each.

        A larger file is not rewritten on every erasure (it holds the store's write lock for
        seconds) and not scanned either (a scan reads the whole file, and every delete leaves
        some non-zero bytes there, so it could not prove anything): the receipt says what may
        remain and how to clear it.
        """
        if self.path == ":memory:":
            return False, []  # no file
        with self._lock:
            self._check_open()
            if self.size_bytes() <= self.erase_rewrite_bytes:
                try:
                    self.conn.execute("VACUUM")
                except sqlite3.DatabaseError as exc:
                    failure = f"VACUUM failed: {exc}"
                else:
                    self._checkpoint()  # a busy reader: the receipt's checkpoint note says so
                    return True, []
            else:
                failure = (f"the file is over {self.erase_rewrite_bytes / (1 << 20):g} MiB "
                           "(Config.erase_rewrite_mb), too large to rewrite on every erasure")
        return False, [f"{self.path}: the unused space of pages SQLite rebuilt may keep fragments of "
                       f"the erased rows ({failure}): run `zeromem compact` (or `zeromem delete ... "
                       "--compact`) to rewrite the file"]

    def compact(self) -> dict[str, Any]:
        """Rewrite the file without free pages (VACUUM) and truncate the log: freed bytes are
        zeros already (secure_delete), an erasure's rewrite (``_scrub``) cleared the unused space
        of rebuilt pages where the file was small enough; this clears it in any file and returns
        the space."""
        self._check_writable()
        before = self.size_bytes()
        with self._lock:
            self._check_open()
            try:
                self.conn.execute("VACUUM")
            except sqlite3.DatabaseError as exc:
                if _is_lock_error(exc):
                    raise StoreError(self._locked_message()) from None
                raise StoreError(f"VACUUM failed on {self.path}: {exc}") from None
        checkpointed = self._checkpoint()  # VACUUM wrote the new file through the log
        return {"store": self.path, "bytes_before": before, "bytes_after": self.size_bytes(),
                "checkpointed": checkpointed, "retained": []}

    # -- export, import, backup (the Portable role; the SQL is in sqlite_portable.py) -------
    @contextmanager
    def export_rows(self, scope: Scope | None, *, history: bool) -> Iterator[ExportRows]:
        """The records of ``scope`` (every scope when None) in one read transaction of a second,
        read-only connection: one version of the file, while this store keeps writing."""
        key = None if scope is None else scope_key(scope)
        self._check_open()
        conn = portable.snapshot_connection(self.path, self._configure, self.lock_timeout_s)
        try:
            read = self.read if conn is None else portable.reader(conn, self.path)
            yield portable.export_rows(read, key, check_flag(history, "history"))
        finally:
            if conn is not None:
                conn.close()  # ends the read transaction

    def restore(self, items: Iterable[Restored], *, id_key: str | None, last_row: int) -> None:
        """Write checked records back in one transaction, ids kept or new (see the role)."""
        codec = None if id_key is None else id_codec(id_key, self.path)
        with self.transaction() as conn:
            portable.restore(conn, items, codec, id_key, last_row, self.path)
        if codec is not None:
            self.ids = codec

    def backup(self, dest: Path) -> dict[str, Any]:
        """Copy the whole file into ``dest`` with SQLite's online backup, from a read-only
        connection in one read transaction: a consistent version, while writers go on."""
        self._check_open()

        def copy(target: sqlite3.Connection) -> None:
            source = portable.snapshot_connection(self.path, self._configure, self.lock_timeout_s)
            if source is None:  # :memory: (or immutable): this connection, held meanwhile
                with self._lock:
                    self.conn.backup(target)
                return
            try:
                source.backup(target)  # all pages in one step: one version of the file
            finally:
                source.close()

        return portable.backup(copy, Path(dest), self.path)

    # -- reads --------------------------------------------------------------------------
    def get_rowids(self, rowids: Sequence[int]) -> dict[int, Trace]:
        out: dict[int, Trace] = {}
        ids = list(rowids)
        for start in range(0, len(ids), 900):
            chunk = ids[start:start + 900]
            marks = ",".join("?" * len(chunk))
            for row in self.read(f"SELECT {COLUMNS} FROM traces WHERE rowid_ IN ({marks})", chunk):
                out[row[0]] = to_trace(row, self.ids)
        return out

    def list(self, scope: Scope, *, session: str | None = None, since: Any = None,
             until: Any = None, metadata: dict[str, Any] | None = None,
             limit: int | None = None, offset: int = 0) -> list[Trace]:
        """Traces of one scope in (session, seq) order, optionally filtered."""
        user, agent = scope_key(scope)
        where = ["user_key=?", "agent_key=?"]
        params: list[Any] = [user, agent]
        if session is not None:
            where.append("session=?")
            params.append(validate.clean_optional_str(session, "session") or "")
        # Instants, not text: stored times keep their offsets, and julianday() reads an offset
        # (a time without one counts as UTC, as dates.utc_key takes it).
        time_expr = "julianday(COALESCE(event_time, session_time, recorded_at))"
        for bound, op, field in ((since, ">=", "since"), (until, "<=", "until")):
            cleaned = validate.clean_time(bound, field)
            if cleaned is not None:
                where.append(f"{time_expr} {op} julianday(?)")
                params.append(cleaned)
        for key, value in clean_list_filters(metadata, limit, offset).items():
            if value is None:
                where.append(f"json_extract(metadata, '$.{key}') IS NULL")
            else:
                where.append(f"json_extract(metadata, '$.{key}') = ?")
                params.append(int(value) if isinstance(value, bool) else value)
        sql = (f"SELECT {COLUMNS} FROM traces WHERE {' AND '.join(where)} "
               f"ORDER BY session_time IS NULL, session_time, session, seq, rowid_")
        if limit is not None or offset:
            # SQLite takes OFFSET only after a LIMIT; -1 means no limit.
            sql += f" LIMIT {-1 if limit is None else int(limit)} OFFSET {int(offset)}"
        return [to_trace(row, self.ids) for row in self.read(sql, params)]

    def size_bytes(self) -> int:
        pages, page_size = self.read("PRAGMA page_count")[0][0], self.read("PRAGMA page_size")[0][0]
        wal = Path(f"{self.path}-wal")
        return int(pages * page_size) + (wal.stat().st_size if self.path != ":memory:" and wal.exists() else 0)

TraceStore = SQLiteStore  # the name before backends existed; existing imports keep working

def _owned_row(conn: sqlite3.Connection, rowid: int, tid: str, scope: Scope) -> tuple:
    """(text, metadata, session) of a trace in ``scope``, or NotFound: writes never cross scopes."""
    row = conn.execute(
        "SELECT text, metadata, session FROM traces WHERE rowid_=? AND user_key=? AND agent_key=?",
        (rowid, *scope.key)).fetchone()
    if row is None:
        raise NotFound(not_found_message(tid, scope))
    return row


def _session_is_empty(conn: sqlite3.Connection, user: str, agent: str, session: str) -> bool:
    return conn.execute("SELECT 1 FROM traces WHERE user_key=? AND agent_key=? AND session=? LIMIT 1",
                        (user, agent, session)).fetchone() is None


def _mark_dirty(conn: sqlite3.Connection, user: str, agent: str, session: str) -> None:
    conn.execute("INSERT OR IGNORE INTO dirty_sessions VALUES (?,?,?)", (user, agent, session))


def _remove_traces(conn: sqlite3.Connection, user: str, agent: str, rowids: Sequence[int], *,
                   keep_history: bool) -> Counter[str]:
    """Delete traces of one scope with a 'delete' event each: holding the old text and metadata
    when ``keep_history``, else a tombstone, every earlier event emptied too. Rows per table."""
    ids = json.dumps(list(rowids))
    counts: Counter[str] = Counter()
    if not keep_history:
        counts["trace_history"] = _purge_history(conn, user, agent, rowids)
    kept = "text, NULL, metadata, NULL" if keep_history else "NULL, NULL, NULL, NULL"
    conn.execute(
        "INSERT INTO trace_history (trace_rowid, user_key, agent_key, event, at, old_text, new_text,"
        f" old_metadata, new_metadata) SELECT rowid_, user_key, agent_key, 'delete', ?, {kept}"
        f" FROM traces WHERE +user_key=? AND +agent_key=? AND rowid_ {_IN_JSON} ORDER BY rowid_",
        (now(), user, agent, ids))
    # `+user_key`: rows by primary key, not a walk of the scope's index (see derived.trace_signals)
    counts["traces"] = conn.execute(f"DELETE FROM traces WHERE +user_key=? AND +agent_key=? AND rowid_ {_IN_JSON}",
                                    (user, agent, ids)).rowcount
    counts["trace_signals"] = conn.execute(
        f"DELETE FROM trace_signals WHERE user_key=? AND agent_key=? AND trace_rowid {_IN_JSON}",
        (user, agent, ids)).rowcount
    return counts


def _purge_history(conn: sqlite3.Connection, user: str, agent: str, rowids: Sequence[int]) -> int:
    """Empty the text and metadata of every history event of these traces (tombstones: the
    event, its time and the trace id stay); how many events held any."""
    return conn.execute(
        "UPDATE trace_history SET old_text=NULL, new_text=NULL, old_metadata=NULL, new_metadata=NULL"
        f" WHERE user_key=? AND agent_key=? AND trace_rowid {_IN_JSON} AND (old_text IS NOT NULL"
        " OR new_text IS NOT NULL OR old_metadata IS NOT NULL OR new_metadata IS NOT NULL)",
        (user, agent, json.dumps(list(rowids)))).rowcount


def _end_write(conn: sqlite3.Connection, user: str, agent: str, *, erase: bool) -> Counter[str]:
    """Close a write that removed text: bump the scope's version; when it erases, also drop the
    persisted index and mark a wipe, so that no index that saw the text is used or saved again
    (every process rebuilds the scope's in-memory index from the store)."""
    if not erase:
        bump_version(conn, user, agent)
        return Counter()
    counts = derived.drop_snapshot(conn, user, agent)
    bump_version(conn, user, agent, reset=True)
    return counts


def _insert(conn: sqlite3.Connection, drafts: Sequence[CleanDraft], user: str, agent: str,
            now: str, ids: TraceIdCodec) -> list[str]:
    """Insert checked drafts into one scope (inside the caller's transaction); their ids."""
    def last_seq(session: str) -> int:
        top = conn.execute("SELECT MAX(seq) FROM traces WHERE user_key=? AND agent_key=? AND session=?",
                           (user, agent, session)).fetchone()[0]
        return -1 if top is None else int(top)

    out: list[str] = []
    for item, seq in zip(drafts, number_drafts(drafts, last_seq)):
        meta = dump_metadata(item.metadata)
        cur = conn.execute(
            "INSERT INTO traces (user_key, agent_key, session, seq, text, speaker, role,"
            " session_time, event_time, recorded_at, source_id, metadata, attachments,"
            " has_session) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (user, agent, item.session, seq, item.text, item.speaker, item.role,
             item.session_time, item.event_time, now, item.source_id, meta,
             dump_attachments(item.attachments), int(item.has_session)))
        rowid = cur.lastrowid
        if rowid is None:
            raise StoreError("the insert returned no row id; nothing was changed")
        conn.execute(
            "INSERT INTO trace_history (trace_rowid, user_key, agent_key, event, at,"
            " new_text, new_metadata) VALUES (?,?,?,?,?,?,?)",
            (rowid, user, agent, "add", now, item.text, meta))
        out.append(ids.format(rowid))
    for session in dict.fromkeys(item.session for item in drafts):
        _mark_dirty(conn, user, agent, session)
    return out
