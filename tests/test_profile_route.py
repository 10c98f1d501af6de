import pytest

from zeromem.retrieval.profile import answer_type, build_profile
from zeromem.retrieval.route import route


@pytest.mark.parametrize("query, kind", [
    ("When did Caroline go to the support group?", "date"),
    ("How many children does Melanie have?", "number"),
    ("Who did Caroline meet at the parade?", "person"),
    ("Where did Jon move?", "place"),
    ("Why did Gina quit her job?", "reason"),
    ("Did Melanie paint a sunrise?", "yes/no"),
    ("What activities does Melanie do with her family?", "list"),
    ("What did Caroline research?", "description"),
])
def test_answer_type(query, kind):
    assert answer_type(query) == kind


def test_profile_finds_subject_keywords_and_time_cue():
    p = build_profile("What did Mel's friend Caroline do in May 2023?", ["Caroline", "Melanie"])
    assert p.subject == "Caroline"
    assert "friend" in p.keywords and "caroline" not in p.keywords
    assert p.temporal_cues and p.temporal_cues[0].granularity == "month"


def test_route_relational_for_aggregation_and_local_for_time():
    agg = build_profile("What activities do both Caroline and Melanie enjoy?", ["Caroline", "Melanie"])
    assert route(agg).primary == "relational"
    assert route(agg).weights() == (0.6, pytest.approx(0.4))
    when = build_profile("When did Caroline go to the support group?", ["Caroline"])
    assert route(when).primary == "local"
    assert route(when).weights() == (pytest.approx(0.4), 0.6)


@pytest.mark.parametrize("query, expected", [
    ("Which cities has Jon visited?", True),
    ("What symbols are important to Caroline?", True),
    ("What kind of films does Joanna enjoy?", True),
    ("Which endorsement deals has John been offered?", True),
    ("What is Caroline's identity?", False),
    ("What does Melanie do to destress?", False),
    ("What was the weather like?", False),
])
def test_a_plural_category_after_the_question_word_is_an_aggregation(query, expected):
    assert build_profile(query, ["Jon", "Caroline", "Joanna", "Nate", "Melanie"]).aggregation is expected
