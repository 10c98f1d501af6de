"""The baselines zeromem is measured against: BM25, dense and RRF hybrid retrieval over turns.

Each turn is indexed as ``"[session date] speaker: text [image: caption]"`` (see
:func:`format_turn`), with the project's own tokenizer, BM25 index, embedding model and dense
index — the same encoders as the engine, so differences come from retrieval, not from models.
Reciprocal-rank fusion scores a turn ``Σ 1 / (RRF_K + rank)`` over the BM25 and dense
rankings (ranks from 1, ``RRF_K = 60``, each list read to ``RRF_DEPTH``); ties go to the turn
with the better single rank, then to the earlier turn, so results are deterministic.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable, Sequence
from typing import Any

from zeromem.config import EncoderConfig

from .records import QueryResult, Unit, elapsed_ms

RRF_K = 60
RRF_DEPTH = 100


def format_turn(text: str, *, speaker: str | None = None, session_time: str | None = None,
                attachments: Iterable[str] = ()) -> str:
    """The baselines' indexed form of a turn: date, speaker, text and image captions."""
    head = f"[{session_time}] " if session_time else ""
    who = f"{speaker}: " if speaker else ""
    tail = "".join(f" [image: {caption}]" for caption in attachments)
    return f"{head}{who}{text}{tail}"


def readable_time(value: str | None) -> str | None:
    """An ISO time as LoCoMo writes session dates ("1:56 pm on 8 May, 2023"); other text as is."""
    if not value:
        return None
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return value
    hour = moment.hour % 12 or 12
    half = "am" if moment.hour < 12 else "pm"
    return f"{hour}:{moment.minute:02d} {half} on {moment.day} {moment:%B}, {moment.year}"


