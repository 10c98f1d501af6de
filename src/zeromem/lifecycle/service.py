"""The lifecycle of one store's scopes: signals kept up to date, Ω, active memory, states.

``refresh`` computes the signals of new or edited traces only (after every write, with the
indexer); ``active`` scores every trace of the scope and selects the working set. Caller
intent lives in each trace's metadata, so it is part of the source of record and its history:

- ``importance`` (0..1): enters Ω (``survival.features``);
- ``expires_at`` (a time): the trace leaves active memory and search then, stays stored;
- ``pinned`` (true): kept in active memory first (``Memory.restore`` sets it);
- ``archived`` (true): never in active memory, still searchable (``Memory.archive``).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..encoders.bundle import NER
from ..encoders.token_count import count_budget_tokens
from ..errors import InvalidInput, StoreError
from ..indexes.units import UnitDraft, split_sentences, turn_text
from ..store import validate
from ..store.base import StoreBase
from ..store.dates import utc_key
from ..types import Scope, Trace
from .active import ActiveMemory, Candidate, entry_line, select_active
from .cards import CARD_KINDS, Card, CardProjector
from .rules import dialogue_signals
from .signals import SignalAnalyzer, TraceSignals, entity_count
from .supersede import StateAssertion, state_assertions, supersession
from .survival import SurvivalLaw, features

_log = logging.getLogger("zeromem")
IMPORTANCE, EXPIRES_AT, PINNED, ARCHIVED = "importance", "expires_at", "pinned", "archived"
# Sentences with these signals are what active memory keeps of a longer trace.
EXCERPT_SIGNALS = frozenset({"constraint", "preference", "current_state", "correction", "replacement"})


def check_lifecycle_metadata(metadata: Any) -> None:
    """Reject malformed lifecycle fields at write time (the rest of metadata is free JSON)."""
    if not isinstance(metadata, dict):
        return
    if IMPORTANCE in metadata:
        value = metadata[IMPORTANCE]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise InvalidInput(f"metadata['importance'] must be a number from 0 to 1, got {value!r}")
    if EXPIRES_AT in metadata:
        validate.clean_time(metadata[EXPIRES_AT], "metadata['expires_at']")
    for flag in (PINNED, ARCHIVED):
        if flag in metadata and not isinstance(metadata[flag], bool):
            raise InvalidInput(f"metadata[{flag!r}] must be true or false, got {metadata[flag]!r}")


class Lifecycle:
    """Signals, survival scores and active memory for the scopes of one store."""

    def __init__(self, store: StoreBase, encoders: Callable[[], Any], law: SurvivalLaw | None = None) -> None:
        self.store = store
        self._encoders = encoders
        self.law = law or SurvivalLaw()
        self._analyzer: SignalAnalyzer | None = None
        self._assertions: dict[tuple[int, int], list[StateAssertion]] = {}
        self._cards: dict[tuple[int, int], list[Card]] = {}
        self._excerpts: dict[tuple[int, int], str] = {}
        self._active_lock = threading.Lock()
        self._base: dict[tuple[int, int], _Base] = {}
        self._base_once: dict[tuple[int, int], _Base] = {}
        self._known: dict[tuple[str, str], set[tuple[int, int]]] = {}
        self._projector: CardProjector | None = None
        self._lock = threading.Lock()
        self.seconds = 0.0  # time spent computing signals (the lifecycle's cost per write)
        self.analyzed = 0

    def _rowid(self, trace: Trace) -> int:
        return int(self.store.ids.parse(trace.id))

    # -- signals ------------------------------------------------------------------------
    def refresh(self, scope: Scope, rowids: Sequence[int] | None = None) -> int:
        """Compute and store the signals of traces that lack them — of the scope, or of
        ``rowids`` (the traces a write stored: its cost then does not grow with the scope;
        any other trace left without signals is computed by the next full refresh, or when
        the lifecycle reads it) — and return how many."""
        if rowids is not None and not rowids:
            return 0
        missing = list(self.store.trace_signals(scope, missing_only=True, rowids=rowids))
        if not missing:
            return 0
        traces = self.store.get_rowids(missing)
        rows = self._analyze(scope, [traces[r] for r in missing if r in traces])
        if rows:
            self.store.put_signals(scope, rows)
        return len(rows)

    def _store(self, scope: Scope, rows: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Keep signals computed during a read (a cache: a read-only store does without)."""
        if rows:
            try:
                self.store.put_signals(scope, rows)
            except StoreError as exc:
                _log.debug("zeromem: lifecycle signals not stored: %s", exc)
        return rows

    def _analyze(self, scope: Scope, traces: Sequence[Trace]) -> list[tuple[int, int, str]]:
        """Signals of ``traces`` as store rows. A trace whose turn has no stored mentions yet
        (its session is not derived, or NER is down) is left for a later refresh."""
        started = time.perf_counter()
        hashes = {t.id: UnitDraft("turn", 0, turn_text(t), (), 0, 0, None, None).text_hash for t in traces}
        _, mentions = self.store.stored_encodings(scope, sorted(set(hashes.values())))
        ready = [t for t in traces if hashes[t.id] in mentions]
        if not ready:
            return []
        counts = [entity_count(mentions[hashes[t.id]], t.speaker) for t in ready]
        texts = [" ".join([t.text, *t.attachments]) for t in ready]
        with self._lock:
            found = self._signal_analyzer().analyze(texts, counts)
        self.seconds += time.perf_counter() - started
        self.analyzed += len(ready)
        return [(self._rowid(t), t.version, s.to_json()) for t, s in zip(ready, found)]

    def _signal_analyzer(self) -> SignalAnalyzer:
        if self._analyzer is None:
            encoders = self._encoders()
            encoders.load(NER)
            extractor = encoders.extractor
            self._analyzer = SignalAnalyzer(extractor.nlp, getattr(extractor, "density", None),
                                            getattr(extractor, "max_chars", None),
                                            getattr(extractor, "remember_density", None))
        return self._analyzer

    # -- active memory ------------------------------------------------------------------
    def active(self, scope: Scope, budget_tokens: int, *, as_of: Any = None, now: Any = None) -> ActiveMemory:
        """The working set of ``scope`` (up to ``as_of`` when given) within the budget."""
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 1:
            shown = validate.int_text(budget_tokens) if type(budget_tokens) is int else repr(budget_tokens)
            raise InvalidInput(f"budget_tokens must be a whole number ≥ 1, got {shown}")
        budget_tokens = min(budget_tokens, validate.MAX_INT)  # more than any scope holds
        cutoff = validate.clean_time(as_of, "as_of")
        clock = validate.clean_time(now, "now") or cutoff or _utc_now()
        limit = utc_key(cutoff) if cutoff else None  # compare instants, not offset-bearing text
        with self._active_lock:  # the cached candidates are filled in place for this call
            bases = [b for b in self._bases(scope) if limit is None or b.time_key <= limit]
            superseded = self._superseded([b.trace for b in bases])
            for b in bases:
                b.candidate.omega = self._omega(b)
                b.candidate.excluded = _excluded(b.trace, clock, superseded)
            return select_active([b.candidate for b in bases], budget_tokens, self.law)

    def _bases(self, scope: Scope) -> list[_Base]:
        """The scope's traces, in conversation order, with what selection needs of each —
        kept per (trace, version), so a call after a write reads only the new traces."""
        order = self.store.trace_versions(scope)
        self._forget_stale(scope, order)
        missing = [rowid for rowid, version in order if (rowid, version) not in self._base]
        if missing:
            traces = self.store.get_rowids(missing)
            fetched = [traces[r] for r in missing if r in traces]
            stored = self.store.trace_signals(scope)
            pending = [t for t in fetched if stored.get(self._rowid(t)) is None]
            fresh = {rowid: blob for rowid, _, blob in self._store(scope, self._analyze(scope, pending))}
            for t in fetched:
                blob = stored.get(self._rowid(t)) or fresh.get(self._rowid(t))
                base = self._make_base(t, TraceSignals.from_json(blob) if blob else None)
                if blob:  # signals without the models are not kept: they come back computed
                    self._base[(self._rowid(t), t.version)] = base
                else:
                    self._base_once[(self._rowid(t), t.version)] = base
        out = []
        for key in order:
            kept = self._base.get(key) or self._base_once.pop(key, None)
            if kept is not None:
                out.append(kept)
        return out

    def _forget_stale(self, scope: Scope, order: list[tuple[int, int]]) -> None:
        """Drop what the caches hold of deleted traces and replaced versions (their text must
        not outlive an erasure in this process either)."""
        current = set(order)
        known = self._known.get(scope.key, set())
        for key in known - current:
            for cache in (self._base, self._base_once, self._excerpts, self._assertions, self._cards):
                cache.pop(key, None)
        self._known[scope.key] = current

    def _make_base(self, t: Trace, signals: TraceSignals | None) -> _Base:
        signals = signals or _fallback_signals(t)
        meta = t.metadata or {}
        importance = meta.get(IMPORTANCE)
        x = features(density=signals.density, sentiment=signals.sentiment, entities=signals.entities,
                     tokens=signals.tokens, signals=signals.dialogue, role=t.role,
                     attachments=len(t.attachments),
                     importance=float(importance) if isinstance(importance, (int, float))
                     and _is_unit_number(importance) else None)
        text = self._excerpt(t)
        candidate = Candidate(t.id, text, t.speaker, t.session, _time_of(t), t.seq, 0.0, signals.as_dict(),
                              pinned=meta.get(PINNED) is True, excerpt=text != t.text,
                              tokens=count_budget_tokens(entry_line(t.id, t.speaker, text)))
        return _Base(t, candidate, x, utc_key(_time_of(t)))

    def _omega(self, base: _Base) -> float:
        """Ω of a trace under the current law (the law may be swapped, e.g. to tune it)."""
        if base.law is not self.law:
            base.law, base.omega = self.law, self.law.omega(base.features)
        return base.omega

    # -- cards --------------------------------------------------------------------------
    def cards(self, scope: Scope, traces: Sequence[Trace], *, kind: str | None = None) -> list[Card]:
        """The cards of ``traces`` (in their order), parsed once per trace version."""
        if kind is not None and kind not in CARD_KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(CARD_KINDS)}, got {kind!r}")
        self._forget_stale(scope, self.store.trace_versions(scope))
        todo = [t for t in traces if (self._rowid(t), t.version) not in self._cards]
        if todo:
            if self._projector is None:
                self._projector = CardProjector(self._encoders().config.spacy_pipeline)
            for trace, found in zip(todo, self._projector.project(todo)):
                self._cards[(self._rowid(trace), trace.version)] = found
        out = [c for t in traces for c in self._cards[(self._rowid(t), t.version)]]
        return [c for c in out if kind is None or c.kind == kind]

    def _excerpt(self, trace: Trace) -> str:
        """The sentences of a longer trace that carry a standing signal, verbatim, joined by
        " … " (its whole text when none or all do): what active memory holds of it."""
        key = (self._rowid(trace), trace.version)
        if key not in self._excerpts:
            parts = split_sentences(trace.text)
            kept = [p for p in parts if dialogue_signals(p) & EXCERPT_SIGNALS] if len(parts) > 1 else []
            self._excerpts[key] = " … ".join(kept) if kept and len(kept) < len(parts) else trace.text
        return self._excerpts[key]

    def _superseded(self, traces: Sequence[Trace]) -> dict[str, str]:
        """Trace id → the id of the newer trace that supersedes its state."""
        found: dict[int, list[StateAssertion]] = {}
        for i, t in enumerate(traces):
            key = (self._rowid(t), t.version)
            if key not in self._assertions:
                self._assertions[key] = state_assertions(t.text, t.speaker, t.session, t.seq)
            if self._assertions[key]:
                found[i] = self._assertions[key]
        return {traces[old].id: traces[new].id for old, new in supersession(found, lambda i: (i,)).items()}


