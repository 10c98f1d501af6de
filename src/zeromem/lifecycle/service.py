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
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..encoders.bundle import NER
from ..errors import InvalidInput
from ..indexes.units import UnitDraft, rowid_of, split_sentences, turn_text
from ..store import validate
from ..store.dates import utc_key
from ..types import Scope, Trace
from .active import ActiveMemory, Candidate, select_active
from .cards import CARD_KINDS, Card, CardProjector
from .rules import dialogue_signals
from .signals import SignalAnalyzer, TraceSignals, entity_count
from .supersede import StateAssertion, state_assertions, supersession
from .survival import SurvivalLaw, features

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

    def __init__(self, store: Any, encoders: Callable[[], Any], law: SurvivalLaw | None = None) -> None:
        self.store = store
        self._encoders = encoders
        self.law = law or SurvivalLaw()
        self._analyzer: SignalAnalyzer | None = None
        self._assertions: dict[tuple[int, int], list[StateAssertion]] = {}
        self._cards: dict[tuple[int, int], list[Card]] = {}
        self._excerpts: dict[tuple[int, int], str] = {}
        self._projector: CardProjector | None = None
        self._lock = threading.Lock()
        self.seconds = 0.0  # time spent computing signals (the lifecycle's cost per write)
        self.analyzed = 0

    # -- signals ------------------------------------------------------------------------
    def refresh(self, scope: Scope) -> int:
        """Compute and store the signals of traces that lack them; returns how many."""
        stored = self.store.trace_signals(scope)
        missing = [rowid for rowid, blob in stored.items() if blob is None]
        if not missing:
            return 0
        traces = self.store.get_rowids(missing)
        rows = self._analyze(scope, [traces[r] for r in missing if r in traces])
        if rows:
            self.store.put_signals(scope, rows)
        return len(rows)

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
        return [(rowid_of(t), t.version, s.to_json()) for t, s in zip(ready, found)]

    def _signal_analyzer(self) -> SignalAnalyzer:
        if self._analyzer is None:
            encoders = self._encoders()
            encoders.load(NER)
            extractor = encoders.extractor
            self._analyzer = SignalAnalyzer(extractor.nlp, getattr(extractor, "density", None))
        return self._analyzer

    # -- active memory ------------------------------------------------------------------
    def active(self, scope: Scope, budget_tokens: int, *, as_of: Any = None, now: Any = None) -> ActiveMemory:
        """The working set of ``scope`` (up to ``as_of`` when given) within the budget."""
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 1:
            raise InvalidInput(f"budget_tokens must be a whole number ≥ 1, got {budget_tokens!r}")
        cutoff = validate.clean_time(as_of, "as_of")
        clock = validate.clean_time(now, "now") or cutoff or _utc_now()
        limit = utc_key(cutoff) if cutoff else None  # compare instants, not offset-bearing text
        traces = [t for t in self.store.list(scope) if limit is None or utc_key(_time_of(t)) <= limit]
        stored = self.store.trace_signals(scope)
        pending = [t for t in traces if stored.get(rowid_of(t)) is None]
        fresh = {rowid: blob for rowid, _, blob in self._analyze(scope, pending)} if pending else {}
        superseded = self._superseded(traces)
        candidates = []
        for t in traces:
            blob = stored.get(rowid_of(t)) or fresh.get(rowid_of(t))
            signals = TraceSignals.from_json(blob) if blob else _fallback_signals(t)
            meta = t.metadata or {}
            importance = meta.get(IMPORTANCE)
            x = features(density=signals.density, sentiment=signals.sentiment, entities=signals.entities,
                         tokens=signals.tokens, signals=signals.dialogue, role=t.role,
                         attachments=len(t.attachments),
                         importance=float(importance) if isinstance(importance, (int, float))
                         and _is_unit_number(importance) else None)
            text = self._excerpt(t)
            candidates.append(Candidate(
                t.id, text, t.speaker, t.session, _time_of(t), t.seq, self.law.omega(x),
                signals.as_dict(), pinned=meta.get(PINNED) is True,
                excluded=_excluded(t, clock, superseded), excerpt=text != t.text))
        return select_active(candidates, budget_tokens, self.law)

    # -- cards --------------------------------------------------------------------------
    def cards(self, scope: Scope, traces: Sequence[Trace], *, kind: str | None = None) -> list[Card]:
        """The cards of ``traces`` (in their order), parsed once per trace version."""
        if kind is not None and kind not in CARD_KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(CARD_KINDS)}, got {kind!r}")
        todo = [t for t in traces if (rowid_of(t), t.version) not in self._cards]
        if todo:
            if self._projector is None:
                self._projector = CardProjector(self._encoders().config.spacy_pipeline)
            for trace, found in zip(todo, self._projector.project(todo)):
                self._cards[(rowid_of(trace), trace.version)] = found
        out = [c for t in traces for c in self._cards[(rowid_of(t), t.version)]]
        return [c for c in out if kind is None or c.kind == kind]

    def _excerpt(self, trace: Trace) -> str:
        """The sentences of a longer trace that carry a standing signal, verbatim, joined by
        " … " (its whole text when none or all do): what active memory holds of it."""
        key = (rowid_of(trace), trace.version)
        if key not in self._excerpts:
            parts = split_sentences(trace.text)
            kept = [p for p in parts if dialogue_signals(p) & EXCERPT_SIGNALS] if len(parts) > 1 else []
            self._excerpts[key] = " … ".join(kept) if kept and len(kept) < len(parts) else trace.text
        return self._excerpts[key]

    def _superseded(self, traces: Sequence[Trace]) -> dict[str, str]:
        """Trace id → the id of the newer trace that supersedes its state."""
        found: dict[int, list[StateAssertion]] = {}
        for i, t in enumerate(traces):
            key = (rowid_of(t), t.version)
            if key not in self._assertions:
                self._assertions[key] = state_assertions(t.text, t.speaker, t.session, t.seq)
            if self._assertions[key]:
                found[i] = self._assertions[key]
        return {traces[old].id: traces[new].id for old, new in supersession(found, lambda i: (i,)).items()}


def _excluded(trace: Trace, clock: str, superseded: dict[str, str]) -> str | None:
    meta = trace.metadata or {}
    if meta.get(ARCHIVED) is True:
        return "archived"
    expires = meta.get(EXPIRES_AT)
    if expires is not None and _expired(expires, clock):
        return "expired"
    if trace.id in superseded:
        return f"superseded by {superseded[trace.id]}"
    return None


def _expired(expires: Any, clock: str) -> bool:
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
    return {rowid for rowid, expires in expiring.items() if _expired(expires, now)}


def _time_of(trace: Trace) -> str:
    return trace.event_time or trace.session_time or trace.recorded_at


def _utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _is_unit_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _fallback_signals(trace: Trace) -> TraceSignals:
    """Signals without the models (NER down, session not derivable): rules and length only."""
    from ..encoders.tokenize import count_budget_tokens

    return TraceSignals(0.5, 0.0, 0, count_budget_tokens(trace.text), dialogue_signals(trace.text))
