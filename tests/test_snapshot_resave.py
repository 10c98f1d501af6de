"""When a persisted index is written again (retrieval/snapshots.py): once RESAVE_MIN_CHANGES
turns changed since the last write (or snapshot_stale_share of them, if more), not before."""

from __future__ import annotations

from internals import retriever_of, store_of
from zeromem import Config, Memory
from zeromem.retrieval import persist, snapshots


def test_a_persisted_index_is_written_again_after_resave_min_changes(tmp_path):
    config = Config()
    config.retrieval.snapshot_min_turns = 4
    with Memory(tmp_path / "m.db", config=config) as mem:
        mem.add_many([{"text": f"Note {i}: Dana moved the meeting to room {i}.", "session": "s1",
                       "speaker": "Dana"} for i in range(40)])
        mem.index()  # forced: written now
        scopes, store = retriever_of(mem).scopes, store_of(mem)
        written = store.snapshot_version(mem.scope, persist.FORMAT)
        assert written == store.scope_version(mem.scope)

        for i in range(snapshots.RESAVE_MIN_CHANGES - 1):
            mem.add(f"Later note {i}: the budget grew by {i} percent.", session="s2", speaker="Dana")
        mem.search("budget")  # brings the index up to date
        assert scopes.save(mem.scope) is False  # one change short
        assert store.snapshot_version(mem.scope, persist.FORMAT) == written

        mem.add("Last note: the budget is final.", session="s2", speaker="Dana")
        mem.search("budget")
        assert scopes.save(mem.scope) is True
        assert store.snapshot_version(mem.scope, persist.FORMAT) == store.scope_version(mem.scope)
        assert scopes.save(mem.scope) is False  # nothing changed since
