"""Per-scope retrieval service: keeps a prepared snapshot per scope version and runs the engine."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

from ..config import RetrievalConfig
from ..errors import InvalidInput
from ..indexes.snapshot import load_snapshot
from ..store import validate
from ..types import Evidence, Scope
from .engine import Engine, SearchResult
from .prepared import PreparedScope, prepare
from .render import RenderedContext, render


ALIAS_LABELS = frozenset({"PERSON", "NAME"})


class Retriever:
    def __init__(self, store: Any, indexer: Any, encoders: Any, config: RetrievalConfig) -> None:
        self.store = store
        self.indexer = indexer
        self.encoders = encoders
        self.config = config
        self._prepared: dict[tuple[str, str], PreparedScope] = {}
        self._lock = threading.Lock()
        self._engine: Engine | None = None

    def engine(self) -> Engine:
        if self._engine is None:
            from ..encoders.tokenize import tokenize
            self._engine = Engine(self.config, tokenize, self.encoders.embedder.encode_query)
        return self._engine

    def prepared(self, scope: Scope) -> PreparedScope:
        """The scope's prepared snapshot, refreshed first if any of its traces changed."""
        with self._lock:
            if self.indexer.pending_sessions(scope):
                self.indexer.refresh(scope)
            version = self.store.scope_version(scope)
            cached = self._prepared.get(scope.key)
            if cached is not None and cached.snap.version == version:
                return cached
            from ..encoders.aliases import link_aliases
            from ..encoders.tokenize import tokenize_many
            snap = load_snapshot(self.store, scope, tokenize_many)
            # Only names take aliases ("mel" → "melanie"); a noun phrase is no nickname.
            counts: dict[str, int] = {}
            for _, entity, count in snap.mentions:
                if snap.entity_label.get(entity) in ALIAS_LABELS:
                    counts[entity] = counts.get(entity, 0) + count
            prep = prepare(snap, link_aliases(sorted(counts), counts))
            self._prepared[scope.key] = prep
            return prep

    def search(self, scope: Scope, query: Any, *, k: int, session: str | None, as_of: Any,
               filters: dict[str, Any] | None) -> SearchResult:
        query = validate.clean_text(query, field="query", max_chars=10_000)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInput(f"k must be a positive int, got {k!r}")
        cutoff = validate.clean_time(as_of, "as_of")
        allowed = None
        if filters:
            allowed = {int(t.id[1:]) for t in self.store.list(scope, metadata=filters)}
        prep = self.prepared(scope)
        return self.engine().search(prep, query, k=k, session=session,
                                    as_of=dt.datetime.fromisoformat(cutoff) if cutoff else None,
                                    allowed_rowids=allowed)

    def render(self, scope: Scope, evidence: list[Evidence], budget_tokens: int | None) -> RenderedContext:
        prep = self._prepared.get(scope.key)
        captions = {}
        if prep is not None:
            for ev in evidence:
                trace = prep.snap.traces.get(int(ev.trace_ids[0][1:]))
                if trace is not None and trace.attachments:
                    captions[trace.id] = trace.attachments
        return render(evidence, budget_tokens=budget_tokens, captions=captions)
