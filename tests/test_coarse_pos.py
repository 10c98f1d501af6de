"""Coarse POS from fine tags: the maps read from ruler patterns, and agreement with spaCy's own
attribute_ruler on real text (the replacement must not change a single tag)."""

import pytest

from zeromem.encoders.coarse_pos import COMPONENT, CoarsePosTagger, pos_maps


def test_pos_maps_reads_tag_and_word_patterns_later_ones_win():
    patterns = [
        {"patterns": [[{"TAG": "NN"}]], "attrs": {"POS": "NOUN", "MORPH": "Number=Sing"}},
        {"patterns": [[{"TAG": "VBD"}]], "attrs": {"POS": "VERB"}},
        {"patterns": [[{"TAG": "NN", "LOWER": "nothing"}]], "attrs": {"POS": "PRON"}},
        {"patterns": [[{"TAG": "IN", "LOWER": {"IN": ["because", "whether"]}}]], "attrs": {"POS": "SCONJ"}},
        {"patterns": [[{"TAG": "VBD"}]], "attrs": {"POS": "AUX"}},  # later wins, as in the ruler
        {"patterns": [[{"TAG": "_SP", "IS_SPACE": True}]], "attrs": {"POS": "SPACE"}},
    ]
    by_tag, by_word = pos_maps(patterns)
    assert by_tag == {"NN": "NOUN", "VBD": "AUX", "_SP": "SPACE"}
    assert by_word == {("NN", "nothing"): "PRON", ("IN", "because"): "SCONJ",
                       ("IN", "whether"): "SCONJ"}


@pytest.mark.parametrize("pattern", [
    [{"TAG": "IN", "DEP": "mark"}],                      # needs the parser
    [{"LOWER": "do", "DEP": {"IN": ["ROOT"]}}],          # no tag
    [{"TAG": {"IN": ["DT", "WDT"]}, "DEP": {"NOT_IN": ["det"]}}],
    [{"LOWER": "going"}, {"LOWER": "to"}],               # two tokens
    [{"TAG": "NN", "LOWER": {"NOT_IN": ["x"]}}],         # not a plain word list
])
def test_pos_maps_skips_what_a_lookup_cannot_decide(pattern):
    assert pos_maps([{"patterns": [pattern], "attrs": {"POS": "X"}}]) == ({}, {})


def test_patterns_without_pos_are_ignored():
    assert pos_maps([{"patterns": [[{"TAG": "NN"}]], "attrs": {"LEMMA": "x"}}]) == ({}, {})


def test_extractor_pipeline_has_no_matcher_and_tags_like_the_ruler(extractor):
    import spacy

    assert "attribute_ruler" not in extractor.nlp.pipe_names
    assert COMPONENT in extractor.nlp.pipe_names
    reference = spacy.load(extractor.pipeline, exclude=["parser", "lemmatizer", "senter"])
    assert "attribute_ruler" in reference.pipe_names
    texts = [
        "Nothing beats a quiet morning, because everyone else is still asleep.",
        "I told her that something was off with the car we bought in May.",
        "Whether or not   they come, we'll cook   dinner at 7 pm.\n\nAnybody hungry?",
        "She's been painting since 2019; its colours, hers and mine, are all over the house.",
        "",
    ]
    ours = list(extractor.nlp.pipe(texts))
    theirs = list(reference.pipe(texts))
    for a, b in zip(ours, theirs):
        assert [t.pos_ for t in a] == [t.pos_ for t in b]
        assert [(e.start_char, e.end_char, e.label_) for e in a.ents] == \
            [(e.start_char, e.end_char, e.label_) for e in b.ents]
    assert {"PRON", "SCONJ", "SPACE", "NOUN", "VERB"} <= {t.pos_ for d in ours for t in d}


def test_tagger_leaves_unknown_tags_alone():
    class Token:
        def __init__(self, tag, lower, space=False):
            self.tag_, self.lower_, self.is_space, self.pos_ = tag, lower, space, ""

    doc = [Token("NN", "cat"), Token("NN", "nothing"), Token("ZZ", "?"), Token("_SP", " ", True)]
    CoarsePosTagger({"NN": "NOUN"}, {("NN", "nothing"): "PRON"})(doc)
    assert [t.pos_ for t in doc] == ["NOUN", "PRON", "", "SPACE"]
