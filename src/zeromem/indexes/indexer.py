"""Keeps the derived units of every scope consistent with the traces, incrementally.

Writes to the store mark their session dirty in the same transaction. ``refresh`` re-derives
the units of dirty sessions, reuses the stored vectors and mentions of units whose text did not
change (so nothing is re-encoded after a restart or an unrelated edit), encodes the rest in one
batch, and swaps the session's units in one transaction. Deleted or updated-away text therefore
leaves every unit, vector and mention at the next refresh; ``rebuild`` derives everything anew
from the traces and must give the same units as the incremental path.

When an encoder is down (``encoders.bundle.EncoderFailure``), ``derive`` makes the dirty
sessions' units in memory with the encoders that work, for a degraded search; nothing of that
is stored, so the sessions stay dirty and the next healthy ``refresh`` derives them normally.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..encoders.bundle import EMBEDDER, NER, EncoderFailure
from ..store.base import DerivedUnit, Replacing, StoreBase
from ..store.fingerprint import check_fingerprint, clear_fingerprint
from ..types import Scope
from .stored import SessionUnits, StoredUnit
from .units import group, segment_session, segment_turns, window_starts

_EMBEDDED_LEVELS = ("turn", "span")
# A turn that splits into sentence spans is represented by the mean of its span vectors
# instead of being encoded a second time: the encoder's cost is linear in tokens, and this
# halves them (measured on LoCoMo: 2.4 spans per multi-sentence turn).
TURN_FROM_SPANS = True
EMBED_WORKERS = 2  # threads that embed while (and after) spaCy runs
EMBED_CHUNK = 64  # texts per embedding task; vectors do not depend on the chunking
# Texts go to the embedder longest first (_longest_first): a chunk then holds runs of texts of one
# token length, which the int8 embedder encodes as one batch (encoders/onnx_batch.py).
# A long turn (an assistant reply of hundreds of words) is embedded through the spans of its head
# only (EncoderConfig.max_encoded_chars, the part spaCy reads too): its later spans are BM25 units
# without a vector, and its turn vector is the mean of the head's spans.


# Sessions whose last commit this indexer remembers (a few dozen bytes each), so that turns
# appended to them derive only their own units, the windows they touch and the episode.
COMMITTED_SESSIONS = 4096


@dataclass(frozen=True)
class _Committed:
    """What the store holds for a session this indexer committed last: its ``turns`` traces
    (``digest`` of their (id, version)s), at the session's change version ``change``."""

    turns: int
    digest: bytes
    change: int
    head: int | None


@dataclass
class RefreshReport:
    """What ``Memory.index`` / ``reindex`` did: sessions re-derived, units written, texts
    embedded and parsed by NER, wall seconds, and seconds spent per encoder."""

    sessions: int = 0
    units: int = 0
    encoded_texts: int = 0
    ner_texts: int = 0
    seconds: float = 0.0
    encoder_seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class DerivedSession:
    """A session derived in memory only (``Indexer.derive``)."""

    units: SessionUnits
    fingerprint: tuple[tuple[str, int], ...]  # (trace id, version) it was derived from
    lacking: frozenset[str]  # components whose output some of its units lack ("embedder", "ner")


