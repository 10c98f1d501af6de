"""Benchmark memories kept on disk and reopened by a later run, so ingest is paid once.

A corpus's memory is named by a digest of zeromem's version and the corpus — its name and every
unit's key and draft — so another release, another data file, another ``--limit`` or
``--pad-sessions`` draw, or edited data never reopens a memory built from something else. It is
built under a temporary name and renamed once every unit is stored and indexed: a run stopped
mid-ingest leaves no file that a rerun would take as complete. What the digest cannot see is a
change to the write path's code within a version, or to its configuration: after either, keep
memories in a new folder (a different embedder is refused on open, ``EmbedderMismatch``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__
from ..config import Config
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
    from ..memory import Memory
    from .stream import _remove_db

    folder.mkdir(parents=True, exist_ok=True)
    path = memory_path(folder, corpus)
    ingest_ms = None
    if not path.exists():
        partial = path.with_suffix(".partial.db")
        _remove_db(partial)  # what a stopped run left
        with Memory(partial, user=corpus.name, config=config) as mem:
            if warm is not None:
                warm(mem)
            start = time.perf_counter()
            mem.add_many([unit.draft for unit in corpus.units], user=corpus.name)
            mem.index(user=corpus.name, progress=progress)
            ingest_ms = elapsed_ms(start)
        # Moved, not copied; a log that closing did not fold in goes along, before the file.
        for suffix in ("-wal", ""):
            if Path(f"{partial}{suffix}").exists():
                Path(f"{partial}{suffix}").rename(f"{path}{suffix}")
        _remove_db(partial)  # its -shm
    return Memory(path, user=corpus.name, config=config), ingest_ms
