"""What an erasing delete returns: the claim it can be checked against (``DeleteReceipt``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Every table that can hold a trace's text or something derived from it, in the order a
# receipt lists them (SQLite; PostgreSQL keeps vectors in ``units`` and has no unit_vectors).
ERASABLE_TABLES = ("traces", "trace_history", "trace_signals", "units", "unit_vectors",
                   "unit_mentions", "entity_vectors", "dirty_sessions", "session_changes",
                   "scope_snapshots", "scope_snapshot_parts", "store_meta")


@dataclass(frozen=True, slots=True)
class DeleteReceipt:
    """What a delete removed and where: the claim an erasure can be checked against.

    * ``kind``: ``"trace"``, ``"session"`` or ``"scope"``; ``trace_ids``: the traces removed.
    * ``rows``: ``(table, rows)`` for every table that can hold text or what was derived from
      it (``ERASABLE_TABLES``), zeros included, so the receipt also says what was checked. For
      ``trace_history`` it counts the events emptied of text (tombstones) or removed (scope).
    * ``history_text_purged``: no history event of these traces holds text or metadata any
      more; False when the caller kept the history (``keep_history=True``).
    * ``secure_delete``: the backend overwrote the freed bytes (SQLite ``secure_delete``).
    * ``checkpointed``: SQLite's write-ahead log was copied into the file and truncated, so
      the ``-wal`` file holds no copy of the old pages.
    * ``retained``: what may still hold the text, one sentence each; empty when nothing does.
    * ``compacted``: the erasure rewrote the file (SQLite VACUUM) because old copies of rows
      stayed in the unused space of its pages, where secure_delete does not reach.
    """

    kind: str
    trace_ids: tuple[str, ...]
    rows: tuple[tuple[str, int], ...]
    history_text_purged: bool
    secure_delete: bool
    checkpointed: bool
    retained: tuple[str, ...] = ()
    compacted: bool = False

    @property
    def traces(self) -> int:
        """How many traces were removed."""
        return len(self.trace_ids)

    def as_dict(self) -> dict[str, Any]:
        """The receipt as plain JSON values (``rows`` as an object), for the CLI and the API."""
        return {"kind": self.kind, "traces": self.traces, "trace_ids": list(self.trace_ids),
                "rows": dict(self.rows), "history_text_purged": self.history_text_purged,
                "secure_delete": self.secure_delete, "checkpointed": self.checkpointed,
                "retained": list(self.retained), "compacted": self.compacted}


def make_receipt(kind: str, trace_ids: Sequence[str], counts: Mapping[str, int], *,
                 history_text_purged: bool, secure_delete: bool, checkpointed: bool,
                 retained: Sequence[str] = (), compacted: bool = False) -> DeleteReceipt:
    """A ``DeleteReceipt`` listing every erasable table in a fixed order (missing ones as 0)."""
    return DeleteReceipt(kind, tuple(trace_ids),
                         tuple((table, int(counts.get(table, 0))) for table in ERASABLE_TABLES),
                         history_text_purged, secure_delete, checkpointed, tuple(retained), compacted)


def retained_identifiers(kind: str, erased: bool, scope_keys: int) -> list[str]:
    """What a delete leaves of the erased traces' identifiers, and why, one sentence each.

    An erasing delete removes the session name (once no trace of the session is left),
    speaker, source id, title and metadata keys from every table; what stays names the scope:
    the history's tombstones and the scope's version row until the scope itself is deleted,
    and the API keys made for it.
    """
    if not erased:
        return ["the history keeps the text and metadata, and the change log (session_changes) "
                "the session's name (keep_history=True)"]
    if kind == "scope":
        if not scope_keys:
            return []
        return [f"api_keys: {scope_keys} API key(s) made for this scope keep its user and agent "
                "(a revoked key stays listed); the keys are not part of the memory"]
    return ["trace_history keeps one tombstone per deleted trace (event, time, row number and "
            "the scope's user and agent; no text, metadata, session, speaker or source id), and "
            "scope_versions the scope's user and agent, while the scope exists: delete_scope "
            "removes both"]

