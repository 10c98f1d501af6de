"""Turns appended to a session derive only what they change (indexes/indexer.py ``_appended``),
and what is stored then equals a whole derivation and a rebuild."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from derived_state import assert_same, derived_state
from internals import indexer_of, store_of
from zeromem import Memory
from zeromem.indexes.indexer import Indexer, _Committed
from zeromem.indexes.units import segment_session
from zeromem.types import Trace

TEXTS = ["Hi!", "We moved to Denver in June. The flat is small.", "Lisbon is next. Then Porto, maybe.",
         "Thanks so much for the tip about the bakery on Main Street.", "ok"]


def _traces(n: int) -> list[Trace]:
    return [Trace(id=f"t{i}", text=TEXTS[i % len(TEXTS)], user=None, agent=None, session="s",
                  session_time="2024-05-01T10:00:00", speaker=("Ana", "Ben")[i % 2], role="user", event_time=None,
                  recorded_at="2024-05-01T10:00:00", seq=i, source_id=None,
                  attachments=("a map of Lisbon",) if i % 7 == 3 else ())
            for i in range(n)]


@settings(max_examples=200, deadline=None)
@given(old=st.integers(1, 14), more=st.integers(1, 6), window=st.integers(1, 5), stride=st.integers(1, 4))
def test_the_append_drafts_are_exactly_the_drafts_a_whole_segmentation_changes(old, more, window, stride):
    traces = _traces(old + more)
    rowids = [100 + i for i in range(len(traces))]
    before = segment_session(traces[:old], rowids[:old], window_turns=window, stride=stride)
    after = segment_session(traces, rowids, window_turns=window, stride=stride)
    indexer = Indexer(None, lambda: None, window_turns=window, stride=stride)
    drafts, replacing = indexer._appended(traces, rowids, _Committed(old, b"", 7, None))
    kept = set(before)
    assert drafts == [d for d in after if d not in kept]
    now = set(after)
    assert list(replacing.units) == [(d.level, d.position) for d in before if d not in now]
    assert replacing.since == 7


def _spy_commits(memory: Memory) -> list:
    seen = []
    store = store_of(memory)
    commit = store.commit_session

    def spy(scope, session, expected, units, entity_vectors, replacing=None):
        seen.append(replacing)
        return commit(scope, session, expected, units, entity_vectors, replacing)

    store.commit_session = spy
    return seen


def test_appended_turns_take_the_append_path_and_equal_a_rebuild(tmp_path):
    memory = Memory(tmp_path / "m.db")
    commits = _spy_commits(memory)
    memory.add_many([{"text": t, "session": "s1", "speaker": "Ana"} for t in TEXTS[:3]])
    for text in TEXTS * 2:
        memory.add(text, session="s1", speaker="Ben")
    assert commits[0] is None and all(c is not None for c in commits[1:])
    memory.update(memory.list(session="s1")[2].id, text="An edit in the middle.")  # a whole derivation
    memory.add("And one more turn.", session="s1", speaker="Ana")
    assert commits[-2] is None and commits[-1] is not None
    streamed = derived_state(memory)
    memory.reindex()
    assert_same(streamed, derived_state(memory))
    memory.close()


def test_an_append_after_another_process_derived_the_session_is_derived_whole(tmp_path):
    path = tmp_path / "m.db"
    one, two = Memory(path), Memory(path)
    commits = _spy_commits(one)
    one.add_many([{"text": t, "session": "s1", "speaker": "Ana"} for t in TEXTS[:3]])
    two.add("Ben writes from another process.", session="s1", speaker="Ben")  # two derives s1 whole
    one.add("Ana appends again.", session="s1", speaker="Ana")  # one's last commit is stale now
    assert commits[-2] is not None and commits[-1] is None  # refused, then derived whole
    assert not indexer_of(one).pending_sessions(one.scope)
    streamed = derived_state(one)
    one.reindex()
    assert_same(streamed, derived_state(one))
    one.close()
    two.close()
