"""Benchmark memories kept on disk and reopened by a later run, so ingest is paid once.

A corpus's memory is named by a digest of zeromem's version and the corpus — its name and every
unit's key and draft — so another release, another data file, another ``--limit`` or
``--pad-sessions`` draw, or edited data never reopens a memory built from something else. It is
built under a name of its own and published under its real name (a hard link) only once every
unit is stored and indexed: a run stopped mid-ingest leaves no file that a rerun would take as
complete. Two runs may build the same corpus at once (two bench processes on one folder): the
first to finish publishes its build (the link fails when the name is taken); the other keeps
the published one. A partial file whose process is gone is removed by the next build. What the
digest cannot see is a change to the write path's code within a version, or to its
configuration: after either, keep memories in a new folder (a different embedder is refused on
open, ``EmbedderMismatch``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zeromem import __version__
from zeromem.config import Config

from .records import Corpus, elapsed_ms


def memory_path(folder: Path, corpus: Corpus) -> Path:
    """Where ``corpus``'s memory is kept in ``folder``."""
    digest = hashlib.sha256(f"zeromem {__version__}\0{corpus.name}".encode())
    for unit in corpus.units:
        digest.update(b"\0" + unit.key.encode() + b"\0")
        digest.update(json.dumps(unit.draft, sort_keys=True, default=str).encode())
    return folder / f"{digest.hexdigest()[:24]}.db"


def stored_memory(folder: Path, corpus: Corpus, config: Config, *, progress: bool = False,
                  warm: Callable[[Any], None] | None = None) -> tuple[Any, float | None]:
    """(the memory of ``corpus`` kept in ``folder``, its ingest time in ms: storing and indexing
    every unit — None when a previous run stored it in full and it was reopened).
    ``progress``: a bar while indexing; ``warm``: called on a new memory before the clock starts
    (loading the models is setup, not ingest)."""
    from zeromem.memory import Memory

    folder.mkdir(parents=True, exist_ok=True)
    path = memory_path(folder, corpus)
    ingest_ms = None
    if not path.exists():
        _remove_orphans(folder, path.stem)
        partial = folder / f"{path.stem}.{os.getpid()}.{secrets.token_hex(4)}.partial.db"
        try:
            with Memory(partial, user=corpus.name, config=config) as mem:
                if warm is not None:
                    warm(mem)
                start = time.perf_counter()
                mem.add_many([unit.draft for unit in corpus.units], user=corpus.name)
                mem.index(user=corpus.name, progress=progress)
                ingest_ms = elapsed_ms(start)
            _fold_log(partial)  # one file holds everything: it can be published by a link
            with contextlib.suppress(FileExistsError):  # another run published it first: use that
                os.link(partial, path)
        finally:
            remove_db(partial)
    return Memory(path, user=corpus.name, config=config), ingest_ms



def remove_db(path: Path) -> None:
    """Remove a SQLite memory file with its write-ahead log and shared-memory index."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _fold_log(path: Path) -> None:
    """Fold the write-ahead log into the database file and stop using one, so the file alone
    is the whole memory (the store turns the log back on when it opens the file)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()


def _remove_orphans(folder: Path, stem: str) -> None:
    """Remove the partial builds of ``stem`` whose process is no longer running (a run that was
    stopped); a live process's build is left alone."""
    for partial in folder.glob(f"{stem}.*.partial.db"):
        pid = partial.name[len(stem) + 1:].split(".", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            remove_db(partial)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True
