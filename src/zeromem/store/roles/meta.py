"""The per-store facts role: ``store_meta`` keys and values (trace id key, embedder
fingerprints per scope, the version floor; checks in store/checks.py)."""

from __future__ import annotations

from abc import ABC, abstractmethod


class MetaStore(ABC):
    """Small named facts of the store, each one atomic write."""

    @abstractmethod
    def get_meta(self, key: str) -> str | None:
        """The value stored under ``key``, or None."""

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key``, replacing any earlier value (one atomic write)."""

    @abstractmethod
    def setdefault_meta(self, key: str, value: str) -> str:
        """Store ``value`` under ``key`` unless a value is there already; return the stored
        value. Atomic: of two concurrent callers exactly one value wins and both see it."""

    @abstractmethod
    def delete_meta(self, key: str) -> bool:
        """Remove ``key``; True if it was there."""
