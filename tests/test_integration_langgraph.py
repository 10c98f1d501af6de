"""ZeromemStore: LangGraph's BaseStore over a zeromem Memory, with the real LangGraph (and
LangMem's store tools), offline, with no LLM anywhere.

Checked: every op sync and async; namespace ↔ scope mapping (LangMem's ("memories", user) lands
in that user's scope); updates keep history, deletes erase; query search ranks with zeromem's
scores; filters, paging and list_namespaces agree with LangGraph's own InMemoryStore; TTL;
scope isolation of a pinned store; bad input refused before anything is written; a compiled
graph that writes in one run and recalls in the next, from a fresh store over the same file.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import TypedDict

import pytest
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from zeromem import InvalidInput, Memory, NotFound
from zeromem.integrations import langgraph as langgraph_adapter
from zeromem.integrations.langgraph import (
    ITEM_KEY,
    InvalidNamespace,
    ZeromemItem,
    ZeromemSearchItem,
    ZeromemStore,
    namespace_of_session,
    session_of_namespace,
)
from zeromem.reader import usage

FACTS = {
    "k1": "Alice is allergic to peanuts.",
    "k2": "Alice moved to Denver in May.",
    "k3": "Alice's favourite colour is green.",
}


@pytest.fixture(autouse=True)
def _no_llm_calls():
    """Every test here spends zero LLM calls and tokens."""
    before = usage()
    yield
    spent = usage() - before
    assert (spent.calls, spent.tokens) == (0, 0)


@pytest.fixture
def store(mem):
    return ZeromemStore(mem)


def _fill(store, namespace=("memories", "alice")):
    for key, text in FACTS.items():
        store.put(namespace, key, {"content": text})


# -- the mapping ------------------------------------------------------------------------------
def test_put_get_round_trip_keeps_the_value_key_namespace_and_times(store, mem):
    value = {"content": "Alice likes jazz.", "tags": ["music", "jazz"], "meta": {"n": 3, "ok": True, "x": None}}
    store.put(("memories", "alice"), "jazz", value)
    item = store.get(("memories", "alice"), "jazz")
    assert isinstance(item, ZeromemItem)
    assert (item.namespace, item.key, item.value) == (("memories", "alice"), "jazz", value)
    assert item.created_at == item.updated_at and item.created_at.tzinfo is not None
    trace = mem.get(item.trace_id, user="alice")
    assert trace.text == "Alice likes jazz.\nmusic\njazz"  # the value's strings, in order
    assert trace.session == 'langgraph:["memories","alice"]'
    assert trace.metadata[ITEM_KEY]["value"] == value
    assert store.get(("memories", "alice"), "nope") is None
    assert store.get(("memories", "bob"), "jazz") is None


def test_session_names_are_reversible_for_any_label():
    for namespace in [("memories", "alice"), ("a b ", ' "quoted" ', "ünï", "x/y\\z", "[1]")]:
        assert namespace_of_session(session_of_namespace(namespace)) == namespace
    assert namespace_of_session("s1") is None and namespace_of_session(None) is None
    assert namespace_of_session("langgraph:not json") is None


def test_the_langmem_convention_lands_in_the_users_scope(mem):
    store = ZeromemStore(mem)
    store.put(("memories", "alice"), "a", {"content": "Alice likes tea."})
    store.put(("memories", "bob"), "b", {"content": "Bob likes coffee."})
    assert [t.text for t in mem.list(user="alice")] == ["Alice likes tea."]
    assert [t.text for t in mem.list(user="bob")] == ["Bob likes coffee."]
    assert mem.list() == []  # nothing in the memory's own (user-less) scope


def test_user_at_zero_and_short_namespaces_in_the_memorys_own_scope(db_path):
    with Memory(db_path, user="owner", agent="helper") as mem:
        store = ZeromemStore(mem, user_at=0)
        store.put(("alice", "memories"), "a", {"content": "Alice likes tea."})
        store.put(("prefs",), "p", {"content": "Dark mode."})
        assert [t.text for t in mem.list(user="alice")] == ["Alice likes tea."]
        assert [t.agent for t in mem.list(user="alice")] == ["helper"]  # the memory's agent
        assert [t.text for t in mem.list(user="prefs")] == ["Dark mode."]  # position 0 names the user
        ZeromemStore(mem).put(("prefs",), "q", {"content": "Large font."})  # too short for user_at=1
        assert [t.text for t in mem.list()] == ["Large font."]  # the memory's own scope: owner, helper
        assert store.get(("prefs",), "p").value == {"content": "Dark mode."}
        # a store with another mapping does not see items it would have put elsewhere
        assert ZeromemStore(mem, user_at=1).get(("alice", "memories"), "a") is None
        assert ZeromemStore(mem, user_at=1).get(("prefs",), "p") is None
        assert ZeromemStore(mem, user_at=None).list_namespaces() == [("prefs",)]


def test_traces_the_store_did_not_write_are_not_items(store, mem):
    mem.add("Alice said she lives in Denver.", session="chat-1", user="alice")
    _fill(store)
    assert store.list_namespaces() == [("memories", "alice")]
    found = store.search(("memories", "alice"), query="Where does Alice live?")
    assert {item.key for item in found} <= set(FACTS)
    assert len(store.search(("memories",), limit=100)) == 3


# -- writes -----------------------------------------------------------------------------------
def test_put_on_an_existing_key_updates_the_trace_and_keeps_its_history(store, mem):
    store.put(("memories", "alice"), "home", {"content": "Alice lives in Denver."})
    first = store.get(("memories", "alice"), "home")
    time.sleep(0.01)
    store.put(("memories", "alice"), "home", {"content": "Alice lives in Boulder now."})
    second = store.get(("memories", "alice"), "home")
    assert second.trace_id == first.trace_id
    assert second.value == {"content": "Alice lives in Boulder now."}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    history = mem.history(first.trace_id, user="alice")
    assert [e.event for e in history] == ["add", "update"]
    assert (history[1].old_text, history[1].new_text) == ("Alice lives in Denver.", "Alice lives in Boulder now.")
    assert len(mem.list(user="alice")) == 1


@pytest.mark.parametrize("how", ["delete", "put None"])
def test_delete_erases_the_trace(store, mem, how):
    store.put(("memories", "alice"), "home", {"content": "Alice lives in Denver."})
    tid = store.get(("memories", "alice"), "home").trace_id
    if how == "delete":
        store.delete(("memories", "alice"), "home")
    else:
        store.batch([PutOp(("memories", "alice"), "home", None)])
    assert store.get(("memories", "alice"), "home") is None
    with pytest.raises(NotFound):
        mem.get(tid, user="alice")
    assert [(e.event, e.old_text) for e in mem.history(tid, user="alice")][-1] == ("delete", None)
    assert store.list_namespaces() == []
    store.delete(("memories", "alice"), "home")  # deleting what is not there is a no-op


def test_a_batch_runs_in_order_and_the_last_put_of_a_key_wins(store, mem):
    ns = ("memories", "alice")
    results = store.batch([
        GetOp(ns, "a"),
        PutOp(ns, "a", {"content": "one"}),
        PutOp(ns, "b", {"content": "two"}),
        PutOp(ns, "a", {"content": "three"}),
        GetOp(ns, "a"),
        SearchOp(ns, limit=10),
        PutOp(ns, "b", None),
        ListNamespacesOp(),
        GetOp(ns, "b"),
    ])
    assert results[0] is None and results[1] is None
    assert results[4].value == {"content": "three"}
    assert {i.key for i in results[5]} == {"a", "b"}
    assert results[7] == [ns]
    assert results[8] is None
    assert [t.text for t in mem.list(user="alice")] == ["three"]


def test_index_fields_choose_what_is_searchable(mem):
    store = ZeromemStore(mem, index={"fields": ["title", "notes[*].text"]})
    value = {"title": "Trip", "body": "not indexed", "notes": [{"text": "Lisbon in June"}, {"text": "Window seat"}]}
    store.put(("docs",), "trip", value)
    store.put(("docs",), "raw", {"title": "Raw", "body": "kept"}, index=["body"])
    store.put(("docs",), "hidden", {"title": "Lisbon hidden note"}, index=False)
    store.put(("docs",), "numbers", {"count": 3})
    texts = {t.metadata[ITEM_KEY]["key"]: t.text for t in mem.list()}
    assert texts["trip"] == "Trip\nLisbon in June\nWindow seat"
    assert texts["raw"] == "kept"
    assert texts["hidden"].startswith("(not indexed)") and "Lisbon" not in texts["hidden"]
    # not indexed: get and plain listing find it, a query never returns it
    assert store.get(("docs",), "hidden").value == {"title": "Lisbon hidden note"}
    found = [i.key for i in store.search(("docs",), query="Lisbon")]
    assert found[0] == "trip" and "hidden" not in found
    assert {i.key for i in store.search(("docs",))} == {"trip", "raw", "hidden", "numbers"}


# -- search -----------------------------------------------------------------------------------
def test_query_search_ranks_the_relevant_item_first_with_its_score_and_provenance(store, mem):
    _fill(store)
    store.put(("memories", "bob"), "b1", {"content": "Bob moved to Lisbon."})
    found = store.search(("memories", "alice"), query="Where does Alice live now?")
    assert found[0].key == "k2"
    assert all(isinstance(i, ZeromemSearchItem) for i in found)
    assert all(i.namespace == ("memories", "alice") for i in found)  # never bob's
    scores = [i.score for i in found]
    assert all(isinstance(s, float) for s in scores) and scores == sorted(scores, reverse=True)
    top = found[0]
    assert top.evidence.trace_id == top.trace_id and top.evidence.score == top.score
    assert top.evidence.session == session_of_namespace(("memories", "alice"))
    assert mem.get(top.trace_id, user="alice").text == FACTS["k2"]
    assert json.loads(json.dumps(top.dict()))["score"] == top.score  # LangGraph's dict(), unchanged
    peanut = store.search(("memories", "alice"), query="food allergy peanuts", limit=1)
    assert [i.key for i in peanut] == ["k1"]


def test_query_search_pages_and_filters_before_paging(store):
    ns = ("memories", "alice")
    for n in range(12):
        store.put(ns, f"note{n}", {"content": f"Alice visited museum number {n} in Paris.", "n": n,
                                   "kind": "even" if n % 2 == 0 else "odd"})
    everything = store.search(ns, query="museum in Paris", limit=100)
    assert len(everything) >= 8  # what zeromem's retrieval ranks (it need not return every trace)
    page = store.search(ns, query="museum in Paris", limit=4, offset=4)
    assert [i.key for i in page] == [i.key for i in everything[4:8]]
    odd = store.search(ns, query="museum in Paris", filter={"kind": "odd"}, limit=100)
    assert odd and all(i.value["kind"] == "odd" for i in odd)
    assert [i.key for i in odd] == [i.key for i in everything if i.value["kind"] == "odd"]
    big = store.search(ns, query="museum in Paris", filter={"n": {"$gte": 9}}, limit=2)
    assert len(big) == 2 and all(i.value["n"] >= 9 for i in big)
    assert store.search(ns, query="museum", limit=0) == []


def test_a_search_without_a_query_lists_the_newest_first_with_paging(store):
    _fill(store)
    store.put(("memories", "alice", "work"), "w", {"content": "Alice works at a bakery."})
    listed = store.search(("memories", "alice"))
    assert [i.key for i in listed] == ["w", "k3", "k2", "k1"]  # most recently updated first
    assert all(i.score is None and i.evidence is None for i in listed)
    assert [i.key for i in store.search(("memories", "alice"), limit=2, offset=1)] == ["k3", "k2"]
    assert [i.key for i in store.search(("memories", "alice", "work"))] == ["w"]
    store.put(("memories", "alice"), "k1", {"content": "Alice is allergic to peanuts and shellfish."})
    assert store.search(("memories",), limit=1)[0].key == "k1"  # an update moves it first
    assert store.search(("nothing",)) == []


FILTER_ITEMS = {
    "a": {"kind": "pref", "score": 5, "active": True, "meta": {"lang": "en"}, "tags": ["x", "y"]},
    "b": {"kind": "pref", "score": 2.5, "active": False, "meta": {"lang": "fr"}},
    "c": {"kind": "fact", "score": 9, "active": 1, "name": "carol"},
    "d": {"kind": "fact", "name": "dave", "tags": ["x"]},
}
FILTERS = [  # (filter, the keys it selects)
    ({"kind": "pref"}, "ab"),
    ({"kind": {"$eq": "fact"}}, "cd"),
    ({"kind": {"$ne": "pref"}}, "cd"),
    ({"score": {"$gt": 2.5}}, "ac"),
    ({"score": {"$gte": 2.5, "$lt": 9}}, "ab"),
    ({"score": {"$lte": 5}}, "ab"),
    ({"meta": {"lang": "fr"}}, "b"),
    ({"tags": ["x", "y"]}, "a"),
    ({"kind": "fact", "name": "dave"}, "d"),
    ({"active": True}, "a"),  # JSON equality: true is not 1
    ({"name": {"$gt": "candy"}}, "cd"),  # strings order as strings; a missing field never matches
    ({"missing": None}, "abcd"),
]


@pytest.mark.parametrize(("filter", "keys"), FILTERS, ids=[json.dumps(f) for f, _ in FILTERS])
def test_filters_select_as_langgraph_defines_them(store, filter, keys):
    reference = InMemoryStore()
    for key, value in FILTER_ITEMS.items():
        store.put(("items", "u"), key, {"content": f"item {key}", **value})
        reference.put(("items", "u"), key, {"content": f"item {key}", **value})
    assert {i.key for i in store.search(("items",), filter=filter, limit=100)} == set(keys)
    assert {i.key for i in store.search(("items",), query="item", filter=filter, limit=100)} <= set(keys)
    try:  # InMemoryStore raises on a missing field under $gt, and takes 1 for true
        expected = {i.key for i in reference.search(("items",), filter=filter, limit=100)}
    except TypeError:
        return
    assert set(keys) == expected - ({"c"} if filter == {"active": True} else set())


NAMESPACES = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"),
              ("users", "u1", "prefs"), ("users", "u2", "prefs"), ("users", "u2"), ("solo",)]
LISTINGS = [
    {},
    {"prefix": ("a", "b")},
    {"prefix": ("a", "b"), "max_depth": 3},
    {"prefix": ("a",), "max_depth": 2},
    {"suffix": ("f",)},
    {"suffix": ("prefs",), "prefix": ("users", "*")},
    {"prefix": ("a", "*", "f")},
    {"prefix": ("users", "u2")},
    {"max_depth": 1},
    {"limit": 3, "offset": 2},
    {"prefix": ("nope",)},
]


@pytest.mark.parametrize("listing", LISTINGS, ids=[json.dumps(x) for x in LISTINGS])
def test_list_namespaces_matches_langgraphs_inmemorystore(mem, listing):
    store, reference = ZeromemStore(mem), InMemoryStore()
    store.batch([PutOp(ns, "k", {"content": "/".join(ns)}) for ns in NAMESPACES])
    reference.batch([PutOp(ns, "k", {"content": "/".join(ns)}) for ns in NAMESPACES])
    assert store.list_namespaces(**listing) == reference.list_namespaces(**listing)
    # the users live in their own scopes (user_at=1): u1, u2, b, c and the memory's own for ("solo",)
    assert {t.user for t in mem.list(user="u1")} == {"u1"} and len(mem.list(user="u2")) == 2


# -- async ------------------------------------------------------------------------------------
def test_every_op_async(store, mem):
    async def run():
        ns = ("memories", "alice")
        await store.aput(ns, "home", {"content": "Alice lives in Denver."})
        await store.aput(ns, "pet", {"content": "Alice has a cat named Miso."})
        got = await store.aget(ns, "home")
        found = await store.asearch(ns, query="What is the cat called?")
        listed = await store.asearch(("memories",), filter={"content": "Alice lives in Denver."})
        spaces = await store.alist_namespaces(prefix=("memories",))
        await store.adelete(ns, "home")
        gone = await store.aget(ns, "home")
        batch = await store.abatch([GetOp(ns, "pet"), ListNamespacesOp(max_depth=1)])
        return got, found, listed, spaces, gone, batch

    got, found, listed, spaces, gone, batch = asyncio.run(run())
    assert got.value == {"content": "Alice lives in Denver."}
    assert found[0].key == "pet" and found[0].score > 0
    assert [i.key for i in listed] == ["home"]
    assert spaces == [("memories", "alice")]
    assert gone is None
    assert batch[0].key == "pet" and batch[1] == [("memories",)]
    assert [t.text for t in mem.list(user="alice")] == ["Alice has a cat named Miso."]


def test_concurrent_puts_of_one_key_leave_one_item_with_every_version_in_its_history(store, mem):
    ns = ("memories", "alice")

    async def run():
        await asyncio.gather(*(store.aput(ns, "k", {"content": f"Alice note {n}.", "n": n}) for n in range(5)))

    asyncio.run(run())
    traces = mem.list(user="alice")
    assert len(traces) == 1
    assert [e.event for e in mem.history(traces[0].id, user="alice")] == ["add"] + ["update"] * 4
    assert store.get(ns, "k").value == traces[0].metadata[ITEM_KEY]["value"]


# -- TTL --------------------------------------------------------------------------------------
class _Clock:
    """The adapter's clock, moved by the test instead of sleeping: expiry is decided by the
    store's own clock, and a loaded machine must not make an item expire between two calls."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, **delta: float) -> None:
        self.offset += timedelta(**delta)


