"""Traces, history, scopes and per-file facts through the public API: every backend, same results."""

from __future__ import annotations

import json

import numpy as np
import pytest

from internals import store_of
from sample_traces import TWO_SESSIONS
from zeromem import InvalidInput, Memory, NotFound, StoreError
from zeromem.store import TraceDraft, TraceStoreBase, open_store
from zeromem.types import Scope

SCOPES = [(None, None), ("ana", None), ("ana", "bot"), ("ben", "bot")]


def test_the_store_behind_a_url_implements_the_interface(memory, store):
    assert isinstance(store_of(memory), TraceStoreBase) and isinstance(store, TraceStoreBase)


def test_add_then_get_and_list_round_trip_every_field(memory):
    tid = memory.add("I moved to Denver 🏔 — 新家.", session="s2", speaker="Priya", role="user",
                     session_time="10:05 am on 2 May, 2023", event_time="2023-05-01T09:00:00",
                     seq=7, source_id="D2:3",
                     metadata={"mood": "happy", "n": -3, "x": 1.5, "ok": True, "none": None,
                               "tags": ["move", {"deep": [1, 2]}]},
                     attachments=["a photo of moving boxes", "a map"])
    trace = memory.get(tid)
    assert (trace.id, trace.text, trace.session, trace.speaker, trace.role, trace.seq,
            trace.source_id) == (tid, "I moved to Denver 🏔 — 新家.", "s2", "Priya", "user", 7, "D2:3")
    assert (trace.user, trace.agent, trace.version) == ("conformance", None, 1)
    assert (trace.session_time, trace.event_time) == ("2023-05-02T10:05:00", "2023-05-01T09:00:00")
    assert trace.metadata == {"mood": "happy", "n": -3, "x": 1.5, "ok": True, "none": None,
                              "tags": ["move", {"deep": [1, 2]}]}
    assert trace.attachments == ("a photo of moving boxes", "a map")
    assert trace.recorded_at >= "2000"
    assert memory.list() == [trace]


def test_a_trace_without_session_or_times_round_trips_as_none(memory):
    trace = memory.get(memory.add("just a note"))
    assert (trace.session, trace.session_time, trace.event_time, trace.speaker) == (None,) * 4
    assert (trace.role, trace.seq, trace.metadata, trace.attachments) == ("user", 0, {}, ())


def test_add_many_keeps_order_and_assigns_seq_per_session(memory):
    ids = memory.add_many([{"text": "a", "session": "s1"}, {"text": "b", "session": "s2"},
                           {"text": "c", "session": "s1"}])
    assert len(set(ids)) == 3 and all(i.startswith("t") for i in ids)
    assert [(memory.get(i).text, memory.get(i).seq) for i in ids] == [("a", 0), ("b", 0), ("c", 1)]
    assert memory.get(memory.add("d", session="s1")).seq == 2


@pytest.mark.parametrize("bad", [{"text": ""}, {"text": "ok", "seq": 2**63},
                                 {"text": "ok", "metadata": {"k": "\ud800"}},
                                 {"text": "ok", "colour": "red"}, "not a dict"])
def test_add_many_with_one_bad_item_stores_nothing(memory, observed, bad):
    memory.add("already here")
    before = observed(memory)
    with pytest.raises(InvalidInput, match="trace #2"):
        memory.add_many([{"text": "first"}, {"text": "second"}, bad, {"text": "fourth"}])
    assert observed(memory) == before


def test_update_keeps_every_version_in_history(memory):
    tid = memory.add("I live in Chicago.", metadata={"city": "Chicago"})
    assert memory.update(tid, text="I live in Denver.").version == 2
    updated = memory.update(tid, metadata={"city": "Denver"})
    assert (updated.text, updated.metadata, updated.version) == ("I live in Denver.",
                                                                 {"city": "Denver"}, 3)
    events = memory.history(tid)
    assert [e.event for e in events] == ["add", "update", "update"]
    assert (events[1].old_text, events[1].new_text) == ("I live in Chicago.", "I live in Denver.")
    assert (events[2].old_metadata, events[2].new_metadata) == ({"city": "Chicago"}, {"city": "Denver"})
    assert [e.at for e in events] == sorted(e.at for e in events)


