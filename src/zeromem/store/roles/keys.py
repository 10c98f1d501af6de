"""The API-key role: the service's keys (hashes bound to a scope; store/keys.py)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ...types import Scope
from ..keys import ApiKey, KeyIdTaken, new_api_key

_KEY_DRAWS = 8  # a key id already taken is drawn again; eight taken in a row is not chance


class KeyStore(ABC):
    """The service's API keys: stored as hashes, each bound to one scope, never deleted."""

    @abstractmethod
    def add_api_key(self, key_id: str, key_hash: str, scope: Scope, label: str | None) -> ApiKey:
        """Store a new key's hash bound to ``scope``; InvalidInput if the id or hash exists
        (``KeyIdTaken`` for the id)."""

    def create_api_key(self, scope: Scope, label: str | None) -> tuple[ApiKey, str]:
        """Make and store a new key for ``scope``: (its record, the key to hand out once; only
        its hash is stored). An id another key has is drawn again."""
        for _ in range(_KEY_DRAWS - 1):
            try:
                return self._add_new_key(scope, label)
            except KeyIdTaken:
                continue
        return self._add_new_key(scope, label)  # the last draw's KeyIdTaken reaches the caller

    def _add_new_key(self, scope: Scope, label: str | None) -> tuple[ApiKey, str]:
        key_id, key, key_hash = new_api_key()
        return self.add_api_key(key_id, key_hash, scope, label), key

    @abstractmethod
    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this hash, revoked or not; None when there is none."""

    @abstractmethod
    def api_keys(self) -> list[ApiKey]:
        """Every key (revoked ones too), oldest first."""

    @abstractmethod
    def revoke_api_key(self, key_id: str) -> ApiKey:
        """Mark a key revoked (it stays listed); NotFound for an unknown id."""
