"""Invariants of the derived indexes (real encoders): incremental == rebuild, deletes purge."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derived_state import assert_same, derived_state
from internals import retriever_of, store_of
from zeromem import Memory
from zeromem.config import Config

SENTENCES = [
    "I adopted a grey cat named Biscuit.", "We moved to Denver in June.", "My sister plays the cello.",
    "The bakery sells rye bread on Sundays.", "I started a pottery class. It is relaxing.",
    "Lisbon is on my list for October!", "Running helps me destress. I run every morning.",
    "Our team won the regional chess cup.",
]

op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(["s1", "s2", "s3"]), st.sampled_from(SENTENCES)),
    st.tuples(st.just("update"), st.integers(0, 50), st.sampled_from(SENTENCES)),
    st.tuples(st.just("delete"), st.integers(0, 50), st.just("")),
    st.tuples(st.just("index"), st.just(""), st.just("")),
)




@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op, min_size=3, max_size=12))
def test_incremental_indexing_equals_a_full_rebuild(tmp_path, ops):
    memory = Memory(tmp_path / f"inc{abs(hash(str(ops)))}.db")
    ids: list[str] = []
    for kind, arg, text in ops:
        if kind == "add":
            ids.append(memory.add(text, session=arg, speaker="Ana"))
        elif kind == "update" and ids:
            memory.update(ids[arg % len(ids)], text=text)
        elif kind == "delete" and ids:
            memory.delete(ids.pop(arg % len(ids)))
        elif kind == "index":
            memory.index()
    memory.index()
    incremental = derived_state(memory)
    memory.reindex()
    assert_same(incremental, derived_state(memory))
    memory.close()


def test_deleted_and_updated_away_text_leaves_every_index(tmp_path):
    memory = Memory(tmp_path / "purge.db")
    keep = memory.add("The bakery sells rye bread on Sundays.", session="s1", speaker="Ana")
    gone = memory.add("My secret code word is Zanzibar flamingo.", session="s1", speaker="Ana")
    changed = memory.add("I keep my spare key under the blue Quokka pot.", session="s2", speaker="Ana")
    memory.index()
    assert any(gone == e.trace_id for e in memory.search("Zanzibar flamingo code word"))
    memory.delete(gone)
    memory.update(changed, text="I keep my spare key with a neighbour.")
    for word in ("zanzibar", "quokka"):
        hits = store_of(memory).read(
            "SELECT COUNT(*) FROM units WHERE lower(text) LIKE ?", (f"%{word}%",))[0][0]
        mentions = store_of(memory).read(
            "SELECT COUNT(*) FROM unit_mentions WHERE entity LIKE ?", (f"%{word}%",))[0][0]
        entity_vecs = store_of(memory).read(
            "SELECT COUNT(*) FROM entity_vectors WHERE entity LIKE ?", (f"%{word}%",))[0][0]
        # The search refreshes first, so the stale units are gone before anything is scored.
        evidence = memory.search(f"{word} secret code key pot", k=10)
        assert all(word not in e.text.lower() for e in evidence)
        assert (hits, mentions, entity_vecs) == (0, 0, 0)
    assert keep in {e.trace_id for e in memory.search("rye bread")}
    memory.close()


def test_nothing_is_re_encoded_after_a_restart(tmp_path):
    path = tmp_path / "restart.db"
    with Memory(path, config=Config(index_on_write=False)) as memory:
        memory.add_many([{"text": s, "session": "s1", "speaker": "Ana"} for s in SENTENCES])
        first = memory.index()
        assert first.encoded_texts > 0
    with Memory(path, config=Config(index_on_write=False)) as memory:
        memory.add("One more line about chess.", session="s2", speaker="Ana")
        second = memory.index()
        assert second.sessions == 1 and second.encoded_texts <= 3  # the new turn (+ new entities)


def test_window_and_episode_tokens_are_the_tokens_of_their_text(tmp_path):
    # The snapshot builds them from their turns' tokens instead of tokenizing them again.
    from zeromem.encoders.tokenize import tokenize

    with Memory(tmp_path / "m.db") as memory:
        memory.add_many([{"text": text, "session": f"s{i % 2}", "speaker": "Ana" if i % 3 else "Bo"}
                         for i, text in enumerate([*SENTENCES, "我昨天去了北京大学。", "Café ﬁsh 2,000!"])])
        index = retriever_of(memory).prepared(memory.scope).index
        rows = store_of(memory).read("SELECT level, position, text, text_hash, rowids FROM units")
    terms = index.vocabulary.terms
    checked = 0
    for level, position, text, text_hash, rowids in rows:
        key = (position, text_hash, tuple(json.loads(rowids)))
        units = index.levels[level]
        slot = [units.key(i) for i in range(units.size)].index(key)
        assert [terms[t] for t in index.levels[level].tokens[slot].tolist()] == tokenize(text)
        checked += level in ("window", "episode")
    assert checked
