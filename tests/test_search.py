"""Retrieval through the public API on the shipped example conversation (real models)."""

from __future__ import annotations

import pytest

from zeromem import Evidence, InvalidInput, Memory
from zeromem.ingest import load_file
from zeromem.reader.base import usage


@pytest.fixture(scope="module")
def example_memory(tmp_path_factory, example_path):
    conversation = load_file(example_path)[0]
    memory = Memory(tmp_path_factory.mktemp("search") / "m.db", user="demo")
    memory.add_many(conversation.drafts)
    memory.index()
    yield memory
    memory.close()


def _sources(evidence: list[Evidence]) -> list[str]:
    return [e.provenance.source_id for e in evidence]


def test_finds_the_single_hop_fact_with_full_provenance(example_memory):
    evidence = example_memory.search("What is the name of Priya's cat?", k=5)
    assert "D1:5" in _sources(evidence)
    hit = evidence[_sources(evidence).index("D1:5")]
    trace = example_memory.get(hit.trace_id)
    assert hit.text == trace.text  # verbatim
    p = hit.provenance
    assert (p.trace_id, p.session, p.speaker, p.time) == (trace.id, trace.session, trace.speaker,
                                                          trace.session_time)
    assert {"graph", "hierarchy", "dense_cosine", "compatibility", "reason"} <= set(hit.why)


def test_budget_of_k_turns_is_respected_and_results_are_sorted(example_memory):
    for k in (1, 3, 10):
        evidence = example_memory.search("Where does Priya live now?", k=k)
        assert 1 <= len(evidence) <= k
        assert len({e.trace_id for e in evidence}) == len(evidence)


def test_same_query_gives_the_same_evidence_in_the_same_order(example_memory):
    a = example_memory.search("Which shift does Priya work at her new job?", k=8)
    b = example_memory.search("Which shift does Priya work at her new job?", k=8)
    assert [(e.trace_id, e.score) for e in a] == [(e.trace_id, e.score) for e in b]


def test_search_spends_zero_llm_calls(example_memory):
    before = usage()
    example_memory.search("When is Marcus going to Lisbon?")
    example_memory.render_context("When is Marcus going to Lisbon?")
    spent = usage() - before
    assert (spent.calls, spent.tokens) == (0, 0)


def test_render_context_is_chronological_and_within_budget(example_memory):
    ctx = example_memory.render_context("Where did Priya live before she moved to Denver?", k=10,
                                        budget_tokens=150)
    assert ctx.tokens <= 150 + 20  # headers are counted after admission; a small margin
    times = [e.time for e in sorted(ctx.evidence, key=lambda e: (e.time, e.provenance.seq))]
    assert ctx.text.count("---") >= 2
    assert all(e.trace_id in ctx.text for e in ctx.evidence)
    assert times == sorted(times)


def test_session_and_as_of_filters(example_memory):
    only = example_memory.search("Priya job", k=10, session="session_1")
    assert only and all(e.session == "session_1" for e in only)
    early = example_memory.search("Priya job", k=10, as_of="2023-04-01")
    assert all(e.time <= "2023-04-01" for e in early)


def test_bad_queries_are_refused(example_memory):
    with pytest.raises(InvalidInput):
        example_memory.search("   ")
    with pytest.raises(InvalidInput):
        example_memory.search("cat", k=0)
    with pytest.raises(InvalidInput):
        example_memory.search(42)  # type: ignore[arg-type]


def test_scopes_never_leak_into_search(example_memory):
    other = example_memory.search("Priya cat", k=5, user="somebody-else")
    assert other == []


def test_no_answer_score_is_exposed_and_bounded(example_memory):
    result = example_memory.search_detailed("What is the name of Priya's cat?")
    assert 0.0 <= result.no_answer_score <= 1.0


def test_a_statement_outranks_a_question_with_the_same_words(mem):
    filler = ["The weather was lovely.", "We cooked pasta for dinner.", "My cat slept all day.",
              "Work was busy this week.", "I started reading a new novel."]
    mem.add_many([{"text": t, "speaker": "Ann", "session": f"f{i}"} for i, t in enumerate(filler)] + [
        {"text": "Went hiking at Pine Ridge?", "speaker": "Ann", "session": "s1", "source_id": "q"},
        {"text": "Went hiking at Pine Ridge.", "speaker": "Ann", "session": "s2", "source_id": "a"},
    ])
    ranked = _sources(mem.search("hiking at Pine Ridge", k=3))
    assert ranked.index("a") < ranked.index("q")


def test_a_turn_ending_in_a_full_width_question_mark_asks(mem):
    from internals import retriever_of

    mem.add_many([{"text": t, "speaker": "小王", "session": "s1"} for t in
                  ("周末去松山爬山了？", "周末去松山爬山了。", "Went hiking at Pine Ridge? ", "Went hiking.")])
    prep = retriever_of(mem).prepared(mem.scope)
    live = [i for i in range(prep.n_turns) if prep.alive[i]]
    asks = {prep.turn_text[i]: bool(prep.question_like[i]) for i in live}
    assert asks == {"周末去松山爬山了？": True, "周末去松山爬山了。": False,
                    "Went hiking at Pine Ridge? ": True, "Went hiking.": False}


def test_a_question_about_two_participants_favours_neither(mem):
    mem.add_many([
        {"text": "I love sci-fi movies, Dune is my favourite.", "speaker": "Joanna", "session": "s1",
         "source_id": "j"},
        {"text": "I love sci-fi movies too, Dune is great.", "speaker": "Nate", "session": "s1", "source_id": "n"},
    ])
    result = mem.search_detailed("What movies do Joanna and Nate both like?", k=2)
    assert {e.why["compatibility"] for e in result.evidence} == {1.0}


def test_search_detailed_is_a_frozen_typed_result_with_a_no_answer_verdict(example_memory):
    import dataclasses

    from zeromem import NoAnswerSignals, QuerySummary, SearchExplain, SearchResult
    from zeromem.retrieval.calibrate import NO_ANSWER_THRESHOLD, no_answer_score

    answered = example_memory.search_detailed("What is the name of Priya's cat?", k=5)
    unknown = example_memory.search_detailed("Who painted the walls of the submarine in Lisbon?", k=5)
    for result in (answered, unknown):
        assert isinstance(result, SearchResult) and isinstance(result.explain, SearchExplain)
        assert isinstance(result.evidence, tuple) and isinstance(result.degraded, tuple)
        assert result.no_answer is (result.no_answer_score >= NO_ANSWER_THRESHOLD)
        explain = result.explain
        assert explain.route in ("relational", "local") and 0 <= explain.route_weight <= 1
        assert isinstance(explain.query, QuerySummary) and isinstance(explain.no_answer_inputs, NoAnswerSignals)
        # the explanation is plain values: the score is reproduced from them alone
        assert no_answer_score(explain.no_answer_inputs) == result.no_answer_score
        assert {"encode_ms", "total_ms"} <= set(explain.timings)
        assert result.timings == explain.timings and result.no_answer_inputs == explain.no_answer_inputs
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.no_answer = not result.no_answer  # type: ignore[misc]
    assert answered.explain.query.subject == "Priya" and not answered.no_answer
