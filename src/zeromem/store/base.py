"""The storage interface every backend implements, composed from its roles (store/roles/).

``StoreBase`` is what the rest of zeromem may rely on whatever holds the data (an SQLite file
or a PostgreSQL database); ``store.factory.open_store`` is the one place that knows the
backends, and tests/conformance the behaviour every one must show. The roles:

* ``TraceRecords`` — the source of record: checked writes, erasure, reads, history, listing;
* ``KeyStore`` — the service's API keys;  ``MetaStore`` — per-store facts (``store_meta``);
* ``DerivedStore`` — units, vectors, mentions, signals (rebuildable from the traces);
* ``ChangeLog`` — scope versions and the sessions each write changed;
* ``SnapshotStore`` — persisted in-memory indexes;  ``Maintenance`` — size, stats, compaction;
* ``Portable`` — records out and back in with their ids (export / import), whole-store backup.

The names below are kept for callers that import them from here.
"""

from __future__ import annotations

from abc import ABC

from .checks import (
    DEFAULT_LOCK_TIMEOUT_S,
    VERSION_FLOOR_KEY,
    check_flag,
    check_lock_timeout,
    check_meta_key,
    check_meta_value,
    check_meta_write,
    clean_list_filters,
    id_codec,
    not_found_message,
    scope_key,
    scope_meta_key,
    scope_meta_suffix,
)
from .receipts import ERASABLE_TABLES, DeleteReceipt, make_receipt, retained_identifiers
from .roles import (
    ChangeLog,
    CleanDraft,
    DerivedStore,
    DerivedUnit,
    HeldRows,
    KeyStore,
    Maintenance,
    MetaStore,
    Portable,
    Replacing,
    SnapshotStore,
    TraceDraft,
    TraceRecords,
    TraceRows,
)

__all__ = ["DEFAULT_LOCK_TIMEOUT_S", "ERASABLE_TABLES", "VERSION_FLOOR_KEY", "ChangeLog", "CleanDraft",
           "DeleteReceipt", "DerivedStore", "DerivedStoreBase", "DerivedUnit", "HeldRows", "KeyStore", "Maintenance",
           "MetaStore", "Replacing", "SnapshotStore", "StoreBase", "TraceDraft", "TraceRecords", "TraceRows",
           "TraceStoreBase", "check_flag", "check_lock_timeout", "check_meta_key", "check_meta_value",
           "check_meta_write", "clean_list_filters", "id_codec", "make_receipt", "not_found_message",
           "retained_identifiers", "scope_key", "scope_meta_key", "scope_meta_suffix"]


class TraceStoreBase(TraceRecords, KeyStore, MetaStore, Maintenance, Portable, ABC):
    """The source of record with its per-store facts: traces, keys, ``store_meta``, upkeep,
    export / import / backup."""


class DerivedStoreBase(DerivedStore, ChangeLog, SnapshotStore, ABC):
    """What is derived from the traces: rows, the change log, persisted indexes."""


class StoreBase(TraceStoreBase, DerivedStoreBase):
    """What a backend implements: every role (the traces, source of record, and their derived rows)."""
