"""The source of record: verbatim traces, their history, and the derived tables' storage.

``open_store(target)`` opens the backend a path or URL names (see ``store.factory``);
``StoreBase`` is the interface every backend implements: ``TraceStoreBase`` (traces and
history) and ``DerivedStoreBase`` (units, vectors, mentions, change log, persisted indexes).
The behaviour every backend must show is tests/conformance.
"""

from .base import DerivedStoreBase, DerivedUnit, StoreBase, TraceDraft, TraceStoreBase
from .factory import open_store
from .sqlite import SQLiteStore, TraceStore

__all__ = ["DerivedStoreBase", "DerivedUnit", "SQLiteStore", "StoreBase", "TraceDraft", "TraceStore",
           "TraceStoreBase", "open_store"]
