"""The storage interface split by role; ``store.base.StoreBase`` composes them all.

A caller that needs one role types against it (the indexer writes ``DerivedStore``,
persistence reads ``SnapshotStore``); every backend implements every role.
"""

from .changes import ChangeLog, HeldRows
from .derived import DerivedStore, DerivedUnit, Replacing
from .keys import KeyStore
from .maintenance import Maintenance
from .meta import MetaStore
from .portable import ExportRows, Portable, Restored, RestoredEvent, RestoredTombstone, RestoredTrace
from .snapshots import SnapshotStore, TraceRows
from .traces import CleanDraft, TraceDraft, TraceRecords

__all__ = ["ChangeLog", "CleanDraft", "DerivedStore", "DerivedUnit", "ExportRows", "HeldRows", "KeyStore",
           "Maintenance", "MetaStore", "Portable", "Replacing", "Restored", "RestoredEvent", "RestoredTombstone",
           "RestoredTrace", "SnapshotStore", "TraceDraft", "TraceRecords", "TraceRows"]
