"""Titled traces (``metadata["title"]``, ``Trace.title``): notes, pages, tickets.

A query that names a title finds the traces carrying it, a title links its trace to the entity
of that name, and nothing else — a session's name in particular — acts as a title.
"""

from __future__ import annotations

import pytest

from zeromem import Memory
from zeromem.encoders.entities import normalize_entity, normalize_title
from zeromem.errors import InvalidInput

NOTES = [
    ("Kickoff moved to Tuesday and the budget was approved.", "Project Kestrel"),
    ("Planted tomatoes and basil along the south fence.", "Garden log"),
    ("The quarterly review went well; two hires are planned.", None),
    ("Booked the ferry for the twelfth, cabin four.", "Island trip"),
]


@pytest.fixture
def notes(tmp_path):
    with Memory(tmp_path / "m.db") as memory:
        ids = [memory.add(text, session=f"note {i}", metadata={"title": title} if title else None)
               for i, (text, title) in enumerate(NOTES)]
        yield memory, ids


@pytest.mark.parametrize("title, mention", [
    ("The Beatles", "the Beatles"), ("Beatles", "Beatles'"), ("Ed Wood (film)", "Ed Wood"),
    ("O'Neil & Sons", "ONeil & sons"), ("U.S. Route 66", "US route 66"),
])
def test_a_title_normalizes_to_the_key_of_the_entity_it_names(title, mention):
    assert normalize_title(title) == normalize_entity(mention)


def test_a_query_naming_a_title_finds_the_titled_trace_whose_text_never_says_it(notes):
    memory, ids = notes
    top = memory.search("What happened with Project Kestrel?", k=3)
    assert top[0].trace_id == ids[0]
    assert top[0].why["h_title"] == 1.0
    assert memory.get(ids[0]).title == "Project Kestrel"


def test_a_session_name_is_not_a_title(tmp_path):
    with Memory(tmp_path / "m.db") as memory:
        memory.add("Kickoff moved to Tuesday.", session="Project Kestrel")
        memory.add("Planted tomatoes.", session="Garden log")
        evidence = memory.search("What happened with Project Kestrel?", k=2)
        assert all(e.why["h_title"] == 0.0 for e in evidence)


def test_retitling_and_deleting_change_what_a_title_finds(notes):
    memory, ids = notes
    memory.update(ids[0], metadata={"title": "Budget 2026"})
    by_id = {e.trace_id: e for e in memory.search("What happened with Project Kestrel?", k=4)}
    assert all(e.why["h_title"] == 0.0 for e in by_id.values())
    assert memory.search("Budget 2026", k=1)[0].trace_id == ids[0]
    memory.delete(ids[3])
    assert ids[3] not in {e.trace_id for e in memory.search("Island trip", k=4)}


def test_titles_survive_a_persisted_index(tmp_path):
    from zeromem.config import Config

    config = Config()
    config.retrieval.snapshot_min_turns = 0
    path = tmp_path / "m.db"
    with Memory(path, config=config) as memory:
        for i, (text, title) in enumerate(NOTES):
            memory.add(text, session=f"note {i}", metadata={"title": title} if title else None)
        first = [(e.trace_id, e.score) for e in memory.search("Garden log", k=3)]
    with Memory(path, config=config) as memory:
        assert [(e.trace_id, e.score) for e in memory.search("Garden log", k=3)] == first
        assert first[0][0] == memory.list(limit=10)[1].id


def _page_ppr(path, titled: bool) -> float:
    with Memory(path) as memory:
        page = memory.add("She studied geology in Oslo and later led the survey.", session="p1",
                          metadata={"title": "Ingrid Halvorsen"} if titled else None)
        memory.add("The survey team was led by Ingrid Halvorsen in 1998.", session="p2")
        # (unrelated turns: scores are normalized against the median turn)
        for i, filler in enumerate(["Rainfall in the valley doubled that decade.",
                                    "The bridge reopened in spring.", "Prices of wool rose sharply.",
                                    "A new school opened near the harbour."]):
            memory.add(filler, session=f"p{i + 3}")
        evidence = {e.trace_id: e for e in memory.search("What did Ingrid Halvorsen study?", k=3)}
        assert page in evidence
        return evidence[page].why["ppr"]


