"""When a scope's prepared index is read from, and written to, the store (the snapshot cache).

``persist.py`` is the format; this is the policy. A scope with a persisted index opens from it
(then the sessions that changed since are applied as usual); a large scope's index is written
back when it has changed enough since it was last written (``RetrievalConfig``:
``snapshot_min_turns``, ``snapshot_stale_share``), or always when forced (``Memory.index``).
"""

from __future__ import annotations

import contextlib
import ctypes

from ..config import RetrievalConfig
from ..store.base import StoreBase
from ..types import Scope
from . import persist
from .persist_checks import SnapshotRejected, check_traces
from .prepared import PreparedScope

# A persisted index is written again once this many turns (or snapshot_stale_share of them)
# changed since: opening a scope re-applies every session changed since its snapshot, ~1-2 ms
# of CPU per changed turn for a 50-500-turn scope on PostgreSQL (cold first search 32 ms fresh,
# 56 ms 16-30 behind, 94 ms 31-60 behind), while writing a 255-turn scope's costs ~43 ms. At
# 100 (before 2026-12-02) the small scopes a service writes to most were reopened tens of
# versions behind again and again.
RESAVE_MIN_CHANGES = 16


def load(store: StoreBase, scope: Scope) -> PreparedScope | None:
    """The scope's persisted index, if it has one of this format; raises
    ``persist.SnapshotRejected`` (nothing else) when the stored one must not be used: its
    checksum or bounds checks fail, it does not hold the traces the store holds outside the
    sessions changed since (a moved version row), or loading it fails in any other way. The
    caller then rebuilds the scope from its traces: a snapshot is a cache, never a source."""
    from ..encoders.tokenize import tokenize_many

    stored = store.load_snapshot(scope, persist.FORMAT)
    if stored is None:
        return None
    version, facts, parts, traces = stored
    try:
        prep = persist.decode(scope, tokenize_many, facts, parts, traces, version)
        unsettled = getattr(traces, "unsettled", None)
        if unsettled is not None:
            check_traces(prep.index, traces.sessions(), unsettled)
    except SnapshotRejected:
        raise
    except Exception as exc:
        raise SnapshotRejected(f"it could not be loaded ({type(exc).__name__}: {exc})") from exc
    finally:
        del parts, traces
        release_memory()
    prep.index.version = version
    return prep


def save(store: StoreBase, scope: Scope, prep: PreparedScope, config: RetrievalConfig, *, force: bool = False) -> bool:
    """Persist ``prep`` when it is large and has changed enough since it was last persisted
    (or always, with ``force``); returns whether it was written."""
    if prep.n_live == 0:
        return False
    # An index behind the store (another process wrote or erased since) is not worth keeping,
    # and must not put back words of traces erased meanwhile.
    if store.scope_version(scope) != prep.index.version:
        return False
    if not force:
        if prep.n_live < config.snapshot_min_turns:
            return False
        stored = store.snapshot_version(scope, persist.FORMAT)
        due = max(RESAVE_MIN_CHANGES, config.snapshot_stale_share * prep.n_live)
        if stored is not None and stored == prep.index.version:
            return False
        if stored is not None and prep.changed_since_save < due:
            return False
    facts, parts = persist.encode(prep, scope)
    store.save_snapshot(scope, prep.index.version, facts, parts, persist.FORMAT)
    prep.changed_since_save = 0
    return True


def release_memory() -> None:
    """Hand freed heap memory back to the OS (glibc's malloc_trim) after building or loading a
    large index: the build's temporaries otherwise stay in the process's resident size."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").malloc_trim(0)


M_ARENA_MAX = -8  # glibc's mallopt parameter


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Let glibc's malloc keep at most ``arenas`` arenas (a server process): by default each
    request thread may get its own, and memory freed in one (an evicted index) is not reused by
    the others, so resident memory creeps above what the index cache holds."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").mallopt(M_ARENA_MAX, arenas)
