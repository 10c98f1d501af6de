"""Streaming writes give the evidence of a full rebuild (real encoders, property-based).

Any sequence of add / add_many / update / delete / reindex, with searches in between (each
search applies what changed to the in-memory index), must leave a memory whose evidence —
trace ids, order, scores, reasons — equals that of the same traces indexed from scratch.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from internals import encoders_of, store_of
from zeromem import Memory
from zeromem.config import Config
from zeromem.retrieval import persist

pytestmark = pytest.mark.slow

SENTENCES = [
    "Caroline adopted a grey cat named Biscuit.", "Melanie moved to Denver in June.",
    "My sister Melanie plays the cello.", "The bakery on Main Street sells rye bread on Sundays.",
    "I started a pottery class. It is relaxing.", "Lisbon is on my list for October!",
    "Running helps me destress. I run every morning.", "Our team won the regional chess cup.",
    "Did Caroline go to the LGBTQ support group?", "Mel said the chess cup was in Lisbon.",
    "Thanks!",
]
QUERIES = ["Where did Melanie move?", "What is the name of Caroline's cat?", "chess cup Lisbon",
           "What does Mel play?", "pottery class", "What happened with the chess cup at Lisbon?"]
# Titles (Trace.title) link a trace to the entity of that name and match queries that name them.
TITLES = [None, "Lisbon", "Chess cup", "Denver (city)", "Melanie"]
SESSIONS = ["s1", "s2", "s3"]
SPEAKERS = ["Caroline", "Melanie"]

op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(SESSIONS), st.sampled_from(SENTENCES),
              st.tuples(st.sampled_from(SPEAKERS), st.sampled_from(TITLES))),
    st.tuples(st.just("add_many"), st.sampled_from(SESSIONS),
              st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3), st.sampled_from(SPEAKERS)),
    st.tuples(st.just("update"), st.integers(0, 40), st.sampled_from(SENTENCES), st.just("")),
    st.tuples(st.just("retitle"), st.integers(0, 40), st.just(""), st.sampled_from(TITLES)),
    st.tuples(st.just("delete"), st.integers(0, 40), st.just(""), st.just("")),
    st.tuples(st.just("search"), st.integers(0, len(QUERIES) - 1), st.just(""), st.just("")),
    st.tuples(st.just("reindex"), st.just(""), st.just(""), st.just("")),
    st.tuples(st.just("reopen"), st.just(""), st.just(""), st.just("")),
    # Another scope is written and searched: with a tiny index cache this evicts the scope under
    # test, whose next search rebuilds it (or reads its snapshot) and applies what changed since.
    st.tuples(st.just("other"), st.integers(0, len(QUERIES) - 1), st.sampled_from(SENTENCES), st.just("")),
)


def evidence(memory: Memory) -> list[list[tuple]]:
    return [[(e.trace_id, e.score, e.why["reason"]) for e in memory.search(q, k=5)] for q in QUERIES]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op, min_size=2, max_size=14), index_on_write=st.booleans(), snapshots=st.booleans(),
       evict=st.booleans())
def test_any_write_sequence_gives_the_evidence_of_a_full_rebuild(tmp_path_factory, ops, index_on_write, snapshots,
                                                                 evict):
    """``snapshots``: every close (and eviction) persists the in-memory index and every open
    loads it; ``evict``: the index cache holds one scope, so using another scope drops it."""
    path = tmp_path_factory.mktemp("stream") / "m.db"
    config = Config(index_on_write=index_on_write, index_cache_mb=0 if evict else 1024)
    config.retrieval.snapshot_min_turns = 0 if snapshots else 10**9
    config.retrieval.snapshot_stale_share = 0.0
    memory = Memory(path, config=config)
    try:
        ids: list[str] = []
        searched = False  # the in-memory index holds the latest writes (so close() persists it)
        for kind, arg, text, speaker in ops:
            if kind not in ("search", "reopen"):
                searched = False
            if kind == "reopen":
                memory.close()
                memory = Memory(path, config=config)
                if snapshots and searched and memory.stats().traces:
                    assert store_of(memory).snapshot_version(memory.scope, persist.FORMAT) is not None
                searched = False
                continue
            if kind == "add":
                name, title = speaker
                ids.append(memory.add(text, session=arg, speaker=name,
                                      metadata={"title": title} if title else None))
            elif kind == "add_many":
                ids += memory.add_many([{"text": t, "session": arg, "speaker": speaker} for t in text])
            elif kind == "update" and ids:
                memory.update(ids[arg % len(ids)], text=text)
            elif kind == "retitle" and ids:
                memory.update(ids[arg % len(ids)], metadata={"title": speaker} if speaker else {})
            elif kind == "delete" and ids:
                memory.delete(ids.pop(arg % len(ids)))
            elif kind == "search":
                memory.search(QUERIES[arg], k=5)
                searched = True
            elif kind == "reindex":
                memory.reindex()
            elif kind == "other":
                memory.add(text, session="elsewhere", speaker="Nobody", user="other")
                memory.search(QUERIES[arg], k=5, user="other")
                searched = False  # the scope under test may have been dropped (and persisted)
        streamed = evidence(memory)
        memory.close()
        memory = Memory(path, config=config)
        reloaded = evidence(memory)
        memory.reindex()
        rebuilt = evidence(memory)
    finally:
        memory.close()
    assert reloaded == streamed
    with Memory(path, config=config) as fresh:
        reopened = evidence(fresh)
    assert streamed == rebuilt
    assert reopened == rebuilt


def test_a_scope_of_one_trace_answers_a_matching_query(tmp_path):
    with Memory(tmp_path / "one.db") as memory:
        tid = memory.add("I adopted a grey cat.", session="s1", speaker="Ana")
        found = memory.search("grey cat")
    assert [e.trace_id for e in found] == [tid]


def test_another_process_writes_are_seen_by_the_next_search(tmp_path):
    path = tmp_path / "two.db"
    with Memory(path) as reader, Memory(path) as writer:
        first = writer.add("Caroline adopted a grey cat named Biscuit.", session="s1", speaker="Caroline")
        assert reader.search("grey cat Biscuit", k=3)[0].trace_id == first
        second = writer.add("Melanie moved to Denver in June.", session="s2", speaker="Melanie")
        assert second in [e.trace_id for e in reader.search("Denver", k=3)]
        writer.update(second, text="Melanie moved to Lisbon in June.")
        texts = [e.text for e in reader.search("Where did Melanie move?", k=3)]
        assert "Melanie moved to Lisbon in June." in texts and not any("Denver" in t for t in texts)
        writer.delete(first)
        assert all(first != e.trace_id for e in reader.search("grey cat Biscuit", k=3))
        writer.delete_scope()
        assert reader.search("Lisbon", k=3) == []


def test_vectors_from_another_embedder_are_refused_with_the_command_to_fix_it(tmp_path):
    from zeromem import EmbedderMismatch
    from zeromem.store.fingerprint import fingerprint_key

    path = tmp_path / "fp.db"
    with Memory(path, user="u") as memory:
        memory.add("Caroline adopted a grey cat.", session="s1", speaker="Caroline")
        key = fingerprint_key(memory.scope)
        other = dict(encoders_of(memory).fingerprint, model="BAAI/bge-small-en-v1.5", dim=384,
                     weights_sha256="0" * 64)
        store_of(memory).set_meta(key, json.dumps(other))
    with Memory(path, user="u") as memory:
        with pytest.raises(EmbedderMismatch, match="reindex"):
            memory.search("grey cat")
        with pytest.raises(EmbedderMismatch):
            memory.add("Melanie moved to Denver.", session="s2", speaker="Melanie", )
            memory.index()
        memory.reindex()  # replaces every vector and records the embedder in use
        assert memory.search("grey cat")
