"""The query profile and route, on questions of our own (never a benchmark's wording)."""

import datetime as dt

import pytest

from zeromem.retrieval.profile import answer_type, build_profile, hard_terms
from zeromem.retrieval.route import route


@pytest.mark.parametrize("query, kind", [
    ("When did Priya start the night course?", "date"),
    ("How many bikes does Tomas own?", "number"),
    ("Who did Priya run into at the market?", "person"),
    ("Where did Tomas relocate?", "place"),
    ("Why did Priya leave the choir?", "reason"),
    ("Did Tomas finish the mural?", "yes/no"),
    ("What hobbies does Tomas share with his father?", "list"),
    ("What did Priya translate?", "description"),
])
def test_answer_type(query, kind):
    assert answer_type(query) == kind


def test_profile_finds_subject_keywords_and_time_cue():
    p = build_profile("What did Tom's cousin Priya do in May 2023?", ["Priya", "Tomas"])
    assert p.subject == "Priya"
    assert "cousin" in p.keywords and "priya" not in p.keywords
    assert p.temporal_cues and p.temporal_cues[0].granularity == "month"


def test_route_relational_for_aggregation_and_local_for_time():
    agg = build_profile("What games do both Priya and Tomas play?", ["Priya", "Tomas"])
    assert route(agg).primary == "relational"
    assert route(agg).weights() == (0.6, pytest.approx(0.4))
    when = build_profile("When did Priya start the night course?", ["Priya"])
    assert route(when).primary == "local"
    assert route(when).weights() == (pytest.approx(0.4), 0.6)


def test_the_pronoun_i_is_not_a_name_that_makes_a_question_relational():
    """"I" and "Porto" are not two named things to connect: one place is named, and the
    question is routed as the same question asked of Priya."""
    asked = build_profile("How long did I stay in Porto?", ["user", "assistant"])
    assert asked.names == ("I", "Porto")
    assert route(asked).primary == "local"
    assert route(build_profile("How long did Priya stay in Porto?", ["Priya"])).primary == "local"


@pytest.mark.parametrize("query, expected", [
    ("Which towns has Tomas lived in?", True),
    ("What colours are important to Priya?", True),
    ("What kind of songs does Ines hum?", True),
    ("Which awards has Omar been given?", True),
    ("What sports do the twins play?", True),
    ("What is Priya's middle name?", False),
    ("What does Tomas do to unwind?", False),
    ("What was the weather like?", False),
])
def test_a_plural_category_after_the_question_word_is_an_aggregation(query, expected):
    assert build_profile(query, ["Tomas", "Priya", "Ines", "Omar"]).aggregation is expected


@pytest.mark.parametrize("query, terms", [
    ("Did Priya Nair sign the lease?", ["priya nair"]),
    ("When Tomas moved, where did he go?", ["tomas"]),
    ("What did Omar buy in Porto on 3/4?", ["omar", "porto", "3/4"]),
    ('Which shop sells "blue velvet" cake?', ["blue velvet"]),
    ("Is Lisbon or Porto bigger?", ["lisbon", "porto"]),
    ("What is it?", []),
])
def test_hard_terms_leave_the_question_word_off_a_name(query, terms):
    assert hard_terms(query) == terms


@pytest.mark.parametrize("query, labels", [
    ("Which towns has Omar lived in?", {"GPE", "LOC", "FAC"}),
    ("What films did the twins watch together?", {"WORK_OF_ART", "TITLE"}),
    ("What novels and cities does Ines write about?", {"GPE", "LOC", "FAC", "WORK_OF_ART", "TITLE"}),
    ("What hobbies does Tomas have?", set()),
])
def test_answer_labels_name_the_kind_of_entity_a_list_question_asks_for(query, labels):
    assert build_profile(query, ["Omar", "Ines", "Tomas"]).answer_labels == labels


def test_a_list_question_prefers_turns_that_name_an_entity_of_the_listed_kind(tmp_path):
    from zeromem import Memory

    with Memory(tmp_path / "m.db") as memory:
        filler = ["The weather was grey all week.", "Work has been busy lately.",
                  "I made soup for dinner.", "The cat slept all afternoon."]
        for i, text in enumerate(filler):
            memory.add(text, session=f"s{i}", speaker="Omar")
        trip = memory.add("Last spring I spent a month in Lisbon.", session="s8", speaker="Omar")
        chat = memory.add("I visited my aunt and she has lived in many houses.", session="s9",
                          speaker="Omar")
        ranked = [e.trace_id for e in memory.search("Which cities has Omar visited?", k=6)]
        assert ranked.index(trip) < ranked.index(chat)