@pytest.fixture
def clock(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(langgraph_adapter, "_now", clock.now)
    return clock


def test_expired_items_are_never_returned_and_sweep_erases_them(store, mem, clock):
    assert store.supports_ttl
    ns = ("memories", "alice")
    store.put(ns, "short", {"content": "Alice is in Lisbon this week."}, ttl=1)  # minutes
    store.put(ns, "long", {"content": "Alice lives in Denver."})
    tid = store.get(ns, "short", refresh_ttl=False).trace_id
    assert set(mem.get(tid, user="alice").metadata) >= {"expires_at"}
    clock.advance(seconds=61)
    assert store.get(ns, "short") is None
    assert [i.key for i in store.search(ns)] == ["long"]
    assert "short" not in {i.key for i in store.search(ns, query="Where is Alice this week? Lisbon")}
    store.put(("memories", "bob"), "gone", {"content": "Bob is away."}, ttl=1)
    clock.advance(seconds=61)
    assert store.list_namespaces() == [ns]  # bob's only item expired
    mem.get(tid, user="alice")  # still stored until swept
    assert store.sweep_ttl() == 2
    with pytest.raises(NotFound):
        mem.get(tid, user="alice")
    assert asyncio.run(store.asweep_ttl()) == 0
    assert [i.key for i in store.search(ns)] == ["long"]


def test_reads_refresh_the_ttl_and_default_ttl_applies(mem, clock):
    store = ZeromemStore(mem, ttl={"default_ttl": 10, "refresh_on_read": True})  # minutes
    ns = ("memories", "alice")
    store.put(ns, "k", {"content": "Alice likes tea."})
    item = store.get(ns, "k", refresh_ttl=False)
    before = datetime.fromisoformat(mem.get(item.trace_id, user="alice").metadata["expires_at"])
    assert timedelta(minutes=9) < before - item.updated_at <= timedelta(minutes=10)
    clock.advance(minutes=5)
    store.get(ns, "k", refresh_ttl=False)
    assert mem.get(item.trace_id, user="alice").version == 1  # no refresh asked: no write
    store.get(ns, "k")  # refresh_on_read: the expiry moves
    after = datetime.fromisoformat(mem.get(item.trace_id, user="alice").metadata["expires_at"])
    assert after - before >= timedelta(minutes=5)
    store.get(ns, "k")  # right after a refresh (moves it by less than a minute): no new write
    assert mem.get(item.trace_id, user="alice").version == 2
    assert store.get(ns, "k").updated_at == item.updated_at  # a refresh is not an update of the item
    store.put(ns, "forever", {"content": "Alice was born in Oslo."}, ttl=None)
    assert "expires_at" not in mem.list(user="alice")[-1].metadata


def test_opportunistic_sweep(mem):
    store = ZeromemStore(mem, ttl={"sweep_interval_minutes": 0.001})
    store.put(("memories", "alice"), "k", {"content": "Alice is out today."}, ttl=0.005)  # 0.3 s
    time.sleep(0.4)
    store.put(("memories", "alice"), "other", {"content": "Alice likes tea."})  # the batch ends in a sweep
    assert [t.text for t in mem.list(user="alice")] == ["Alice likes tea."]


# -- isolation --------------------------------------------------------------------------------
def test_a_pinned_store_never_reaches_another_user(mem):
    open_store = ZeromemStore(mem)
    open_store.put(("memories", "bob"), "b", {"content": "Bob's bank PIN hint is his dog's name."})
    alice = ZeromemStore(mem, user="alice")
    alice.put(("memories", "alice"), "a", {"content": "Alice's dog is called Rex."})
    alice.put(("prefs",), "p", {"content": "Alice prefers dark mode."})  # short: alice's scope
    assert {t.text for t in mem.list(user="alice")} == {"Alice's dog is called Rex.", "Alice prefers dark mode."}
    for call in (lambda: alice.put(("memories", "bob"), "x", {"content": "hi"}),
                 lambda: alice.get(("memories", "bob"), "b"),
                 lambda: alice.search(("memories", "bob"), query="dog"),
                 lambda: alice.list_namespaces(prefix=("memories", "bob")),
                 lambda: alice.delete(("memories", "bob"), "b")):
        with pytest.raises(InvalidInput, match="pinned to user 'alice'"):
            call()
    found = alice.search(("memories",), query="What is the dog called?")
    assert {i.key for i in found} == {"a"}
    assert {i.key for i in alice.search(())} == {"a", "p"}
    assert alice.list_namespaces() == [("memories", "alice"), ("prefs",)]
    assert alice.list_namespaces(prefix=("memories", "*")) == [("memories", "alice")]
    assert mem.get(open_store.get(("memories", "bob"), "b").trace_id, user="bob")  # bob's item untouched
    # the open store spans every user's scope of its agent
    assert {i.namespace for i in open_store.search(("memories",), query="dog")} == {
        ("memories", "alice"), ("memories", "bob")}
    assert ZeromemStore(mem, agent="other").list_namespaces() == []
    with pytest.raises(InvalidInput):  # refused before the put ahead of it runs
        alice.batch([PutOp(("memories", "alice"), "z", {"content": "z"}),
                     ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("memories", "bob")),))])
    assert alice.get(("memories", "alice"), "z") is None


