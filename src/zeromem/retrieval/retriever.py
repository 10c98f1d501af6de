"""Retrieval for ``Memory``: one checked request → the scope's current index → the engine.

The parts, each in its own module: query validation (query.py), each scope's prepared index
kept current with the store (scopes.py) and its persisted copy (snapshots.py), the engine
(engine.py), what a degraded search skips and the readiness report (health.py), and rendering
evidence with its captions (context.py). ``SearchResult.degraded`` names what was skipped and
why (docs/design.md#degraded-search).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..config import RetrievalConfig
from ..encoders.bundle import EMBEDDER, EncoderFailure
from ..results import Health, IndexCacheStats
from ..store.base import StoreBase
from ..types import Evidence, Scope
from . import health
from .context import render_evidence
from .engine import Engine, SearchResult
from .prepared import PreparedScope
from .query import search_request
from .render import RenderedContext
from .rules import checked_rules
from .scopes import ScopeIndexes


class Retriever:
    def __init__(self, store: StoreBase, indexer: Any, encoders: Any, config: RetrievalConfig,
                 cache_bytes: int = 1024 << 20) -> None:
        checked_rules(config.disabled_rules)  # an unknown family fails here, not at the first search
        self.store = store
        self.encoders = encoders
        self.config = config
        self.scopes = ScopeIndexes(store, indexer, encoders, config, cache_bytes)
        self._engine: Engine | None = None
        self._engine_lock = threading.Lock()

    def engine(self) -> Engine:
        """The engine; the first call also loads the embedder (a failure is recorded, not raised:
        searches then skip the dense channel)."""
        with self._engine_lock:
            if self._engine is None:
                from ..encoders.tokenize import tokenize
                self.encoders.check(EMBEDDER)
                self._engine = Engine(self.config, tokenize, self._encode_query)
            return self._engine

    def _encode_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.encoders.embedder.encode_query(text)
        return vector

    def _load_engine(self) -> None:
        with contextlib.suppress(Exception):  # anything else is raised by the search itself
            self.engine()

    def prepared(self, scope: Scope) -> PreparedScope:
        """The scope's prepared index, up to date with the store (see scopes.py)."""
        return self.scopes.prepared(scope)

    def save(self, scope: Scope, *, force: bool = False) -> bool:
        """Persist the scope's prepared index when due (see snapshots.py)."""
        return self.scopes.save(scope, force=force)

    def save_all(self) -> None:
        """``save`` every scope this retriever holds (Memory.close)."""
        for scope in self.scopes.held_scopes():
            self.save(scope)

    def forget(self, scope: Scope) -> None:
        """Drop the scope's in-memory index (its traces were erased)."""
        self.scopes.forget(scope)

    def cache_stats(self) -> IndexCacheStats:
        """The index cache of this process (see cache.py)."""
        return self.scopes.cache_stats()

    def degraded(self, scope: Scope) -> tuple[set[str], list[str]]:
        """(channels a search of ``scope`` skips now, why): see health.degraded."""
        return health.degraded(self.encoders.failures(), self.scopes.waiting_for_ner(scope))

    def health(self, scope: Scope) -> Health:
        """See ``Memory.health``."""
        return health.health(self.store, self.encoders, scope, self.scopes.cache_stats(),
                             self.scopes.snapshots_discarded)

    def search(self, scope: Scope, query: Any, *, k: int, session: str | None, as_of: Any,
               filters: dict[str, Any] | None, now: Any = None) -> SearchResult:
        request = search_request(self.store, scope, query, k=k, session=session, as_of=as_of,
                                 filters=filters, now=now, expiring=self.scopes.expiring)
        if self._engine is None:
            # The first search of a process loads the embedder (~0.5 s) while the scope's
            # index loads: ONNX Runtime builds its session outside the GIL.
            loading = threading.Thread(target=self._load_engine, name="zeromem-load-embedder", daemon=True)
            loading.start()
            with self.scopes.lock(scope):
                self.scopes.prepared(scope)
            loading.join()
        engine = self.engine()
        with self.scopes.lock(scope):
            prep = self.scopes.prepared(scope)
            skip, notes = self.degraded(scope)
            try:
                result = engine.search(prep, request.query, k=request.k, session=request.session,
                                       as_of=request.as_of, allowed_rowids=request.allowed_rowids,
                                       skip=skip, hidden_rowids=request.hidden_rowids,
                                       asked_on=request.asked_on)
            except EncoderFailure as exc:  # the query embedding failed: search without it
                self.encoders.fail(exc.component, exc)
                skip, notes = self.degraded(scope)
                result = engine.search(prep, request.query, k=request.k, session=request.session,
                                       as_of=request.as_of, allowed_rowids=request.allowed_rowids,
                                       skip=skip, hidden_rowids=request.hidden_rowids,
                                       asked_on=request.asked_on)
            result.degraded = notes
            return result

    def render(self, scope: Scope, evidence: Sequence[Evidence], budget_tokens: int | None) -> RenderedContext:
        with self.scopes.lock(scope):
            return render_evidence(evidence, budget_tokens, self.scopes.held(scope), self.store.ids.parse)
