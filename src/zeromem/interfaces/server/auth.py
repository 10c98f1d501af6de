"""Who is calling: ``Authorization: Bearer <key>`` → the one scope that key may use.

Keys live hashed in the store (store/keys.py); ``zeromem keys add`` makes them. A revoked,
unknown or malformed key is a 401 that does not say which of the three it was. Lookups are
cached for ``cache_s`` seconds (default 2) so a busy server does one store read per key per
interval; revocation therefore takes effect within that interval.

Without auth (``zeromem serve --no-auth``, meant for a single local user) every request
acts in the server's own ``--user`` / ``--agent`` scope.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from ...errors import InvalidInput
from ...store.keys import hash_api_key
from ...types import Scope
from .errors import ApiError


@dataclass(frozen=True, slots=True)
class Caller:
    """The scope a request acts in, and the key id that granted it (None without auth)."""

    scope: Scope
    key_id: str | None


class KeyAuth:
    def __init__(self, store: object, *, required: bool, default_scope: Scope,
                 cache_s: float = 2.0) -> None:
        self.store = store
        self.required = required
        self.default_scope = default_scope
        self.cache_s = cache_s
        self._cache: dict[str, tuple[float, Caller | None]] = {}
        self._lock = threading.Lock()

    def caller(self, authorization: str | None) -> Caller:
        if not self.required:
            return Caller(self.default_scope, None)
        if not authorization:
            raise ApiError(401, "Unauthorized", "send 'Authorization: Bearer <key>' (make a key "
                                                "with `zeromem keys add --user U`)")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(401, "Unauthorized", "the Authorization header must be 'Bearer <key>'")
        try:
            key_hash = hash_api_key(token.strip())
        except InvalidInput:
            raise ApiError(401, "Unauthorized", "invalid, unknown or revoked API key") from None
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key_hash)
        if hit is not None and now - hit[0] < self.cache_s:
            found = hit[1]
        else:
            record = self.store.api_key_by_hash(key_hash)  # type: ignore[attr-defined]
            found = Caller(record.scope, record.key_id) if record is not None and record.active else None
            with self._lock:
                if len(self._cache) > 10_000:
                    self._cache.clear()
                self._cache[key_hash] = (now, found)
        if found is None:
            raise ApiError(401, "Unauthorized", "invalid, unknown or revoked API key")
        return found