def rrf(rankings: Sequence[Sequence[int]], *, k: int = RRF_K) -> list[int]:
    """Fuse rankings of item indexes by reciprocal rank; best first, ties broken as above."""
    scores: dict[int, float] = {}
    best_rank: dict[int, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            best_rank[item] = min(best_rank.get(item, rank), rank)
    return sorted(scores, key=lambda item: (-scores[item], best_rank[item], item))


class TurnIndexes:
    """BM25 and dense indexes of each corpus, built once and shared by the three baselines.

    The embedding model is loaded on first use, once per run. ``build_ms`` keeps what each
    index cost to build, so a baseline reports its full ingest time even when it reuses an
    index another baseline already built.
    """

    def __init__(self, encoders: EncoderConfig | None = None) -> None:
        self.encoders = encoders or EncoderConfig()
        self._embedder: Any = None
        self._units: dict[str, Sequence[Unit]] = {}
        self._lexical: dict[str, Any] = {}
        self._dense: dict[str, Any] = {}
        self.build_ms: dict[tuple[str, str], float] = {}
        self.model_load_ms = 0.0

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from zeromem.encoders.factory import load_embedder, resolve_auto
            start = time.perf_counter()
            # "auto" is chosen from the first corpus's text, as a memory chooses from its own.
            texts = [u.draft["text"] for units in self._units.values() for u in units[:50]]
            self._embedder = load_embedder(resolve_auto(self.encoders, texts))
            self.model_load_ms = elapsed_ms(start)
        return self._embedder

    def units(self, corpus: str) -> Sequence[Unit]:
        return self._units[corpus]

    def lexical(self, corpus: str, units: Sequence[Unit]) -> Any:
        """The BM25 index of ``corpus``, built on first request."""
        if corpus not in self._lexical:
            from zeromem.encoders.tokenize import tokenize
            from zeromem.indexes.lexical import LexicalIndex
            self._units[corpus] = units
            start = time.perf_counter()
            self._lexical[corpus] = LexicalIndex([tokenize(unit.text) for unit in units])
            self.build_ms[(corpus, "lexical")] = elapsed_ms(start)
        return self._lexical[corpus]

    def dense(self, corpus: str, units: Sequence[Unit]) -> Any:
        """The dense index of ``corpus``, built (all turns encoded) on first request."""
        if corpus not in self._dense:
            from zeromem.indexes.dense import DenseIndex
            self._units[corpus] = units
            embedder = self.embedder  # model loading is setup, not ingest: keep it out of the timing
            start = time.perf_counter()
            self._dense[corpus] = DenseIndex(embedder.encode([unit.text for unit in units]))
            self.build_ms[(corpus, "dense")] = elapsed_ms(start)
        return self._dense[corpus]

    def release(self, corpus: str) -> None:
        for table in (self._units, self._lexical, self._dense):
            table.pop(corpus, None)


def _result(units: Sequence[Unit], order: Sequence[int], total_ms: float,
            encode_ms: float) -> QueryResult:
    picked = [units[int(i)] for i in order]
    return QueryResult([[unit.key] for unit in picked], [unit.draft["text"] for unit in picked],
                       "\n".join(unit.text for unit in picked), total_ms, encode_ms)


class _Baseline:
    name = ""
    _needs: tuple[str, ...] = ()

    def __init__(self, shared: TurnIndexes) -> None:
        self.shared = shared

    def ingest(self, corpus: str, units: Sequence[Unit]) -> float:
        for kind in self._needs:
            getattr(self.shared, kind)(corpus, units)
        return sum(self.shared.build_ms[(corpus, kind)] for kind in self._needs)

    @property
    def model_load_ms(self) -> float:
        return self.shared.model_load_ms if "dense" in self._needs else 0.0

    def query(self, corpus: str, question: str, k: int, asked_at: str | None = None) -> QueryResult:
        raise NotImplementedError  # each baseline ranks its own way

    def release(self, corpus: str) -> None:
        self.shared.release(corpus)

    def close(self) -> None:
        """Nothing to free beyond the shared indexes."""


def _lexical_order(index: Any, question: str, depth: int) -> list[int]:
    from zeromem.encoders.tokenize import tokenize
    found, _scores = index.search(tokenize(question), depth)
    return [int(i) for i in found]


def _dense_order(shared: TurnIndexes, index: Any, question: str, depth: int) -> tuple[list[int], float]:
    start = time.perf_counter()
    vector = shared.embedder.encode_query(question)
    encode_ms = elapsed_ms(start)
    found, _scores = index.search(vector, depth)
    return [int(i) for i in found], encode_ms


class BM25System(_Baseline):
    """BM25 over turns."""

    name = "bm25"
    _needs = ("lexical",)

    def query(self, corpus: str, question: str, k: int, asked_at: str | None = None) -> QueryResult:
        units = self.shared.units(corpus)
        start = time.perf_counter()
        order = _lexical_order(self.shared.lexical(corpus, units), question, min(k, len(units)))
        return _result(units, order, elapsed_ms(start), 0.0)


class DenseSystem(_Baseline):
    """Cosine similarity of embeddings over turns."""

    name = "dense"
    _needs = ("dense",)

    def query(self, corpus: str, question: str, k: int, asked_at: str | None = None) -> QueryResult:
        units = self.shared.units(corpus)
        start = time.perf_counter()
        order, encode_ms = _dense_order(self.shared, self.shared.dense(corpus, units), question,
                                        min(k, len(units)))
        return _result(units, order, elapsed_ms(start), encode_ms)


class HybridSystem(_Baseline):
    """Reciprocal-rank fusion of the BM25 and dense rankings."""

    name = "hybrid"
    _needs = ("lexical", "dense")

    def query(self, corpus: str, question: str, k: int, asked_at: str | None = None) -> QueryResult:
        units = self.shared.units(corpus)
        depth = min(max(RRF_DEPTH, k), len(units))
        start = time.perf_counter()
        lexical = _lexical_order(self.shared.lexical(corpus, units), question, depth)
        dense, encode_ms = _dense_order(self.shared, self.shared.dense(corpus, units), question, depth)
        order = rrf([lexical, dense])[:k]
        return _result(units, order, elapsed_ms(start), encode_ms)


BASELINES = {"bm25": BM25System, "dense": DenseSystem, "hybrid": HybridSystem}
