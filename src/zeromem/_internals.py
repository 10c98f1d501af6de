"""The parts of a ``Memory`` that zeromem's own interfaces, benchmarks and tests reach, and
users should not: the store, the indexer, the retriever, the encoders, the lifecycle service.

``Memory`` keeps them private (``_store``...) so that its public surface is the facade alone.
Code that truly needs one — the server's API keys and preload, a benchmark's store size, a test
of derived rows — asks here, so every such reach is one grep away and none is an accident.
Nothing here is part of the public API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .encoders.bundle import Encoders
    from .indexes.indexer import Indexer
    from .lifecycle.service import Lifecycle
    from .memory import Memory
    from .retrieval.retriever import Retriever
    from .store.base import StoreBase


def store_of(memory: Memory) -> StoreBase:
    """The memory's store (the source of record)."""
    return memory._store


def indexer_of(memory: Memory) -> Indexer:
    """The memory's indexer (derives units, vectors and entity mentions)."""
    return memory._indexer


def retriever_of(memory: Memory) -> Retriever:
    """The memory's retriever (in-memory indexes, search, render)."""
    return memory._retriever


def encoders_of(memory: Memory) -> Encoders:
    """The memory's encoders (embedder, NER; loaded on first use)."""
    return memory._encoders


def lifecycle_of(memory: Memory) -> Lifecycle:
    """The memory's lifecycle service (survival scores, active memory, cards)."""
    return memory._lifecycle
