"""The MemDaily loader and report on a small fixture of our own (MemDaily's schema)."""

from __future__ import annotations

import json

import pytest

from zeromem_bench import memdaily
from zeromem_bench.records import QueryResult, QuestionRun, SystemRun


def _trajectory(tid, messages, questions):
    return {"tid": tid,
            "message_list": [{"mid": i, "message": text, "time": time, "place": "杭州"}
                             for i, (text, time) in enumerate(messages)],
            "question_list": [{"qid": j, "question": q, "answer": a, "target_step_id": gold,
                               "choices": {"A": a, "B": "别的"}, "ground_truth": "A",
                               "time": "2024年05月03日 周五 20:00"}
                              for j, (q, a, gold) in enumerate(questions)]}


TRAJECTORIES = [
    _trajectory(7, [("我的邻居叫陈小雨。", "2024年05月01日 周三 08:10"),
                    ("陈小雨养了一只猫。", "2024年05月01日 周三 19:45"),
                    ("我下周二去成都出差。", "2024年05月02日 周四 09:00")],
                [("我的邻居养了什么宠物？", "猫", [0, 1])]),
    _trajectory(8, [("我买了一辆自行车。", "2024年05月02日 周四 07:30"),
                    ("   ", "2024年05月02日 周四 07:31")],
                [("我买了什么？", "自行车", [0, 5])]),  # 5 does not exist: dropped
]


@pytest.fixture
def data_dir(tmp_path):
    (tmp_path / "01_simple_things.json").write_text(json.dumps(TRAJECTORIES, ensure_ascii=False),
                                                    encoding="utf-8")
    (tmp_path / "05_post_processing_roles.json").write_text(
        json.dumps(TRAJECTORIES[:1], ensure_ascii=False), encoding="utf-8")
    return tmp_path


def test_iso_time_reads_the_chinese_date():
    assert memdaily.iso_time("2024年04月01日 周一 08:39") == "2024-04-01T08:39:00"
    assert memdaily.iso_time("2024年4月1日") == "2024-04-01T00:00:00"
    with pytest.raises(ValueError, match="not a MemDaily time"):
        memdaily.iso_time("April 1")


def test_question_type_from_the_file_name():
    assert memdaily.question_type("01_simple_things.json") == "simple"
    assert memdaily.question_type("/x/05_post_processing_roles.json") == "post-processing"
    assert memdaily.question_type("06_noisy_events.json") == "noisy"


def test_loader_one_memory_per_trajectory(data_dir):
    data = memdaily.load_memdaily([data_dir])
    assert [c.name for c in data.corpora] == ["01_simple_things#7", "01_simple_things#8",
                                              "05_post_processing_roles#7"]
    first = data.corpora[0]
    assert [u.key for u in first.units] == ["0", "1", "2"]
    draft = first.units[1].draft
    assert draft["text"] == "陈小雨养了一只猫。"
    assert draft["event_time"] == "2024-05-01T19:45:00"
    assert draft["session"] == "2024-05-01" and draft["session_time"] == "2024-05-01T08:10:00"
    assert draft["source_id"] == "1" and draft["metadata"] == {"place": "杭州"}
    assert first.units[2].draft["session"] == "2024-05-02"
    query = first.queries[0]
    assert query.gold == ("0", "1") and query.category == "simple"
    assert query.extra == {"half": "A", "time": "2024-05-03T20:00:00"}
    assert query.asked_at == "2024-05-03T20:00:00"  # 昨天 in a question counts from here
    second = data.corpora[1]
    assert [u.key for u in second.units] == ["0"]  # a blank message is not stored
    assert second.queries[0].gold == ("0",) and second.queries[0].extra["half"] == "B"
    assert data.types == {"simple": 2, "post-processing": 1}
    assert data.report()["trajectories"] == 3 and data.messages == 7


def test_limit_takes_the_first_trajectories_of_each_file(data_dir):
    data = memdaily.load_memdaily([data_dir / "01_simple_things.json"], limit=1)
    assert [c.name for c in data.corpora] == ["01_simple_things#7"]


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        memdaily.load_memdaily([tmp_path / "nope.json"])


def test_report_overall_by_type_and_by_half(data_dir):
    data = memdaily.load_memdaily([data_dir])
    ranked = {"01_simple_things#7": ["1", "0", "2"], "01_simple_things#8": ["0"],
              "05_post_processing_roles#7": ["2", "1", "0"]}
    result = SystemRun("fake")
    for corpus in data.corpora:
        for query in corpus.queries:
            groups = [[key] for key in ranked[corpus.name]]
            answer = QueryResult(groups, ["t"] * len(groups), "ctx", 1.0, 0.0)
            result.runs.append(QuestionRun(query, answer, answer, 3))
    report = memdaily.system_report(result, 5)
    simple = report["by_category"]["simple"]
    assert simple["recall@1"] == pytest.approx(75.0)  # (1/2 + 1/1) / 2
    assert simple["recall@3"] == 100.0 and simple["all@5"] == 100.0
    post = report["by_category"]["post-processing"]
    assert post["recall@1"] == 0.0 and post["recall@3"] == 100.0
    assert report["overall"]["n"] == 3
    assert report["by_half"]["A"]["n"] == 2 and report["by_half"]["B"]["n"] == 1
    assert report["by_half_category"]["B"]["simple"]["recall@1"] == 100.0
