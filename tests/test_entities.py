"""Entity mentions: normalization, alias linking, each deterministic extractor, real spaCy NER."""

import pytest

from zeromem.encoders import extractors
from zeromem.encoders.entities import (
    Mention,
    canonical_counts,
    link_aliases,
    mention_counts,
    normalize_entity,
    resolve_overlaps,
)


def spans(found, text):
    return sorted((text[s:e], label) for s, e, label in found)


# -- normalization ----------------------------------------------------------------------------

@pytest.mark.parametrize("surface, key", [
    ("Caroline", "caroline"),
    ("CAROLINE  Smith", "caroline smith"),
    ("Caroline's", "caroline"),
    ("Caroline\u2019s", "caroline"),
    ("the parents' house", "parents house"),
    ("The Museum of Modern Art", "museum of modern art"),
    ("Theodore", "theodore"),  # only a whole leading word "the" goes
    ("U.S.", "us"),
    ("LGBTQ+ support-group!", "lgbtq support group"),
    ("$2,000", "$2000"),
    ("3.5 km", "3.5 km"),
    ("20%", "20%"),
    ("\u201cCharlotte's Web\u201d", "charlotte web"),
    ("ＡＢＣ", "abc"),
    ("  \t ", ""),
])
def test_normalize_entity_table(surface, key):
    assert normalize_entity(surface) == key


# -- alias linking ----------------------------------------------------------------------------

def test_a_first_name_links_to_the_unique_full_name():
    assert link_aliases(["caroline", "caroline smith", "melanie"]) == {"caroline": "caroline smith"}


def test_a_first_name_shared_by_two_full_names_is_ambiguous():
    assert link_aliases(["caroline", "caroline smith", "caroline jones"]) == {}


def test_a_nickname_links_to_the_unique_longer_name_and_on_to_its_full_name():
    assert link_aliases(["mel", "melanie"]) == {"mel": "melanie"}
    assert link_aliases(["mel", "melanie", "melanie brown"]) == \
        {"mel": "melanie brown", "melanie": "melanie brown"}


def test_a_nickname_shorter_than_three_letters_is_not_linked():
    assert link_aliases(["jo", "joanna"]) == {}


def test_a_nickname_with_two_candidates_is_ambiguous_unless_counts_show_a_dominant_one():
    keys = ["mel", "melanie", "melissa"]
    assert link_aliases(keys) == {}
    assert link_aliases(keys, {"mel": 9, "melanie": 10, "melissa": 10}) == {}
    assert link_aliases(keys, {"mel": 9, "melanie": 56, "melissa": 1}) == {"mel": "melanie"}


def test_entities_no_longer_mentioned_do_not_link():
    assert link_aliases(["mel", "melanie"], {"mel": 3, "melanie": 0}) == {}


def test_calendar_words_and_numbers_are_never_aliases():
    assert link_aliases(["may", "may 2023", "2022", "2022 summer"]) == {}


def test_alias_linking_ignores_input_order():
    keys = ["mel", "caroline smith", "melanie", "caroline"]
    assert link_aliases(keys) == link_aliases(reversed(keys))


def test_canonical_counts_fold_aliases_into_their_target():
    counts = {"mel": 2, "melanie": 3, "oscar": 1}
    assert canonical_counts(counts, {"mel": "melanie"}) == {"melanie": 5, "oscar": 1}


# -- deterministic extractors -----------------------------------------------------------------

def test_dates_absolute_relative_and_times():
    text = ("On 7 May 2023 and May 2023, in May, in 2022 and the 1990s; last Saturday, "
            "two weeks ago, yesterday at 3 pm or 10:30. May I ask?")
    found = spans(extractors.dates(text), text)
    for expected in [("7 May 2023", "DATE"), ("May 2023", "DATE"), ("2022", "DATE"),
                     ("1990s", "DATE"), ("last Saturday", "DATE"), ("two weeks ago", "DATE"),
                     ("yesterday", "DATE"), ("3 pm", "TIME"), ("10:30", "TIME")]:
        assert expected in found
    assert sum(1 for surface, _ in found if surface == "May") == 1  # "in May", not "May I"


def test_numbers_money_percent_and_quantities():
    text = "It cost $300, then 2,000 bucks, 20% more, 5 miles with three kids and a book."
    found = spans(extractors.numbers(text), text)
    for expected in [("$300", "MONEY"), ("2,000 bucks", "MONEY"), ("20%", "PERCENT"),
                     ("5 miles", "QUANTITY"), ("three kids", "QUANTITY")]:
        assert expected in found
    assert not any(surface == "a book" for surface, _ in found)


def test_quoted_titles_in_straight_curly_and_single_quotes():
    text = 'I loved "Charlotte\'s Web", \u201cThe Little Prince\u201d and \'Nothing Is Impossible\'.'
    assert spans(extractors.titles(text), text) == [
        ("Charlotte's Web", "TITLE"), ("Nothing Is Impossible", "TITLE"),
        ("The Little Prince", "TITLE")]


def test_an_apostrophe_is_not_a_single_quote():
    text = "Caroline's dog isn't Melanie's."
    assert extractors.titles(text) == []


def test_capitalized_multi_word_names_without_greetings_or_sentence_breaks():
    text = ("Hey Caroline Smith! We visited the Museum of Modern Art with Caroline and Melanie. "
            "Thanks Mel. Dr. Jones met J. K. Rowling. On Monday Tuesday.")
    assert spans(extractors.names(text), text) == [
        ("Caroline Smith", "NAME"), ("Dr. Jones", "NAME"), ("J. K. Rowling", "NAME"),
        ("Museum of Modern Art", "NAME")]


