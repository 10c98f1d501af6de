"""The API-key role: the service's keys (hashes bound to a scope; store/keys.py)."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ...types import Scope
from ..keys import ApiKey


class KeyStore(ABC):
    """The service's API keys: stored as hashes, each bound to one scope, never deleted."""

    @abstractmethod
    def add_api_key(self, key_id: str, key_hash: str, scope: Scope, label: str | None) -> ApiKey:
        """Store a new key's hash bound to ``scope``; InvalidInput if the id or hash exists."""

    @abstractmethod
    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this hash, revoked or not; None when there is none."""

    @abstractmethod
    def api_keys(self) -> list[ApiKey]:
        """Every key (revoked ones too), oldest first."""

    @abstractmethod
    def revoke_api_key(self, key_id: str) -> ApiKey:
        """Mark a key revoked (it stays listed); NotFound for an unknown id."""
