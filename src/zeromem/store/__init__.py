"""The source of record: verbatim traces, their history, and the derived tables' storage.

``open_store(target)`` opens the backend a path or URL names (see ``store.factory``);
``TraceStoreBase`` is the interface every backend implements.
"""

from .base import TraceDraft, TraceStoreBase
from .factory import open_store
from .sqlite import SQLiteStore, TraceStore

__all__ = ["SQLiteStore", "TraceDraft", "TraceStore", "TraceStoreBase", "open_store"]
