"""A search request checked and resolved before the engine sees it (query validation).

``search_request`` refuses bad arguments with InvalidInput naming the argument, and turns the
caller's terms into what the engine filters by: row numbers of the traces whose metadata
matches ``filters``, row numbers of traces expired at ``as_of`` (lifecycle), ``as_of`` as a
naive UTC datetime like the prepared index's turn times (store.dates.utc_key), and the calendar
day the question is asked (``now``, else ``as_of``, as the caller wrote it: the asker's own day).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..lifecycle.service import expired_rowids
from ..store import validate
from ..store.base import StoreBase
from ..store.dates import to_utc
from ..types import Scope

MAX_QUERY_CHARS = 10_000


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    k: int
    session: str | None
    as_of: dt.datetime | None  # naive UTC
    allowed_rowids: set[int] | None  # None: every trace
    hidden_rowids: set[int]  # expired at as_of (or now)
    asked_on: dt.date | None = None  # what "yesterday" and "last week" count from


def search_request(store: StoreBase, scope: Scope, query: Any, *, k: Any, session: Any, as_of: Any,
                   filters: dict[str, Any] | None, now: Any = None,
                   expiring: Callable[[Scope], dict[int, Any]] | None = None) -> SearchRequest:
    """The checked request; reads the store for ``filters`` and expiry only (``expiring``:
    the scope's rowid → ``expires_at``, default ``store.expiring``)."""
    query = validate.clean_text(query, field="query", max_chars=MAX_QUERY_CHARS)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        shown = validate.int_text(k) if isinstance(k, int) and not isinstance(k, bool) else repr(k)
        raise InvalidInput(f"k must be a positive int, got {shown}")
    if session is not None:  # as store.list reads it (a number names session "5")
        session = validate.clean_optional_str(session, "session") or ""
    cutoff = validate.clean_time(as_of, "as_of")
    asked = validate.clean_time(now, "now") or cutoff
    allowed = None
    if filters:
        parse = store.ids.parse
        allowed = {parse(t.id) for t in store.list(scope, metadata=filters)}
    hidden = expired_rowids((expiring or store.expiring)(scope), cutoff)
    when = to_utc(dt.datetime.fromisoformat(cutoff)) if cutoff else None
    asked_on = dt.datetime.fromisoformat(asked).date() if asked else None
    return SearchRequest(query, k, session, when, allowed, hidden, asked_on)