class Indexer:
    """Derives units, vectors and entity mentions for a store's scopes."""

    def __init__(self, store: StoreBase, encoders: Callable[[], Any], *, window_turns: int = 4,
                 stride: int = 2) -> None:
        self.store = store
        self._encoders = encoders  # called lazily: CRUD-only use never loads a model
        self.window_turns = window_turns
        self.stride = stride
        self._pool: ThreadPoolExecutor | None = None  # made once: a write should not start threads
        self._pool_lock = threading.Lock()
        self._committed: OrderedDict[tuple, _Committed] = OrderedDict()
        self._committed_lock = threading.Lock()

    def _embed_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=EMBED_WORKERS, thread_name_prefix="zeromem-embed")
            return self._pool

    def pending_sessions(self, scope: Scope) -> list[str]:
        return self.store.dirty_sessions(scope)

    def rebuild(self, scope: Scope, progress: bool = False) -> RefreshReport:
        """Drop every derived unit of ``scope`` and derive them again from the traces."""
        if self.store.count(scope):
            # A missing model must fail the rebuild before it drops anything: else the scope
            # would be left with no units at all, every search degraded until the model is back.
            encoders = self._encoders()
            for component in (EMBEDDER, NER):
                encoders.load(component)
        self.store.reset_derived(scope)
        with self._committed_lock:
            for key in [k for k in self._committed if k[0] == scope.key]:
                del self._committed[key]
        clear_fingerprint(self.store, scope)  # the rebuild records the embedder it uses
        return self.refresh(scope, progress=progress)

    def refresh(self, scope: Scope, progress: bool = False) -> RefreshReport:
        """Bring the units of ``scope`` up to date with its traces."""
        started = time.perf_counter()
        report = RefreshReport()
        sessions = self.pending_sessions(scope)
        if not sessions:
            return report
        plans = [self._plan(scope, session, append=True) for session in sessions]
        refused = self._derive_and_commit(scope, plans, report, progress)
        if refused:  # another process derived these sessions since this one did: derive them whole
            self._derive_and_commit(scope, [self._plan(scope, session) for session in refused], report, progress)
        report.sessions = len(plans)
        report.seconds = time.perf_counter() - started
        self._record_timings(report)
        return report

    def _derive_and_commit(self, scope: Scope, plans: list[dict[str, Any]], report: RefreshReport,
                           progress: bool) -> list[str]:
        """Encode what the plans need and commit each session; returns the sessions whose
        appended turns the store refused (``Replacing.since`` no longer current)."""
        self._reuse_stored_encodings(scope, plans)
        encoders = self._encoders()
        # Vectors of one scope come from one embedder: never mix them (EmbedderMismatch).
        check_fingerprint(self.store, scope, _guarded(EMBEDDER, lambda: encoders.fingerprint))
        self._encode(plans, encoders, report, progress)
        entity_vectors = self._entity_vectors(scope, plans, encoders, report)
        refused = []
        for plan in plans:
            if not self._commit(scope, plan, entity_vectors) and plan["replacing"] is not None:
                refused.append(plan["session"])
        report.units += sum(len(p["drafts"]) for p in plans)
        return refused

    def derive(self, scope: Scope, sessions: list[str], *, embed: bool, ner: bool,
               unchanged: dict[str, tuple[tuple[str, int], ...]] | None = None) -> list[DerivedSession]:
        """Derive ``sessions`` in memory, storing nothing, with only the encoders allowed.

        Units get the stored encodings of their text where the scope has them (as in
        ``refresh``); otherwise no vector when ``embed`` is False and no mentions when ``ner``
        is False (``DerivedSession.lacking`` says so). A session whose traces are still
        ``unchanged[session]`` is left out. Raises ``EncoderFailure`` if an allowed encoder
        fails.
        """
        plans = [self._plan(scope, session) for session in sessions]
        known = unchanged or {}
        plans = [p for p in plans if known.get(p["session"]) != tuple(p["fingerprint"])]
        if not plans:
            return []
        self._reuse_stored_encodings(scope, plans)
        encoders = self._encoders()
        if embed:
            check_fingerprint(self.store, scope, _guarded(EMBEDDER, lambda: encoders.fingerprint))
        self._encode(plans, encoders, RefreshReport(), False, embed=embed, ner=ner)
        out = []
        for plan in plans:
            units = self._units(plan)
            lacking = set()
            past = {(d.rowids, d.position) for d in plan["drafts"] if _past_head(d, plan["head"])}
            if any(u.level in _EMBEDDED_LEVELS and u.vector is None and (u.rowids, u.position) not in past
                   for u in units):
                lacking.add(EMBEDDER)
            stored = []
            for u in units:
                missing = [EMBEDDER] if not embed else []
                if u.level == "turn" and u.text_hash not in plan["mentions"]:
                    missing.append(NER)
                    lacking.add(NER)
                stored.append(StoredUnit(
                    u.level, u.position, u.text, _provisional(u.text_hash, missing), u.rowids,
                    None if u.vector is None else np.frombuffer(u.vector, dtype=np.float32), u.mentions))
            traces = dict(zip(plan["rowids"], plan["traces"]))
            out.append(DerivedSession(SessionUnits(plan["session"], traces, stored),
                                      tuple(plan["fingerprint"]), frozenset(lacking)))
        return out

    # -- steps --------------------------------------------------------------------------
    def _plan(self, scope: Scope, session: str, *, append: bool = False) -> dict[str, Any]:
        """The session's traces and the unit drafts to derive: all of them, or (``append``, and
        this indexer committed the session last with the traces it still starts with) only the
        units the appended traces change."""
        parse = self.store.ids.parse
        pairs = sorted(((t, parse(t.id)) for t in self.store.list(scope, session=session)),
                       key=lambda pair: (pair[0].seq, pair[1]))
        traces = [t for t, _ in pairs]
        rowids = [rowid for _, rowid in pairs]
        fingerprint = [(t.id, t.version) for t in traces]
        plan: dict[str, Any] = {
            "session": session, "vecs": {}, "mentions": {}, "fingerprint": fingerprint, "traces": traces,
            "rowids": rowids, "head": _head_limit(self._encoders()), "replacing": None, "turn_vectors": {}}
        with self._committed_lock:
            last = self._committed.get((scope.key, session))
        if (append and last is not None and 0 < last.turns < len(traces) and last.head == plan["head"]
                and _digest(fingerprint[:last.turns]) == last.digest):
            plan["drafts"], plan["replacing"] = self._appended(traces, rowids, last)
            # Windows and the episode are the mean of their turns' vectors: the earlier turns'
            # come from the store (the commit checks the session did not change since).
            plan["turn_vectors"] = self.store.turn_vectors(scope, session)
        else:
            plan["drafts"] = segment_session(traces, rowids, window_turns=self.window_turns, stride=self.stride)
        return plan

    def _appended(self, traces: list, rowids: list[int], last: _Committed) -> tuple[list, Replacing]:
        """The drafts that turns appended after ``last.turns`` add or change — their turns and
        spans, the windows that cover them, the episode — and the stored units they replace.
        Equal to the changed drafts of ``segment_session`` (tests/test_append_path.py)."""
        old, size = last.turns, max(1, self.window_turns)
        drafts = segment_turns(traces[old:], rowids[old:], old)
        before = window_starts(old, window_turns=self.window_turns, stride=self.stride)
        now = window_starts(len(traces), window_turns=self.window_turns, stride=self.stride)
        same = {start for start in set(before) & set(now) if start + size <= old}  # the same traces
        drafts += [group("window", start, traces[start:start + size], rowids[start:start + size])
                   for start in now if start not in same]
        drafts.append(group("episode", 0, traces, rowids))
        replaced = (*(("window", start) for start in before if start not in same), ("episode", 0))
        return drafts, Replacing(last.change, replaced)

    def _reuse_stored_encodings(self, scope: Scope, plans: list[dict[str, Any]]) -> None:
        """Text already encoded anywhere in the scope — the unchanged turns of a re-derived
        session, a repeated "thanks!", a re-imported conversation — reuses its stored vector
        and mentions instead of being encoded again."""
        # Only turns (vectors, mentions) and spans (vectors) are ever encoded; windows and episodes
        # take their turns' mean, so looking their hashes up would cost index probes for nothing.
        wanted = sorted({d.text_hash for p in plans for d in p["drafts"] if d.level in _EMBEDDED_LEVELS})
        # A session derived whole has most of its texts in its own stored units; appended turns don't.
        whole = [p["session"] for p in plans if p["replacing"] is None]
        found_vecs, found_mentions = self.store.stored_encodings(scope, wanted, whole)
        _hand_out(plans, "vecs", found_vecs, replace=False)
        _hand_out(plans, "mentions", found_mentions, replace=False)

    def _encode(self, plans: list[dict[str, Any]], encoders: Any, report: RefreshReport,
                progress: bool, *, embed: bool = True, ner: bool = True) -> None:
        to_embed: dict[str, str] = {}
        to_ner: dict[str, str] = {}
        for plan in plans:
            raw = dict(zip(plan["rowids"], plan["traces"]))
            split = {d.rowids[0] for d in plan["drafts"] if d.level == "span"} if TURN_FROM_SPANS else set()
            for draft in plan["drafts"]:
                h = draft.text_hash
                from_spans = draft.level == "turn" and draft.rowids[0] in split
                if (embed and draft.level in _EMBEDDED_LEVELS and h not in plan["vecs"] and not from_spans
                        and not _past_head(draft, plan["head"])):
                    to_embed[h] = draft.text
                if ner and draft.level == "turn" and h not in plan["mentions"]:
                    trace = raw[draft.rowids[0]]
                    to_ner[h] = " ".join([trace.text, *trace.attachments])
        # The embedder (ONNX Runtime / torch) releases the GIL while it computes, so chunks of
        # texts are embedded by worker threads while spaCy runs here, and once spaCy is done
        # both cores embed: encoder time ≈ (NER + embedding) / 2 on a 2-core machine. While
        # spaCy runs it holds one of the gate's places, so it shares the cores with one embedding
        # thread, not two: spaCy is the longer task, and a third busy thread only slowed it.
        embedding = []
        gate = threading.Semaphore(EMBED_WORKERS)
        if to_embed:
            embed_keys = _longest_first(to_embed)
            embed_texts = [to_embed[k] for k in embed_keys]
            pool = self._embed_pool()
            encode = _gated(gate, _guarded(EMBEDDER, lambda: encoders.embedder).encode)
            embedding = [pool.submit(_timed, encode, embed_texts[i:i + EMBED_CHUNK])
                         for i in range(0, len(embed_texts), EMBED_CHUNK)]
        try:
            if to_ner:
                ner_keys = sorted(to_ner)
                extract = _guarded(NER, lambda: encoders.extractor).extract
                with gate:
                    mentions, seconds = _guarded(NER, lambda: _timed(extract, [to_ner[k] for k in ner_keys]))
                report.encoder_seconds["entities"] = seconds
                report.ner_texts = len(ner_keys)
                fresh_m: dict[str, list[tuple]] = {}
                for key, found in zip(ner_keys, mentions):
                    counts = Counter(m.entity for m in found)
                    first: dict[str, Any] = {}
                    for m in found:
                        first.setdefault(m.entity, m)
                    fresh_m[key] = [(e, first[e].label, first[e].surface, counts[e]) for e in sorted(counts)]
                _hand_out(plans, "mentions", fresh_m, replace=True)
            if embedding:
                parts = []
                from tqdm import tqdm  # here, not at import: it costs every process ~30 ms

                with tqdm(total=len(embed_keys), desc="embedding units", unit="text",
                          disable=not progress, leave=False) as bar:
                    for future in embedding:
                        parts.append(_guarded(EMBEDDER, future.result))
                        bar.update(len(parts[-1][0]))
                vectors = np.concatenate([part for part, _ in parts])
                report.encoder_seconds["dense"] = sum(seconds for _, seconds in parts)
                report.encoded_texts = len(embed_keys)
                found = dict(zip(embed_keys, vectors))
                fresh = {k: np.asarray(found[k], dtype=np.float32).tobytes() for k in sorted(found)}
                _hand_out(plans, "vecs", fresh, replace=True)
        finally:
            for future in embedding:  # an error above leaves no task running behind the caller
                future.cancel() or future.exception()

    def _commit(self, scope: Scope, plan: dict[str, Any], entity_vectors: dict[str, bytes]) -> bool:
        """Store the session's units; a session another writer changed meanwhile stays dirty.
        Returns whether the store took them."""
        units = self._units(plan)
        expected = [(rowid, version) for rowid, (_, version) in zip(plan["rowids"], plan["fingerprint"])]
        change = self.store.commit_session(scope, plan["session"], expected, units, entity_vectors,
                                           plan["replacing"])
        key = (scope.key, plan["session"])
        with self._committed_lock:
            self._committed.pop(key, None)
            if change is not None:
                self._committed[key] = _Committed(len(expected), _digest(plan["fingerprint"]), change, plan["head"])
                while len(self._committed) > COMMITTED_SESSIONS:
                    self._committed.popitem(last=False)
        return change is not None

    def _units(self, plan: dict[str, Any]) -> list[DerivedUnit]:
        """The session's units with the vectors and mentions the plan holds."""
        span_vectors: dict[int, list[np.ndarray]] = {}
        for draft in plan["drafts"]:
            blob = plan["vecs"].get(draft.text_hash)
            if draft.level == "span" and blob is not None and not _past_head(draft, plan["head"]):
                span_vectors.setdefault(draft.rowids[0], []).append(np.frombuffer(blob, dtype=np.float32))
        for draft in plan["drafts"]:
            if draft.level == "turn" and draft.text_hash not in plan["vecs"] and draft.rowids[0] in span_vectors:
                plan["vecs"][draft.text_hash] = _mean_unit(span_vectors[draft.rowids[0]]).tobytes()
        turn_vectors = {rowid: np.frombuffer(blob, dtype=np.float32) for rowid, blob in plan["turn_vectors"].items()}
        turn_vectors.update({d.rowids[0]: np.frombuffer(plan["vecs"][d.text_hash], dtype=np.float32)
                             for d in plan["drafts"] if d.level == "turn" and d.text_hash in plan["vecs"]})
        units = []
        for draft in plan["drafts"]:
            vector = plan["vecs"].get(draft.text_hash) if draft.level in _EMBEDDED_LEVELS else None
            if _past_head(draft, plan["head"]):
                # Never a vector, even one this text has elsewhere in the scope: which units
                # have vectors must not depend on what was derived before (rebuild == refresh).
                vector = None
            if draft.level in ("window", "episode"):
                # Windows and episodes are represented by the mean of their turns' vectors:
                # their concatenated text is longer than the encoder's input window anyway.
                members = [turn_vectors[r] for r in draft.rowids if r in turn_vectors]
                vector = _mean_unit(members).tobytes() if members else None
            mentions = tuple(plan["mentions"].get(draft.text_hash, ())) if draft.level == "turn" else ()
            units.append(DerivedUnit(draft.level, draft.position, draft.text, draft.text_hash, draft.rowids,
                                     draft.first_seq, draft.last_seq, draft.speaker, draft.time, vector,
                                     tuple(tuple(m) for m in mentions)))
        return units

    def _entity_vectors(self, scope: Scope, plans: list[dict[str, Any]], encoders: Any,
                        report: RefreshReport) -> dict[str, bytes]:
        """Vectors of the entities the plans mention that the scope has none for yet."""
        mentioned = sorted({m[0] for plan in plans for mentions in plan["mentions"].values() for m in mentions})
        have = self.store.entities_with_vectors(scope, mentioned)
        missing = [e for e in mentioned if e not in have]
        if not missing:
            return {}
        t0 = time.perf_counter()
        encode = _guarded(EMBEDDER, lambda: encoders.embedder).encode
        ordered = _longest_first({name: name for name in missing})
        chunks = [ordered[i:i + EMBED_CHUNK * 2] for i in range(0, len(missing), EMBED_CHUNK * 2)]
        if len(chunks) > 1:  # both cores; a vector never depends on its chunk
            pool = self._embed_pool()
            futures = [pool.submit(encode, chunk) for chunk in chunks]
            vectors = np.concatenate([_guarded(EMBEDDER, f.result) for f in futures])
        else:
            vectors = _guarded(EMBEDDER, lambda: encode(ordered))
        report.encoder_seconds["dense"] = report.encoder_seconds.get("dense", 0.0) + (time.perf_counter() - t0)
        report.encoded_texts += len(missing)
        found = dict(zip(ordered, vectors))
        # in name order: the order the store writes them in (and rows get their ids in)
        return {e: np.asarray(found[e], dtype=np.float32).tobytes() for e in missing}

    def _record_timings(self, report: RefreshReport) -> None:
        if report.encoder_seconds:
            self.store.add_encoder_timings(report.encoder_seconds,
                                           {"dense": report.encoded_texts, "entities": report.ner_texts})


