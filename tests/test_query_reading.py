"""One reading of the query (retrieval/query_reading.py): the frozen ``Query`` a search is built on.

Every field is read once from the searched text, and the engine searches with exactly the
reading ``read_query`` gives.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zeromem import Memory
from zeromem.encoders.tokenize import tokenize
from zeromem.retrieval.profile import build_profile, hard_terms, question_parts
from zeromem.retrieval.query_reading import Query, embedded, read_query

# Two people chatting in short messages over January 2024: 26 turns (not a small scope), a
# median of a few words (the query embedding leaves their names out).
_LINES = [
    ("Fahim Khan", "Hey Nicolas, how was the weekend?"),
    ("Nicolas", "Great, I went climbing at the gym."),
    ("Fahim Khan", "Nice! I finally bought a fish tank."),
    ("Nicolas", "How many fish do you have?"),
    ("Fahim Khan", "Three fish for now."),
    ("Nicolas", "I am reading Dune again."),
    ("Fahim Khan", "I loved Dune too."),
    ("Nicolas", "My sister visits on Friday."),
    ("Fahim Khan", "Say hi to her from me."),
    ("Nicolas", "Will do, she likes pottery."),
    ("Fahim Khan", "I started a pottery class."),
    ("Nicolas", "Where is the class?"),
    ("Fahim Khan", "Downtown, near the old library."),
]
QUESTION = "What does Faheem keep in his tank?"


@pytest.fixture(scope="module")
def searched():
    """(memory, its prepared scope, its engine)."""
    memory = Memory(":memory:", user="u")
    turns = [{"text": text, "speaker": speaker, "session": f"s{i // 13}",
              "session_time": dt.datetime(2024, 1, 6 + 7 * (i // 13), 18, 0)}
             for i, (speaker, text) in enumerate(_LINES * 2)]
    memory.add_many(turns)
    memory.search(QUESTION, k=1)  # loads the engine
    retriever = memory._retriever
    prep = retriever.prepared(memory._scope(memory.scope.user, memory.scope.agent))
    assert not prep.small and prep.median_turn_words <= 15 and prep.date_range is not None
    yield memory, prep, retriever.engine()
    memory.close()


def _read(prep, text: str, **kw) -> Query:
    return read_query(text, prep, tokenize=tokenize, **kw)


def test_the_searched_text_is_the_question_with_the_speakers_names(searched):
    _, prep, _ = searched
    query = _read(prep, QUESTION)
    assert query.asked == QUESTION
    assert query.text == "What does Fahim keep in his tank?"  # a spelling of the speaker's name
    assert _read(prep, QUESTION, off={"speaker_aliases"}).text == QUESTION
    assert query.profile.text == query.text and query.profile.subject == "Fahim Khan"
    assert query.tokens == tuple(tokenize(query.text))
    # short messages: the embedding reads what is asked, not whose name it is
    assert query.embedding_text == "What does keep in his tank?" == embedded(prep, query.text)
    assert _read(prep, QUESTION, off={"short_message_query"}).embedding_text == query.text
    assert query.parts == ()


def test_a_message_is_read_as_its_questions_and_each_on_its_own(searched):
    _, prep, _ = searched
    message = "今天好累。这个公园叫什么名字？另外，上司的电话是多少？"
    query = _read(prep, message)
    assert query.asked == message and query.text == message  # searched whole: D-069 retired the focus
    assert [part.text for part in query.parts] == question_parts(query.text) == [
        "这个公园叫什么名字？", "另外，上司的电话是多少？"]
    assert all(part.asked == part.text and part.parts == () for part in query.parts)
    assert query.parts[1].profile == build_profile("另外，上司的电话是多少？", prep.speakers)
    assert _read(prep, message, each_question=False).parts == ()
    assert _read(prep, message, off={"several_questions"}).parts == ()


def test_a_numeric_date_is_read_the_one_way_the_memory_allows(searched):
    _, prep, _ = searched
    asked = "What did Nicolas read on 10.01.2024?"
    both = build_profile(asked, prep.speakers).temporal_cues
    assert [cue.first for cue in both] == [dt.date(2024, 1, 10), dt.date(2024, 10, 1)]
    assert [cue.first for cue in _read(prep, asked).profile.temporal_cues] == [dt.date(2024, 1, 10)]
    assert _read(prep, asked, off={"date_reading"}).profile.temporal_cues == both


def test_hard_terms(searched):
    _, prep, _ = searched
    query = _read(prep, 'Did Nicolas read "Dune Messiah" in 2023?')
    assert query.hard_terms == ("nicolas", "dune messiah", "2023")  # as written, the question word left off


def test_a_reading_is_frozen(searched):
    _, prep, _ = searched
    query = _read(prep, QUESTION)
    with pytest.raises(dataclasses.FrozenInstanceError):
        query.text = "something else"
    with pytest.raises(dataclasses.FrozenInstanceError):
        query.profile.temporal_cues = ()
    assert isinstance(query.profile.words, tuple) and isinstance(query.profile.keywords, tuple)


def test_the_engine_searches_with_the_reading_it_reports(searched):
    memory, prep, engine = searched
    for text in (QUESTION, "今天好累。这个公园叫什么名字？另外，上司的电话是多少？"):
        found = engine.search(prep, text, k=5)
        assert found.query == read_query(text, prep, tokenize=engine.tokenize, off=engine.off,
                                         each_question=engine.config.answer_each_question)
        assert found.profile is found.query.profile
        again = engine.search(prep, text, k=5)
        assert [(e.trace_id, e.score) for e in again.evidence] == [(e.trace_id, e.score) for e in found.evidence]
    public = memory.search_detailed(QUESTION, k=5)
    assert public.evidence[0].trace_id == engine.search(prep, QUESTION, k=5).evidence[0].trace_id


_WORDS = st.sampled_from(["What", "When", "did", "does", "Faheem", "Nicolas", "Fahim", "fish", "now",
                          "Dune", '"Blue Lagoon"', "10.01.2024", "in", "May", "2023", "我", "上周",
                          "去了哪里", "？", "。", "?", "how", "many", "the", "pottery", "class"])


@settings(max_examples=60, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=10).map(" ".join) | st.text(max_size=40))
def test_every_field_is_read_from_the_one_searched_text(searched, text):
    _, prep, _ = searched
    query = _read(prep, text)
    assert query == _read(prep, text)  # the same text, the same reading
    for reading in (query, *query.parts):
        assert reading.tokens == tuple(tokenize(reading.text))
        assert reading.hard_terms == tuple(hard_terms(reading.text))
        built = build_profile(reading.text, prep.speakers)
        # the profile is φ(text); only a date written two ways may have lost a reading
        assert dataclasses.replace(reading.profile, temporal_cues=built.temporal_cues) == built
        assert set(reading.profile.temporal_cues) <= set(built.temporal_cues)
    # a part is read as its own text would be, searched alone
    for part in query.parts:
        assert _read(prep, part.text, off={"speaker_aliases"}, each_question=False) == part
