"""Idempotent imports: leave out the traces of a file that its scope already holds.

Importing the same file twice must not store every message twice. A trace counts as already
stored when its scope holds a trace with the same identity: session, source id, speaker, role,
text, attachments and times (after the same normalization ``add`` applies). The identity is
the trace's content, not just ``(session, source_id)``: two LoCoMo conversations imported into
one scope both have a ``session_1`` with a ``D1:1``, and the second is new, not a repeat.
Neither ``seq`` (assigned on insert when a file has none) nor metadata (which ``update`` may
change afterwards) is part of it.

Repeats count: an import is matched against the store as a whole, each stored trace standing
for at most one trace of the import. A conversation that says "ok" twice in one session stores
it twice the first time and skips both the second time; so do two conversations of one file
with the same turns, or a file given twice to one ``zeromem ingest``. Running the same import
again therefore stores nothing, and what one import stores never depends on how its traces are
split into conversations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..store.base import CleanDraft, TraceDraft, TraceStoreBase, scope_key
from ..types import Scope, Trace

Identity = tuple[Any, ...]


class ImportResult(dict[str, list[str]]):
    """What ``Memory.import_file`` returns: {conversation name: ids of the traces it stored}.

    ``skipped[name]`` counts that conversation's traces left out because the scope already
    held them (0 everywhere on a first import, or with ``allow_duplicates=True``).
    """

    def __init__(self, ids: dict[str, list[str]], skipped: dict[str, int]) -> None:
        super().__init__(ids)
        self.skipped = skipped

    @property
    def stored_count(self) -> int:
        """How many traces the import stored."""
        return sum(len(ids) for ids in self.values())

    @property
    def skipped_count(self) -> int:
        """How many traces the import left out because the scope already held them."""
        return sum(self.skipped.values())


def _draft_identity(draft: CleanDraft) -> Identity:
    return (draft.session, draft.has_session, draft.source_id, draft.speaker, draft.role,
            draft.text, draft.attachments, draft.session_time, draft.event_time)


def _trace_identity(trace: Trace) -> Identity:
    return (trace.session or "", trace.session is not None, trace.source_id, trace.speaker,
            trace.role, trace.text, tuple(trace.attachments), trace.session_time, trace.event_time)


def skip_stored(store: TraceStoreBase, batches: Sequence[tuple[Sequence[TraceDraft], Scope]]
                ) -> tuple[list[tuple[list[TraceDraft], Scope]], list[int]]:
    """``batches`` without the drafts their scope already holds, and how many each lost.

    The drafts must have passed ``check_conversations`` (``store.clean`` is applied again to
    compare normalized values). Only the sessions the file names are read from the store.
    """
    cleaned = [[store.clean(draft) for draft in drafts] for drafts, _ in batches]
    stored: dict[tuple[str, str], Counter[Identity]] = {}
    read: dict[tuple[str, str], set[str]] = {}
    for (_, scope), normalized_drafts in zip(batches, cleaned):
        key = scope_key(scope)  # checked first: a scope part that is not a string is InvalidInput
        counts, done = stored.setdefault(key, Counter()), read.setdefault(key, set())
        for session in sorted({draft.session for draft in normalized_drafts} - done):
            counts.update(_trace_identity(trace) for trace in store.list(scope, session=session))
            done.add(session)
    kept: list[tuple[list[TraceDraft], Scope]] = []
    skipped: list[int] = []
    for (drafts, scope), clean in zip(batches, cleaned):
        counts = stored[scope_key(scope)]
        new: list[TraceDraft] = []
        for draft, normalized in zip(drafts, clean):
            identity = _draft_identity(normalized)
            if counts[identity] > 0:
                counts[identity] -= 1  # each stored trace stands for one trace of the import
            else:
                new.append(draft)
        kept.append((new, scope))
        skipped.append(len(drafts) - len(new))
    return kept, skipped