# -- bad input --------------------------------------------------------------------------------
BAD_OPS = [
    ("namespace is a str", lambda s: s.batch([PutOp("memories", "k", {"content": "x"})]), InvalidNamespace),
    ("namespace is a list", lambda s: s.batch([GetOp(["memories", "a"], "k")]), InvalidNamespace),
    ("label not a str", lambda s: s.batch([PutOp(("memories", 5), "k", {"content": "x"})]), InvalidNamespace),
    ("label with a period", lambda s: s.batch([PutOp(("a.b",), "k", {"content": "x"})]), InvalidNamespace),
    ("empty namespace", lambda s: s.batch([PutOp((), "k", {"content": "x"})]), InvalidNamespace),
    ("langgraph root", lambda s: s.batch([PutOp(("langgraph", "x"), "k", {"content": "x"})]), InvalidNamespace),
    ("user not usable", lambda s: s.put(("memories", " alice"), "k", {"content": "x"}), InvalidNamespace),
    ("key not a str", lambda s: s.batch([PutOp(("m",), 5, {"content": "x"})]), InvalidInput),
    ("value not a dict", lambda s: s.put(("m",), "k", ["x"]), InvalidInput),
    ("value not JSON", lambda s: s.put(("m",), "k", {"content": {1, 2}}), InvalidInput),
    ("value too big", lambda s: s.put(("m",), "k", {"content": "x" * 70_000}), InvalidInput),
    ("ttl negative", lambda s: s.put(("m",), "k", {"content": "x"}, ttl=-1), InvalidInput),
    ("index not a list", lambda s: s.put(("m",), "k", {"content": "x"}, index="content"), InvalidInput),
    ("unknown operator", lambda s: s.search(("m",), filter={"n": {"$in": [1]}}), InvalidInput),
    ("mixed filter", lambda s: s.search(("m",), filter={"n": {"$gt": 1, "x": 2}}), InvalidInput),
    ("negative limit", lambda s: s.search(("m",), limit=-1), InvalidInput),
    ("query not text", lambda s: s.batch([SearchOp(("m",), query=5)]), InvalidInput),
    ("max_depth zero", lambda s: s.list_namespaces(max_depth=0), InvalidInput),
    ("unknown op", lambda s: s.batch([("get", "k")]), InvalidInput),
    ("ops not a list", lambda s: s.batch(GetOp(("m",), "k")), InvalidInput),
]


