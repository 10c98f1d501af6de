"""One reading of a question against a prepared scope: the frozen :class:`Query` a search uses.

``read_query`` reads the question once, before any scoring: the speakers' names as the
conversation's speakers write them (``speaker_names.canonical``), what the query embedding
reads, its index tokens, its profile φ(q) with a numeric date read the one way the memory's
dates allow, its hard terms, and, for a message that asks several questions, each of them
read on its own. Every step of the engine reads these fields; none reads the text again, so
two steps cannot read one question two ways.
Each rule family of ``rules.py`` that shapes the reading is honoured here (``off``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from ..encoders.timexpr import TimeSpan
from .prepared import PreparedScope
from .profile import build_profile, hard_terms, question_parts
from .query_profile import QueryProfile

READING_SLACK_DAYS = 31  # a date read two ways: the memory's dates ± this decide (one_reading)


@dataclass(frozen=True, slots=True)
class Query:
    """A question as the engine searches it, read once (``read_query``)."""

    asked: str
    """The text as the caller gave it (for a part: the sub-question as the message has it)."""
    text: str
    """What is profiled, tokenized and matched verbatim: the message with the speakers' other
    names written as the speakers' own."""
    embedding_text: str
    """What the query embedding reads: ``text``, without the speakers' names in a memory of
    short messages (``embedded``)."""
    tokens: tuple[str, ...]
    """``text`` as the scope's index tokenizes it (BM25, term weights, the no-answer score)."""
    profile: QueryProfile
    """φ(text) among the scope's speakers, its temporal cues read once (``one_reading``)."""
    hard_terms: tuple[str, ...]
    """Quoted phrases, numbers and capitalized names of ``text``, lower-cased (``profile.hard_terms``):
    what lexical refinement looks for verbatim."""
    parts: tuple[Query, ...] = ()
    """The questions of a message that asks several, each read on its own (and with no parts of
    its own); empty for a message of one question, or when answering each is off."""


def read_query(text: str, prep: PreparedScope, *, tokenize: Callable[[str], Sequence[str]],
               asked_on: dt.date | None = None, off: Collection[str] = frozenset(),
               each_question: bool = True) -> Query:
    """``text`` read against ``prep``: ``tokenize`` is the scope's index tokenizer, ``asked_on``
    the day the question is asked ("last week" counts from it), ``off`` the rule families
    switched off (``rules.checked_rules``), ``each_question`` whether a message of several
    questions is also read question by question (``RetrievalConfig.answer_each_question``)."""
    read = text
    if "speaker_aliases" not in off:
        # "Kate" for the account "Emi", "Faheem" for "Fahim": the speaker's name from here on.
        read = prep.speaker_names.canonical(read)
    whole = _reading(text, read, prep, tokenize, asked_on, off)
    if not each_question or "several_questions" in off:
        return whole
    # A message that asks two things needs evidence for both: each question is searched on
    # its own too (the engine lets their evidence take turns after the whole message's best).
    parts = question_parts(read)
    if len(parts) < 2:
        return whole
    return replace(whole, parts=tuple(_reading(part, part, prep, tokenize, asked_on, off) for part in parts))


def _reading(asked: str, text: str, prep: PreparedScope, tokenize: Callable[[str], Sequence[str]],
             asked_on: dt.date | None, off: Collection[str]) -> Query:
    """The fields of one question whose searched text is ``text`` (its names already canonical)."""
    profile = build_profile(text, prep.speakers, asked_on)
    cues = profile.temporal_cues
    if len({(c.start_char, c.end_char) for c in cues}) < len(cues) and "date_reading" not in off:
        profile = replace(profile, temporal_cues=one_reading(cues, prep.date_range))  # a date written two ways
    return Query(asked=asked, text=text,
                 embedding_text=text if "short_message_query" in off else embedded(prep, text),
                 tokens=tuple(tokenize(text)), profile=profile, hard_terms=tuple(hard_terms(text)))


def embedded(prep: PreparedScope, text: str) -> str:
    """What the query embedding reads. In a memory of short messages
    (``PreparedScope.short_messages``) the speakers' names are left out: every unit reads
    "Nicolas: …", and in "Nicolas: And its crazy" the name is most of the text, so "What
    hobbies does Nicolas have?" would find his shortest messages by the name alone (subject
    compatibility still favours his turns). A small scope (``PreparedScope.small``) keeps the
    names: with a handful of turns the name can be the only thing that ties a question to its
    person's turns, and without it their scores can fall to nothing."""
    if not prep.short_messages or prep.small:
        return text
    return prep.speaker_names.without_names(text)


def one_reading(cues: Sequence[TimeSpan], dates: tuple[dt.date, dt.date] | None) -> tuple[TimeSpan, ...]:
    """``cues`` with a date written two ways (10.01.2024: 10 January or October 1, see
    ``timexpr.numeric_dates``) read the one way that falls within ``dates``, the first and last
    day the memory's turns are dated; both readings stay when neither or both do."""
    if dates is None:
        return tuple(cues)
    by_place: dict[tuple[int, int], list[TimeSpan]] = {}
    for cue in cues:
        by_place.setdefault((cue.start_char, cue.end_char), []).append(cue)
    out: list[TimeSpan] = []
    for readings in by_place.values():
        inside = [c for c in readings if dates[0] - dt.timedelta(days=READING_SLACK_DAYS) <= c.first
                  and c.last <= dates[1] + dt.timedelta(days=READING_SLACK_DAYS)]
        out.extend(inside if len(readings) > 1 and len(inside) == 1 else readings)
    return tuple(out)
