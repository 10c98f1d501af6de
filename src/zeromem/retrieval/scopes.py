"""Each scope's prepared index, kept current with the store, one lock per scope.

A scope's ``PreparedScope`` lives as long as the ``Memory``. Before a search, the scope's
sessions that changed since the index's version (in this process or any other) are read in one
read transaction and applied slot by slot (``ScopeIndex.apply`` → ``PreparedScope.update``):
the cost follows what changed, not the size of the scope. A wipe (``delete_scope``,
``reindex``) makes the next search build the index anew. Each scope has its own lock: a
search and an update of the same scope never interleave, other scopes are not held up. The
first use of a scope opens it from its persisted index when it has one (snapshots.py).

Degraded search (docs/decisions.md): when the embedder or the NER pipeline cannot be loaded or
fails, the dirty sessions cannot be stored; they are derived in memory with the encoders that
work (``Indexer.derive``) and applied to the prepared index like stored sessions (the
*overlay*). The store never holds such a derivation: the sessions stay dirty, and once the
session is derived and stored normally (a healthy process's search or ``index()``), the store's
units replace the in-memory ones through the usual change log.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..config import RetrievalConfig
from ..encoders.bundle import EMBEDDER, NER, EncoderFailure
from ..indexes.scope_index import ScopeIndex, session_batches
from ..store.fingerprint import check_fingerprint
from ..types import Scope
from . import snapshots
from .prepared import PreparedScope

TRIM_EVERY = 50  # updates between returning freed heap memory to the OS (~0.3 ms each)


class ScopeIndexes:
    """The prepared index of every scope this process has searched."""

    def __init__(self, store: Any, indexer: Any, encoders: Any, config: RetrievalConfig) -> None:
        self.store = store
        self.indexer = indexer
        self.encoders = encoders
        self.config = config
        self._prepared: dict[tuple[str, str], PreparedScope] = {}
        self._locks: dict[tuple[str, str], threading.RLock] = {}
        self._locks_guard = threading.Lock()
        self._applied = 0
        # Per scope, the sessions its prepared index holds as derived in memory (an encoder is
        # down): session → what it was derived from and lacks; and the store version at which
        # the dirty sessions were last compared with them.
        self._overlays: dict[tuple[str, str], dict[str, tuple[tuple, frozenset[str]]]] = {}
        self._overlay_version: dict[tuple[str, str], int] = {}

    def lock(self, scope: Scope) -> threading.RLock:
        with self._locks_guard:
            return self._locks.setdefault(scope.key, threading.RLock())

    def held(self, scope: Scope) -> PreparedScope | None:
        """The scope's prepared index as it is in memory now (no sync), or None."""
        return self._prepared.get(scope.key)

    def held_scopes(self) -> list[Scope]:
        """The scopes held in memory."""
        return [Scope(key[0] or None, key[1] or None) for key in list(self._prepared)]

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
            prep = self._prepared.get(scope.key)
            if prep is None or self._overlays.get(scope.key):
                return False
            return snapshots.save(self.store, scope, prep, self.config, force=force)

    def _from_store(self, scope: Scope) -> PreparedScope:
        """The scope's prepared index with every change the store logged applied."""
        with self.lock(scope):
            prep = self._prepared.get(scope.key)
            current = self.store.scope_version(scope)
            if prep is not None and prep.index.version == current:
                return prep
            # The query embedder must be the one that made the stored vectors (checked when
            # the scope is loaded or its vectors changed, not on every search). Without an
            # embedder no vector is compared, so there is nothing to check; nor in a scope
            # nothing was ever written to (an "auto" embedder is not chosen yet).
            if current and self.encoders.check(EMBEDDER) is None:
                check_fingerprint(self.store, scope, self.encoders.fingerprint)
            if prep is None:
                prep = snapshots.load(self.store, scope)
                self._forget_overlay(scope)
            if prep is not None and prep.index.version == current:
                self._prepared[scope.key] = prep
                return prep
            known = set(prep.index.entity_row) if prep is not None else set()
            delta = self.store.read_changes(scope, prep.index.version if prep is not None else 0, known)
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
            self._prepared[scope.key] = prep
            return prep

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


def _vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)