def test_delete_makes_the_trace_not_found_and_leaves_a_delete_event(memory):
    keep, drop = memory.add_many([{"text": "keep me"}, {"text": "drop me"}])
    memory.delete(drop)
    for call in (lambda: memory.get(drop), lambda: memory.delete(drop),
                 lambda: memory.update(drop, text="back?")):
        with pytest.raises(NotFound, match=drop):
            call()
    assert [t.id for t in memory.list()] == [keep]
    events = memory.history(drop)
    assert [e.event for e in events] == ["add", "delete"]  # tombstones: no text, no metadata
    assert all((e.old_text, e.new_text, e.old_metadata, e.new_metadata) == (None,) * 4 for e in events)
    assert memory.add("new") not in (keep, drop)  # ids are never reused


def test_delete_returns_the_same_receipt_on_every_backend(memory):
    from zeromem.store.base import ERASABLE_TABLES

    tid = memory.add("drop me", session="s1", metadata={"k": 1})
    memory.update(tid, text="drop me, edited")
    receipt = memory.delete(tid)
    rows = dict(receipt.rows)
    assert (receipt.kind, receipt.trace_ids, receipt.history_text_purged) == ("trace", (tid,), True)
    assert list(rows) == list(ERASABLE_TABLES)
    assert (rows["traces"], rows["trace_history"]) == (1, 2)  # the add and the update emptied
    # What the files may still hold depends on the backend, and the receipt says which; on
    # both, the history's tombstones name the scope until it is deleted.
    assert any("tombstone" in line for line in receipt.retained)


def test_delete_keeping_history_keeps_the_old_text(memory):
    tid = memory.add("drop me", metadata={"k": 1})
    receipt = memory.delete(tid, keep_history=True)
    assert not receipt.history_text_purged and not receipt.checkpointed
    events = memory.history(tid)
    assert [(e.event, e.old_text, e.old_metadata) for e in events] == [
        ("add", None, None), ("delete", "drop me", {"k": 1})]


def test_delete_session_removes_that_session_only(memory):
    ids = memory.add_many([{"text": "a", "session": "s1"}, {"text": "b", "session": "s2"},
                           {"text": "c", "session": "s1"}])
    other = memory.add("d", session="s1", user="ana")
    receipt = memory.delete_session("s1")
    assert (receipt.kind, receipt.trace_ids, dict(receipt.rows)["traces"]) == ("session", (ids[0], ids[2]), 2)
    assert [t.id for t in memory.list()] == [ids[1]]
    assert [e.event for e in memory.history(ids[0])] == ["add", "delete"]
    assert memory.get(other, user="ana").text == "d"
    with pytest.raises(NotFound, match="no session 's1'"):
        memory.delete_session("s1")
    with pytest.raises(InvalidInput, match="name the session"):
        memory.delete_session(None)


def test_update_without_history_erases_the_earlier_versions(memory):
    tid = memory.add("v1", metadata={"v": 1})
    memory.update(tid, text="v2")
    memory.update(tid, text="v3", metadata={"v": 3}, keep_history=False)
    assert [(e.event, e.old_text, e.new_text) for e in memory.history(tid)] == [
        ("add", None, None), ("update", None, None), ("update", None, "v3")]
    assert memory.get(tid).version == 3


def test_a_persisted_index_older_than_an_erasure_is_not_written(store):
    ana = Scope("ana")
    tid = store.add_many([TraceDraft("x")], ana)[0]
    stale = store.scope_version(ana)
    store.delete(tid, ana)
    store.save_snapshot(ana, stale, "{}", {"part": b"words of the erased trace"})
    assert store.snapshot_version(ana) is None
    store.save_snapshot(ana, store.scope_version(ana), "{}", {"part": b"fresh"})
    assert store.snapshot_version(ana) == store.scope_version(ana)


