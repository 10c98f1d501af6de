"""A question asked at a known time (``as_of``) resolves "three days ago", "last weekend",
昨天 against it, and the turns of that period rank first (docs/decisions/0029-askers-turns-and-now.md)."""

import pytest

from zeromem import Memory

TART = "I made a lemon tart for Sofia, she loved it."
RISOTTO = "I made a mushroom risotto for Sofia, she loved it."
# Other days, other subjects: a scope of two turns would make every score 0 or 1.
OTHER = ["The bus to the office was late again.", "We painted the fence green on Sunday.",
         "My knee hurts after the long walk.", "The library closes early on Fridays now."]


@pytest.fixture
def cooked(tmp_path):
    mem = Memory(tmp_path / "m.db", user="ana")
    mem.add_many([
        {"text": TART, "session": "s1", "session_time": "2024-03-01T19:00:00", "speaker": "Ana"},
        {"text": RISOTTO, "session": "s2", "session_time": "2024-03-11T19:00:00", "speaker": "Ana"},
        *({"text": text, "session": f"o{i}", "session_time": f"2024-03-0{i + 2}T08:00:00", "speaker": "Ana"}
          for i, text in enumerate(OTHER)),
    ], user="ana")
    yield mem
    mem.close()


@pytest.mark.parametrize("query, first", [
    ("What did I make for Sofia three days ago?", RISOTTO),
    ("What did I make for Sofia two weeks ago?", TART),
])
def test_the_period_a_question_names_leads(cooked, query, first):
    top = cooked.search(query, user="ana", k=2, as_of="2024-03-14T20:00:00")
    assert top[0].text == first


def test_the_same_question_asked_later_counts_from_then(cooked):
    # Asked on 27 March, "two weeks ago" is the week of the 11th.
    top = cooked.search("What did I make for Sofia two weeks ago?", user="ana", k=2,
                        as_of="2024-03-27T20:00:00")
    assert top[0].text == RISOTTO


def test_a_chinese_question_resolves_its_relative_day(tmp_path):
    mem = Memory(tmp_path / "m.db", user="ana")
    mem.add_many([
        {"text": "我给索菲亚做了柠檬挞。", "session": "s1", "session_time": "2024-03-01T19:00:00"},
        {"text": "我给索菲亚做了蘑菇烩饭。", "session": "s2", "session_time": "2024-03-13T19:00:00"},
        *({"text": text, "session": f"o{i}", "session_time": f"2024-03-0{i + 2}T08:00:00"}
          for i, text in enumerate(["公交车又晚点了。", "我们周日把篱笆刷成了绿色。", "长途散步后我的膝盖疼。"])),
    ], user="ana")
    top = mem.search("我昨天给索菲亚做了什么？", user="ana", k=2, as_of="2024-03-14T20:00:00")
    assert top[0].text == "我给索菲亚做了蘑菇烩饭。"
    top = mem.search("我两周前给索菲亚做了什么？", user="ana", k=2, as_of="2024-03-14T20:00:00")
    assert top[0].text == "我给索菲亚做了柠檬挞。"
    mem.close()


def test_now_counts_relative_times_without_hiding_later_traces(cooked):
    # Asked on the 4th, "three days ago" is the 1st: the tart. as_of would hide the risotto
    # (the 11th); now only says when the question is asked.
    top = cooked.search("What did I make for Sofia three days ago?", user="ana", k=8,
                        now="2024-03-04T09:00:00")
    assert top[0].text == TART
    assert RISOTTO in [e.text for e in top]


def test_without_a_time_the_clock_is_never_read(cooked):
    # No as_of, no now: "yesterday" is left unresolved, so the answer does not change by day.
    result = cooked.search_detailed("What did I make for Sofia yesterday?", user="ana", k=2)
    assert result.explain.query.time_cues == ()


def test_a_bad_now_is_refused(cooked):
    from zeromem.errors import InvalidInput
    with pytest.raises(InvalidInput, match="now"):
        cooked.search("What did I make?", user="ana", now="next tuesday-ish")


def test_times_no_calendar_holds_neither_break_writes_nor_search(tmp_path):
    # A turn about prehistory once made every search of its scope fail ("year -4977 is out of
    # range"); a question about the year 9999 overflowed the time check.
    with Memory(tmp_path / "m.db", user="ana") as mem:
        old = mem.add("Jericho was settled 11000 years ago, two days ago I read it.",
                      session="s1", session_time="2024-03-10T09:00:00")
        mem.add("The sun will swell in 7977 years.", session="s1")
        for query, kwargs in [("When was Jericho settled 11000 years ago?", {"now": "2024-03-12"}),
                              ("What did I read two days ago?", {"now": "2024-03-12"}),
                              ("What happens on December 31, 9999?", {}),
                              ("What happens in 7977 years?", {"now": "9999-12-31"})]:
            assert mem.search(query, **kwargs), query
        assert mem.search("What did I read two days ago?", now="2024-03-12", k=1)[0].trace_id == old
