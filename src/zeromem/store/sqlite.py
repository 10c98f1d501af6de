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
from typing import Any, cast

from ..errors import StoreError
from ..types import Scope
from . import derived, validate
from . import sqlite_portable as portable
from .checks import (
    DEFAULT_ERASE_REWRITE_MB,
    DEFAULT_LOCK_TIMEOUT_S,
    VERSION_FLOOR_KEY,
    check_flag,
    check_lock_timeout,
    id_codec,
)
from .dialect import Dialect, Run
from .ids import ID_KEY
from .receipts import DeleteReceipt, make_receipt, retained_identifiers
from .roles import CleanDraft, DerivedUnit, ExportRows, Restored, TraceDraft
from .rows import dump_attachments, dump_metadata, number_drafts
from .schema import SCHEMA_VERSION, migrate
from .sqlstore import SQLStore, T

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


class _SQLiteRun:
    """SQLStore's ``run`` on a sqlite3 connection (its placeholders are ``?`` already)."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __call__(self, sql: str, params: Sequence[Any] = (), /) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    binary = __call__


class SQLiteDialect(Dialect):
    """SQLite's spelling (see dialect.py): lists as one JSON parameter, vectors in
    ``unit_vectors``, a unit's row numbers as JSON text."""

    vec_join = " LEFT JOIN unit_vectors v ON v.unit_id = u.id"
    vec_column = "v.vec"
    strpos = "instr"
    no_limit = "-1"

    def any_of(self, column: str) -> str:
        # One JSON parameter: no cap on the number of values (SQLite caps bound variables).
        return f"{column} IN (SELECT value FROM json_each(?))"

    def array(self, values: Iterable[Any]) -> str:
        return json.dumps(list(values))

    def covers(self, alias: str) -> str:
        return f"EXISTS (SELECT 1 FROM json_each({alias}.rowids) WHERE value = ?)"

    def rowids_equal(self, alias: str, rowids: Sequence[int]) -> tuple[str, Any]:
        return f"{alias}.rowids = ?", json.dumps(list(rowids))  # as insert_units writes them

    def unindexed(self, column: str) -> str:
        return f"+{column}"  # SQLite's unary plus: no index on this term

    def load_vec(self, value: Any) -> bytes:
        return bytes(value) if not isinstance(value, bytes) else value  # a BLOB is bytes already

    def lock_scope(self, run: Run, key: str, *, reset: bool = False) -> int:
        # BEGIN IMMEDIATE holds the file's write lock already: the row needs no lock of its own.
        run("INSERT INTO scope_versions (scope_key, version, reset_version)"
            " SELECT ?, floor + 1, CASE WHEN floor > 0 THEN floor + 1 ELSE 0 END FROM"
            " (SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = ?), 0) AS floor)"
            " WHERE true ON CONFLICT (scope_key) DO UPDATE SET version = version + 1", (key, VERSION_FLOOR_KEY))
        if reset:
            run("UPDATE scope_versions SET reset_version = version WHERE scope_key = ?", (key,))
        return int(run("SELECT version FROM scope_versions WHERE scope_key = ?", (key,)).fetchone()[0])

    def forget_scope(self, run: Run, key: str) -> None:
        run("INSERT INTO store_meta (key, value) SELECT ?, CAST(version AS TEXT) FROM scope_versions"
            " WHERE scope_key = ? ON CONFLICT (key) DO UPDATE SET"
            " value = CAST(MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER)) AS TEXT)",
            (VERSION_FLOOR_KEY, key))
        run("DELETE FROM scope_versions WHERE scope_key = ?", (key,))

    def insert_units(self, run: Run, key: str, session: str, units: Sequence[DerivedUnit]) -> list[int]:
        conn = cast(_SQLiteRun, run).conn
        ids: list[int] = []
        for unit in units:
            uid = conn.execute(
                "INSERT INTO units (scope_key, session, level, position, text, text_hash, rowids,"
                " first_seq, last_seq, speaker, time) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (key, session, unit.level, unit.position, unit.text, unit.text_hash,
                 json.dumps(list(unit.rowids)), unit.first_seq, unit.last_seq, unit.speaker, unit.time)).lastrowid
            if uid is None:
                raise StoreError("the insert returned no row id; nothing was changed")
            if unit.vector is not None:
                conn.execute("INSERT INTO unit_vectors (unit_id, model, vec) VALUES (?, 'dense', ?)",
                             (uid, unit.vector))
            ids.append(uid)
        return ids

    def first_units(self, run: Run, key: str, text_hashes: Sequence[str]
                    ) -> tuple[dict[str, bytes], dict[str, int]]:
        # The units_text index is ordered (scope, text_hash, id): "the oldest unit of this text"
        # is one index probe however often the text repeats; json_each runs every probe in one
        # statement.
        vectors: dict[str, bytes] = {}
        turns: dict[str, int] = {}
        for text_hash, vec, turn_id in run(
                "SELECT j.value,"
                " (SELECT v.vec FROM units u JOIN unit_vectors v ON v.unit_id = u.id WHERE u.scope_key = ?1"
                "  AND u.text_hash = j.value AND u.level IN ('turn', 'span') ORDER BY u.id LIMIT 1),"
                " (SELECT id FROM units WHERE scope_key = ?1 AND text_hash = j.value AND level = 'turn'"
                "  ORDER BY id LIMIT 1)"
                " FROM json_each(?2) j", (key, json.dumps(list(text_hashes)))):
            if vec is not None:
                vectors[text_hash] = vec
            if turn_id is not None:
                turns[text_hash] = int(turn_id)
        return vectors, turns

    def expiring(self, run: Run, key: str) -> dict[int, Any]:
        # The WHERE is the partial index traces_expiring's, word for word (schema.py).
        rows = run("SELECT rowid_, json_extract(metadata, '$.expires_at') FROM traces"
                   " WHERE scope_key = ? AND metadata LIKE '%\"expires_at\"%'", (key,)).fetchall()
        return {int(rowid): value for rowid, value in rows if value is not None}