def test_a_persisted_index_reads_back_byte_for_byte(store):
    # Sizes around PostgreSQL's chunk of a part (1 MiB): empty, one byte, exact, one over, 2.5.
    ana = Scope("ana")
    store.add_many([TraceDraft("x")], ana)
    rng = np.random.default_rng(7)
    sizes = {"empty": 0, "one": 1, "exact": 1 << 20, "over": (1 << 20) + 1, "many": 5 << 19}
    parts = {name: rng.bytes(size) for name, size in sizes.items()}
    store.save_snapshot(ana, store.scope_version(ana), '{"k": 1}', parts)
    version, facts, loaded, traces = store.load_snapshot(ana)
    assert (version, facts, len(traces)) == (store.scope_version(ana), '{"k": 1}', 1)
    assert loaded == parts
    store.save_snapshot(ana, store.scope_version(ana), "{}", {"one": b"z"})  # replaces every chunk
    assert store.load_snapshot(ana)[2] == {"one": b"z"}


def test_delete_scope_removes_that_scope_only(memory):
    ids = {scope: memory.add_many([{"text": "x"}, {"text": "y"}], user=scope[0], agent=scope[1])
           for scope in SCOPES}
    assert memory.delete_scope(user="ana", agent=None).traces == 2
    assert memory.list(user="ana", agent=None) == []
    with pytest.raises(NotFound):
        memory.history(ids[("ana", None)][0], user="ana", agent=None)
    for scope in SCOPES:
        if scope != ("ana", None):
            assert [t.id for t in memory.list(user=scope[0], agent=scope[1])] == ids[scope]
    assert memory.stats(all_scopes=True).traces == 2 * (len(SCOPES) - 1)
    assert memory.delete_scope(user="ana", agent=None).traces == 0


def test_an_id_from_another_scope_is_not_found_everywhere(memory):
    tid = memory.add("Ana's secret", user="ana")
    for user, agent in [("ben", None), (None, None), ("ana", "bot"), ("conformance", None)]:
        for call in (memory.get, memory.delete, memory.history,
                     lambda tid, **kw: memory.update(tid, text="overwritten", **kw)):
            with pytest.raises(NotFound, match="no trace 't"):
                call(tid, user=user, agent=agent)
    assert memory.get(tid, user="ana").text == "Ana's secret"
    assert [e.event for e in memory.history(tid, user="ana")] == ["add"]


def test_list_filters_by_session_time_and_metadata_with_paging(memory):
    memory.add_many([dict(t) for t in TWO_SESSIONS])

    def texts(**kw):
        return [t.text for t in memory.list(**kw)]

    assert texts() == ["s1 first", "s1 second", "s2 first", "s2 second"]
    assert texts(session="s2") == ["s2 first", "s2 second"] and texts(session="nope") == []
    assert texts(since="2023-05-01") == ["s2 first", "s2 second"]
    assert texts(until="2023-04-01") == ["s1 first", "s1 second"]
    assert texts(since="2023-05-02T12:00", until="2023-05-04") == ["s2 second"]
    assert texts(filters={"topic": "city"}) == ["s1 second", "s2 second"]
    assert texts(filters={"topic": "city", "n": 2}) == ["s1 second"]
    assert texts(filters={"flag": True}) == ["s1 second"]
    assert texts(limit=2, offset=1) == ["s1 second", "s2 first"]
    assert texts(offset=3) == ["s2 second"] and texts(limit=0) == []


