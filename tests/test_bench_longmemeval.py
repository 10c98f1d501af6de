"""The LongMemEval loader and metrics on a small fixture of our own (official schema)."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from zeromem.bench import longmemeval
from zeromem.bench.records import Query, QueryResult, QuestionRun


def _item(qid, question, sessions, answer_sessions, kind="single-session-user"):
    return {"question_id": qid, "question_type": kind, "question": question, "answer": "x",
            "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": [s for s, _ in sessions],
            "haystack_dates": ["2023/05/20 (Sat) 02:21"] * len(sessions),
            "haystack_sessions": [turns for _, turns in sessions],
            "answer_session_ids": answer_sessions}


ITEMS = [
    _item("q1", "What breed is my dog?", [
        ("s1", [{"role": "user", "content": "I adopted a beagle named Rex.", "has_answer": True},
                {"role": "assistant", "content": "Beagles are lovely dogs!"}]),
        ("s2", [{"role": "user", "content": "Any tips for sourdough?"},
                {"role": "assistant", "content": ""}])], ["s1"]),
    _item("q2_abs", "What is my cat's name?", [
        ("s3", [{"role": "user", "content": "I like tea."}])], [], kind="single-session-user"),
]


@pytest.fixture
def fixture_file(tmp_path):
    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(ITEMS, handle)
    return path


def test_loader_reads_the_official_schema(fixture_file):
    data = longmemeval.load_longmemeval(fixture_file)
    assert [c.name for c in data.corpora] == ["q1", "q2_abs"]
    first = data.corpora[0]
    assert [u.key for u in first.units] == ["s1:0", "s1:1", "s2:0"]  # the empty turn is not stored
    draft = first.units[0].draft
    assert (draft["speaker"], draft["role"], draft["session"], draft["session_time"]) == \
           ("user", "user", "s1", "2023-05-20T02:21:00")
    query = first.queries[0]
    assert query.gold == ("s1:0",) and query.scored and query.extra["sessions"] == ("s1",)
    abstention = data.corpora[1].queries[0]
    assert not abstention.scored and abstention.extra["abstention"]
    assert longmemeval.load_longmemeval(fixture_file, limit=1).report()["haystacks"] == 1


def test_session_metrics():
    query = Query("q", "?", "t", ("a:1",), None, True, {"sessions": ("b",), "abstention": False})
    result = QueryResult([["a:1"], ["b:0"], ["a:2"], ["c:3"]], ["", "", "", ""], "", 1.0)
    run = QuestionRun(query, result, result, 0)
    assert longmemeval.ranked_sessions(run) == ["a", "b", "c"]
    block = longmemeval._block([run], 10)
    assert block["turn_any@10"] == 100.0 and block["turn_all@10"] == 100.0
    assert block["session_any@5"] == 100.0
    assert block["session_ndcg@10"] == pytest.approx(100 / math.log2(3))


def test_halves_follow_the_question_index(fixture_file):
    from zeromem.bench.records import SystemRun

    data = longmemeval.load_longmemeval(fixture_file)
    assert [c.queries[0].extra["half"] for c in data.corpora] == ["even", "odd"]
    runs = []
    for corpus in data.corpora:
        query = corpus.queries[0]
        result = QueryResult([[g] for g in query.gold] or [["s3:0"]], [""], "", 1.0, None, 0.5)
        runs.append(QuestionRun(query, result, result, 0))
    report = longmemeval.system_report(SystemRun("x", runs, 0.0), 10)
    assert report["by_half"]["even"]["n"] == 1 and report["by_half"]["even"]["turn_all@10"] == 100.0
    assert set(report["by_half_category"]["even"]) == {"single-session-user"}
