"""The LongMemEval loader and metrics on a small fixture of our own (official schema)."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from zeromem_bench import longmemeval
from zeromem_bench.records import Query, QueryResult, QuestionRun


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
                {"role": "assistant", "content": ""}, {"role": "user", "content": "\u200b "}])], ["s1"]),
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
    assert [u.key for u in first.units] == ["s1:0", "s1:1", "s2:0"]  # turns that show nothing are not stored
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
    from zeromem_bench.records import SystemRun

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


def _session(sid, day, hour=12, gold=False):
    """A two-turn session dated 2023/05/<day> <hour>:00."""
    date = f"2023/05/{day:02d} (X) {hour:02d}:00"
    return sid, date, [{"role": "user", "content": f"note {sid}", **({"has_answer": True} if gold else {})},
                       {"role": "assistant", "content": f"reply {sid}"}]


def _pool_item(qid, sessions, answers, asked_day=28):
    return {"question_id": qid, "question_type": "multi-session", "question": f"about {qid}?",
            "answer": "x", "question_date": f"2023/05/{asked_day:02d} (X) 23:00",
            "haystack_session_ids": [s for s, _, _ in sessions],
            "haystack_dates": [d for _, d, _ in sessions],
            "haystack_sessions": [t for _, _, t in sessions], "answer_session_ids": answers}


# Each question's haystack is sorted by day, though not by time within day 10 (as in the data).
PAD_ITEMS = [
    _pool_item("t1", [_session("a1", 3), _session("ans_t1", 10, 18, gold=True), _session("a2", 10, 9),
                      _session("shared", 20)], ["ans_t1"], asked_day=21),
    _pool_item("t2", [_session(f"b{i}", i + 1) for i in range(12)] + [_session("shared", 14),
                      _session("ans_t2", 15, gold=True)], ["ans_t2"]),
    _pool_item("t3", [_session(f"c{i}", i + 2, 7) for i in range(12)] + [_session("ans_t1", 25)],
               ["ans_t3"]),
    _pool_item("t4", [_session("ans_t3", 4, gold=True), _session("late", 27)], []),
]


@pytest.fixture
def pad_file(tmp_path):
    path = tmp_path / "lme_pad.json"
    path.write_text(json.dumps(PAD_ITEMS), encoding="utf-8")
    return path


def test_pad_pool_leaves_out_every_answer_session():
    pool = {s.session_id for s in longmemeval.pad_pool(PAD_ITEMS)}
    # ans_t1 sits in t3's haystack unmarked, ans_t3 is marked in t4 but is no one's answer
    # session there: both are some question's evidence and never pad.
    assert not pool & {"ans_t1", "ans_t2", "ans_t3"}
    assert {"a1", "shared", "b0", "c11", "late"} <= pool


def test_padding_is_deterministic_and_never_repeats_the_haystack(pad_file):
    padding = longmemeval.Padding(8, seed=3)
    first = longmemeval.load_longmemeval(pad_file, padding=padding)
    again = longmemeval.load_longmemeval(pad_file, padding=padding)
    assert [[u.key for u in c.units] for c in first.corpora] == \
           [[u.key for u in c.units] for c in again.corpora]
    other = longmemeval.load_longmemeval(pad_file, padding=longmemeval.Padding(8, seed=4))
    assert [[u.key for u in c.units] for c in first.corpora] != \
           [[u.key for u in c.units] for c in other.corpora]
    # A question's draw does not depend on how many questions are loaded.
    limited = longmemeval.load_longmemeval(pad_file, limit=1, padding=padding)
    assert [u.key for u in limited.corpora[0].units] == [u.key for u in first.corpora[0].units]
    for item, corpus in zip(PAD_ITEMS, first.corpora):
        sessions = [u.draft["session"] for u in corpus.units if u.draft["seq"] == 0]
        assert len(sessions) == len(set(sessions)), "a session id twice in one haystack"
        own = set(item["haystack_session_ids"])
        assert own <= set(sessions)
        added = set(sessions) - own
        assert not added & {"ans_t1", "ans_t2", "ans_t3"}


def test_padded_haystack_stays_in_date_order_and_keeps_its_own(pad_file):
    data = longmemeval.load_longmemeval(pad_file, padding=longmemeval.Padding(6))
    for item, corpus in zip(PAD_ITEMS, data.corpora):
        days = [u.draft["session_time"][:10] for u in corpus.units]
        assert days == sorted(days)
        asked = longmemeval.iso_date(item["question_date"])
        assert max(u.draft["session_time"] for u in corpus.units) <= asked
        own = [u.draft["session"] for u in corpus.units if u.draft["session"] in item["haystack_session_ids"]]
        assert list(dict.fromkeys(own)) == item["haystack_session_ids"]  # own order kept
    t1 = [u.draft["session"] for u in data.corpora[0].units if u.draft["seq"] == 0]
    assert "late" not in t1  # dated after t1's question


def test_gold_is_unchanged_and_zero_padding_is_no_padding(pad_file):
    plain = longmemeval.load_longmemeval(pad_file)
    zero = longmemeval.load_longmemeval(pad_file, padding=longmemeval.Padding(0, seed=9))
    assert [(c.name, list(c.units), list(c.queries)) for c in plain.corpora] == \
           [(c.name, list(c.units), list(c.queries)) for c in zero.corpora]
    padded = longmemeval.load_longmemeval(pad_file, padding=longmemeval.Padding(10))
    assert [list(c.queries) for c in padded.corpora] == [list(c.queries) for c in plain.corpora]
    assert padded.report()["turns_per_question"] > plain.report()["turns_per_question"]


def test_a_file_too_small_pads_what_it_can_and_says_so(pad_file):
    data = longmemeval.load_longmemeval(pad_file, padding=longmemeval.Padding(1000))
    report = data.report()
    assert report["pad"] == {"sessions": 1000, "seed": 0, "short": ["t1", "t2", "t3", "t4"]}
    with pytest.raises(ValueError, match="0 or more"):
        longmemeval.Padding(-1)


def test_the_tables_say_how_big_the_haystacks_were(pad_file):
    from zeromem_bench import report

    data = longmemeval.load_longmemeval(pad_file, padding=longmemeval.Padding(1000, seed=2)).report()
    line = report._haystack_line(data)
    assert line is not None and "padding N=1000 (seed 2)" in line and "4 questions got fewer" in line
    assert report._haystack_line({"haystacks": 1}) is None  # benchmarks without haystacks
