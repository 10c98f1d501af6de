"""Per-scope precomputation of the engine (retrieval/prepared.py)."""

from zeromem.retrieval.prepared import DISAMBIGUATED_TITLE, title_strength


def test_a_plain_title_outranks_its_disambiguated_namesakes():
    assert title_strength(["Ed Wood", "Ed Wood (film)"]) == [1.0, DISAMBIGUATED_TITLE]
    # No plain namesake: each qualified title is named as fully as any other.
    assert title_strength(["Kiss and Tell (1945 film)", "Kiss and Tell (play)"]) == [1.0, 1.0]
    assert title_strength(["Harbor notes", "Harbor notes"]) == [1.0, 1.0]
