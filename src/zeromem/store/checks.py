"""Input checks every backend applies before it writes, so that all refuse the same inputs:
scopes, flags, ``list`` filters and ``store_meta`` keys and values."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

# Config.lock_timeout_s and Config.erase_rewrite_mb's defaults, for a store opened without a Config.
from ..config import DEFAULT_ERASE_REWRITE_MB as DEFAULT_ERASE_REWRITE_MB
from ..config import DEFAULT_LOCK_TIMEOUT_S as DEFAULT_LOCK_TIMEOUT_S
from ..errors import InvalidInput, StoreError
from ..types import Scope
from . import validate
from .ids import ID_KEY, TraceIdCodec


def check_flag(value: Any, name: str) -> bool:
    """A boolean option such as ``keep_history``: a real bool, so that a stray string such as
    ``"false"`` is refused instead of read as True."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be True or False, got {value!r}")
    return value


def check_lock_timeout(value: Any) -> float:
    """``lock_timeout_s``: a positive, finite number of seconds (at most a day)."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not 0 < float(value) <= 86_400):
        raise InvalidInput(f"lock_timeout_s must be a number of seconds above 0 (at most 86400), "
                           f"got {value!r}")
    return float(value)


def scope_key(scope: Any) -> tuple[str, str]:
    """``(user, agent)`` as stored (None → ``""``), after checking both parts can be stored."""
    if not isinstance(scope, Scope):
        raise InvalidInput("scope must be a zeromem Scope")
    validate.clean_scope_part(scope.user, "user")
    validate.clean_scope_part(scope.agent, "agent")
    return scope.key


def not_found_message(tid: str, scope: Scope) -> str:
    """The NotFound message for trace ``tid`` in ``scope``: names both and the fix."""
    where = f"user={scope.user!r}, agent={scope.agent!r}"
    return f"no trace {tid!r} in scope ({where}): check the id and the --user/--agent you passed"


_META_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def clean_list_filters(metadata: Any, limit: Any, offset: Any) -> dict[str, Any]:
    """``list``'s metadata filter (plain keys, scalar values) and paging, checked once for
    every backend so all refuse the same inputs; returns the cleaned metadata filter."""
    filters = validate.clean_metadata(metadata, "metadata filter")
    for key, value in filters.items():
        if not _META_KEY_RE.match(key):
            raise InvalidInput(f"metadata filter key {key!r} must be a plain identifier")
        if not isinstance(value, (str, int, float, bool)) and value is not None:
            raise InvalidInput(f"metadata filter value for {key!r} must be a scalar")
    for name, number in (("limit", limit), ("offset", offset)):
        if number is None and name == "limit":
            continue
        if (isinstance(number, bool) or not isinstance(number, int) or number < 0
                or number > validate.MAX_INT):
            shown = validate.int_text(number) if type(number) is int else repr(number)
            raise InvalidInput(f"{name} must be a non-negative int below 2**63, got {shown}")
    return filters


def check_meta_key(key: Any) -> str:
    """A ``store_meta`` key: a non-empty string that can be stored."""
    if not isinstance(key, str) or not key:
        raise InvalidInput(f"a store_meta key is a non-empty string, got {key!r}")
    validate.check_unicode(key, "store_meta key")
    return key


# The highest version a deleted scope's row reached (a ``store_meta`` key of every backend): a
# deleted scope leaves no version row, so that its user and agent leave the store; the row a
# later write makes for a scope of the same name starts above this, so no index of the
# deleted scope is ever taken as current.
VERSION_FLOOR_KEY = "scope_version_floor"


def check_meta_write(key: Any) -> str:
    """A ``store_meta`` key that may be written or removed: any but the trace id key, which is
    made once with the store (changing it would change every id), and the version floor."""
    checked = check_meta_key(key)
    if checked == ID_KEY:
        raise InvalidInput(f"store_meta key {ID_KEY!r} is the store's trace id key: it cannot be "
                           "changed or removed (every trace id depends on it)")
    if checked == VERSION_FLOOR_KEY:
        raise InvalidInput(f"store_meta key {VERSION_FLOOR_KEY!r} is kept by delete_scope: it cannot "
                           "be changed or removed (in-memory indexes of other processes rely on it)")
    return checked


def id_codec(key_hex: str | None, path: str) -> TraceIdCodec:
    """The trace id codec of the store at ``path`` from its ``store_meta`` key (StoreError if
    the store has none: its schema migration makes one)."""
    if key_hex is None:
        raise StoreError(f"{path} has no trace id key ({ID_KEY} in store_meta): the store is "
                         "damaged; restore it from a backup")
    return TraceIdCodec(key_hex)


def check_meta_value(value: Any) -> str:
    """A ``store_meta`` value: a string that can be stored."""
    if not isinstance(value, str):
        raise InvalidInput(f"a store_meta value is a string, got {type(value).__name__}")
    validate.check_unicode(value, "store_meta value")
    return value


def scope_meta_key(prefix: str, scope: Scope) -> str:
    """The ``store_meta`` key of a per-scope fact, e.g. ``embedder:["ana",""]``.

    ``delete_scope`` removes every key made here for its scope, whatever the prefix. The scope
    part is JSON, so no two scopes share a key whatever characters their ids hold.
    """
    if not isinstance(prefix, str) or not prefix or ":" in prefix:
        raise InvalidInput(f"a per-scope meta prefix is a non-empty string without ':', got {prefix!r}")
    return f"{prefix}:{scope_meta_suffix(scope)}"


def scope_meta_suffix(scope: Scope) -> str:
    """What follows the first ``:`` in every per-scope ``store_meta`` key of ``scope``: its
    ``scope_key`` (``scope_json``)."""
    return scope_json(*scope_key(scope))


@functools.lru_cache(maxsize=4096)  # every scoped call makes it; few scopes per process
def scope_json(user: str, agent: str) -> str:
    """The ``scope_key`` column of both SQL stores: ``(user, agent)`` as compact JSON,
    ``["ana",""]`` (no two scopes share one, whatever characters their ids hold)."""
    return json.dumps([user, agent], ensure_ascii=False, separators=(",", ":"))
