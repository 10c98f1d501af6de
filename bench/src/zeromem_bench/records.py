"""The records the benchmark loop passes around: corpora, queries, systems and their runs.

Kept apart from the loop (runner.py) so that the systems under test (baselines.py,
zeromem_system.py) depend on these types only, and the loop on the systems: no import cycle.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from zeromem.reader import base as reader_base

CURVE_K = 20


@dataclass(frozen=True, slots=True)
class Unit:
    """One trace of a benchmark corpus.

    ``draft`` is exactly what ``Memory.add_many`` receives; ``key`` is the turn id that gold
    evidence refers to (the draft's source id); ``text`` is the baselines' indexed form.
    """

    key: str
    draft: dict[str, Any]
    text: str


@dataclass(frozen=True, slots=True)
class Query:
    """One benchmark question. ``scored`` questions count for retrieval metrics."""

    qid: str
    text: str
    category: str
    gold: tuple[str, ...]
    answer: Any = None
    scored: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    asked_at: str | None = None  # when the question is asked (ISO 8601), if the data says


@dataclass(frozen=True, slots=True)
class Corpus:
    """What one memory holds and the questions asked of it."""

    name: str
    units: Sequence[Unit]
    queries: Sequence[Query]


@dataclass(slots=True)
class QueryResult:
    """A system's answer to one query: per evidence item in rank order, the turn ids it
    covers (``groups``) and its verbatim text (``texts``); ``context`` is the block a reader
    would be given; times in milliseconds."""

    groups: list[list[str]]
    texts: list[str]
    context: str
    total_ms: float
    encode_ms: float | None = None
    no_answer_score: float | None = None


@dataclass(slots=True)
class QuestionRun:
    """One question asked of one system: the curve call and the headline call."""

    query: Query
    curve: QueryResult
    headline: QueryResult
    context_tokens: int
    prediction: str | None = None


@dataclass(slots=True)
class SystemRun:
    """Everything one system produced over the whole benchmark."""

    name: str
    runs: list[QuestionRun] = field(default_factory=list)
    ingest_ms: float = 0.0
    turns: int = 0
    llm: reader_base.LLMUsage = field(default_factory=reader_base.LLMUsage)
    reader_llm: reader_base.LLMUsage | None = None
    model_load_ms: float | None = None  # encoder loading, once per process: setup, not ingest
    no_answer_threshold: float | None = None
    reopened: int = 0  # corpora whose memory an earlier run kept: ingest was not measured


class System(Protocol):
    """A retrieval system under test."""

    name: str

    def ingest(self, corpus: str, units: Sequence[Unit]) -> float:
        """Store and index ``units`` as corpus ``corpus``; return the elapsed milliseconds."""
        ...

    def query(self, corpus: str, question: str, k: int, asked_at: str | None = None) -> QueryResult:
        """Retrieve evidence for ``question`` from ``corpus`` with a budget of ``k`` turns;
        ``asked_at``: when the question is asked, for a system that can use it."""
        ...

    def release(self, corpus: str) -> None:
        """Free what ``corpus`` holds (the harness is done with it)."""
        ...

    def close(self) -> None:
        """Free everything."""
        ...


def elapsed_ms(start: float) -> float:
    """Milliseconds since ``start`` (a ``time.perf_counter()`` reading)."""
    return (time.perf_counter() - start) * 1000.0