@pytest.mark.parametrize(("case", "call", "error"), BAD_OPS, ids=[c[0] for c in BAD_OPS])
def test_bad_input_raises_a_clear_error_and_changes_nothing(store, mem, snapshot, case, call, error):
    store.put(("m",), "kept", {"content": "kept"})
    before = snapshot(mem)
    with pytest.raises(error):
        call(store)
    assert snapshot(mem) == before


def test_a_batch_with_one_bad_op_writes_nothing(store, mem, snapshot):
    store.put(("m",), "kept", {"content": "kept"})
    before = snapshot(mem)
    with pytest.raises(InvalidInput, match="must be a dict"):
        store.batch([PutOp(("m",), "first", {"content": "first"}), PutOp(("m",), "kept", None),
                     PutOp(("m",), "bad", "not a dict")])
    assert snapshot(mem) == before


def test_namespace_errors_are_both_zeromem_and_langgraph_errors(store):
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("a.b",), "k", {"content": "x"})])
    with pytest.raises(InvalidInput):
        store.batch([PutOp(("a.b",), "k", {"content": "x"})])


def test_bad_construction_is_refused(mem):
    for kwargs in ({"user_at": -1}, {"user_at": True}, {"user": ""}, {"index": {"dims": 384, "embed": "x"}},
                   {"index": {"fields": "content"}}, {"ttl": {"default_ttl": 0}}, {"ttl": {"sweep": 1}}):
        with pytest.raises(InvalidInput):
            ZeromemStore(mem, **kwargs)
    with pytest.raises(InvalidInput):
        ZeromemStore("memory.db")


