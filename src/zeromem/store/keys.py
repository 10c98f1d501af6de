"""API keys of the memory service: how a key looks, how it is hashed, and what is stored.

A key is ``zm_<key id>_<secret>``: the key id (8 hex characters) names the key in listings
and revocations; the secret is 32 random bytes (urlsafe base64). Only the SHA-256 of the
whole key is stored. A plain (unsalted, fast) hash is enough because the key is 256 bits of
randomness, not a password a person chose: no dictionary or brute force can reach it, and a
fast hash keeps the per-request lookup to one indexed read.

Each key is bound to exactly one scope (user, agent); the server acts in that scope and no
other, whatever the request says.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from ..errors import InvalidInput
from ..types import Scope

_KEY_RE = re.compile(r"^zm_([0-9a-f]{8})_([A-Za-z0-9_-]{20,})$")


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One stored key (never its secret): id, scope, label, when created / revoked."""

    key_id: str
    scope: Scope
    label: str | None
    created_at: str
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class KeyIdTaken(InvalidInput):
    """A new key's id is already a stored key's (ids are 32 random bits: in a store of many
    keys, two draws can meet)."""


def new_api_key() -> tuple[str, str, str]:
    """A fresh key: ``(key id, the full key to hand out once, its hash to store)``."""
    key_id = secrets.token_hex(4)
    key = f"zm_{key_id}_{secrets.token_urlsafe(32)}"
    return key_id, key, hash_api_key(key)


def hash_api_key(key: str) -> str:
    """The stored form of ``key``; InvalidInput when it does not look like a zeromem key."""
    if not isinstance(key, str) or not _KEY_RE.match(key.strip()):
        raise InvalidInput("an API key looks like zm_<8 hex>_<secret> (see `zeromem keys add`)")
    return hashlib.sha256(key.strip().encode()).hexdigest()


def check_key_id(key_id: object) -> str:
    """A key id as listed by ``zeromem keys list`` (8 hex characters)."""
    if not isinstance(key_id, str) or not re.fullmatch(r"[0-9a-f]{8}", key_id.strip()):
        raise InvalidInput(f"a key id is 8 hex characters as `zeromem keys list` shows, got {key_id!r}")
    return key_id.strip()
