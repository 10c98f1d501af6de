"""The one door tests use to reach a Memory's internals (its store, indexer, retriever,
encoders, lifecycle service). Tests go through the public API wherever they can; where a test
truly checks an internal (derived rows, a failing encoder, the index cache), it asks here, so
that every such reach is explicit and greppable."""

from zeromem._internals import encoders_of, indexer_of, lifecycle_of, retriever_of, store_of

__all__ = ["encoders_of", "indexer_of", "lifecycle_of", "retriever_of", "store_of"]