class SQLiteStore(SQLStore):
    """Verbatim traces, their history, scope versions, and the connection for derived tables."""

    dialect: Dialect = SQLiteDialect()

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


    # -- SQLStore's hooks ---------------------------------------------------------------
    _SESSION_OF_SCOPE = "scope_key||'\x1f'||session"

    def _reading(self, fn: Callable[[Run], T]) -> T:
        with self._lock:
            self._check_open()
            try:
                return fn(_SQLiteRun(self.conn))
            except sqlite3.DatabaseError as exc:
                if _is_lock_error(exc):
                    raise StoreError(self._locked_message()) from None
                raise StoreError(f"read failed on {self.path}: {exc}") from None

    def _transact(self, fn: Callable[[Run], T]) -> T:
        with self.transaction() as conn:
            return fn(_SQLiteRun(conn))

    def _consistent(self, fn: Callable[[Run], T]) -> T:
        """``fn`` inside one read transaction: WAL readers see the database as of their first read."""
        with self._lock:
            self._check_open()
            try:
                self.conn.execute("BEGIN")
                try:
                    return fn(_SQLiteRun(self.conn))
                finally:
                    self.conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"read failed on {self.path}: {exc}") from None

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.read(sql, params)

    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            self._check_open()
            try:
                return self.conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                if _is_lock_error(exc):
                    raise StoreError(self._locked_message()) from None
                raise StoreError(f"read failed on {self.path}: {exc}") from None

    def _insert(self, run: Run, drafts: Sequence[CleanDraft], key: str, user: str, agent: str,
                stamp: str) -> list[str]:
        """Row by row: each insert gives its row number (AUTOINCREMENT)."""
        conn = cast(_SQLiteRun, run).conn

        def last_seq(session: str) -> int:
            top = conn.execute("SELECT MAX(seq) FROM traces WHERE scope_key = ? AND session = ?",
                               (key, session)).fetchone()[0]
            return -1 if top is None else int(top)

        out: list[str] = []
        for item, seq in zip(drafts, number_drafts(drafts, last_seq)):
            meta = dump_metadata(item.metadata)
            rowid = conn.execute(
                "INSERT INTO traces (scope_key, user_key, agent_key, session, seq, text, speaker, role,"
                " session_time, event_time, recorded_at, source_id, metadata, attachments,"
                " has_session) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (key, user, agent, item.session, seq, item.text, item.speaker, item.role,
                 item.session_time, item.event_time, stamp, item.source_id, meta,
                 dump_attachments(item.attachments), int(item.has_session))).lastrowid
            if rowid is None:
                raise StoreError("the insert returned no row id; nothing was changed")
            conn.execute("INSERT INTO trace_history (scope_key, trace_rowid, event, at, new_text, new_metadata)"
                         " VALUES (?,?,'add',?,?,?)", (key, rowid, stamp, item.text, meta))
            out.append(self.ids.format(rowid))
        derived.mark_dirty(run, key, list(dict.fromkeys(item.session for item in drafts)))
        return out

    def _insert_parts(self, run: Run, key: str, parts: dict[str, bytes]) -> None:
        run.many("INSERT INTO scope_snapshot_parts (scope_key, name, blob) VALUES (?, ?, ?)",
                 [(key, name, blob) for name, blob in sorted(parts.items())])

    def _time_condition(self, op: str) -> str:
        # julianday() reads an offset; a time without one counts as UTC.
        return f"julianday(COALESCE(event_time, session_time, recorded_at)) {op} julianday(?)"

    def _metadata_condition(self, name: str, value: Any) -> tuple[str, list[Any]]:
        if value is None:
            return f"json_extract(metadata, '$.{name}') IS NULL", []
        return f"json_extract(metadata, '$.{name}') = ?", [int(value) if isinstance(value, bool) else value]

    def _after_erasing_update(self) -> None:
        self._erase_from_files()

    def _receipt(self, kind: str, trace_ids: Sequence[str], counts: Counter[str], *,
                 erased: bool, scope: Scope) -> DeleteReceipt:
        """The receipt of a committed delete; an erasing one clears the files first."""
        checkpointed, compacted, retained = self._erase_from_files() if erased else (False, False, [])
        retained = retained_identifiers(kind, erased, self._scope_keys(scope)) + retained
        return make_receipt(kind, trace_ids, counts, history_text_purged=erased,
                            secure_delete=True, checkpointed=checkpointed, retained=retained,
                            compacted=compacted)

    def _erase_from_files(self) -> tuple[bool, bool, builtins.list[str]]:
        """After an erasure: rewrite the file when it is small enough (``_scrub``), then one
        checkpoint. Returns (checkpointed, rewritten, what may remain: a sentence each)."""
        compacted, unused = self._scrub()
        checkpointed = self._checkpoint()
        if not checkpointed:
            unused.insert(0, f"{self.path} and its -wal may keep copies of the old pages until the "
                             "next checkpoint: another connection was reading the database")
        return checkpointed, compacted, unused

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
            # The database's own size (its pages as of now), not the -wal's: the checkpoint
            # that follows (``_erase_from_files``) empties that.
            if self._pages_bytes() <= self.erase_rewrite_bytes:
                try:
                    self.conn.execute("VACUUM")
                except sqlite3.DatabaseError as exc:
                    failure = f"VACUUM failed: {exc}"
                else:
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
        key = None if scope is None else self._scope(scope)
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
            portable.restore(_SQLiteRun(conn), self.dialect, items, codec, id_key, last_row, self.path)
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

    def size_bytes(self) -> int:
        wal = Path(f"{self.path}-wal")
        return self._pages_bytes() + (wal.stat().st_size if self.path != ":memory:" and wal.exists() else 0)

    def _pages_bytes(self) -> int:
        pages, page_size = self.read("PRAGMA page_count")[0][0], self.read("PRAGMA page_size")[0][0]
        return int(pages * page_size)


TraceStore = SQLiteStore  # the name before backends existed; existing imports keep working
