"""The answer to a question asked about a matching statement is evidence (retrieval/closure.py).

"Here is my painting for the show!" → "What gave you the idea?" → an answer in words of its own:
a question about the painting's inspiration matches the statement, and the answer two turns
later shares none of its words. Closure brings the answer in after the statement.
"""

import pytest

import zeromem.retrieval.closure as closure
from zeromem import Memory

TURNS = [
    ("Ana", "Morning Ben! I finally finished the painting for the art show next month."),
    ("Ben", "That's great news. What gave you the idea for it?"),
    ("Ana", "My grandfather used to take me to the lighthouse on the coast every summer, "
            "and that memory never left me."),
    ("Ben", "I went running by the river today, nine kilometres."),
    ("Ana", "Nice pace! My knee still hurts after the hike, so I'm resting."),
    ("Ben", "The art show in the old town hall was packed last year, lots of paintings."),
    ("Ana", "Yes, I loved the paintings at that art show, especially the portraits."),
    ("Ben", "I bought new paint brushes for my kids yesterday."),
    ("Ana", "They will love painting with them. Art is good for kids."),
    ("Ben", "We are planning a trip to Lisbon in May."),
    ("Ana", "Lisbon is lovely in spring, try the pastries."),
    ("Ben", "My boss wants the report by Friday."),
    ("Ana", "Good luck with the report, you can do it."),
    ("Ben", "The art show organisers asked me to help hang the paintings."),
    ("Ana", "That's kind of you, the show needs volunteers."),
    ("Ben", "I'm cooking lasagna tonight for my parents."),
    ("Ana", "Save me a slice! I'm learning to bake bread."),
    ("Ben", "Did you watch the football match on Sunday?"),
    ("Ana", "No, I was painting all weekend for the show."),
    ("Ben", "My cat knocked over a vase this morning."),
    ("Ana", "Cats will be cats. Mine sleeps all day."),
    ("Ben", "I started reading a novel about sailors."),
    ("Ana", "Tell me if it's good, I need a new book."),
    ("Ben", "The weather is supposed to turn cold next week."),
    ("Ana", "Time to find my winter coat then."),
    ("Ben", "I signed up for a pottery class on Thursdays."),
    ("Ana", "Pottery sounds fun, show me what you make."),
]
ASKED = "What inspired Ana's painting for the art show?"
STATEMENT, ANSWER = TURNS[0][1], TURNS[2][1]


@pytest.fixture()
def memory(tmp_path):
    mem = Memory(tmp_path / "m.db", user="u")
    mem.add_many([{"text": text, "speaker": speaker, "session": "s1"} for speaker, text in TURNS], user="u")
    yield mem
    mem.close()


def test_the_answer_after_the_question_is_evidence(memory):
    evidence = memory.search_detailed(ASKED, user="u", k=5).evidence
    by_text = {e.text: e for e in evidence}
    assert STATEMENT in by_text and ANSWER in by_text
    statement_id = by_text[STATEMENT].trace_id
    assert by_text[ANSWER].why["reason"] == f"answer to the question after {statement_id}"
    assert by_text[ANSWER].provenance.speaker == "Ana"


def test_without_the_rule_the_answer_is_left_out(memory, monkeypatch):
    # The control: the answer's own words do not bring it into the top five.
    monkeypatch.setattr(closure, "ANSWER_AFTER_QUESTION_DECAY", 0.0)
    texts = [e.text for e in memory.search_detailed(ASKED, user="u", k=5).evidence]
    assert STATEMENT in texts and ANSWER not in texts
