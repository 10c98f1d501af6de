"""The query profile φ(q) = {subject, keywords, answer type, temporal cues, boundary}.

Explained in docs/design.md#query-profile-and-routing.

Built from the query text and the scope's known speakers only — never from an answer. Pure
regular-expression and lookup work: microseconds, no model.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence

from ..lexicon import MONTH_NAMES, QUESTION_LEAD_WORDS, QUESTION_WORDS, STOPWORDS, WEEKDAY_NAMES
from .profile_zh import build_profile_zh
from .profile_zh import question_parts as question_parts_zh
from .query_profile import QueryProfile, time_cues

__all__ = ["ANSWER_TYPES", "QueryProfile", "about_asker", "answer_labels", "answer_type", "build_profile",
           "hard_terms", "is_first_person", "named_things", "query_names", "question_parts",
           "time_cues"]

_WORD = re.compile(r"[\w][\w'’-]*", re.UNICODE)
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_YES_NO = re.compile(r"^(is|are|was|were|do|does|did|has|have|had|can|could|would|will|should)\b", re.I)
_AGGREGATE = re.compile(
    r"\b(all|both|every|each|how many|how often|times|list|things|ways|kinds|types|"
    r"which .* and|what .*s (?:has|have|did|does))\b",
    re.I)
# "Which cities has Jon visited?", "What are some changes ...": a plural category right after
# the question word asks for every member, wherever each was said.
_PLURAL_CATEGORY = re.compile(
    r"^(?:what|which)\s+(?:(?:are|were)\s+)?(?:(?:the|some|all|of)\s+)?"
    r"(?:(?!(?:is|was|are|were|do|does|did|has|have|had)\b)[a-z]+\s+)?"
    r"(?!(?:is|was|has|does|this|his|its|us|plus)\b)[a-z]{3,}(?:s)\s+(?:has|have|had|did|does|do|is|are|were|was)\b",
    re.I)
_TEMPORAL_WORDS = re.compile(
    r"\b(when|what (?:date|day|month|year|time)|how long|before|after|first|last|since|until|"
    r"ago|recently|earlier|later)\b", re.I)
_BOUNDARY = re.compile(r"\b(right after|right before|just after|just before|same (?:session|day|conversation)|"
                       r"in the (?:first|last|previous|next) (?:session|conversation|chat))\b", re.I)


_NAME = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|and|de|la|van|von|&)?\s*[A-Z0-9][\w'’.-]*)*")
_BRIDGE = re.compile(r"\b(?:the|a|an)\s+(?:\w+\s+){0,3}?(?:who|whom|whose|that|which|where)\b", re.I)


# Verbatim terms a turn should contain: quoted phrases, numbers, capitalized names.
_HARD_TERM = re.compile(r"\"([^\"]+)\"|'([^']{3,})'|\b(\d[\d,.:/-]*)\b|\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")


def hard_terms(query: str) -> list[str]:
    """The query's quoted phrases, numbers and capitalized names, lower-cased. A capitalized
    question word that opens a name ("Did Priya …", "When Tomas …") is not part of it."""
    terms: list[str] = []
    for m in _HARD_TERM.finditer(query):
        term = next(g for g in m.groups() if g)
        if m.group(4):
            words = term.split()
            while words and words[0].lower() in QUESTION_LEAD_WORDS:
                words = words[1:]
            term = " ".join(words)
        term = term.lower()
        if term and term not in QUESTION_WORDS and term not in terms:
            terms.append(term)
    return terms


def query_names(query: str, speakers: Iterable[str]) -> list[str]:
    """Capitalized names in the query that are not the conversation's speakers."""
    speaker_words = {w.lower() for s in speakers if s for w in s.split()}
    names = []
    for m in _NAME.finditer(query):
        words = m.group(0).split()
        while words and words[0].lower() in QUESTION_LEAD_WORDS:
            words = words[1:]
        name = " ".join(words).strip(" ?.,'’")
        if name.endswith("'s") or name.endswith("’s"):
            name = name[:-2]
        if name and not all(w.lower() in speaker_words for w in name.split()) and name not in names:
            names.append(name)
    return names


_CALENDAR_WORDS = frozenset(MONTH_NAMES) | frozenset(WEEKDAY_NAMES)


def is_first_person(name: str) -> bool:
    """Whether a capitalized "name" of a query is the pronoun I (I, I'm, I've, I'd, I'll)."""
    return re.fullmatch(r"i(?:['’](?:m|ve|d|ll))?", name.lower()) is not None


def named_things(names: Sequence[str]) -> list[str]:
    """The capitalized names of a query (``QueryProfile.names``) that name a thing: not the
    pronoun I (I'm, I've) and not a date ("October 6", "June 2022"; time cues judge those).
    The no-answer score looks for these in the evidence (routing drops only the pronoun)."""
    out = []
    for name in names:
        if is_first_person(name):
            continue
        first, *rest = name.lower().split()
        if first in _CALENDAR_WORDS and all(word.strip(".,").isdigit() for word in rest):
            continue  # "May 2022" is a date; "May Chen" is a name
        out.append(name)
    return out


ANSWER_TYPES = ("date", "person", "place", "number", "yes/no", "list", "reason", "description")


def answer_type(query: str) -> str:
    q = query.strip().lower()
    if re.match(r"^(when|what (date|day|month|year|time)|which (date|day|month|year))\b", q) or \
            re.search(r"\b(what|which) (date|day|month|year)\b", q):
        return "date"
    if re.match(r"^(how (many|much|long|old|far))\b", q):
        return "number"
    if re.match(r"^(who|whom|whose)\b", q):
        return "person"
    if re.match(r"^where\b", q) or re.search(r"\b(which|what) (city|country|state|place|town)\b", q):
        return "place"
    if re.match(r"^why\b", q):
        return "reason"
    if _YES_NO.match(q) or re.match(r"^would\b", q):
        return "yes/no"
    if _AGGREGATE.search(q):
        return "list"
    return "description"




# Category nouns whose members are named entities of a known kind: a list question about them
# ("Which towns has Omar lived in?", "What films did they watch?") is answered by turns that
# mention entities of that kind (spaCy labels; TITLE = a quoted title, see encoders/extractors).
_ANSWER_LABELS = (
    (re.compile(r"\b(?:cit(?:y|ies)|countr(?:y|ies)|states?|places?|towns?|locations?|destinations?)\b", re.I),
     frozenset({"GPE", "LOC", "FAC"})),
    (re.compile(r"\b(?:books?|novels?|movies?|films?|shows?|series|songs?|albums?|games?)\b", re.I),
     frozenset({"WORK_OF_ART", "TITLE"})),
)


def answer_labels(query: str) -> frozenset[str]:
    """Entity labels of the things the query asks for, from the category nouns it names."""
    out: frozenset[str] = frozenset()
    for pattern, labels in _ANSWER_LABELS:
        if pattern.search(query):
            out |= labels
    return out


_FIRST_PERSON = re.compile(r"\b(?:I|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)\b")
# "you" as the one who said or did something ("What did you recommend?", "your advice"); "you"
# as the one told or asked ("What did I tell you about…") is still the asker's own account.
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", re.I)
_YOU_AS_OBJECT = re.compile(r"\b(?:tell|told|telling|ask|asked|asking|show|showed|shown|send|sent|"
                            r"give|gave|given|to|with|for)\s+you\b", re.I)
# "Can you remind me…", "if you could tell me…": a request to the listener, not a report of
# what the listener said.
_REQUEST = re.compile(r"\b(?:can|could|would|will)\s+you\b|\bif\s+you\s+(?:can|could|would)\b", re.I)
# "… and I was wondering if you could remind me of the restaurant in Cihampelas Walk": what is
# asked is what follows the request; the asker's "I"/"me" around it say nothing of whose turns
# hold it.
_RECALL_REQUEST = re.compile(rf"(?:{_REQUEST.pattern})\s+(?:please\s+)?(?:remind|tell)\s+me\b"
                             r"(?:\s+(?:of|about)\b)?", re.I)


def about_asker(query: str) -> bool:
    """Whether the query asks about the asker ("How many projects have I led?", "my sister's
    name", "What did I tell you about my trip?") rather than about what the other party said or
    did ("What did you recommend?"). A quoted "I …" counts: it is the asker's own words. After
    a request to recall ("Can you remind me …", "if you could tell me …"), only what it asks
    for counts: "I'm going back to our chat — can you remind me how many mummies the party
    meets?" is not about the asker, "Can you remind me where I parked?" is."""
    asked = query
    for request in _RECALL_REQUEST.finditer(query):
        asked = query[request.end():]
    rest = _REQUEST.sub(" ", _YOU_AS_OBJECT.sub(" ", asked))
    return bool(_FIRST_PERSON.search(rest)) and not _SECOND_PERSON.search(rest)


def question_parts(query: str) -> list[str]:
    """The questions of a message that asks several, each on its own (Chinese: its question
    sentences, ``profile_zh.question_parts``); otherwise ``[query]``."""
    if _HAN.search(query):
        return question_parts_zh(query)
    return [query]


def build_profile(query: str, speakers: Iterable[str], asked_at: dt.date | None = None) -> QueryProfile:
    """φ(q) for ``query`` among a scope's ``speakers``; ``asked_at``: the date the question is
    asked (a search's ``now``, else its ``as_of``), against which "last week" and 昨天 are resolved."""
    if _HAN.search(query):  # Chinese: the same fields from tables (retrieval/profile_zh.py)
        return build_profile_zh(query, speakers, asked_at)
    words = [w.lower().replace("’", "'") for w in _WORD.findall(query)]
    words = [w[:-2] if w.endswith("'s") else w for w in words]
    known = {s.lower(): s for s in speakers if s}
    first_names = {s.split()[0].lower(): s for s in known.values()}
    mentioned: list[str] = []
    for w in words:
        name = known.get(w) or first_names.get(w)
        if name and name not in mentioned:
            mentioned.append(name)
    keywords = [w for w in words if w not in STOPWORDS and w.lower() not in known and w not in first_names]
    asks_time = bool(_TEMPORAL_WORDS.search(query))
    boundary = _BOUNDARY.search(query)
    return QueryProfile(
        text=query, words=tuple(words), subject=mentioned[0] if mentioned else None,
        mentioned_speakers=tuple(mentioned), answer_type=answer_type(query),
        temporal_cues=tuple(time_cues(query, asked_at)), asks_time=asks_time,
        aggregation=bool(_AGGREGATE.search(query) or _PLURAL_CATEGORY.search(query.strip())),
        boundary=boundary.group(0) if boundary else None,
        keywords=tuple(keywords), names=tuple(query_names(query, speakers)),
        bridge=bool(_BRIDGE.search(query)), answer_labels=answer_labels(query),
        about_asker=about_asker(query))
