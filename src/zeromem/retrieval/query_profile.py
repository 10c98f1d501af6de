"""What a query profile φ(q) is, for every language: the fields (:class:`QueryProfile`) and
the periods a query names (:func:`time_cues`).

``profile.build_profile`` fills it for English and hands Chinese text to ``profile_zh.py``,
which fills it from tables. Both take the fields from here, so the Chinese profile does not
import the module that calls it.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from ..encoders.timexpr import TimeSpan, numeric_dates, parse_absolute, resolve_relative

# The entity labels (spaCy's; jieba's names map onto PERSON and GPE) of what each answer type
# asks for. A time expression ("yesterday", "last June", "at noon") is a DATE or TIME entity, and
# so are a duration and an age ("for three years", "25 years old": "how long", "how old").
ANSWER_KIND_LABELS: dict[str, frozenset[str]] = {
    "date": frozenset({"DATE", "TIME"}),
    "place": frozenset({"GPE", "LOC", "FAC"}),
    "person": frozenset({"PERSON"}),
    "number": frozenset({"CARDINAL", "QUANTITY", "MONEY", "PERCENT", "DATE", "TIME"}),
}


@dataclass(frozen=True, slots=True)
class QueryProfile:
    """φ(q): what a query asks, from its text and the scope's speakers (docs/design.md#query-profile-and-routing).

    Frozen: a search reads one profile from start to end; a step that reads the query another
    way (``query_reading.one_reading``) builds a new one with ``dataclasses.replace``."""

    text: str
    words: tuple[str, ...]
    subject: str | None
    mentioned_speakers: tuple[str, ...]
    answer_type: str
    temporal_cues: tuple[TimeSpan, ...]
    asks_time: bool
    aggregation: bool
    boundary: str | None
    keywords: tuple[str, ...] = ()
    names: tuple[str, ...] = ()  # capitalized names that are not speakers
    bridge: bool = False  # "the X who/that/which ...": an entity defined through another one
    answer_labels: frozenset[str] = frozenset()  # entity labels the asked-for members carry
    about_asker: bool = False  # "What did I…", "my …" and no "you": the asker's own turns answer

    @property
    def answer_kind_labels(self) -> frozenset[str]:
        """Entity labels a turn that answers this one-answer question is likely to name: a
        place for "where", a time expression for "when", a person for "who", an amount or a
        duration for "how much / long / old" (empty for list questions — "how many" counts, and
        is one — and for the other answer types)."""
        return frozenset() if self.aggregation else ANSWER_KIND_LABELS.get(self.answer_type, frozenset())


# "before today", "until last week", "since yesterday": the expression bounds the period asked
# about; it is not when the event happened.
_BOUNDED_BY = re.compile(r"\b(?:before|until|till|by|since|prior to|as of|up to|up until|from)\s+$", re.I)
_ZH_BOUNDED_AFTER = ("之前", "以前", "以来", "为止", "截至", "直到")  # 昨天为止, 上周以来
_ZH_BOUNDED_BEFORE = ("直到", "截至")  # 直到昨天


def time_cues(query: str, asked_at: dt.date | None) -> list[TimeSpan]:
    """The periods a query names: absolute dates ("in May 2023"; a numeric date that reads two
    ways gives both, ``timexpr.numeric_dates``), and, when the time it is asked is known,
    relative ones resolved against it ("two weeks ago", "last weekend", 上周六)."""
    cues = parse_absolute(query)
    cues += [span for span in numeric_dates(query)
             if not any(c.start_char < span.end_char and span.start_char < c.end_char for c in cues)]
    if asked_at is None:
        return cues
    for span in resolve_relative(query, asked_at):
        before, after = query[:span.start_char], query[span.end_char:span.end_char + 2]
        if (_BOUNDED_BY.search(before) or before.endswith(_ZH_BOUNDED_BEFORE)
                or after.startswith(_ZH_BOUNDED_AFTER)):
            continue
        cues.append(span)
    return cues
