"""What a search after a write re-derives is kept key by key, and equals deriving it afresh:
the graph's mask of still-mentioned entity names and the titles' nodes, strengths, written
forms and entity links (real encoders, SQLite)."""

from __future__ import annotations

import numpy as np

from internals import retriever_of
from zeromem import Memory
from zeromem.encoders.aliases import link_aliases

PARAGRAPHS = [
    ("Ed Wood (film)", "Ed Wood is a 1994 film directed by Tim Burton about Ed Wood."),
    ("Ed Wood", "Ed Wood was an American filmmaker who worked in Los Angeles."),
    ("Tim Burton", "Tim Burton is a director; Burton grew up in Burbank."),
    ("Scott Derrickson", "Scott Derrickson directed Sinister and lives in Los Angeles."),
    ("Burbank", "Burbank is a city in Los Angeles County, home to studios."),
]


def _fresh_titles(prep):
    prep._titles, prep._titles_by_key = None, {}
    fresh = (prep.titles, prep.title_strength, prep.title_written, prep.titled_turns, prep.title_words)
    prep._titles = None
    return fresh


def _links_from_scratch(graph):
    names = {k: c for k, c in graph.person_counts.items() if c > 0}
    return link_aliases(sorted(names), names)


def _same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return a == b


def test_titles_and_mentioned_names_kept_across_writes_equal_a_fresh_derivation(tmp_path):
    with Memory(tmp_path / "m.db", user="u") as mem:
        ids = mem.add_many([{"text": f"{title}: {text}", "session": f"p{i}", "source_id": title,
                             "metadata": {"title": title}} for i, (title, text) in enumerate(PARAGRAPHS)])
        mem.search("Who directed Ed Wood?")
        writes = [
            lambda: mem.add("Tim met Scott Derrickson in Burbank.", session="p9", metadata={"title": "Tim Burton"}),
            lambda: mem.add("Sinister (film) is a horror film.", session="p10", metadata={"title": "Sinister (film)"}),
            lambda: mem.update(ids[1], text="Ed Wood: Ed Wood directed films; Tim Burton made a film of his life."),
            lambda: mem.delete(ids[2]),
            lambda: mem.add("Sinister was shot in Los Angeles.", session="p11", metadata={"title": "Sinister"}),
            lambda: mem.delete(ids[3]),
        ]
        for write in writes:
            write()
            mem.search("Which director grew up in Burbank?")
            prep = retriever_of(mem).prepared(mem.scope)
            kept = (prep.titles, prep.title_strength, prep.title_written, prep.titled_turns, prep.title_words)
            assert all(_same(a, b) for a, b in zip(kept, _fresh_titles(prep)))
            names = prep.index.entity_names
            counts = prep.graph.raw_counts
            mask = prep.graph.mentioned_mask(names, prep.index.entity_row)
            assert mask.tolist() == [counts.get(n, 0) > 0 for n in names]
            assert prep.graph.alias == _links_from_scratch(prep.graph)
        assert "sinister" in prep.titles and "scott derrickson" not in prep.titles
        assert prep.graph.alias  # some name was linked ("burton" → "tim burton")
    with Memory(tmp_path / "m.db", user="u") as again:  # from the snapshot the close wrote
        again.search("Who is Ed?")
        again.add("Ed and Tim Burton met Scott Derrickson.", session="p12")
        again.search("Who is Ed?")
        graph = retriever_of(again).prepared(again.scope).graph
        assert graph.alias == _links_from_scratch(graph)
