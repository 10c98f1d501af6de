"""The SQLite side of export, import and backup (the ``Portable`` role; SQLiteStore calls these).

Reads for an export and a backup go through a second, read-only connection to the file, in one
read transaction: WAL gives it one version of the database while the store's own connection
(and other processes) keep writing, and it never holds the store's lock, so a slow reader of a
streamed export holds up nobody. A ``:memory:`` database has no second connection: it is read
a page at a time through the store's own (one page is then one version).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, StoreError
from .checks import scope_json
from .dialect import Dialect, Run
from .ids import ID_KEY, TraceIdCodec
from .roles.portable import (
    EXPORT_PAGE,
    ExportRows,
    Restored,
    RestoredEvent,
    RestoredTrace,
    key_taken_message,
    row_taken_message,
)
from .rows import COLUMNS

Read = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
_HISTORY = ("SELECT trace_rowid, json_extract(scope_key, '$[0]'), json_extract(scope_key, '$[1]'), event, at,"
            " old_text, new_text, old_metadata, new_metadata, id FROM trace_history")


def snapshot_connection(path: str, configure: Callable[[sqlite3.Connection], None],
                        timeout: float) -> sqlite3.Connection | None:
    """A read-only connection to the file at ``path`` inside a read transaction that has taken
    its version of the database already; None for ``:memory:`` or where SQLite refuses one (a
    store opened ``immutable``: nothing changes it anyway). Usable from any thread: a streamed
    export is read by whichever worker thread serves it."""
    if path == ":memory:":
        return None
    conn = None
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=timeout,
                               isolation_level=None, check_same_thread=False)
        configure(conn)
        conn.execute("BEGIN")
        conn.execute("SELECT COUNT(*) FROM store_meta").fetchall()  # the read that fixes the version
        return conn
    except sqlite3.Error:
        if conn is not None:
            conn.close()
        return None


def reader(conn: sqlite3.Connection, path: str) -> Read:
    """``conn``'s reads as lists of rows, failures as StoreError."""
    def read(sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"read failed on {path}: {exc}") from None
    return read


def _paged(read: Read, sql: str, params: Sequence[Any], start: tuple[int, ...],
           key: Callable[[tuple[Any, ...]], tuple[int, ...]]) -> Iterator[tuple[Any, ...]]:
    """The rows of ``sql`` (which ends ``> (?...) ORDER BY ... LIMIT ?``) a page at a time, each
    page starting after the last row of the one before (keyset paging: a page costs its rows)."""
    after = start
    while True:
        rows = read(sql, (*params, *after, EXPORT_PAGE))
        yield from rows
        if len(rows) < EXPORT_PAGE:
            return
        after = key(rows[-1])


def export_rows(read: Read, scope: str | None, history: bool) -> ExportRows:
    """The records of the scope whose ``scope_key`` is ``scope`` (every scope when None) by row
    number (see ``ExportRows``)."""
    where: str = ""
    params: tuple[str, ...] = ()
    if scope is not None:
        # `+`: walk the primary key (row order) and filter, rather than the scope's index, which
        # is not in row order and would be sorted again for every page.
        where, params = "+scope_key = ? AND ", (scope,)
    key = read("SELECT value FROM store_meta WHERE key = ?", (ID_KEY,))
    seq = read("SELECT seq FROM sqlite_sequence WHERE name = 'traces'", ())
    traces = _paged(read, f"SELECT {COLUMNS} FROM traces WHERE {where}rowid_ > ? ORDER BY rowid_ LIMIT ?",
                    params, (-1,), lambda row: (int(row[0]),))
    events: Iterator[tuple[Any, ...]] = iter(())
    if history:
        pages = _paged(read, f"{_HISTORY} WHERE {where}(trace_rowid, id) > (?, ?) ORDER BY trace_rowid, id LIMIT ?",
                       params, (-1, -1), lambda row: (int(row[0]), int(row[9])))
        events = (row[:9] for row in pages)
    if not key:
        raise StoreError("the store has no trace id key (store_meta trace_id_key): it is damaged")
    return ExportRows(str(key[0][0]), int(seq[0][0]) if seq else 0, traces, events)


