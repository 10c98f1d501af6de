"""Answer calibration after the reader (docs/design.md#answer-calibration): ``a = Calibrate(a0, q, R(q), φ(q))``.

Deterministic and model-free: the reader's answer is checked against the evidence it was
given (grounding), normalized to the question's answer type (dates to "8 May 2023", number
words to digits, yes/no to a leading "Yes"/"No"), and lists are trimmed to the items the
evidence supports. No second LLM call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..encoders.timexpr import parse_absolute, parse_anchor, resolve_relative
from ..lexicon import ANSWER_FILLER_WORDS, NUMBER_WORDS
from ..types import Evidence
from .profile import answer_type
from .render import RenderedContext

GROUNDED_SHARE = 0.5
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class CalibratedAnswer:
    text: str
    original: str
    answer_type: str
    grounded: bool
    support: tuple[str, ...]  # trace ids whose text supports the answer
    notes: tuple[str, ...] = field(default_factory=tuple)


def _content(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in ANSWER_FILLER_WORDS]


def _evidence_blob(ev: Evidence) -> str:
    extra = " ".join(ev.annotations)
    when = ev.time or ""
    return f"{ev.text} {extra} {when}".lower()


def calibrate_answer(answer: str, question: str, evidence: list[Evidence]) -> CalibratedAnswer:
    kind = answer_type(question)
    original = answer
    text = answer.strip()
    notes: list[str] = []
    if kind == "date":
        text, note = _normalize_date(text, evidence)
        if note:
            notes.append(note)
    elif kind == "number":
        text = _number_words_to_digits(text)
    elif kind == "yes/no":
        lead = text.split()[0].lower().strip(",.!") if text.split() else ""
        if lead in ("yes", "yeah", "yep", "true"):
            text = "Yes" + text[len(text.split()[0]):]
        elif lead in ("no", "nope", "false"):
            text = "No" + text[len(text.split()[0]):]
    blobs = [(ev.trace_id, _evidence_blob(ev)) for ev in evidence]
    if kind == "list":
        items = [i.strip() for i in re.split(r",|;|\band\b", text) if i.strip()]
        kept = [i for i in items if _supported(i, blobs)]
        if kept and len(kept) < len(items):
            notes.append(f"dropped {len(items) - len(kept)} unsupported item(s)")
            text = ", ".join(dict.fromkeys(kept))
    words = _content(text)
    support = tuple(tid for tid, blob in blobs if any(w in blob for w in words))
    found = sum(1 for w in words if any(w in blob for _, blob in blobs))
    grounded = bool(words) and found / len(words) >= GROUNDED_SHARE
    if not grounded:
        notes.append("answer not grounded in the retrieved evidence")
    return CalibratedAnswer(text, original, kind, grounded, support, tuple(notes))


def _supported(item: str, blobs: list[tuple[str, str]]) -> bool:
    words = _content(item)
    return bool(words) and any(sum(w in blob for w in words) / len(words) >= GROUNDED_SHARE
                               for _, blob in blobs)


def _normalize_date(text: str, evidence: list[Evidence]) -> tuple[str, str | None]:
    absolute = parse_absolute(text)
    if absolute:
        return absolute[0].label(), None
    for ev in evidence:
        anchor = parse_anchor(ev.time)
        spans = resolve_relative(text, anchor)
        if spans:
            return spans[0].label(), f"resolved '{spans[0].surface}' against {ev.trace_id}"
    return text, None


_NUMBER_WORD = re.compile(rf"\b({'|'.join(NUMBER_WORDS)})\b", re.I)


def _number_words_to_digits(text: str) -> str:
    def swap(m: re.Match[str]) -> str:
        value = NUMBER_WORDS.get(m.group(0).lower())
        return str(value) if value is not None else m.group(0)
    return re.sub(_NUMBER_WORD, swap, text)


@dataclass(frozen=True)
class Answer:
    """What ``Memory.answer`` returns: the calibrated answer and everything behind it."""

    text: str  # the calibrated answer (the reader's own words when calibration is off)
    reader: Any  # what the reader returned: text, or e.g. a ReaderAnswer (text, model, tokens)
    calibration: CalibratedAnswer | None  # grounding, answer type, supporting trace ids
    context: RenderedContext  # what the reader saw (its evidence carries the provenance)