@dataclass
class _Base:
    """What active memory needs of one trace version, computed once."""

    trace: Trace
    candidate: Candidate
    features: dict[str, float]
    time_key: str  # its time as a naive-UTC ISO string (instants compare as text)
    law: SurvivalLaw | None = None
    omega: float = 0.0


def _excluded(trace: Trace, clock: str, superseded: dict[str, str]) -> str | None:
    meta = trace.metadata or {}
    if meta.get(ARCHIVED) is True:
        return "archived"
    expires = meta.get(EXPIRES_AT)
    if expires is not None and is_expired(expires, clock):
        return "expired"
    if trace.id in superseded:
        return f"superseded by {superseded[trace.id]}"
    return None


def is_expired(expires: Any, clock: str) -> bool:
    """Whether a trace whose ``expires_at`` is ``expires`` has expired at ``clock`` (ISO 8601;
    a time without an offset is UTC); an unreadable or absent expiry never expires."""
    try:
        when = validate.clean_time(expires, "expires_at")
    except InvalidInput:
        return False
    return when is not None and _instant(when) <= _instant(clock)


def _instant(text: str) -> dt.datetime:
    """An aware UTC instant of an ISO time; a time without an offset is taken as UTC."""
    value = dt.datetime.fromisoformat(text)
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def expired_rowids(expiring: dict[int, Any], clock: str | None) -> set[int]:
    """The traces of ``expiring`` (rowid → ``expires_at``) that have expired at ``clock``
    (now when None): search hides them, history keeps them."""
    if not expiring:
        return set()
    now = clock or _utc_now()
    return {rowid for rowid, expires in expiring.items() if is_expired(expires, now)}


def _time_of(trace: Trace) -> str:
    return trace.event_time or trace.session_time or trace.recorded_at


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _is_unit_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _fallback_signals(trace: Trace) -> TraceSignals:
    """Signals without the models (NER down, session not derivable): rules and length only."""
    return TraceSignals(0.5, 0.0, 0, count_budget_tokens(trace.text), dialogue_signals(trace.text))
