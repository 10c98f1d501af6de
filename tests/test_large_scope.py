"""The large-scope path (candidate turns, push PPR, cells) on a small real memory, forced on by
``large_scope_turns=0``: it must agree with the path that scores every turn."""

from __future__ import annotations

import numpy as np
import pytest

from internals import retriever_of
from zeromem import Config, Memory
from zeromem.ingest import load_file
from zeromem.views.hierarchy import lift_onto, lift_to_turns


@pytest.fixture(scope="module")
def example(tmp_path_factory, example_path):
    conversation = load_file(example_path)[0]
    path = tmp_path_factory.mktemp("large") / "m.db"
    with Memory(path, user="demo") as memory:
        memory.add_many(conversation.drafts)
        memory.index()
    return path, [q["question"] for q in conversation.qa]


def _memory(path, *, large: bool, per_source: int = 200) -> Memory:
    config = Config()
    config.retrieval.large_scope_turns = 0 if large else 10**9
    config.retrieval.large_scope_candidates = per_source
    return Memory(path, user="demo", config=config)


def _ranked(memory: Memory, questions: list[str]) -> list[list[str]]:
    return [[e.trace_id for e in memory.search(q, k=10)] for q in questions]


def test_candidates_covering_the_scope_give_the_exact_evidence(example):
    path, questions = example
    with _memory(path, large=False) as exact, _memory(path, large=True) as large:
        assert _ranked(large, questions) == _ranked(exact, questions)


def test_a_few_candidates_per_source_still_find_the_best_evidence(example):
    path, questions = example
    with _memory(path, large=False) as exact, _memory(path, large=True, per_source=5) as large:
        assert [r[:1] for r in _ranked(large, questions)] == [r[:1] for r in _ranked(exact, questions)]


def test_the_large_path_is_deterministic_across_loads(example):
    path, questions = example
    runs = []
    for _ in range(2):
        with _memory(path, large=True, per_source=5) as memory:
            runs.append([[(e.trace_id, e.score, e.why["reason"]) for e in memory.search(q, k=8)]
                         for q in questions])
    assert runs[0] == runs[1]


def test_filters_hold_on_the_large_path(example):
    path, _ = example
    with _memory(path, large=True, per_source=5) as memory:
        only = memory.search("Priya job", k=10, session="session_1")
        assert only and all(e.session == "session_1" for e in only)
        early = memory.search("Priya job", k=10, as_of="2023-04-01")
        assert early and all(e.time <= "2023-04-01" for e in early)


def test_lifting_onto_some_turns_equals_lifting_onto_all(example):
    path, _ = example
    with _memory(path, large=False) as memory:
        prep = retriever_of(memory).prepared(memory.scope)
    rng = np.random.default_rng(0)
    scores = {level: rng.random(prep.index.levels[level].size) for level in ("turn", "span", "window", "episode")}
    nodes = np.sort(rng.choice(prep.n_turns, size=prep.n_turns // 3, replace=False))
    every = lift_to_turns(prep.hier, scores)
    some = lift_onto(prep.hier, nodes, lambda level, units: scores[level][units])
    assert list(some) == list(every)
    for level in every:
        assert np.array_equal(some[level], every[level][nodes])