def test_stats_count_this_scope_or_all(memory):
    memory.add_many([{"text": "a", "session": "s1", "speaker": "Priya", "session_time": "2023-03-14"},
                     {"text": "bb", "session": "s2", "speaker": "Marcus", "session_time": "2023-05-02"}])
    tid = memory.add("ccc", user="other")
    memory.update(tid, text="cccc", user="other")
    stats = memory.stats()
    assert (stats.traces, stats.sessions, stats.characters, stats.scopes) == (2, 2, 3, 1)
    assert stats.speakers == {"Marcus": 1, "Priya": 1}
    assert (stats.first_time, stats.last_time) == ("2023-03-14T00:00:00", "2023-05-02T00:00:00")
    assert stats.history_events == {"add": 2}
    everything = memory.stats(all_scopes=True)
    assert (everything.traces, everything.scopes) == (3, 2)
    assert everything.history_events == {"add": 3, "update": 1}
    assert store_of(memory).count(memory.scope) == 2
    assert store_of(memory).count(Scope("other", None)) == 1


@pytest.mark.parametrize("call, error, words", [
    (lambda m: m.add("   "), InvalidInput, "empty"),
    (lambda m: m.add(42), InvalidInput, "must be a string"),
    (lambda m: m.add("ok", role="robot"), InvalidInput, "role"),
    (lambda m: m.add("ok", session_time="when pigs fly"), InvalidInput, "date/time"),
    (lambda m: m.add("ok", seq=-1), InvalidInput, "seq"),
    (lambda m: m.add("ok", metadata={"n": 2**64}), InvalidInput, "64-bit"),
    (lambda m: m.add("ok", user="\udfff"), InvalidInput, "surrogate"),
    (lambda m: m.update("t1"), InvalidInput, "needs"),
    (lambda m: m.get(7), InvalidInput, "string"),
    (lambda m: m.get("tzzzzzzzz"), NotFound, "no trace 'tzzzzzzzz' in scope (user='conformance'"),
    (lambda m: m.get("banana"), NotFound, "ids look like 't4k2x9q7m'"),
    (lambda m: m.get("t999999"), NotFound, "ids look like 't4k2x9q7m'"),
    (lambda m: m.list(limit=-1), InvalidInput, "limit"),
    (lambda m: m.list(filters={"bad key": 1}), InvalidInput, "key"),
])
def test_errors_are_typed_clear_and_change_nothing(memory, observed, call, error, words):
    memory.add("already here")
    before = observed(memory)
    with pytest.raises(error) as info:
        call(memory)
    assert words.lower() in str(info.value).lower()
    assert observed(memory) == before


def test_a_closed_memory_raises_store_error(store_url):
    mem = Memory(store_url)
    tid = mem.add("before close")
    mem.close()
    for call in (lambda: mem.add("after"), lambda: mem.get(tid), lambda: mem.list()):
        with pytest.raises(StoreError, match="closed"):
            call()


def test_reopening_the_same_url_sees_the_same_data(store_url):
    with Memory(store_url, user="ana") as first:
        ids = first.add_many([{"text": "one", "session": "s1", "metadata": {"k": [1, "two"]}},
                              {"text": "two", "session": "s1", "attachments": ["a cat"]}])
        first.update(ids[0], text="one, edited")
        first.delete(ids[1])
        listed, stats = first.list(), first.stats(all_scopes=True)
        history = [first.history(i) for i in ids]
    with Memory(store_url, user="ana") as second:
        assert second.list() == listed
        assert second.stats(all_scopes=True) == stats
        assert [second.history(i) for i in ids] == history
        assert second.add("three") not in ids


