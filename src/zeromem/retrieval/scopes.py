"""Each scope's prepared index, kept current with the store, one lock per scope.

A scope's ``PreparedScope`` stays in the process's index cache (cache.py, bounded by
``Config.index_cache_mb``) until scopes used more recently push it out. Before a search, the scope's
sessions that changed since the index's version (in this process or any other) are read in one
read transaction and applied slot by slot (``ScopeIndex.apply`` → ``PreparedScope.update``):
the cost follows what changed, not the size of the scope. A wipe (``delete_scope``,
``reindex``) makes the next search build the index anew. Each scope maps to one of
``LOCK_STRIPES`` locks (a fixed number, however many tenants the store holds): a search and an
update of the same scope never interleave, other scopes are seldom held up. The first use of a
scope, and its first use after the cache dropped it, opens it from its persisted index when it
has one (snapshots.py), else builds it from the store.

Degraded search (docs/design.md#degraded-search): when the embedder or the NER pipeline cannot be loaded or
fails, the dirty sessions cannot be stored; they are derived in memory with the encoders that
work (``Indexer.derive``) and applied to the prepared index like stored sessions (the
*overlay*). The store never holds such a derivation: the sessions stay dirty, and once the
session is derived and stored normally (a healthy process's search or ``index()``), the store's
units replace the in-memory ones through the usual change log.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np

from ..config import RetrievalConfig
from ..encoders.bundle import EMBEDDER, NER, EncoderFailure
from ..errors import ZeromemError
from ..indexes.held import HeldUnits
from ..indexes.scope_index import ScopeIndex
from ..indexes.stored import session_batches
from ..results import IndexCacheStats
from ..store.base import StoreBase
from ..store.fingerprint import check_fingerprint
from ..types import Scope
from . import snapshots
from .cache import IndexCache, Reservation
from .persist_checks import SnapshotRejected
from .prepared import PreparedScope

_log = logging.getLogger("zeromem")

TRIM_EVERY = 50  # updates between returning freed heap memory to the OS (~0.3 ms each)
TRIM_AFTER_EVICTED = 32 << 20  # ... and evicted bytes between two such returns
BYTES_PER_TURN = 16 << 10  # a scope's expected index size per trace, until the cache has measured one
LOAD_PEAK = 2  # loading an index holds about its size again in transient bytes (snapshot blobs, temporaries)
LOCK_STRIPES = 256


class ScopeIndexes:
    """The prepared indexes of the scopes this process searched most recently."""

    def __init__(self, store: StoreBase, indexer: Any, encoders: Any, config: RetrievalConfig,
                 cache_bytes: int = 1024 << 20) -> None:
        self.store = store
        self.indexer = indexer
        self.encoders = encoders
        self.config = config
        self._cache = IndexCache(cache_bytes, slots=lambda prep: prep.n_turns,
                                 version=lambda prep: prep.version, on_evict=self._evicted)
        self._stripes = [threading.RLock() for _ in range(LOCK_STRIPES)]
        self._applied = 0
        self._evicted_since_trim = 0
        # Per scope held: (store version, rowid → expires_at) — reading it is a scan of the
        # scope's metadata, so it is read again only after a write.
        self._expiring: dict[tuple[str, str], tuple[int, dict[int, Any]]] = {}
        # Per scope, the sessions its prepared index holds as derived in memory (an encoder is
        # down): session → what it was derived from and lacks; and the store version at which
        # the dirty sessions were last compared with them.
        self._overlays: dict[tuple[str, str], dict[str, tuple[tuple[Any, ...], frozenset[str]]]] = {}
        self._overlay_version: dict[tuple[str, str], int] = {}
        # Persisted indexes this process refused (persist_checks.py): how many, and the scopes
        # whose rebuilt index is written over the refused one at its next save.
        self.snapshots_discarded = 0
        self._discarded: set[tuple[str, str]] = set()
        self._discard_lock = threading.Lock()

    def lock(self, scope: Scope) -> threading.RLock:
        return self._stripes[hash(scope.key) % LOCK_STRIPES]

    def held(self, scope: Scope) -> PreparedScope | None:
        """The scope's prepared index as it is in memory now (no sync), or None."""
        prep: PreparedScope | None = self._cache.peek(scope.key)
        return prep

    def held_scopes(self) -> list[Scope]:
        """The scopes held in memory."""
        return [_scope_of(key) for key in self._cache.held_keys()]

    def expiring(self, scope: Scope) -> dict[int, Any]:
        """``store.expiring(scope)``, read again only when the scope's version moved."""
        version = self.store.scope_version(scope)
        cached = self._expiring.get(scope.key)
        if cached is not None and cached[0] == version:
            return cached[1]
        found: dict[int, Any] = self.store.expiring(scope)  # read after the version: as new or newer
        self._expiring[scope.key] = (version, found)
        return found

    def forget(self, scope: Scope) -> None:
        """Drop the scope's prepared index and what is kept beside it (after an erasure)."""
        with self.lock(scope):
            self._cache.discard(scope.key)
            self._expiring.pop(scope.key, None)
            self._forget_overlay(scope)

    def cache_stats(self) -> IndexCacheStats:
        """Bytes and scopes the index cache holds, its budget, hits, misses and evictions."""
        return self._cache.stats()

    def waiting_for_ner(self, scope: Scope) -> int:
        """How many sessions of ``scope`` are held in memory without entity mentions."""
        return sum(NER in missing for _, missing in self._overlays.get(scope.key, {}).values())

    def prepared(self, scope: Scope) -> PreparedScope:
        """The scope's prepared index, brought up to date with the store first (and, while an
        encoder is down, with its dirty sessions derived in memory)."""
        with self.lock(scope):
            if self.indexer.pending_sessions(scope) and not self.encoders.failures():
                try:
                    self.indexer.refresh(scope)
                except EncoderFailure as exc:
                    self.encoders.fail(exc.component, exc)
            prep = self._from_store(scope)
            if self.encoders.failures():
                self._overlay(scope, prep)
            return prep

    def save(self, scope: Scope, *, force: bool = False) -> bool:
        """Persist the scope's prepared index when due (snapshots.save); sessions derived in
        memory only are never persisted. Returns whether it was written."""
        with self.lock(scope):
            prep = self.held(scope)
            if prep is None or self._overlays.get(scope.key):
                return False
            # A refused snapshot may carry the current version: only a forced save replaces it.
            replace = scope.key in self._discarded
            written = snapshots.save(self.store, scope, prep, self.config, force=force or replace)
            if written:
                self._discarded.discard(scope.key)
            return written

    def _from_store(self, scope: Scope) -> PreparedScope:
        """The scope's prepared index with every change the store logged applied."""
        with self.lock(scope):
            prep: PreparedScope | None = self._cache.get(scope.key)
            current = self.store.scope_version(scope)
            if prep is not None and prep.index.version == current:
                return prep
            # The query embedder must be the one that made the stored vectors (checked when
            # the scope is loaded or its vectors changed, not on every search). Without an
            # embedder no vector is compared, so there is nothing to check; nor in a scope
            # nothing was ever written to (an "auto" embedder is not chosen yet).
            if current and self.encoders.check(EMBEDDER) is None:
                check_fingerprint(self.store, scope, self.encoders.fingerprint)
            if prep is not None:
                return self._brought_up(scope, prep, current, None)
            # Room first, for the index and for what loading it holds at the same time (the
            # snapshot's bytes, a build's temporaries): never built on top of a full budget.
            expected = self.store.count(scope) * self._cache.bytes_per_slot(BYTES_PER_TURN)
            reservation = self._cache.make_room(LOAD_PEAK * expected)
            try:
                self._trim_after_evictions()
                try:
                    loaded = snapshots.load(self.store, scope)
                except SnapshotRejected as exc:
                    self._discard(scope, str(exc))
                    loaded = None
                self._forget_overlay(scope)
                if loaded is None:
                    return self._brought_up(scope, None, current, reservation)
                try:
                    return self._brought_up(scope, loaded, current, reservation)
                except (ZeromemError, EncoderFailure):
                    raise  # the store or an encoder failed, not the snapshot
                except Exception as exc:  # noqa: BLE001 - a loaded index the catch-up cannot apply to
                    self._discard(scope, f"the changes since it could not be applied ({type(exc).__name__}: {exc})")
                    self._cache.discard(scope.key)
                    return self._brought_up(scope, None, current, reservation)
            finally:
                self._cache.release(reservation)  # a no-op once put gave it back

    def _discard(self, scope: Scope, reason: str) -> None:
        """Count and report a persisted index that is not used; the scope is rebuilt from its
        traces (a warning, not an error: nothing stored is lost)."""
        with self._discard_lock:
            self.snapshots_discarded += 1
            self._discarded.add(scope.key)
        _log.warning("zeromem: the persisted index of a scope was discarded and is rebuilt from its "
                     "traces: %s", reason)

    def _brought_up(self, scope: Scope, prep: PreparedScope | None, current: int,
                    reservation: Reservation | None) -> PreparedScope:
        """``prep`` (None: nothing loaded) with the store's changes since its version applied,
        held in the cache (which gives the load's reservation back)."""
        if prep is not None and prep.index.version == current:
            self._ready(prep)
            self._cache.put(scope.key, prep, reservation)
            return prep
        known = set(prep.index.entity_row) if prep is not None else set()
        delta = (self.store.read_changes(scope, prep.index.version, known, HeldUnits(prep.index))
                 if prep is not None else self.store.read_changes(scope, 0, known))
        if prep is None or delta["full"]:
            from ..encoders.tokenize import tokenize_many
            prep = PreparedScope(ScopeIndex(scope, tokenize_many))
            self._forget_overlay(scope)
            if known:
                delta = self.store.read_changes(scope, 0, set())
        index = prep.index
        index.add_entity_vectors({name: _vector(blob) for name, blob in delta["entities"].items()})
        prep.update(index.apply(session_batches(delta)))
        index.version = delta["version"]
        overlay = self._overlays.get(scope.key, {})
        for name in delta["sessions"]:
            overlay.pop(name, None)  # the store's units replaced the in-memory ones
        self._applied += 1
        if delta["full"] or len(delta["sessions"]) > 100 or self._applied % TRIM_EVERY == 0:
            snapshots.release_memory()  # a build, and many small updates, leave freed blocks
        self._ready(prep)
        self._cache.put(scope.key, prep, reservation)
        self._trim_after_evictions()
        return prep

    def _ready(self, prep: PreparedScope) -> None:
        """Fold the graph a scope searched in full uses (views/ppr_folded.py) before the cache
        measures the scope, so its bytes count."""
        if prep.n_live <= self.config.large_scope_turns:
            prep.graph.folding(self.config.ppr_damping)

    def _evicted(self, key: tuple[str, str], prep: PreparedScope) -> None:
        """A scope the cache dropped: persist it first if it is large and changed (its next use
        then reads arrays instead of re-deriving it). Runs in the thread of the search that made
        room, which holds another scope's lock: the dropped scope's lock is only tried, never
        waited for (two such threads would otherwise wait on each other)."""
        scope = _scope_of(key)
        self._expiring.pop(key, None)
        lock = self.lock(scope)
        if lock.acquire(blocking=False):
            try:
                if not self._overlays.get(key):
                    snapshots.save(self.store, scope, prep, self.config)
                self._forget_overlay(scope)
            except Exception as exc:  # noqa: BLE001 - a snapshot is a cache; the store is intact
                _log.warning("zeromem: could not persist an evicted scope's index: %s", exc)
            finally:
                lock.release()

    def _trim_after_evictions(self) -> None:
        """Hand the memory of evicted indexes back to the OS once enough was dropped (called when
        the evicted indexes are no longer referenced: after ``put`` / ``make_room`` returned)."""
        self._evicted_since_trim += self._cache.take_evicted_bytes()
        if self._evicted_since_trim >= TRIM_AFTER_EVICTED:
            self._evicted_since_trim = 0
            snapshots.release_memory()

    def _overlay(self, scope: Scope, prep: PreparedScope) -> None:
        """Apply the scope's dirty sessions, derived in memory with the encoders that work.

        Runs when the store's version moved since the last time (every write moves it), and
        re-derives only sessions whose traces changed since they were derived. Deterministic:
        the units depend on the traces, the stored encodings and which encoders work.
        """
        key = scope.key
        if self._overlay_version.get(key) == prep.index.version:
            return
        overlay = self._overlays.setdefault(key, {})
        dirty = self.indexer.pending_sessions(scope)
        unchanged = {name: fp for name, (fp, _) in overlay.items()}
        while True:  # each failure takes one more encoder out, so this ends
            failed = self.encoders.failures()
            try:
                derived = self.indexer.derive(scope, dirty, embed=EMBEDDER not in failed,
                                              ner=NER not in failed, unchanged=unchanged)
                break
            except EncoderFailure as exc:
                if exc.component in failed:
                    raise  # an encoder that was left out cannot fail: a bug, not a fallback
                self.encoders.fail(exc.component, exc)
        if derived:
            prep.update(prep.index.apply([d.units for d in derived]))
        for d in derived:
            overlay[d.units.session] = (d.fingerprint, d.lacking)
        self._overlay_version[key] = prep.index.version

    def _forget_overlay(self, scope: Scope) -> None:
        self._overlays.pop(scope.key, None)
        self._overlay_version.pop(scope.key, None)


def _scope_of(key: tuple[str, str]) -> Scope:
    """The scope a cache key (``Scope.key``: empty strings for no user / agent) stands for."""
    return Scope(key[0] or None, key[1] or None)


def _vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)
