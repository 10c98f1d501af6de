"""Deterministic entity extractors for what a small NER model misses.

Each extractor maps a text to candidate spans ``(start, end, label)`` (character offsets, end
exclusive). They are pure regular expressions over the raw text, except ``noun_phrases`` which
reads the part-of-speech tags spaCy's tagger already produced. Overlaps between candidates are
resolved later, in ``entities.py``.

Labels: DATE, TIME (calendar dates, relative dates, clock times), CARDINAL, QUANTITY, MONEY,
PERCENT (numbers and quantities), TITLE (quoted titles), NAME (capitalized multi-word names),
NOUN_PHRASE (compound nouns such as "pottery class").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ..lexicon import MONTH_NAMES, NUMBER_WORDS, ROUND_NUMBER_WORDS, WEEKDAY_NAMES, month_abbreviations

Span = tuple[int, int, str]

# Capitalized month names but "May" (the patterns add it where a date is certain), then the
# abbreviations; the weekday names.
_MONTHS = "|".join([name.capitalize() for name in MONTH_NAMES if name != "may"]
                   + [name.capitalize() for name in month_abbreviations()])
_FULL_MONTHS = "|".join(name.capitalize() for name in MONTH_NAMES if name != "may")
_WEEKDAYS = "|".join(name.capitalize() for name in WEEKDAY_NAMES)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR = r"(?:1[89]|20)\d{2}"
_NUM_WORDS = "|".join([*NUMBER_WORDS, *ROUND_NUMBER_WORDS])
_NUMBER = rf"(?:\d+(?:[.,]\d+)*|{_NUM_WORDS})"
_AGO_NUMBER = rf"(?:{_NUMBER}|a couple of|a few|several|few|a|an)"
_PERIOD = r"(?:second|minute|hour|day|night|week|weekend|month|year|decade)s?"
_UNITS = (r"(?:miles?|mi|km|kilometers?|kilometres?|meters?|metres?|feet|foot|ft|inch(?:es)?|"
          r"kg|kilos?|grams?|g|pounds?|lbs?|ounces?|oz|liters?|litres?|gallons?|cups?|hours?|hrs?|"
          r"minutes?|mins?|seconds?|secs?|days?|weeks?|months?|years?|yrs?|times|people|"
          r"pages?|books?|songs?|paintings?|kids?|children|dogs?|cats?|pets?|steps?|laps?|"
          r"calories|degrees?|points?|stars?|%)")

# A pattern with a group named "d" contributes only that group's span.
_DATE_CASED = [  # month names count only capitalized ("march" and "may" are verbs)
    rf"\b{_DAY}\s+(?:of\s+)?(?:{_MONTHS}|May)\.?(?:,?\s+{_YEAR})?\b",  # 7 May 2023, 7th of May
    rf"\b(?:{_MONTHS}|May)\.?\s+{_DAY}(?:,?\s+{_YEAR})?\b",  # May 7, 2023 / May 7th
    rf"\b(?:{_MONTHS}|May)\.?,?\s+{_YEAR}\b",  # May 2023
    r"\b(?:in|on|of|since|until|till|by|during|last|next|this|early|late|mid)\s+(?P<d>May)\b",
    rf"\b(?:{_FULL_MONTHS})\b",
    rf"\b{_YEAR}s?\b",
]
_DATE_ANY_CASE = [
    rf"\b(?:(?:last|next|this|past|coming|every)\s+(?:{_WEEKDAYS}|{_PERIOD}|summer|winter|"
    rf"spring|fall|autumn|morning|evening|afternoon|night))\b",
    rf"\b(?:the\s+)?{_PERIOD}\s+(?:before|after)\s+(?:yesterday|last|that|this)\b",
    rf"\b{_AGO_NUMBER}\s+{_PERIOD}\s+ago\b",
    r"\b(?:yesterday|today|tomorrow|tonight|nowadays)\b",
    rf"\b(?:{_WEEKDAYS})s?\b",
]
_TIME_PATTERNS = [
    r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)(?!\w)",
    r"\b\d{1,2}:\d{2}\b",
    r"\b(?:noon|midnight)\b",
]
_NUMBER_PATTERNS = [
    (r"[$€£¥]\s?\d+(?:[.,]\d+)*(?:\s?(?:k|K|million|billion|thousand|bn|m)\b)?", "MONEY"),
    (r"\b\d+(?:[.,]\d+)*\s?(?:dollars|bucks|euros|pounds sterling)\b", "MONEY"),
    (r"\b\d+(?:\.\d+)?\s?(?:%|percent\b)", "PERCENT"),
    (rf"(?i:\b{_NUMBER}\s+{_UNITS}(?!\w))", "QUANTITY"),
    (r"\b\d+(?:[.,]\d+)*\b", "CARDINAL"),
]
_DATE_RE = [re.compile(p) for p in _DATE_CASED] + \
    [re.compile(p, re.IGNORECASE) for p in _DATE_ANY_CASE]
_TIME_RE = [re.compile(p, re.IGNORECASE) for p in _TIME_PATTERNS]
_NUMBER_RE = [(re.compile(p), label) for p, label in _NUMBER_PATTERNS]

# Quoted titles: straight or curly double quotes; single quotes only when they open before a
# capital letter and the closing one is not an apostrophe inside a word ("Charlotte's").
_TITLE_RE = [
    re.compile(r'"([^"\n]{1,80}?)"'),
    re.compile(r"\u201c([^\u201d\n]{1,80}?)\u201d"),
    re.compile(r"(?:^|(?<=[\s(\[]))[\u2018']([A-Z0-9][^\n]{0,79}?)[\u2019'](?!\w)"),
]
_MAX_TITLE_WORDS = 10

# A period ends a name ("Melanie. Thanks") unless it closes a title or an initial ("Dr.", "J.").
_CAP_WORD = r"(?:(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof)\.|[A-Z]\.|[A-Z][\w'\u2019&-]*)"
_CONNECTOR = r"(?:of|the|de|da|del|van|von|la|le|du)"  # not "and": "Caroline and Mel" is two
_NAME_RE = re.compile(rf"\b{_CAP_WORD}(?:\s+(?:{_CONNECTOR}\s+)*{_CAP_WORD})+")
# Words that are capitalized because they open a sentence or greet someone, not because they
# are part of a name: stripped from the edges of a candidate name.
NOT_NAME_WORDS = frozenset(
    "a an the i i'm i've i'll i'd my our your his her their its we you he she they it this that "
    "these those hey hi hello oh wow yes yeah yep no nope thanks thank ok okay well so sure "
    "congrats congratulations great good awesome nice sounds love happy dear also and but or "
    "what when where who why how which did do does is are was were have has had can could will "
    "would should just really absolutely totally definitely haha lol omg btw anyway glad "
    "by mom dad last next every on in at for with from to after before".split())
_CALENDAR = frozenset(w.lower() for w in (_MONTHS + "|May|" + _WEEKDAYS).split("|"))

# Nouns that are times, not things: they end a noun phrase instead of joining it.
_TEMPORAL_NOUNS = frozenset(
    "yesterday today tomorrow tonight morning evening afternoon night week weekend month year "
    "day days weeks months years time times moment while".split())
_GENERIC_ADJECTIVES = frozenset(
    "good great new old other last next many much few little big small same such whole own nice "
    "cool amazing awesome lovely wonderful fun bad best first second real different special "
    "whole full hard easy huge tiny fantastic incredible beautiful sure glad happy proud "
    "important several various certain entire recent latest".split())
_NOUN_TAGS = frozenset({"NN", "NNS"})
_MAX_PHRASE_WORDS = 5
_PHRASE_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS", "JJ"})


def _matches(patterns: Iterable[re.Pattern], text: str, label: str) -> Iterator[Span]:
    for pattern in patterns:
        for m in pattern.finditer(text):
            if "d" in pattern.groupindex:
                yield m.start("d"), m.end("d"), label
            else:
                yield m.start(), m.end(), label


def dates(text: str) -> list[Span]:
    """Calendar dates ("7 May 2023", "May 2023", "2022"), relative dates ("last Saturday",
    "two weeks ago", "yesterday") and clock times ("3 pm", "10:30")."""
    return list(_matches(_DATE_RE, text, "DATE")) + list(_matches(_TIME_RE, text, "TIME"))


def numbers(text: str) -> list[Span]:
    """Money ("$300"), percentages ("20%"), quantities ("5 miles", "three kids": number words
    count only with a unit) and bare numbers ("3", "2,000")."""
    spans: list[Span] = []
    for pattern, label in _NUMBER_RE:
        spans.extend(_matches([pattern], text, label))
    return spans


def titles(text: str) -> list[Span]:
    """Quoted titles and phrases: the text between the quotes, at most 10 words."""
    spans: list[Span] = []
    for pattern in _TITLE_RE:
        for m in pattern.finditer(text):
            inner = m.group(1)
            stripped = inner.strip(" ,.;:!?")
            if not stripped or len(stripped.split()) > _MAX_TITLE_WORDS:
                continue
            if not any(ch.isalnum() for ch in stripped):
                continue
            start = m.start(1) + inner.index(stripped)
            spans.append((start, start + len(stripped), "TITLE"))
    return spans


def _name_words(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    return [(m.start() + start, m.end() + start, m.group(0))
            for m in re.finditer(r"\S+", text[start:end])]


def names(text: str) -> list[Span]:
    """Capitalized multi-word names ("Caroline Smith", "Museum of Modern Art"), without the
    greeting or sentence-opening words around them ("Hey", "The", "I")."""
    spans: list[Span] = []
    for m in _NAME_RE.finditer(text):
        words = _name_words(text, m.start(), m.end())
        while words and (words[0][2].lower().rstrip(".'\u2019") in NOT_NAME_WORDS
                         or not words[0][2][0].isupper()):
            words.pop(0)
        while words and (words[-1][2].lower().rstrip(".'\u2019") in NOT_NAME_WORDS
                         or not words[-1][2][0].isupper()):
            words.pop()
        capitalized = [w for w in words if w[2][0].isupper()]
        if len(capitalized) < 2:
            continue
        if all(w[2].lower().strip(".,") in _CALENDAR for w in capitalized):
            continue  # "Monday Tuesday" is a date list, handled by ``dates``
        end = words[-1][1]
        while end > words[0][0] and text[end - 1] in ".-'\u2019&":
            end -= 1
        spans.append((words[0][0], end, "NAME"))
    return spans


def noun_phrases(tokens: Iterable[tuple[int, int, str, str]]) -> list[Span]:
    """Compound noun phrases from tagged tokens ``(start, end, text, tag)``: maximal runs of
    adjectives and nouns that end in a common noun, at least two words after generic adjectives
    ("great", "new") and temporal nouns ("yesterday") are left out. "pottery class",
    "LGBTQ support group"."""
    spans: list[Span] = []
    run: list[tuple[int, int, str, str]] = []

    def flush() -> None:
        while run and run[0][3] == "JJ" and run[0][2].lower() in _GENERIC_ADJECTIVES:
            run.pop(0)
        while run and run[-1][3] not in _NOUN_TAGS:
            run.pop()
        if len(run) >= 2:  # English compounds are head-final: keep the last words
            spans.append((run[-_MAX_PHRASE_WORDS:][0][0], run[-1][1], "NOUN_PHRASE"))
        run.clear()

    for token in tokens:
        _, _, word, tag = token
        if tag not in _PHRASE_TAGS or not word.isalpha() or word.lower() in _TEMPORAL_NOUNS:
            flush()
            continue
        if tag == "JJ" and run and run[-1][3] != "JJ":
            flush()  # an adjective after a noun opens the next phrase
        run.append(token)
    flush()
    return spans


def extract_all(text: str) -> list[Span]:
    """Every regex extractor on one text (noun phrases need tags and are added by the caller)."""
    return titles(text) + names(text) + dates(text) + numbers(text)
