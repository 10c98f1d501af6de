"""The bounded cache of prepared scope indexes: LRU by measured bytes, stats, thread safety,
and through ``Memory``: a cache far smaller than the scopes it serves changes no evidence."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from internals import retriever_of
from zeromem import InvalidInput, Memory
from zeromem.config import Config
from zeromem.retrieval.cache import REMEASURE_GROWTH, IndexCache
from zeromem.retrieval.footprint import deep_nbytes


class Box:
    """A stand-in index: ``size`` bytes, ``slots`` turn slots, ``version``."""

    def __init__(self, size: int, slots: int = 10) -> None:
        self.size, self.slots, self.version = size, slots, 0


def make_cache(budget: int, evicted: list | None = None, measured: list | None = None) -> IndexCache:
    def measure(box: Box) -> int:
        if measured is not None:
            measured.append(box)
        return box.size

    return IndexCache(budget, slots=lambda b: b.slots, version=lambda b: b.version, measure=measure,
                      on_evict=(lambda key, value: evicted.append(key)) if evicted is not None else None)


def key(name: str) -> tuple[str, str]:
    return (name, "")


def test_least_recently_used_scopes_leave_first_once_the_budget_is_exceeded():
    evicted: list = []
    cache = make_cache(100, evicted)
    for name in "abc":
        cache.put(key(name), Box(40))
    assert evicted == [key("a")]
    assert cache.get(key("b")) is not None  # b is now the most recently used
    cache.put(key("d"), Box(40))
    assert evicted == [key("a"), key("c")]
    assert sorted(cache.held_keys()) == [key("b"), key("d")]
    stats = cache.stats()
    assert (stats.bytes, stats.scopes, stats.evictions, stats.hits) == (80, 2, 2, 1)


def test_a_scope_larger_than_the_budget_stays_until_another_scope_is_used():
    evicted: list = []
    cache = make_cache(10, evicted)
    cache.put(key("big"), Box(500))
    assert cache.peek(key("big")) is not None and evicted == []
    cache.put(key("small"), Box(5))
    assert evicted == [key("big")] and cache.held_keys() == [key("small")]


def test_hits_misses_and_discard_are_counted_and_discard_is_no_eviction():
    cache = make_cache(1000)
    assert cache.get(key("a")) is None
    cache.put(key("a"), Box(10))
    assert cache.get(key("a")) is not None
    cache.discard(key("a"))
    stats = dataclasses.asdict(cache.stats())
    assert stats == {"budget_bytes": 1000, "bytes": 0, "scopes": 0, "hits": 1, "misses": 1, "evictions": 0}


def test_a_growing_scope_is_scaled_by_its_slots_and_measured_again_after_real_growth():
    measured: list = []
    cache = make_cache(10**9, measured=measured)
    box = Box(1000, slots=100)
    cache.put(key("a"), box)
    box.version, box.slots, box.size = 1, 110, 5000  # a few writes: scaled, not walked
    cache.put(key("a"), box)
    assert len(measured) == 1 and cache.stats().bytes == 1100
    box.version, box.slots = 2, int(100 * (1 + REMEASURE_GROWTH)) + 1  # grew: measured anew
    cache.put(key("a"), box)
    assert len(measured) == 2 and cache.stats().bytes == 5000


def test_concurrent_use_keeps_the_accounting_exact():
    cache = make_cache(1000)
    boxes = {name: Box(size) for name, size in zip("abcdefgh", (100, 200, 300, 150, 250, 50, 400, 120))}

    def work(offset: int) -> None:
        names = list(boxes)
        for i in range(400):
            name = names[(i * 3 + offset) % len(names)]
            if cache.get(key(name)) is None:
                cache.put(key(name), boxes[name])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = cache.stats()
    assert stats.bytes == sum(boxes[name].size for name, _ in cache.held_keys())
    assert stats.bytes <= 1000 or stats.scopes == 1
    assert stats.hits + stats.misses == 1600


def test_a_negative_budget_is_refused():
    with pytest.raises(ValueError):
        make_cache(-1)
    for bad in (-1, "1024", float("nan"), float("inf"), True):
        with pytest.raises(InvalidInput, match="index_cache_mb"):
            Memory(":memory:", config=Config(index_cache_mb=bad))


def test_deep_nbytes_counts_each_buffer_once_and_not_what_the_process_shares():
    data = np.zeros(1000)
    view = data[10:]
    assert deep_nbytes(view) >= data.nbytes  # a view owns no buffer: its base is counted
    assert deep_nbytes([data, view, data]) - deep_nbytes([data]) < 1000  # counted once
    blob = bytes(8000)
    assert deep_nbytes(np.frombuffer(blob, dtype=np.float64)) >= 8000
    assert deep_nbytes([len, np, threading.Lock()]) < 200  # functions, modules, locks: shared
    assert deep_nbytes({"k": "x" * 5000}) > 5000


def _scopes_memory(path, cache_mb: float) -> Memory:
    return Memory(path, config=Config(index_cache_mb=cache_mb))


SENTENCES = ["Caroline adopted a grey cat named Biscuit.", "Melanie moved to Denver in June.",
             "The bakery on Main Street sells rye bread on Sundays.", "Our team won the regional chess cup.",
             "I started a pottery class. It is relaxing.", "Lisbon is on my list for October!"]


@pytest.mark.slow
def test_a_tiny_cache_evicts_but_every_search_gives_the_evidence_of_a_large_one(tmp_path):
    path = tmp_path / "tenants.db"
    users = [f"tenant-{n}" for n in range(6)]
    with Memory(path) as setup:
        for n, user in enumerate(users):
            setup.add_many([{"text": text, "session": f"s{i % 2}", "speaker": "Ana"}
                            for i, text in enumerate(SENTENCES[n % 3:] + SENTENCES[:n % 3])], user=user)
    queries = ["Where did Melanie move?", "grey cat", "chess cup"]
    with _scopes_memory(path, 1024) as large, _scopes_memory(path, 0.05) as tiny:
        for round_ in range(2):
            for user in users + users[::-1]:
                for query in queries:
                    want = [(e.trace_id, e.score) for e in large.search(query, k=3, user=user)]
                    got = tiny.search(query, k=3, user=user)
                    assert [(e.trace_id, e.score) for e in got] == want
                    own = {t.id for t in tiny.list(user=user)}
                    assert all(e.trace_id in own for e in got)  # never another tenant's
            if round_ == 0:  # a write in between: an evicted scope applies it when it comes back
                tiny.add("Melanie moved to Lisbon in July.", session="s9", speaker="Ana", user=users[0])
                large.search("warm", user=users[0])
        report = tiny.health().index_cache
        assert report.evictions > 0 and report.misses > len(users)
        assert report.scopes >= 1 and report.budget_bytes == int(0.05 * (1 << 20))
        assert report.bytes <= report.budget_bytes or report.scopes == 1
        assert large.health().index_cache.evictions == 0


@pytest.mark.slow
def test_deleting_a_scope_drops_its_in_memory_index_too(tmp_path):
    with Memory(tmp_path / "erase.db") as mem:
        mem.add("Caroline adopted a grey cat named Biscuit.", session="s1", user="keep")
        mem.add("Melanie moved to Denver in June.", session="s1", user="gone")
        for user in ("keep", "gone"):
            assert mem.search("cat", user=user) is not None
        assert mem.health().index_cache.scopes == 2
        mem.delete_scope(user="gone")
        assert mem.health().index_cache.scopes == 1
        assert mem.search("Denver", user="gone") == []
        best = mem.search("grey cat", user="keep")[0]
        assert best.text == "Caroline adopted a grey cat named Biscuit."


uses = st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(1, 60)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(budget=st.integers(0, 150), uses=uses)
def test_the_cache_behaves_like_a_least_recently_used_list_bounded_by_bytes(budget, uses):
    """Against a plain model: after each use the held keys are the most recent ones that fit
    (the one just used always held), in recency order, and the bytes add up."""
    evicted: list = []
    cache = make_cache(budget, evicted)
    model: list[tuple[str, int]] = []  # (name, bytes), least recent first
    for name, size in uses:
        held = cache.get(key(name))
        if held is None:
            cache.put(key(name), Box(size))
        else:
            cache.put(key(name), held)  # a search puts back what it used
            size = held.size
        model = [(n, b) for n, b in model if n != name] + [(name, size)]
        while sum(b for _, b in model) > budget and len(model) > 1:
            model.pop(0)
        assert cache.held_keys() == [key(n) for n, _ in model]
        assert cache.stats().bytes == sum(b for _, b in model)
    assert len(evicted) == cache.stats().evictions


def test_long_containers_are_sampled_close_to_their_exact_size():
    import zeromem.retrieval.footprint as footprint

    texts = [("word " * (n % 50 + 1)) + str(n) for n in range(20_000)]
    data = {"texts": texts, "index": {text: n for n, text in enumerate(texts)}, "vectors": np.zeros((500, 64))}
    sampled = deep_nbytes(data)
    saved = footprint.SAMPLED_ABOVE
    footprint.SAMPLED_ABOVE = 10**9
    try:
        exact = deep_nbytes(data)
    finally:
        footprint.SAMPLED_ABOVE = saved
    assert 0.9 * exact <= sampled <= 1.5 * exact  # shared keys may be counted twice: never far below


def test_room_is_made_before_a_scope_is_loaded_and_bytes_per_slot_follow_the_measures():
    evicted: list = []
    cache = make_cache(100, evicted)
    assert cache.bytes_per_slot(default=7) == 7
    cache.put(key("a"), Box(40, slots=10))
    cache.put(key("b"), Box(40, slots=30))
    assert cache.bytes_per_slot(default=7) == 2  # 80 bytes over 40 slots
    cache.release(cache.make_room(50))  # 80 + 50 > 100: the least recently used goes first
    assert evicted == [key("a")] and cache.held_keys() == [key("b")]
    assert cache.take_evicted_bytes() == 40 and cache.take_evicted_bytes() == 0
    cache.release(cache.make_room(1000))  # more than the budget: everything goes
    assert cache.held_keys() == [] and cache.stats().bytes == 0 and cache.stats().evictions == 2


def test_a_reservation_counts_against_the_budget_until_its_index_is_put():
    evicted: list = []
    cache = make_cache(100, evicted)
    cache.put(key("a"), Box(30))
    loading = cache.make_room(60)  # 30 + 60 fit
    cache.put(key("b"), Box(30))  # 30 + 30 + 60 reserved > 100: "a" goes
    assert evicted == [key("a")]
    cache.put(key("c"), Box(40), loading)  # its bytes replace the reservation: 30 + 40 fit
    assert cache.held_keys() == [key("b"), key("c")] and evicted == [key("a")]
    cache.release(loading)  # already given back by put: nothing changes
    cache.put(key("d"), Box(30))
    assert cache.held_keys() == [key("b"), key("c"), key("d")]


def test_a_load_waits_while_other_loads_hold_the_room_it_needs():
    cache = make_cache(100)
    first = cache.make_room(70)
    started, done = threading.Event(), threading.Event()

    def second_load() -> None:
        started.set()
        cache.release(cache.make_room(50))  # 70 + 50 > 100: waits for the first load
        done.set()

    thread = threading.Thread(target=second_load)
    thread.start()
    started.wait()
    assert not done.wait(0.2)
    cache.put(key("a"), Box(10), first)
    assert done.wait(5)
    thread.join()
    alone = cache.make_room(500)  # no other load in progress: one larger than the budget goes ahead
    cache.release(alone)


@pytest.mark.slow
def test_the_folded_graph_is_built_before_the_cache_sizes_the_scope(tmp_path):
    # PPR runs on the folded graph (views/ppr_folded.py); it is built when the scope is brought
    # up to date, before the cache measures it, so the budget sees its bytes.
    with Memory(tmp_path / "m.db") as mem:
        for round_ in range(2):  # the first version, then one after a write
            mem.add_many([{"text": text, "session": f"s{round_}-{i % 2}", "speaker": "Ana"}
                          for i, text in enumerate(SENTENCES * 3)])
            prep = retriever_of(mem).prepared(mem.scope)
            folding = prep.graph._folding
            assert folding is not None and folding[0] == prep.graph.version
            assert folding[1] == mem.config.retrieval.ppr_damping  # folded for the damping searches use
            assert mem.health().index_cache.bytes == deep_nbytes(prep)  # measured with it
            assert deep_nbytes(prep) > deep_nbytes(folding[2]) > 1000