def restore(run: Run, d: Dialect, items: Iterable[Restored], codec: TraceIdCodec | None,
            id_key: str | None, last_row: int, path: str) -> None:
    """Write ``items`` inside the caller's write transaction (see ``Portable.restore``)."""
    conn = run
    empty = not conn("SELECT EXISTS (SELECT 1 FROM traces) OR EXISTS (SELECT 1 FROM trace_history)").fetchone()[0]
    if codec is not None:
        stored = conn("SELECT value FROM store_meta WHERE key = ?", (ID_KEY,)).fetchone()
        if stored is None or stored[0] != id_key:
            if not empty:
                raise InvalidInput(key_taken_message(path))
            conn("INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)", (ID_KEY, id_key))
    # The highest row number ever handed out: AUTOINCREMENT's counter, or a row above it.
    top = int(conn(
        "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'traces'), 0),"
        " COALESCE((SELECT MAX(rowid_) FROM traces), 0),"
        " COALESCE((SELECT MAX(trace_rowid) FROM trace_history), 0))").fetchone()[0])
    high = max(top, last_row)
    scopes: set[str] = set()
    owner: tuple[str, int] | None = None  # the scope and row the next events belong to
    for item in items:
        if isinstance(item, RestoredEvent):
            if owner is None:
                raise InvalidInput("a history event comes before any trace")
            conn(
                "INSERT INTO trace_history (scope_key, trace_rowid, event, at, old_text, new_text,"
                " old_metadata, new_metadata) VALUES (?,?,?,?,?,?,?,?)",
                (*owner, item.event, item.at, item.old_text, item.new_text, item.old_metadata, item.new_metadata))
            continue
        if codec is None:
            top += 1
            rowid = top
        else:
            rowid = item.rowid
            if not empty and conn(
                    "SELECT EXISTS (SELECT 1 FROM traces WHERE rowid_ = ?)"
                    " OR EXISTS (SELECT 1 FROM trace_history WHERE trace_rowid = ?)", (rowid, rowid)).fetchone()[0]:
                raise InvalidInput(row_taken_message(codec.format(rowid)))
        high = max(high, rowid)
        key = scope_json(item.user, item.agent)
        if key not in scopes:
            scopes.add(key)
            # A wipe: an in-memory index of the scope (any process) is built again from the store.
            d.lock_scope(run, key, reset=True)
        owner = (key, rowid)
        if isinstance(item, RestoredTrace):
            conn(
                "INSERT INTO traces (scope_key, rowid_, user_key, agent_key, session, seq, text, speaker, role,"
                " session_time, event_time, recorded_at, source_id, metadata, attachments, version,"
                " has_session) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (key, rowid, item.user, item.agent, item.session, item.seq, item.text, item.speaker, item.role,
                 item.session_time, item.event_time, item.recorded_at, item.source_id, item.metadata,
                 item.attachments, item.version, int(item.has_session)))
            conn("INSERT INTO dirty_sessions (scope_key, session) VALUES (?, ?) ON CONFLICT DO NOTHING",
                 (key, item.session))
    # Later adds continue above every row the export knew of, deleted ones included.
    if not conn("UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'traces'", (high,)).rowcount:
        conn("INSERT INTO sqlite_sequence (name, seq) VALUES ('traces', ?)", (high,))


def backup(copy: Callable[[sqlite3.Connection], None], dest: Path, path: str) -> dict[str, Any]:
    """Copy the database with ``copy(target)`` (sqlite3's online backup) into the new file
    ``dest``: written beside it under a temporary name (owner-only permissions: it holds every
    trace), checked, then moved into place, so ``dest`` is a whole store or nothing."""
    target = dest.expanduser()
    for taken in (target, Path(f"{target}-wal"), Path(f"{target}-journal")):
        if taken.exists() or taken.is_symlink():
            raise InvalidInput(f"{taken} exists already: a backup goes into a new file (pick another "
                               "name, or move that one away first)")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f".{target.name}.partial-{os.getpid()}")
        os.close(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        raise StoreError(f"cannot create the backup file {target}: {exc}") from None
    try:
        out = sqlite3.connect(part, isolation_level=None)
        try:
            copy(out)
            traces = int(out.execute("SELECT COUNT(*) FROM traces").fetchone()[0])
            check = str(out.execute("PRAGMA quick_check").fetchone()[0])
        finally:
            out.close()
        if check != "ok":
            raise StoreError(f"the backup of {path} failed its check ({check}); nothing was written at {target}")
        for extra in (f"{part}-wal", f"{part}-shm"):  # emptied by the close; not part of the copy
            with contextlib.suppress(FileNotFoundError):
                os.unlink(extra)
        _publish(part, target)
    except sqlite3.Error as exc:
        _remove(part)
        raise StoreError(f"the backup of {path} into {target} failed: {exc}; nothing was written there") from None
    except BaseException:
        _remove(part)
        raise
    return {"store": path, "backup": str(target), "bytes": target.stat().st_size, "traces": traces}


def _publish(part: Path, target: Path) -> None:
    """Give the finished file its name, never replacing a file that appeared there meanwhile."""
    try:
        os.link(part, target)
    except FileExistsError:
        raise InvalidInput(f"{target} appeared while the backup ran; the backup was not written") from None
    except OSError:  # a file system without hard links: the check above must do
        os.replace(part, target)
        return
    os.unlink(part)


def _remove(part: Path) -> None:
    for name in (str(part), f"{part}-wal", f"{part}-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