def test_import_file_stores_every_conversation_or_none(memory, observed, tmp_path):
    turn = {"speaker": "Priya", "dia_id": "D1:1", "text": "hello"}

    def sample(name, turns):
        return {"sample_id": name, "conversation": {"speaker_a": "Priya", "speaker_b": "Marcus",
                                                    "session_1": turns}}

    good = tmp_path / "good.json"
    good.write_text(json.dumps([sample("a", [turn] * 2), sample("b", [turn])]))
    assert {k: len(v) for k, v in memory.import_file(good).items()} == {"a": 2, "b": 1}
    before = observed(memory)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([sample("c", [turn] * 3), sample("d", [dict(turn, img_url={"x": 1})])]))
    with pytest.raises(InvalidInput, match=r"bad\.json: \[1\]\.conversation\.session_1\[0\]\.img_url"):
        memory.import_file(bad)
    assert observed(memory) == before


# -- the store interface itself ----------------------------------------------------------------
def test_add_batches_is_one_transaction_across_scopes(store):
    ana, ben = Scope("ana"), Scope("ben")
    ids = store.add_batches([([TraceDraft("a1"), TraceDraft("a2")], ana), ([TraceDraft("b1")], ben)])
    assert [[store.get(i, s).text for i in batch] for batch, s in zip(ids, (ana, ben))] == [
        ["a1", "a2"], ["b1"]]
    versions = (store.scope_version(ana), store.scope_version(ben))
    with pytest.raises(InvalidInput, match=r"batch #1, trace #1"):
        store.add_batches([([TraceDraft("a3")], ana), ([TraceDraft("b2"), TraceDraft("")], ben)])
    assert [t.text for t in store.list(ana)] == ["a1", "a2"]
    assert [t.text for t in store.list(ben)] == ["b1"]
    assert (store.scope_version(ana), store.scope_version(ben)) == versions


def test_scope_versions_grow_with_writes_and_scopes_are_listed(store):
    ana = Scope("ana", "bot")
    assert store.scope_version(ana) == 0 and store.scopes() == []
    tid = store.add_many([TraceDraft("x")], ana)[0]
    v1 = store.scope_version(ana)
    store.update(tid, ana, text="y")
    v2 = store.scope_version(ana)
    store.delete(tid, ana)
    assert 0 < v1 < v2 < store.scope_version(ana)
    store.add_many([TraceDraft("z")], Scope(None, "bot"))
    assert store.scopes() == [Scope(None, "bot")]


def test_get_rowids_returns_traces_by_row_number_and_skips_missing(store):
    ids = store.add_many([TraceDraft("x"), TraceDraft("y")], Scope("ana"))
    rows = [store.ids.parse(i) for i in ids]
    got = store.get_rowids([*rows, 10**12])
    assert sorted(got) == rows and [got[r].text for r in rows] == ["x", "y"]


def test_store_meta_get_set_setdefault_delete(store):
    assert store.get_meta("k") is None
    assert store.setdefault_meta("k", "first") == "first"
    assert store.setdefault_meta("k", "second") == "first"
    store.set_meta("k", "third")
    assert store.get_meta("k") == "third"
    assert store.delete_meta("k") is True and store.delete_meta("k") is False
    assert store.get_meta("k") is None
    with pytest.raises(InvalidInput):
        store.set_meta("k", "\ud800")
    with pytest.raises(InvalidInput):
        store.set_meta("", "x")


def test_delete_scope_removes_that_scopes_meta_only(store):
    from zeromem.store.base import scope_meta_key

    ana, ben = Scope("ana"), Scope("ben")
    store.add_many([TraceDraft("x")], ana)
    for scope in (ana, ben):
        store.set_meta(scope_meta_key("embedder", scope), "fp")
        store.set_meta(scope_meta_key("other", scope), "v")
    store.set_meta("global", "kept")
    store.delete_scope(ana)
    assert store.get_meta(scope_meta_key("embedder", ana)) is None
    assert store.get_meta(scope_meta_key("other", ana)) is None
    assert store.get_meta(scope_meta_key("embedder", ben)) == "fp"
    assert store.get_meta("global") == "kept"


def test_meta_survives_reopening(store_url):
    with open_store(store_url) as first:
        first.set_meta("k", "v")
    with open_store(store_url) as second:
        assert second.get_meta("k") == "v"