def test_noun_phrases_from_tags_skip_generic_adjectives_and_time_words():
    words = [("I", "PRP"), ("joined", "VBD"), ("a", "DT"), ("great", "JJ"), ("pottery", "NN"),
             ("class", "NN"), ("yesterday", "NN"), ("and", "CC"), ("an", "DT"), ("LGBTQ", "NNP"),
             ("support", "NN"), ("group", "NN"), ("for", "IN"), ("kids", "NNS")]
    tokens, pos = [], 0
    for word, tag in words:
        tokens.append((pos, pos + len(word), word, tag))
        pos += len(word) + 1
    text = " ".join(w for w, _ in words)
    assert spans(extractors.noun_phrases(tokens), text) == [
        ("LGBTQ support group", "NOUN_PHRASE"), ("pottery class", "NOUN_PHRASE")]


def test_overlaps_prefer_source_priority_then_length():
    text = "On 7 May 2023 Caroline Smith came."
    mentions = resolve_overlaps(text, [(3, 13, "DATE", 3), (3, 4, "CARDINAL", 4),
                                       (14, 28, "NAME", 2), (14, 22, "PERSON", 0)])
    assert [(m.surface, m.label) for m in mentions] == [("7 May 2023", "DATE"),
                                                       ("Caroline", "PERSON")]


def test_a_quoted_title_wins_over_an_ner_fragment_inside_it():
    text = 'I read "Charlotte\'s Web".'
    mentions = resolve_overlaps(text, [(8, 17, "GPE", 0), (8, 23, "TITLE", 1)])
    assert [(m.entity, m.label) for m in mentions] == [("charlotte web", "TITLE")]


def test_mention_counts_count_each_key():
    mentions = [Mention("mel", "Mel", "PERSON", 0, 3), Mention("mel", "mel", "PERSON", 9, 12),
                Mention("oscar", "Oscar", "PERSON", 20, 25)]
    assert mention_counts(mentions) == {"mel": 2, "oscar": 1}


# -- the real pipeline ------------------------------------------------------------------------

def test_real_spacy_ner_and_extractors_on_a_sentence(extractor):
    text = "Hey Mel! Caroline Smith went to the LGBTQ support group on 7 May 2023."
    [mentions] = extractor.extract([text])
    found = {(m.entity, m.label) for m in mentions}
    assert ("caroline smith", "PERSON") in found
    assert ("7 may 2023", "DATE") in found
    assert ("lgbtq support group", "NOUN_PHRASE") in found
    for m in mentions:
        assert text[m.start:m.end] == m.surface and m.entity == normalize_entity(m.surface)
    assert [m.start for m in mentions] == sorted(m.start for m in mentions)


def test_the_pipeline_runs_only_the_components_ner_and_tagging_need(extractor):
    assert "parser" not in extractor.components and "lemmatizer" not in extractor.components
    assert "ner" in extractor.components


def test_extraction_is_deterministic_and_batched_like_single_calls(extractor):
    texts = ["Melanie signed up for a pottery class yesterday.", "", "I paid $300 in 2022."]
    batch = extractor.extract(texts)
    assert batch == extractor.extract(texts)
    assert batch == [extractor.extract([t])[0] for t in texts]
    assert batch[1] == []


def test_a_missing_spacy_pipeline_names_the_pip_command():
    from zeromem.encoders.entities import EntityExtractor
    from zeromem.errors import ModelUnavailable

    with pytest.raises(ModelUnavailable, match="pip install no-such-pipeline"):
        EntityExtractor("no_such_pipeline")


_PARSED = [
    "Caroline went to the LGBTQ support group in Boston last Tuesday.",
    "Melanie painted a sunrise over Lake Tahoe in 2022 and sold it for $300.",
    "Jon lost his job at Fidelity Bank, so he opened a dance studio downtown.",
    "Gina: I launched my online clothing store on June 3rd, 2023!",
    "The Museum of Modern Art in New York has a Van Gogh exhibit until March.",
    "We flew from Lisbon to Tokyo with Air France; the trip took 14 hours.",
    "Dr. Alvarez said the recital is on May 3rd at St. Mary's Church.",
    "I adopted a grey cat named Biscuit and a puppy called Max.",
    "Apple released the iPhone 15 in September, about 3 weeks after Google's event.",
    "thanks!! see u at 5pm near the Golden Gate Bridge",
]


def test_spacy_layers_run_on_numpy_blas_and_find_what_blis_finds(extractor):
    """``spacy_gemm.gemm_through_numpy``: every blis-backed layer of the pipeline multiplies
    through numpy's BLAS, and the tags and entities are those blis gives."""
    from thinc.api import NumpyOps

    nlp = extractor.nlp
    nodes = [node for _, component in nlp.pipeline if getattr(component, "model", None) is not None
             for node in component.model.walk()]
    numpy_ops = [node for node in nodes if isinstance(node.ops, NumpyOps)]
    assert numpy_ops and not any(node.ops.use_blis for node in numpy_ops)

    def parse():
        return [([(e.start_char, e.end_char, e.label_) for e in doc.ents], [t.tag_ for t in doc])
                for doc in nlp.pipe(_PARSED)]

    ours = parse()
    saved = [node.ops for node in numpy_ops]
    try:
        blis = NumpyOps()
        for node in numpy_ops:
            node.ops = blis
        theirs = parse()
    finally:
        for node, ops in zip(numpy_ops, saved):
            node.ops = ops
    assert ours == theirs
    assert sum(len(ents) for ents, _ in ours) >= 20  # a parse with entities to compare
