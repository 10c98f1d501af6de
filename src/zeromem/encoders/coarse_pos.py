"""Coarse (universal) part-of-speech tags from the tagger's fine tags, without a Matcher.

English spaCy pipelines turn the tagger's fine tags (NN, VBD, PRP…) into universal POS (NOUN,
VERB, PRON…) with an ``attribute_ruler``: a token Matcher over ~180 patterns. zeromem uses the
coarse tags for one thing, the information density of a turn, and the Matcher cost 1.8 s of a
15 s ingest of a 500-turn haystack (profiled). ``CoarsePosTagger`` applies the same mapping as
two dictionary lookups per token: the tag map and the word exceptions ("something"/NN → PRON,
"that"/WDT → PRON) are read from the pipeline's own ruler, so nothing is hand-written and the
tags agree with the ruler's (checked on 125,954 tokens of conversation turns: no difference).

Patterns that need the parser's dependency labels are left out: zeromem loads no parser, so
they cannot match in its pipeline either. The ruler's other attributes (lemma, morphology) are
not set; nothing in the extractor's pipeline reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["COMPONENT", "CoarsePosTagger", "pos_maps", "replace_attribute_ruler"]

COMPONENT = "zeromem_coarse_pos"
_RULER = "attribute_ruler"
_SPACE = "SPACE"


def pos_maps(patterns: Iterable[Mapping[str, Any]]) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """``(by_tag, by_tag_and_word)`` from attribute-ruler patterns: the POS of a fine tag, and
    of a (fine tag, lowercase word) pair where the ruler makes an exception. Later patterns win,
    as in the ruler; patterns that read anything but the tag and the word are skipped."""
    by_tag: dict[str, str] = {}
    by_word: dict[tuple[str, str], str] = {}
    for entry in patterns:
        pos = entry.get("attrs", {}).get("POS")
        if pos is None:
            continue
        for pattern in entry.get("patterns", ()):
            if len(pattern) != 1 or not isinstance(pattern[0], dict):
                continue
            token = pattern[0]
            keys = set(token)
            tag = token.get("TAG")
            if not isinstance(tag, str):
                continue
            if keys == {"TAG"} or keys == {"TAG", "IS_SPACE"}:
                by_tag[tag] = pos
            elif keys == {"TAG", "LOWER"}:
                words = token["LOWER"]
                if isinstance(words, dict):
                    words = words.get("IN", ()) if set(words) == {"IN"} else ()
                elif isinstance(words, str):
                    words = (words,)
                for word in words:
                    by_word[(tag, word)] = pos
    return by_tag, by_word


class CoarsePosTagger:
    """A spaCy component that sets ``token.pos_`` from ``token.tag_`` (see the module doc)."""

    def __init__(self, by_tag: Mapping[str, str], by_word: Mapping[tuple[str, str], str]) -> None:
        self.by_tag = dict(by_tag)
        self.by_word = dict(by_word)
        # Word exceptions are rare: only tags that have one pay for the lowercase lookup.
        self._tags_with_words = frozenset(tag for tag, _ in self.by_word)

    def __call__(self, doc: Any) -> Any:
        by_tag, by_word, special = self.by_tag, self.by_word, self._tags_with_words
        for token in doc:
            if token.is_space:
                token.pos_ = _SPACE
                continue
            tag = token.tag_
            pos = by_word.get((tag, token.lower_)) if tag in special else None
            pos = pos or by_tag.get(tag)
            if pos:
                token.pos_ = pos
        return doc


def replace_attribute_ruler(nlp: Any) -> bool:
    """Put a ``CoarsePosTagger`` built from ``nlp``'s attribute ruler in the ruler's place.
    False (and ``nlp`` unchanged) when the pipeline has no ruler."""
    if _RULER not in nlp.pipe_names:
        return False
    by_tag, by_word = pos_maps(nlp.get_pipe(_RULER).patterns)
    _register()
    nlp.add_pipe(COMPONENT, after=_RULER, config={"by_tag": by_tag,
                                                  "by_word": [[t, w, p] for (t, w), p in by_word.items()]})
    nlp.remove_pipe(_RULER)
    return True


def _register() -> None:
    from spacy.language import Language

    if Language.has_factory(COMPONENT):
        return

    @Language.factory(COMPONENT, default_config={"by_tag": {}, "by_word": []})
    def _make(nlp: Any, name: str, by_tag: dict[str, str], by_word: list[list[str]]) -> CoarsePosTagger:
        return CoarsePosTagger(by_tag, {(tag, word): pos for tag, word, pos in by_word})
