"""Which embedder made a scope's stored vectors: recorded in ``store_meta``, checked on use.

A fingerprint is the dict ``encoders.fingerprint.embedder_fingerprint`` returns (model, dim,
backend, weights_sha256); this module only stores and compares such dicts, so it works on any
backend. Each scope has its own record (key ``embedder:["<user>","<agent>"]``, see
``base.scope_meta_key``); ``delete_scope`` removes it with the scope.

Where these are meant to be called (by the indexer, not by users):

* ``check_fingerprint`` before anything encoded by the current embedder meets the scope's
  stored vectors: before an incremental refresh writes new vectors, and before a search
  compares a query vector with them (when a scope's vectors are loaded). The first check of a
  scope records the fingerprint; a later one with another embedder raises EmbedderMismatch.
* ``record_fingerprint`` when the scope's vectors are all replaced: at the end of a full
  rebuild (``Memory.reindex`` / ``zeromem reindex``), inside or right after its transaction.
* ``clear_fingerprint`` when a scope loses all its vectors some other way than
  ``delete_scope`` (which clears it by itself).
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from ..errors import EmbedderMismatch, InvalidInput
from ..types import Scope
from .base import TraceStoreBase, scope_meta_key

PREFIX = "embedder"


def fingerprint_key(scope: Scope) -> str:
    """The ``store_meta`` key holding ``scope``'s embedder fingerprint."""
    return scope_meta_key(PREFIX, scope)


def recorded_fingerprint(store: TraceStoreBase, scope: Scope) -> dict[str, Any] | None:
    """The fingerprint recorded for ``scope``, or None."""
    value = store.get_meta(fingerprint_key(scope))
    return None if value is None else _load(value)


def check_fingerprint(store: TraceStoreBase, scope: Scope, fingerprint: dict[str, Any]) -> None:
    """Record ``fingerprint`` for ``scope`` if none is recorded; else insist it is the same.

    Raises EmbedderMismatch (a StoreError) when the scope's vectors were made by another
    embedder (see ``same_embedder``). Recording is atomic: of two processes checking a fresh
    scope with different embedders at once, one records and the other gets the error.
    """
    value = _dump(fingerprint)
    key = fingerprint_key(scope)
    stored = store.get_meta(key)  # a read: the common case takes no write lock
    if stored is None:
        stored = store.setdefault_meta(key, value)
    if stored == value:
        return
    recorded = _load(stored)
    if not same_embedder(recorded, fingerprint):
        raise EmbedderMismatch(mismatch_message(store, scope, recorded, fingerprint))


def record_fingerprint(store: TraceStoreBase, scope: Scope, fingerprint: dict[str, Any]) -> None:
    """Make ``fingerprint`` the one recorded for ``scope``, replacing any (after a rebuild)."""
    store.set_meta(fingerprint_key(scope), _dump(fingerprint))


def clear_fingerprint(store: TraceStoreBase, scope: Scope) -> bool:
    """Forget ``scope``'s fingerprint; True if one was recorded."""
    return store.delete_meta(fingerprint_key(scope))


def same_embedder(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True when vectors made under ``a`` and ``b`` are comparable.

    Dimension and backend must match. The weights decide the rest: when both fingerprints
    carry a weights hash of the same format, the hashes must match (the model name may then
    differ, e.g. a package name and a local copy of the same files); otherwise the model
    names must.
    """
    if a.get("dim") != b.get("dim") or a.get("backend") != b.get("backend"):
        return False
    ha, hb = a.get("weights_sha256"), b.get("weights_sha256")
    if ha and hb and a.get("format") == b.get("format"):
        return bool(ha == hb)
    return bool(a.get("model") == b.get("model"))


def describe(fingerprint: dict[str, Any]) -> str:
    """``'name' (backend onnx, 384 dims, weights 1a2b3c4d5e6f)`` for messages."""
    weights = fingerprint.get("weights_sha256")
    parts = [f"backend {fingerprint.get('backend')}", f"{fingerprint.get('dim')} dims"]
    if weights:
        parts.append(f"weights {str(weights)[:12]}")
    return f"{fingerprint.get('model')!r} ({', '.join(parts)})"


def reindex_command(store: TraceStoreBase, scope: Scope) -> str:
    """The ``zeromem reindex`` command line that rebuilds ``scope`` of ``store``."""
    words = ["zeromem", "reindex"]
    if store.path and store.path != ":memory:":
        words += ["--db", store.path]
    if scope.user is not None:
        words += ["--user", scope.user]
    if scope.agent is not None:
        words += ["--agent", scope.agent]
    return " ".join(shlex.quote(word) for word in words)


def mismatch_message(store: TraceStoreBase, scope: Scope, recorded: dict[str, Any],
                     current: dict[str, Any]) -> str:
    """Why the embedders differ and how to fix it: names both and the reindex command."""
    return (f"the vectors stored for scope (user={scope.user!r}, agent={scope.agent!r}) were "
            f"made by embedding model {describe(recorded)}, but the configured embedder is "
            f"{describe(current)}; their vectors cannot be compared. Run "
            f"`{reindex_command(store, scope)}` (or Memory.reindex()) to re-encode this scope "
            f"with the configured model, or configure the model the scope was built with.")


def _dump(fingerprint: Any) -> str:
    if not isinstance(fingerprint, dict) or "model" not in fingerprint or "dim" not in fingerprint:
        raise InvalidInput("a fingerprint is the dict embedder_fingerprint() returns "
                           "(with at least 'model' and 'dim')")
    try:
        return json.dumps(fingerprint, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"a fingerprint must be JSON-serializable: {exc}") from None


def _load(value: str) -> dict[str, Any]:
    try:
        loaded = json.loads(value)
    except json.JSONDecodeError:
        loaded = None
    return loaded if isinstance(loaded, dict) else {"model": value}
