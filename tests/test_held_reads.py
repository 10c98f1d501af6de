"""An index brought up by reading only what it lacks (``indexes/held.py``) equals one brought up
by reading the changed sessions whole: same slots, postings, vectors, mentions, traces, evidence."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from internals import retriever_of, store_of
from zeromem import Memory
from zeromem.indexes.held import HeldUnits

SENTENCES = [
    "Caroline adopted a grey cat named Biscuit.", "Melanie moved to Denver in June.",
    "I started a pottery class. It is relaxing.", "Lisbon is on my list for October!",
    "Our team won the regional chess cup.", "Thanks!",
]
QUERIES = ["Where did Melanie move?", "pottery class", "chess cup Lisbon"]

op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(["s1", "s2"]), st.sampled_from(SENTENCES)),
    st.tuples(st.just("add_many"), st.sampled_from(["s1", "s3"]), st.sampled_from(SENTENCES)),
    st.tuples(st.just("update"), st.integers(0, 30), st.sampled_from(SENTENCES)),
    st.tuples(st.just("retitle"), st.integers(0, 30), st.sampled_from(["Lisbon", "", "Denver"])),
    st.tuples(st.just("delete"), st.integers(0, 30), st.just("")),
    st.tuples(st.just("sync"), st.just(""), st.just("")),
)


def _whole_reads(memory: Memory) -> None:
    """Make this memory's store ignore ``held``: every changed session is read whole."""
    store = store_of(memory)
    read = store.read_changes
    store.read_changes = lambda scope, since, known, held=None: read(scope, since, known)


def _state(memory: Memory) -> tuple:
    memory.search(QUERIES[0])
    prep = retriever_of(memory).scopes.held(memory.scope)
    assert prep is not None
    arrays, facts = prep.index.state()
    traces = [prep.index.traces[slot] for slot in range(prep.index.n_slots)]
    mentions = [prep.index.mentions_of(slot) for slot in range(prep.index.n_slots)]
    evidence = [[(e.trace_id, e.score, e.why["reason"]) for e in memory.search(q, k=5)] for q in QUERIES]
    return arrays, facts, traces, mentions, evidence


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op, min_size=2, max_size=12), forget_ids=st.booleans())
def test_reading_only_what_the_index_lacks_equals_reading_whole_sessions(tmp_path_factory, ops, forget_ids):
    """``forget_ids``: the held index starts without its units' ids (as after loading a snapshot
    that kept none), so its sessions are read by keys until they are read whole again."""
    path = tmp_path_factory.mktemp("held") / "m.db"
    writer = Memory(path)
    ids = [writer.add(text, session="s1", speaker="Ana") for text in SENTENCES[:4]]
    held, whole = Memory(path), Memory(path)
    _whole_reads(whole)
    for memory in (held, whole):
        memory.search(QUERIES[0])  # both indexes hold the same version now
    if forget_ids:
        for level in retriever_of(held).scopes.held(held.scope).index.levels.values():
            level.unit_id[np.arange(level.size)] = -1
    for kind, arg, text in ops:
        if kind == "add":
            ids.append(writer.add(text, session=arg, speaker="Ana"))
        elif kind == "add_many":
            ids += writer.add_many([{"text": text, "session": arg, "speaker": "Ben"},
                                    {"text": SENTENCES[0], "session": arg, "speaker": "Ana"}])
        elif kind == "update" and ids:
            writer.update(ids[arg % len(ids)], text=text)
        elif kind == "retitle" and ids:
            writer.update(ids[arg % len(ids)], metadata={"title": text} if text else {})
        elif kind == "delete" and ids:
            writer.delete(ids.pop(arg % len(ids)))
        elif kind == "sync":
            for memory in (held, whole):
                memory.search(QUERIES[1])
    a, b = _state(held), _state(whole)
    assert a[0].keys() == b[0].keys()
    for name in a[0]:
        # (Unit ids only say which rows need no reading: an index without them is read by keys.)
        if not (forget_ids and name.endswith(".unit_id")):
            assert np.array_equal(a[0][name], b[0][name]), name
    assert a[1:] == b[1:]
    for memory in (writer, held, whole):
        memory.close()


def test_an_unchanged_session_is_held_whole(tmp_path):
    memory = Memory(tmp_path / "m.db")
    memory.add_many([{"text": text, "session": "s1", "speaker": "Ana"} for text in SENTENCES])
    memory.search(QUERIES[0])
    prep = retriever_of(memory).scopes.held(memory.scope)
    assert prep is not None
    store = store_of(memory)

    def read() -> dict:
        return store.read_changes(memory.scope, prep.index.version - 1, set(prep.index.entity_row),
                                  HeldUnits(prep.index))

    delta = read()  # the index knows its units' ids: no unit row is read
    assert delta["sessions"] == ["s1"] and delta["traces"] == [] and delta["mentions"] == []
    assert delta["units"] == []
    assert delta["unit_ids"]["s1"] == {r[0] for r in store.read("SELECT id FROM units")}
    for level in prep.index.levels.values():  # as after loading a snapshot that kept no unit ids
        level.unit_id[np.arange(level.size)] = -1
    delta = read()  # every unit's key is read, and nothing else
    assert delta["traces"] == [] and delta["mentions"] == [] and "s1" not in delta["unit_ids"]
    assert delta["units"] and all(row[4] is None and row[7] is None for row in delta["units"])
    memory.close()
