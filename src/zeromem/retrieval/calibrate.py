"""Evidence calibration (docs/design.md#calibration): filter by the profile, supersede stale state, say "nothing".

- **Compatibility**: a turn whose speaker is not the query's subject, or whose time falls
  outside the query's time cue, is down-weighted (soft filter: ``×(1 − penalty)``), never
  dropped — an off-subject turn can still be the only evidence.
- **Supersession** (the rules live in ``lifecycle/supersede.py``): first-person state
  assertions and corrections keyed by (speaker, attribute); within a key every older
  assertion is superseded by the newest. The older trace is kept and marked, the newer one
  ranks first.
- **No-answer score**: how likely memory holds no answer to the question, a logistic model of
  what the search found (``NoAnswerInputs``, ``no_answer_score``); a caller thresholds it
  (``NO_ANSWER_THRESHOLD``) to say "memory holds nothing for this".
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..encoders.timexpr import TimeSpan

SUBJECT_PENALTY = 0.3
TIME_PENALTY = 0.45
TIME_SLACK_DAYS = {"day": 3, "week": 7, "month": 20, "year": 60}

def subject_compat(speakers: list[str | None], lowered_texts: list[str], subject: str | None) -> np.ndarray:
    """1 for turns by (or naming) the subject, ``1 − SUBJECT_PENALTY`` otherwise.

    ``lowered_texts`` are the turns' texts in lower case (callers cache them).
    """
    out = np.ones(len(speakers))
    if not subject:
        return out
    first = subject.split()[0].lower()
    for i, (speaker, text) in enumerate(zip(speakers, lowered_texts)):
        if speaker and speaker.lower().startswith(first):
            continue
        if first in text:
            continue
        out[i] = 1.0 - SUBJECT_PENALTY
    return out


def time_compat(turn_dates: list[list[tuple[dt.date, dt.date]]], cues: Sequence[TimeSpan],
                nodes: np.ndarray | None = None) -> np.ndarray:
    """1 for turns whose session date (or a date they mention) meets a query cue.

    ``nodes`` limits the check to those turns (the rest stay 1): a large scope scores only its
    candidate turns, and the check is a Python loop.
    """
    out = np.ones(len(turn_dates))
    if not cues:
        return out
    for i in range(len(turn_dates)) if nodes is None else nodes.tolist():
        if not any(_overlaps(r, cue) for r in turn_dates[i] for cue in cues):
            out[i] = 1.0 - TIME_PENALTY
    return out


def _overlaps(span: tuple[dt.date, dt.date], cue: TimeSpan) -> bool:
    slack = TIME_SLACK_DAYS.get(cue.granularity, 7)
    # Day numbers, not dates: a cue in year 9999 plus its slack is past what a date can hold.
    return (span[0].toordinal() <= cue.last.toordinal() + slack
            and cue.first.toordinal() - slack <= span[1].toordinal())


@dataclass(frozen=True, slots=True)
class NoAnswerInputs:
    """What the no-answer score reads about one search, each in [0, 1].

    - ``keyword_coverage``: the share of the query's keywords (longer than two characters,
      matched on their first five letters) found in the best three evidence turns and the
      turns next to them (``keyword_coverage``).
    - ``term_coverage``: the idf-weighted share of the query's index terms that the best three
      evidence turns contain: a rare word of the question ("Italian" restaurants) missing from
      the evidence weighs more than a common one.
    - ``unseen_terms``: the share of the query's distinct index terms that no turn of the
      memory contains at all.
    - ``top_cosine``: the first evidence turn's dense cosine to the query (0 without an
      embedding), clipped to [0, 1].
    - ``names_missing``: the share of the names the query writes with capitals (not the
      speakers', not the pronoun I, not dates; ``profile.named_things(QueryProfile.names)``: "Dr.
      Johnson", "Sacramento") that the evidence texts of ``keyword_coverage`` do not contain;
      0 when it writes none.
    - ``off_subject``: when the question is about one participant ("What did Melanie …"),
      the share of the best three evidence turns someone else said; 0 otherwise. A question
      about what A did, answered only by B's turns, is often about something A never did.
    - ``subject_asks``: when the question is about one participant, the share of the best
      three evidence turns that participant wrote as a question ("How's the store going?"):
      they asked about it, which is not telling it; 0 otherwise.
    - ``subject_addresses``: when the question is about one participant, the share of the best
      three evidence turns in which that participant speaks of the listener's things ("your
      son", 你的; ``addresses_listener``): "What did A's son do?" answered by A saying "glad
      your son is okay" is about the other one's son; 0 otherwise.
    - ``subject_unsaid``: when the question is about one participant (a named speaker, or the
      asker: the role "user" beside other roles), the idf-weighted share of the question's
      words that participant did not write in the sessions of the best three evidence turns
      (``no_answer.subject_unsaid``): "How often do I see Dr. Johnson?" of a user who spoke of
      Dr. Smith where the evidence is; 0 otherwise.
    """

    keyword_coverage: float
    term_coverage: float
    unseen_terms: float
    top_cosine: float
    names_missing: float
    off_subject: float
    subject_asks: float = 0.0
    subject_addresses: float = 0.0
    subject_unsaid: float = 0.0


# Logistic model of "no answer": score = σ(NA_BIAS + Σ weight · input), fitted by
# `zeromem bench fit-no-answer` (L2 0.1, every row weighted the same) on the dev questions of
# LoCoMo (5 conversations: 237 adversarial vs 760 answerable) and LongMemEval-S (17 abstention
# questions vs the file's 221 others); that command reproduces these constants and measures them
# out of sample (docs/decisions/0058-subject-never-wrote.md; refit at d-060 and d-061).
NA_BIAS = -3.082
NA_KEYWORD_COVERAGE = 0.474  # the coverage inputs overlap each other and NA_SUBJECT_UNSAID (words
NA_TERM_COVERAGE = 0.833  # missing where the evidence is): a weight is read with the others, not alone
NA_UNSEEN_TERMS = -2.142  # words the memory never saw: beside NA_SUBJECT_UNSAID (which counts
# them for a question about one participant) an unseen word is mostly a paraphrase
NA_TOP_COSINE = -2.558  # evidence that means what the question asks
NA_NAMES_MISSING = 1.169  # a name of the question missing from the evidence
NA_OFF_SUBJECT = 3.694  # the question's subject did not say the evidence
NA_SUBJECT_ASKS = 3.222  # the subject asked about it: asking is not telling
NA_SUBJECT_ADDRESSES = 2.828  # the subject spoke of the listener's things ("your son")
NA_SUBJECT_UNSAID = 3.091  # words of the question the subject never wrote
# "No answer" when the score is at least this: the lowest cut with ≥ 90 % precision on the rows
# of the fit (82 flagged, 90.2 % precision, 29.1 % recall).
NO_ANSWER_THRESHOLD = 0.725


# The listener's things: English "your(s)", Chinese 你的 / 您的 (lower-cased text).
_LISTENERS = re.compile(r"\byours?\b|你的|您的")


def addresses_listener(lowered_text: str) -> bool:
    """Whether a (lower-cased) turn speaks of the listener's things ("your son", 你的猫)."""
    return _LISTENERS.search(lowered_text) is not None


def keyword_coverage(keywords: Sequence[str], evidence_texts: list[str]) -> float:
    """The share of ``keywords`` longer than two characters whose first five letters occur in
    the lower-cased ``evidence_texts`` (1 when there is no such keyword)."""
    words = [w for w in keywords if len(w) > 2]
    if not words:
        return 1.0
    blob = " ".join(evidence_texts).lower()
    return sum(1 for w in words if w[:5] in blob) / len(words)


def no_answer_score(inputs: NoAnswerInputs) -> float:
    """How likely memory holds no answer, in [0, 1]: σ(z) with

        z = NA_BIAS + NA_KEYWORD_COVERAGE · keyword_coverage + NA_TERM_COVERAGE · term_coverage
            + NA_UNSEEN_TERMS · unseen_terms + NA_TOP_COSINE · top_cosine
            + NA_NAMES_MISSING · names_missing + NA_OFF_SUBJECT · off_subject
            + NA_SUBJECT_ASKS · subject_asks + NA_SUBJECT_ADDRESSES · subject_addresses
            + NA_SUBJECT_UNSAID · subject_unsaid

    (inputs: ``NoAnswerInputs``). Say "memory holds nothing for this" when it is at least
    ``NO_ANSWER_THRESHOLD`` (≥ 90 % precision on the rows it was fitted on). Rounded to 6
    digits (the same search gives the same score). Dev AUROC, each question scored by a model
    fitted without its memory group (`zeromem bench fit-no-answer`): LoCoMo adversarial vs
    answerable 85.2, LongMemEval-S abstention vs answerable 72.8 (238 questions, left out by
    half); docs/decisions/0058-subject-never-wrote.md.
    """
    z = (NA_BIAS + NA_KEYWORD_COVERAGE * inputs.keyword_coverage + NA_TERM_COVERAGE * inputs.term_coverage
         + NA_UNSEEN_TERMS * inputs.unseen_terms + NA_TOP_COSINE * inputs.top_cosine
         + NA_NAMES_MISSING * inputs.names_missing + NA_OFF_SUBJECT * inputs.off_subject
         + NA_SUBJECT_ASKS * inputs.subject_asks + NA_SUBJECT_ADDRESSES * inputs.subject_addresses
         + NA_SUBJECT_UNSAID * inputs.subject_unsaid)
    return round(1.0 / (1.0 + math.exp(-z)), 6)