def _digest(fingerprint: list[tuple[str, int]]) -> bytes:
    """A short digest of a session's (trace id, version)s, in order."""
    return hashlib.blake2b("\n".join(f"{tid} {version}" for tid, version in fingerprint).encode(),
                           digest_size=16).digest()


def _head_limit(encoders: Any) -> int | None:
    """How many leading characters of a turn the costly encoders read (None: all)."""
    return getattr(getattr(encoders, "config", None), "max_encoded_chars", None)


def _past_head(draft: Any, limit: int | None) -> bool:
    """A span that starts after the head of its turn: BM25 indexes it, no vector is made."""
    return limit is not None and draft.level == "span" and draft.offset >= limit


def _mean_unit(vectors: list[np.ndarray]) -> np.ndarray:
    """The L2-normalized mean of unit vectors (float32)."""
    mean = np.mean(vectors, axis=0)
    mean /= max(float(np.linalg.norm(mean)), 1e-12)
    return mean.astype(np.float32)


def _provisional(text_hash: str, missing: list[str]) -> str:
    """The hash an in-memory unit is keyed by: its text hash with bits flipped by a mask that
    depends on what it lacks. ``ScopeIndex.apply`` keeps a unit whose (position, hash, traces)
    did not change, so the stored unit that later replaces it must not share its key, and nor
    must a unit derived again with more of its encodings."""
    mask = hashlib.blake2b(("derived in memory without " + "+".join(missing)).encode(), digest_size=12).digest()
    return bytes(a ^ b for a, b in zip(bytes.fromhex(text_hash), mask)).hex()