@pytest.mark.parametrize("query, labels", [
    ("Where did Omar go last summer?", {"GPE", "LOC", "FAC"}),
    ("When did Ines move to Porto?", {"DATE", "TIME"}),
    ("What year did Ines graduate?", {"DATE", "TIME"}),
    ("Who did Ines meet at the gala?", {"PERSON"}),
    ("How long has Omar lived in Lisbon?", {"CARDINAL", "QUANTITY", "MONEY", "PERCENT", "DATE", "TIME"}),
    ("Which cities has Omar visited?", set()),  # a list question: answer_labels, not this
    ("How many cats does Ines have?", set()),  # counting is aggregation
    ("Why did Tomas leave?", set()),
    ("What does Tomas think of the new job?", set()),
    ("什么时候去的北京？", {"DATE", "TIME"}),
    ("在哪里上的课？", {"GPE", "LOC", "FAC"}),
])
def test_answer_kind_labels_name_what_a_one_answer_question_asks_for(query, labels):
    assert build_profile(query, ["Omar", "Ines", "Tomas"]).answer_kind_labels == labels


def test_a_where_question_prefers_a_turn_that_names_a_place(tmp_path, monkeypatch):
    from zeromem import Memory
    from zeromem.retrieval import engine

    def order(memory: Memory) -> list[str]:
        return [e.trace_id for e in memory.search("Where did Omar spend his holiday?", k=4)]

    with Memory(tmp_path / "m.db") as memory:
        for i, text in enumerate(["The weather was grey all week.", "Work has been busy lately.",
                                  "I made soup for dinner.", "The cat slept all afternoon."]):
            memory.add(text, session=f"s{i}", speaker="Omar")
        home = memory.add("I spent my holiday relaxing, a quiet holiday.", session="s8", speaker="Omar")
        away = memory.add("I spent my holiday in Lisbon.", session="s9", speaker="Omar")
        ranked = order(memory)
        assert ranked.index(away) < ranked.index(home)
        # the place is what put it first: without the boost the turn that repeats "holiday" leads
        monkeypatch.setattr(engine, "ANSWER_KIND_BOOST", 0.0)
        memory.add("An unrelated note.", session="s10", speaker="Ines")  # a new version: no cached result
        ranked = order(memory)
        assert ranked.index(home) < ranked.index(away)


@pytest.mark.parametrize("query, expected", [
    ("How many marathons have I run this year?", True),
    ("What did I name my first bike?", True),
    ("What did I tell you about my cousin's wedding?", True),  # "you" told: still my account
    ("Can you remind me where I parked last Tuesday?", True),  # a request, not your words
    # what a request to recall asks for decides, not the asker's words around it
    ("I'm back to our chat about the dungeon. Can you remind me how many mummies the party meets?", False),
    ("I was wondering if you could remind me of the deli near the Vatican we talked about.", False),
    ("I'm planning my trip. Could you tell me what my budget was?", True),
    ("Put these in order: 'I sold the van', 'I bought a kayak'.", True),  # my own words, quoted
    ("What did you recommend for my back pain?", False),  # your advice: your turns
    ("Which recipe did you suggest I try?", False),
    ("Where does Priya keep her sketchbooks?", False),  # third person: nobody's role preferred
    ("What is the capital of Peru?", False),
])
def test_about_asker(query, expected):
    assert build_profile(query, ["Priya"]).about_asker is expected


def test_about_asker_in_chinese():
    assert build_profile("我上周买了什么？", []).about_asker is True
    assert build_profile("你推荐我看哪本书？", []).about_asker is False


def _cues(query, asked_at):
    return [(c.first.isoformat(), c.last.isoformat()) for c in build_profile(query, [], asked_at).temporal_cues]


def test_relative_times_resolve_against_the_time_the_question_is_asked():
    asked = dt.date(2024, 3, 14)  # a Thursday
    assert _cues("What did I bake three days ago?", asked) == [("2024-03-11", "2024-03-11")]
    assert _cues("Who did I meet last weekend?", asked) == [("2024-03-09", "2024-03-10")]
    assert _cues("我昨天买了什么？", asked) == [("2024-03-13", "2024-03-13")]
    # Not asked at a known time: nothing to count from, no cue.
    assert _cues("What did I bake three days ago?", None) == []


@pytest.mark.parametrize("query", [
    "Which courses did I finish before today?",
    "What have I read since last month?",
    "我到昨天为止读了几本书？",
])
def test_a_relative_time_that_bounds_the_question_is_not_a_cue(query):
    assert _cues(query, dt.date(2024, 3, 14)) == []