def test_a_title_links_its_trace_to_the_entity_of_that_name(tmp_path):
    """A page about a person that only says "she" still joins the graph at that person: the
    graph view gives it more than its own text would."""
    assert _page_ppr(tmp_path / "a.db", titled=True) > _page_ppr(tmp_path / "b.db", titled=False)


@pytest.mark.parametrize("title, message", [
    (42, "must be a string"), ("  ", "is empty"), ("x" * 301, "over the limit of 300"),
    ("two\nlines", "one line"), ("bell\x07", "one line"),
])
def test_a_bad_title_is_refused_and_stores_nothing(tmp_path, title, message):
    with Memory(tmp_path / "m.db") as memory:
        with pytest.raises(InvalidInput, match=message):
            memory.add("text", metadata={"title": title})
        assert memory.stats().traces == 0
        tid = memory.add("text", metadata={"title": "Fine"})
        with pytest.raises(InvalidInput, match=message):
            memory.update(tid, metadata={"title": title})
        assert memory.get(tid).title == "Fine"


@pytest.mark.parametrize("query, strength", [
    ("What did Science Fantasy publish in 1950?", 1.0),  # named as written
    ("Which science fantasy series has companion books by Katherine Applegate?", 0.5),  # common words
    ("which science fantasy series has companion books", 1.0),  # no capitals at all: can't tell
])
def test_a_title_written_in_lower_case_by_a_writer_who_capitalizes_names_counts_half(tmp_path, query, strength):
    with Memory(tmp_path / "m.db") as memory:
        page = memory.add("A British magazine that ran from 1950 to 1967.", session="p1",
                          metadata={"title": "Science Fantasy (magazine)"})
        memory.add("Companion books narrate the stories of the enslaved worlds.", session="p2")
        evidence = {e.trace_id: e for e in memory.search(query, k=2)}
        assert evidence[page].why["h_title"] == strength


@pytest.mark.parametrize("query, named", [
    ("Which company launches rockets from Harbor 9 Field Station?", {"Harbor 9 Field Station"}),
    ("Which field station is near the harbor?", {"Field Station"}),  # named on its own
    ("Is Field Station older than Harbor 9 Field Station?", {"Harbor 9 Field Station", "Field Station"}),
    ("Did Field Station (film) open in 9 cinemas?", {"Field Station", "9"}),
])
def test_a_title_inside_a_longer_title_the_query_names_is_not_named(tmp_path, query, named):
    # "Harbor 9 Field Station" names that page, not the pages "Field Station" and "9" as well;
    # a shorter title the query also names on its own still counts.
    pages = {"Harbor 9 Field Station": "A private airstrip in the desert used for rocket tests.",
             "Field Station (film)": "A 1970 drama about a research outpost.",
             "9 (album)": "The ninth record of a folk band."}
    with Memory(tmp_path / "m.db") as memory:
        ids = {memory.add(text, session=title, metadata={"title": title}): title.split(" (")[0]
               for title, text in pages.items()}
        memory.add("Nothing titled here.", session="other")
        found = {ids[e.trace_id] for e in memory.search(query, k=4)
                 if e.trace_id in ids and e.why["h_title"] > 0}
        assert found == named


def test_a_date_or_number_in_a_page_does_not_lead_to_the_page_titled_like_it(tmp_path):
    pages = {"Harbor Field": "Harbor Field opened in September 1998 with 2 runways; Orbital Works runs it.",
             "September (film)": "A quiet drama about a family reunion.",
             "2 (album)": "The second record of a folk band from the coast.",
             "Orbital Works": "A rocket maker founded by a former test pilot."}
    with Memory(tmp_path / "m.db") as memory:
        ids = {memory.add(text, session=title, metadata={"title": title}): title for title, text in pages.items()}
        memory.add("The bakery on the corner sells rye bread.", session="other")
        reasons = {ids[e.trace_id]: e.why["reason"] for e in memory.search(
            "Which rocket maker runs Harbor Field?", k=5) if e.trace_id in ids}
        assert reasons["Harbor Field"] == "primary"
        assert reasons["Orbital Works"].startswith("named in")  # the name leads to its page
        assert not any(reasons.get(t, "").startswith("named in") for t in ("September (film)", "2 (album)"))