def _guarded(component: str, call: Callable[[], Any]) -> Any:
    """``call()``, with any error raised as an ``EncoderFailure`` naming ``component``: a
    search can then go on without that encoder (retrieval/scopes.py)."""
    try:
        return call()
    except EncoderFailure:
        raise
    except Exception as exc:  # a missing model and a crash while encoding alike
        raise EncoderFailure(component, exc) from exc


def _hand_out(plans: list[dict[str, Any]], field: str, found: dict[str, Any], *, replace: bool) -> None:
    """Give each plan the entries of ``found`` for its own drafts' texts (replacing what it
    holds, or not). Each plan reads only its own drafts' entries; handing every plan all of
    ``found`` cost sessions × texts (quadratic in an import of many short sessions)."""
    if not found:
        return
    for plan in plans:
        held = plan[field]
        for draft in plan["drafts"]:
            value = found.get(draft.text_hash)
            if value is not None and (replace or draft.text_hash not in held):
                held[draft.text_hash] = value


def _longest_first(texts: dict[str, str]) -> list[str]:
    """The keys of ``texts``, longest text first (ties by key): embedding chunks then hold runs
    of one token length, and the chunks left at the end are the cheapest, so both cores finish
    together (a long last chunk would leave one idle)."""
    return sorted(texts, key=lambda key: (-len(texts[key]), key))


def _gated(gate: threading.Semaphore, func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``func`` run while holding one of ``gate``'s places."""
    def run(arg: Any) -> Any:
        with gate:
            return func(arg)
    return run


def _timed(func: Callable[[Any], Any], arg: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    return func(arg), time.perf_counter() - start
