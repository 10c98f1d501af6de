"""Per-scope retrieval service: keeps each scope's prepared index current and runs the engine.

A scope's ``PreparedScope`` lives as long as the ``Memory``. Before a search, the scope's
sessions that changed since the index's version (in this process or any other) are read in one
read transaction and applied slot by slot (``ScopeIndex.apply`` → ``PreparedScope.update``):
the cost follows what changed, not the size of the scope. A wipe (``delete_scope``,
``reindex``) makes the next search build the index anew. Each scope has its own lock: a
search and an update of the same scope never interleave, other scopes are not held up.

Degraded search (docs/decisions.md): when the embedder or the NER pipeline cannot be loaded or
fails, the dirty sessions cannot be stored; they are derived in memory with the encoders that
work (``Indexer.derive``) and applied to the prepared index like stored sessions, and the search
skips the channels the missing encoder feeds. The store never holds such a derivation: the
sessions stay dirty, and once the session is derived and stored normally (a healthy process's
search or ``index()``), the store's units replace the in-memory ones through the usual change
log. ``SearchResult.degraded`` names what was skipped and why; ``health()`` reports it too.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import threading
from typing import Any

import numpy as np

from ..config import RetrievalConfig
from ..encoders.bundle import EMBEDDER, NER, EncoderFailure
from ..errors import InvalidInput
from ..indexes.scope_index import ScopeIndex, session_batches
from ..lifecycle.service import expired_rowids
from ..store import validate
from ..store.dates import to_utc
from ..store.fingerprint import check_fingerprint
from ..types import Evidence, Scope
from . import persist
from .engine import DENSE, GRAPH, Engine, SearchResult
from .prepared import PreparedScope
from .render import RenderedContext, render

TRIM_EVERY = 50  # updates between returning freed heap memory to the OS (~0.3 ms each)


class Retriever:
    def __init__(self, store: Any, indexer: Any, encoders: Any, config: RetrievalConfig) -> None:
        self.store = store
        self.indexer = indexer
        self.encoders = encoders
        self.config = config
        self._prepared: dict[tuple[str, str], PreparedScope] = {}
        self._locks: dict[tuple[str, str], threading.RLock] = {}
        self._locks_guard = threading.Lock()
        self._engine: Engine | None = None
        self._engine_lock = threading.Lock()
        self._applied = 0
        # Per scope, the sessions its prepared index holds as derived in memory (an encoder is
        # down): session → what it was derived from and lacks; and the store version at which
        # the dirty sessions were last compared with them.
        self._overlays: dict[tuple[str, str], dict[str, tuple[tuple, frozenset[str]]]] = {}
        self._overlay_version: dict[tuple[str, str], int] = {}

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

    def lock(self, scope: Scope) -> threading.RLock:
        with self._locks_guard:
            return self._locks.setdefault(scope.key, threading.RLock())

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

    def _from_store(self, scope: Scope) -> PreparedScope:
        """The scope's prepared index with every change the store logged applied."""
        with self.lock(scope):
            prep = self._prepared.get(scope.key)
            current = self.store.scope_version(scope)
            if prep is not None and prep.index.version == current:
                return prep
            # The query embedder must be the one that made the stored vectors (checked when
            # the scope is loaded or its vectors changed, not on every search). Without an
            # embedder no vector is compared, so there is nothing to check.
            if self.encoders.check(EMBEDDER) is None:
                check_fingerprint(self.store, scope, self.encoders.fingerprint)
            if prep is None:
                prep = self._load(scope)
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
                _release_memory()  # a build, and many small updates, leave freed blocks in the heap
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

    def degraded(self, scope: Scope) -> tuple[set[str], list[str]]:
        """(channels a search of ``scope`` skips now, one line per failed component saying why
        and what it skips). Empty when every encoder works, or when the one that failed is
        not needed: NER is only needed for sessions not yet stored with their mentions."""
        failed = self.encoders.failures()
        waiting = sum(NER in missing for _, missing in self._overlays.get(scope.key, {}).values())
        skip: set[str] = set()
        notes: list[str] = []
        if EMBEDDER in failed:
            skip.add(DENSE)
            notes.append(_note(EMBEDDER, failed[EMBEDDER]))
        if NER in failed and waiting:
            skip.add(GRAPH)
            notes.append(_note(NER, failed[NER], f" ({waiting} session(s) have no entity mentions yet)"))
        return skip, notes

    def health(self, scope: Scope) -> dict[str, Any]:
        """See ``Memory.health``."""
        try:
            self.store.scope_version(scope)
            store = "ok"
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            store = f"error: {exc}"
        report: dict[str, Any] = {"ready": store == "ok", "store": store}
        for component in (EMBEDDER, NER):
            reason = self.encoders.check(component)
            report[component] = "ok" if reason is None else f"unavailable: {reason}"
        failed = self.encoders.failures()
        report["degraded"] = [_note(c, failed[c], "" if c == EMBEDDER else " (for as long as sessions "
                                    "written without it wait for entity mentions)")
                              for c in (EMBEDDER, NER) if c in failed]
        return report

    def _load(self, scope: Scope) -> PreparedScope | None:
        """The scope's persisted index (see persist.py), if there is a usable one."""
        from ..encoders.tokenize import tokenize_many

        stored = self.store.load_snapshot(scope, persist.FORMAT)
        if stored is None:
            return None
        version, facts, parts, traces = stored
        prep = persist.decode(scope, tokenize_many, facts, parts, traces)
        if prep is not None:
            prep.index.version = version
        del parts, traces
        _release_memory()
        return prep

    def save(self, scope: Scope, *, force: bool = False) -> bool:
        """Persist the scope's prepared index when it is large and has changed enough since it
        was last persisted (or always, with ``force``); returns whether it was written."""
        with self.lock(scope):
            prep = self._prepared.get(scope.key)
            if prep is None or prep.n_live == 0 or self._overlays.get(scope.key):
                return False  # sessions derived in memory only are never persisted
            if not force:
                if prep.n_live < self.config.snapshot_min_turns:
                    return False
                stored = self.store.snapshot_version(scope, persist.FORMAT)
                due = max(100, self.config.snapshot_stale_share * prep.n_live)
                if stored is not None and stored == prep.index.version:
                    return False
                if stored is not None and prep.changed_since_save < due:
                    return False
            facts, parts = persist.encode(prep, compact=prep.n_live > self.config.large_scope_turns)
            self.store.save_snapshot(scope, prep.index.version, facts, parts, persist.FORMAT)
            prep.changed_since_save = 0
            return True

    def save_all(self) -> None:
        """``save`` every scope this retriever holds (Memory.close)."""
        for key in list(self._prepared):
            self.save(Scope(key[0] or None, key[1] or None))

    def search(self, scope: Scope, query: Any, *, k: int, session: str | None, as_of: Any,
               filters: dict[str, Any] | None) -> SearchResult:
        query = validate.clean_text(query, field="query", max_chars=10_000)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInput(f"k must be a positive int, got {k!r}")
        cutoff = validate.clean_time(as_of, "as_of")
        allowed = None
        if filters:
            allowed = {int(t.id[1:]) for t in self.store.list(scope, metadata=filters)}
        hidden = expired_rowids(self.store.expiring(scope), cutoff)
        loading = None
        if self._engine is None:
            # The first search of a process loads the embedder (~0.5 s) while the scope's
            # index loads: ONNX Runtime builds its session outside the GIL.
            loading = threading.Thread(target=self._load_engine, name="zeromem-load-embedder", daemon=True)
            loading.start()
        with self.lock(scope):
            prep = self.prepared(scope)
        if loading is not None:
            loading.join()
        engine = self.engine()
        with self.lock(scope):
            prep = self.prepared(scope)
            # Naive UTC, like the prepared index's turn times (store.dates.utc_key).
            when = to_utc(dt.datetime.fromisoformat(cutoff)) if cutoff else None
            skip, notes = self.degraded(scope)
            try:
                result = engine.search(prep, query, k=k, session=session, as_of=when,
                                       allowed_rowids=allowed, skip=skip, hidden_rowids=hidden)
            except EncoderFailure as exc:  # the query embedding failed: search without it
                self.encoders.fail(exc.component, exc)
                skip, notes = self.degraded(scope)
                result = engine.search(prep, query, k=k, session=session, as_of=when,
                                       allowed_rowids=allowed, skip=skip, hidden_rowids=hidden)
            result.degraded = notes
            return result

    def render(self, scope: Scope, evidence: list[Evidence], budget_tokens: int | None) -> RenderedContext:
        captions = {}
        with self.lock(scope):
            prep = self._prepared.get(scope.key)
            if prep is not None:
                for ev in evidence:
                    slot = prep.index.slot_of_rowid.get(int(ev.trace_ids[0][1:]))
                    trace = prep.index.traces[slot] if slot is not None else None
                    if trace is not None and trace.attachments:
                        captions[trace.id] = trace.attachments
        return render(evidence, budget_tokens=budget_tokens, captions=captions)


_SKIPPED = {EMBEDDER: ("dense similarity (no query or unit vectors)", "BM25 alone scores each level"),
            NER: ("graph view", "the hierarchy view answers")}


def _note(component: str, reason: str, detail: str = "") -> str:
    """``"<component>: <why>; skipped: <channel><detail>; <what answers instead>"``."""
    channel, instead = _SKIPPED[component]
    return f"{component}: {reason.rstrip('. ')}; skipped: {channel}{detail}; {instead}"


def _release_memory() -> None:
    """Hand freed heap memory back to the OS (glibc's malloc_trim) after building or loading a
    large index: the build's temporaries otherwise stay in the process's resident size."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


def _vector(blob: bytes):
    import numpy as np

    return np.frombuffer(blob, dtype=np.float32)
