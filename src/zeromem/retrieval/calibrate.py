"""Evidence calibration (docs/design.md#calibration): filter by the profile, supersede stale state, say "nothing".

- **Compatibility**: a turn whose speaker is not the query's subject, or whose time falls
  outside the query's time cue, is down-weighted (soft filter: ``×(1 − penalty)``), never
  dropped — an off-subject turn can still be the only evidence.
- **Supersession** (the rules live in ``lifecycle/supersede.py``): first-person state
  assertions and corrections keyed by (speaker, attribute); within a key every older
  assertion is superseded by the newest. The older trace is kept and marked, the newer one
  ranks first.
- **No-answer score**: ``1 − coverage · confidence`` where coverage is the share of the query's
  content words found in the best evidence and its neighbours, and confidence the top dense
  similarity mapped onto [0, 1]. A caller thresholds it to say "memory holds nothing for this".
"""

from __future__ import annotations

import datetime as dt

import numpy as np

from ..encoders.timexpr import TimeSpan

SUBJECT_PENALTY = 0.15
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


def time_compat(turn_dates: list[list[tuple[dt.date, dt.date]]], cues: list[TimeSpan],
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


def no_answer_score(keywords: list[str], evidence_texts: list[str], top_cosine: float) -> float:
    """High when the best evidence covers few query words and is semantically far."""
    words = [w for w in keywords if len(w) > 2]
    if words:
        blob = " ".join(evidence_texts).lower()
        coverage = sum(1 for w in words if w[:5] in blob) / len(words)
    else:
        coverage = 1.0
    confidence = float(np.clip((top_cosine - 0.2) / 0.5, 0.0, 1.0))
    return round(1.0 - coverage * (0.5 + 0.5 * confidence), 6)
