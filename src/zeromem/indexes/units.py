"""Segmentation of a session's traces into context units at four granularities (docs/design.md#context-units).

episode (the session) → window (``window_turns`` consecutive turns, every ``stride`` turns)
→ turn (one trace) → span (one sentence of a multi-sentence turn). Every unit keeps the trace
rowids it covers, so evidence always expands back to verbatim traces. Pure functions: the same
traces always give the same units, which is what makes incremental indexing equal a rebuild.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..types import Trace

LEVELS = ("turn", "span", "window", "episode")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+(?=\S)")
_MIN_SPAN_CHARS = 12


@dataclass(frozen=True, slots=True)
class UnitDraft:
    level: str
    position: int
    text: str  # what encoders see: speaker-prefixed, captions appended; never shown as evidence
    rowids: tuple[int, ...]
    first_seq: int
    last_seq: int
    speaker: str | None
    time: str | None
    # spans: the characters of the trace's text before this sentence (its sentences counted
    # with one space between them); the costly encoders read only the spans of a long turn's
    # head (EncoderConfig.max_encoded_chars). 0 for every other level.
    offset: int = 0
    # Made once: a write re-segments its session and reads each draft's hash several times
    # (episodes and windows are long texts).
    text_hash: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text_hash", hashlib.blake2b(self.text.encode("utf-8"), digest_size=12).hexdigest())


def turn_text(trace: Trace) -> str:
    """The indexed form of a turn: who said it, what was said, and attached descriptions."""
    head = f"{trace.speaker}: " if trace.speaker else ""
    tail = "".join(f" [image: {caption}]" for caption in trace.attachments)
    return f"{head}{trace.text}{tail}"


def split_sentences(text: str) -> list[str]:
    """Sentence spans of a turn; fragments too short to stand alone join their neighbour."""
    parts = [p.strip() for p in _SENTENCE_END.split(text) if p.strip()]
    merged: list[str] = []
    carry = ""
    for part in parts:
        part = f"{carry} {part}".strip() if carry else part
        carry = ""
        if len(part) < _MIN_SPAN_CHARS:
            if merged:
                merged[-1] = f"{merged[-1]} {part}"
            else:
                carry = part
            continue
        merged.append(part)
    if carry:
        merged.append(carry)
    return merged


def segment_session(traces: Sequence[Trace], rowids: Sequence[int], *, window_turns: int = 4,
                    stride: int = 2) -> list[UnitDraft]:
    """All units of one session, traces given in conversation order with their row numbers."""
    if len(rowids) != len(traces):
        raise ValueError(f"{len(traces)} traces but {len(rowids)} row numbers")
    if not traces:
        return []
    units = segment_turns(traces, rowids, 0)
    size = max(1, window_turns)
    for start in window_starts(len(traces), window_turns=window_turns, stride=stride):
        units.append(group("window", start, traces[start:start + size], rowids[start:start + size]))
    units.append(group("episode", 0, traces, rowids))
    return units


def segment_turns(traces: Sequence[Trace], rowids: Sequence[int], first_position: int) -> list[UnitDraft]:
    """The turn and sentence-span units of ``traces``, the first at ``first_position`` of its
    session (a turn's units depend on its trace and its place only)."""
    units: list[UnitDraft] = []
    for position, (trace, rid) in enumerate(zip(traces, rowids), start=first_position):
        time = trace.event_time or trace.session_time
        units.append(UnitDraft("turn", position, turn_text(trace), (rid,), trace.seq, trace.seq,
                               trace.speaker, time))
        # An attached image's description is a local span of its own: a turn that only says
        # "here's our latest work" is found through what the picture shows.
        sentences = split_sentences(trace.text) + [f"[image: {c}]" for c in trace.attachments]
        if len(sentences) > 1:
            head = f"{trace.speaker}: " if trace.speaker else ""
            offset = 0
            for index, sentence in enumerate(sentences):
                units.append(UnitDraft("span", position * 1000 + index, head + sentence, (rid,),
                                       trace.seq, trace.seq, trace.speaker, time, offset))
                offset += len(sentence) + 1
    return units


def window_starts(n_turns: int, *, window_turns: int = 4, stride: int = 2) -> list[int]:
    """Where the windows of a session of ``n_turns`` start: every ``stride`` turns, and one more
    ending at the last turn; none for a session of one turn. A window covers the ``window_turns``
    turns from its start (fewer in a shorter session)."""
    if n_turns <= 1:
        return []
    size = max(1, window_turns)
    step = max(1, stride)
    starts = list(range(0, max(1, n_turns - size + 1), step))
    if starts[-1] + size < n_turns:
        starts.append(n_turns - size)
    return starts


def group(level: str, position: int, run: Sequence[Trace], rowids: Sequence[int]) -> UnitDraft:
    """A window or episode: the turns of ``run`` (its text is theirs, joined by newlines)."""
    speakers = {t.speaker for t in run}
    first = run[0]
    return UnitDraft(level, position, "\n".join(turn_text(t) for t in run),
                     tuple(rowids), run[0].seq, run[-1].seq,
                     first.speaker if len(speakers) == 1 else None,
                     first.event_time or first.session_time)