# -- LangGraph graphs and LangMem -------------------------------------------------------------
class State(TypedDict, total=False):
    message: str
    question: str
    recalled: list[str]


def _graph(store):
    def remember(state: State, runtime: Runtime) -> dict:
        if state.get("message"):
            runtime.store.put(("memories", "alice"), str(uuid.uuid4()), {"content": state["message"]})
        return {}

    def recall(state: State) -> dict:
        if not state.get("question"):
            return {"recalled": []}
        found = get_store().search(("memories", "alice"), query=state["question"], limit=1)
        return {"recalled": [item.value["content"] for item in found]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


def test_a_graph_writes_in_one_run_and_recalls_in_the_next_from_a_fresh_store(db_path):
    with Memory(db_path) as mem:
        graph = _graph(ZeromemStore(mem))
        graph.invoke({"message": "Alice's sister Maya lives in Porto."})
        graph.invoke({"message": "Alice takes her coffee black."})
    with Memory(db_path) as mem:  # a new process would see the same: the file is the record
        graph = _graph(ZeromemStore(mem))
        out = graph.invoke({"question": "Where does Alice's sister live?"})
        assert out["recalled"] == ["Alice's sister Maya lives in Porto."]
        assert len(mem.list(user="alice")) == 2


@pytest.mark.filterwarnings("ignore:Importing Send from langgraph.constants")  # LangMem's trustcall
def test_langmem_store_tools_write_and_search_the_users_scope(mem):
    from langmem import create_manage_memory_tool, create_search_memory_tool

    manage = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"))
    search = create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"))

    def node(state: State) -> dict:
        created = manage.invoke({"content": state["message"], "action": "create"})
        key = created.split()[-1]
        manage.invoke({"content": state["message"] + " Every morning.", "action": "update", "id": key})
        result = search.invoke({"query": state["question"]})
        return {"recalled": [key, result]}

    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    graph = builder.compile(store=ZeromemStore(mem))
    out = graph.invoke({"message": "Priya drinks green tea.", "question": "What does Priya drink?"},
                       config={"configurable": {"langgraph_user_id": "priya"}})
    key, result = out["recalled"]
    found = json.loads(result)
    assert found[0]["key"] == key and found[0]["value"] == {"content": "Priya drinks green tea. Every morning."}
    assert found[0]["score"] > 0
    traces = mem.list(user="priya")
    assert [t.text for t in traces] == ["Priya drinks green tea. Every morning."]
    assert [e.event for e in mem.history(traces[0].id, user="priya")] == ["add", "update"]
    assert mem.list() == [] and mem.list(user="alice") == []

    def forget(state: State) -> dict:
        return {"recalled": [manage.invoke({"action": "delete", "id": key})]}

    builder = StateGraph(State)
    builder.add_node("forget", forget)
    builder.add_edge(START, "forget")
    builder.add_edge("forget", END)
    builder.compile(store=ZeromemStore(mem)).invoke({}, config={"configurable": {"langgraph_user_id": "priya"}})
    assert mem.list(user="priya") == []


# -- the extra --------------------------------------------------------------------------------
def test_without_langgraph_the_import_names_the_extra_to_install():
    code = ("import sys\nsys.modules['langgraph'] = None\nimport zeromem, zeromem.integrations\n"
            "try:\n    import zeromem.integrations.langgraph\nexcept Exception as exc:\n"
            "    print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MissingExtra ")
    assert "pip install 'zeromem[langgraph]'" in done.stdout and "missing: langgraph" in done.stdout


def test_import_zeromem_does_not_load_langgraph():
    code = "import sys, zeromem, zeromem.integrations\nprint('langgraph' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr
