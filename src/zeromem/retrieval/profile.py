"""The query profile φ(q) = {subject, keywords, answer type, temporal cues, boundary} (SPEC §2.4).

Built from the query text and the scope's known speakers only — never from an answer. Pure
regular-expression and lookup work: microseconds, no model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..encoders.timexpr import TimeSpan, parse_absolute
from ..lexicon import QUESTION_LEAD_WORDS, STOPWORDS

_WORD = re.compile(r"[\w][\w'’-]*", re.UNICODE)
_YES_NO = re.compile(r"^(is|are|was|were|do|does|did|has|have|had|can|could|would|will|should)\b", re.I)
_AGGREGATE = re.compile(
    r"\b(all|both|every|each|how many|how often|times|list|activities|things|ways|kinds|types|"
    r"which .* and|what .*(?:s|events|places|books|hobbies|pets|instruments) (?:has|have|did|does))\b",
    re.I)
# "Which cities has Jon visited?", "What are some changes ...": a plural category right after
# the question word asks for every member, wherever each was said.
_PLURAL_CATEGORY = re.compile(
    r"^(?:what|which)\s+(?:(?:are|were)\s+)?(?:(?:the|some|all|of)\s+)?(?:[a-z]+\s+)?"
    r"(?!(?:is|was|has|does|this|his|its|us|plus)\b)[a-z]{3,}(?:s)\s+(?:has|have|had|did|does|do|is|are|were|was|des)\b",
    re.I)
_TEMPORAL_WORDS = re.compile(
    r"\b(when|what (?:date|day|month|year|time)|how long|before|after|first|last|since|until|"
    r"ago|recently|earlier|later)\b", re.I)
_BOUNDARY = re.compile(r"\b(right after|right before|just after|just before|same (?:session|day|conversation)|"
                       r"in the (?:first|last|previous|next) (?:session|conversation|chat))\b", re.I)


@dataclass
class QueryProfile:
    text: str
    words: list[str]
    subject: str | None
    mentioned_speakers: list[str]
    answer_type: str
    temporal_cues: list[TimeSpan]
    asks_time: bool
    aggregation: bool
    boundary: str | None
    keywords: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # capitalized names that are not speakers
    bridge: bool = False  # "the X who/that/which ...": an entity defined through another one


_NAME = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:of|the|and|de|la|van|von|&)?\s*[A-Z0-9][\w'’.-]*)*")
_BRIDGE = re.compile(r"\b(?:the|a|an)\s+(?:\w+\s+){0,3}?(?:who|whom|whose|that|which|where)\b", re.I)


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




def build_profile(query: str, speakers: Iterable[str]) -> QueryProfile:
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
        text=query, words=words, subject=mentioned[0] if mentioned else None,
        mentioned_speakers=mentioned, answer_type=answer_type(query),
        temporal_cues=parse_absolute(query), asks_time=asks_time,
        aggregation=bool(_AGGREGATE.search(query) or _PLURAL_CATEGORY.search(query.strip())),
        boundary=boundary.group(0) if boundary else None,
        keywords=keywords, names=query_names(query, speakers),
        bridge=bool(_BRIDGE.search(query)))
