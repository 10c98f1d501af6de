"""Cards: conservative subject–predicate–object projections of traces (docs/design.md#cards).

A card is never the memory: it is a short structured reading of one sentence of one trace,
linked to that trace and expanded back to its verbatim text before anything is rendered
(``Card.source_text``). Cards are recomputed from the traces whenever asked (nothing of them
is stored), so they always match the current rules and the current text.

From spaCy's dependency parse, per sentence: the subject (``nsubj``/``nsubjpass`` of the root;
"I"/"we" become the speaker), the predicate (the root's lemma, with "not" and a particle or
preposition: ``live_in``, ``not_eat``), and the object (direct object, attribute, adjectival
complement, or the object of the root's preposition), as written. The kind comes from the
dialogue signals and the parse: ``constraint``, ``preference``, ``state`` (current state),
``event`` (past tense), ``relation`` (the object names a person), else ``fact``.

Conservative on purpose — no card for: questions, acknowledgements, hypotheticals ("if",
"would", "maybe"), subjects that are unresolved pronouns (he, she, it, they, this…), or a
sentence without subject, predicate and object.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ModelUnavailable
from ..types import Trace
from .rules import dialogue_signals

_SUBJECTS = ("nsubj", "nsubjpass")
_OBJECTS = ("dobj", "attr", "acomp", "oprd", "xcomp")
_FIRST_PERSON = {"i", "we", "me", "us"}
_UNRESOLVED = {"he", "she", "it", "they", "this", "that", "these", "those", "you", "one", "who",
               "what", "which", "there", "everyone", "someone", "something", "anything"}
_HEDGES = {"if", "would", "could", "might", "maybe", "perhaps", "probably", "wish", "hope"}
_PREFERENCE_LEMMAS = {"like", "love", "prefer", "enjoy", "adore", "hate", "dislike", "detest", "fancy"}
_MAX_OBJECT_WORDS = 8
CARD_KINDS = ("constraint", "preference", "state", "event", "relation", "fact")


@dataclass(frozen=True)
class Card:
    """One structured reading of one sentence of a trace, with its provenance."""

    kind: str  # constraint, preference, state, event, relation, fact
    subject: str
    predicate: str
    object: str
    trace_id: str
    sentence: str  # the sentence it was read from, verbatim
    source_text: str  # the whole trace, verbatim: what a prompt shows in the card's place
    session: str | None
    speaker: str | None
    time: str | None


class CardProjector:
    """Projects traces to cards with a spaCy pipeline that has a dependency parser."""

    def __init__(self, pipeline: str) -> None:
        self.pipeline = pipeline
        self._nlp: Any = None
        self._lock = threading.Lock()

    def _parser(self) -> Any:
        if self._nlp is None:
            import spacy

            try:
                nlp = spacy.load(self.pipeline)
            except OSError as err:
                raise ModelUnavailable(f"cards need the spaCy pipeline {self.pipeline!r} with a parser: "
                                       f"`pip install {self.pipeline.replace('_', '-')}`") from err
            if "parser" not in nlp.pipe_names:
                raise ModelUnavailable(f"spaCy pipeline {self.pipeline!r} has no dependency parser")
            self._nlp = nlp
        return self._nlp

    def project(self, traces: Sequence[Trace]) -> list[list[Card]]:
        """The cards of each trace (an empty list for most small talk)."""
        with self._lock:
            nlp = self._parser()
            docs = list(nlp.pipe([t.text for t in traces], batch_size=64))
        return [_cards_of(trace, doc) for trace, doc in zip(traces, docs)]


def _cards_of(trace: Trace, doc: Any) -> list[Card]:
    signals = dialogue_signals(trace.text)
    if "ack_like" in signals:
        return []
    cards = []
    for sent in doc.sents:
        card = _card_of_sentence(trace, sent, signals)
        if card is not None:
            cards.append(card)
    return cards


def _card_of_sentence(trace: Trace, sent: Any, signals: frozenset[str]) -> Card | None:
    text = sent.text.strip()
    if not text or text.endswith("?") or any(t.lower_ in _HEDGES for t in sent):
        return None
    root = sent.root
    if root.pos_ not in ("VERB", "AUX"):
        return None
    subject_token = next((c for c in root.children if c.dep_ in _SUBJECTS), None)
    if subject_token is None:
        return None
    subject = _subject(subject_token, trace.speaker)
    if subject is None:
        return None
    predicate, obj = _predicate_and_object(root)
    if not obj:
        return None
    kind = _kind(root, obj, signals, predicate)
    return Card(kind, subject, predicate, obj, trace.id, text, trace.text, trace.session, trace.speaker,
                trace.event_time or trace.session_time)


def _subject(token: Any, speaker: str | None) -> str | None:
    word = token.lower_
    if word in _FIRST_PERSON:
        return speaker or None
    if word in _UNRESOLVED or token.pos_ == "PRON":
        return None
    return _phrase(token)


def _predicate_and_object(root: Any) -> tuple[str, str]:
    negated = any(c.dep_ == "neg" for c in root.children)
    lemma = root.lemma_.lower() if root.lemma_ else root.lower_
    parts = (["not"] if negated else []) + [lemma]
    particle = next((c for c in root.children if c.dep_ == "prt"), None)
    if particle is not None:
        parts.append(particle.lower_)
    obj_token = next((c for c in root.children if c.dep_ in _OBJECTS), None)
    if obj_token is None:
        prep = next((c for c in root.children if c.dep_ == "prep"), None)
        pobj = next((c for c in prep.children if c.dep_ == "pobj"), None) if prep is not None else None
        if prep is None or pobj is None:
            return "_".join(parts), ""
        parts.append(prep.lower_)
        obj_token = pobj
    if obj_token.dep_ == "xcomp":  # "I love to hike" → love / hike
        verb_obj = next((c for c in obj_token.children if c.dep_ in ("dobj", "attr")), None)
        obj = obj_token.lemma_.lower() + (f" {_phrase(verb_obj)}" if verb_obj is not None else "")
    else:
        obj = _phrase(obj_token)
    return "_".join(parts), obj


def _phrase(token: Any) -> str:
    """The token's subtree as written, cut at a relative clause and kept short."""
    words = [t for t in token.subtree if t.dep_ not in ("relcl", "punct", "cc") and not t.is_space]
    words = [t for t in words if t.i >= token.left_edge.i]
    text = " ".join(t.text for t in words[:_MAX_OBJECT_WORDS])
    return text.strip()


def _kind(root: Any, obj: str, signals: frozenset[str], predicate: str) -> str:
    if "constraint" in signals:
        return "constraint"
    if "preference" in signals or predicate.split("_")[-1] in _PREFERENCE_LEMMAS:
        return "preference"
    if "current_state" in signals:
        return "state"
    if root.tag_ == "VBD":
        return "event"
    if any(t.ent_type_ == "PERSON" for t in root.doc if t.text in obj.split()):
        return "relation"
    return "fact"
