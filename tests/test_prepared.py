"""Per-scope precomputation of the engine (retrieval/prepared.py)."""

from zeromem.retrieval.prepared import DISAMBIGUATED_TITLE, _title_strength
from zeromem.views.graph import normalize_title


def test_a_plain_title_outranks_its_disambiguated_namesakes():
    names = ["Ed Wood", "Ed Wood (film)", "Kiss and Tell (1945 film)", "Kiss and Tell (play)"]
    titles = {i: normalize_title(name) for i, name in enumerate(names)}
    assert _title_strength(names, titles) == {0: 1.0, 1: DISAMBIGUATED_TITLE, 2: 1.0, 3: 1.0}
