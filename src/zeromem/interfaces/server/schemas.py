"""Request and response models of the REST API (they make the OpenAPI document at /docs).

Request models forbid unknown fields, so a typo is a 422 naming the field instead of a value
silently ignored. Response models mirror the library's types (``Trace``, ``Evidence``,
``HistoryEvent``) field for field; the ``from_*`` helpers do the conversion.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict

from ...retrieval.render import RenderedContext
from ...store.base import DeleteReceipt
from ...types import Evidence, HistoryEvent, Trace

MAX_K = 100
MAX_BATCH = 1000

# JSON true and false are not numbers: pydantic's lax mode reads them as 1 and 0 (a seq or k of
# 1, an event_time of 1970-01-01T00:00:01), where the library refuses a bool. Strict types make
# the API refuse them too (422); a JSON number still fits a float field.
Int = Annotated[int, Strict()]
# ISO 8601 text or a Unix timestamp, as Memory.add takes
TimeValue = Annotated[str, Strict()] | Annotated[int, Strict()] | Annotated[float, Strict()] | None


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- traces ----------------------------------------------------------------------------------
class TraceIn(_Request):
    """One trace to store verbatim (the fields of ``Memory.add``)."""

    text: str = Field(description="the verbatim text; never rewritten")
    session: str | None = None
    speaker: str | None = None
    role: str | None = Field(None, description="user, assistant, tool or system (default user)")
    session_time: TimeValue = None
    event_time: TimeValue = None
    seq: Int | None = None
    source_id: str | None = None
    metadata: dict[str, Any] | None = None
    attachments: list[str] | None = None


class TraceBatchIn(_Request):
    """Several traces stored in one transaction: all of them or none."""

    traces: list[TraceIn] = Field(min_length=1, max_length=MAX_BATCH)


class TracePatch(_Request):
    """New text and/or metadata for a trace; the old version stays in its history."""

    text: str | None = None
    metadata: dict[str, Any] | None = None


class TraceOut(BaseModel):
    id: str
    text: str
    session: str | None
    speaker: str | None
    role: str
    session_time: str | None
    event_time: str | None
    recorded_at: str
    seq: int
    source_id: str | None
    metadata: dict[str, Any]
    attachments: list[str]
    version: int

    @classmethod
    def from_trace(cls, trace: Trace) -> TraceOut:
        return cls(id=trace.id, text=trace.text, session=trace.session, speaker=trace.speaker,
                   role=trace.role, session_time=trace.session_time, event_time=trace.event_time,
                   recorded_at=trace.recorded_at, seq=trace.seq, source_id=trace.source_id,
                   metadata=dict(trace.metadata), attachments=list(trace.attachments),
                   version=trace.version)


class TraceIds(BaseModel):
    ids: list[str]


class TraceList(BaseModel):
    traces: list[TraceOut]
    limit: int | None
    offset: int


class HistoryEventOut(BaseModel):
    event: str
    at: str
    old_text: str | None
    new_text: str | None
    old_metadata: dict[str, Any] | None
    new_metadata: dict[str, Any] | None

    @classmethod
    def from_event(cls, event: HistoryEvent) -> HistoryEventOut:
        return cls(event=event.event, at=event.at, old_text=event.old_text, new_text=event.new_text,
                   old_metadata=event.old_metadata, new_metadata=event.new_metadata)


class HistoryOut(BaseModel):
    trace_id: str
    events: list[HistoryEventOut]


class SessionOut(BaseModel):
    session: str | None
    traces: int
    first_time: str | None
    last_time: str | None


class SessionList(BaseModel):
    sessions: list[SessionOut]


class EntityOut(BaseModel):
    entity: str
    label: str
    surface: str
    count: int
    turns: int = Field(description="turns of the scope that mention this entity")


class NeighbourOut(BaseModel):
    trace: TraceOut
    shared: list[str]


class NeighbourhoodOut(BaseModel):
    trace: TraceOut
    entities: list[EntityOut]
    neighbours: list[NeighbourOut]


# -- retrieval -------------------------------------------------------------------------------
class SearchIn(_Request):
    query: str
    k: Int = Field(10, ge=1, le=MAX_K)
    session: str | None = None
    as_of: TimeValue = Field(None, description="hide traces recorded after this time")
    now: TimeValue = Field(None, description="when the question is asked (default: as_of): "
                                             "'last week' in the query counts from it")
    filters: dict[str, Any] | None = Field(None, description="metadata keys that must equal these values")
    why: bool = Field(True, description="include each evidence's score breakdown")


class ProvenanceOut(BaseModel):
    trace_id: str
    session: str | None
    speaker: str | None
    time: str | None
    source_id: str | None
    seq: int


class EvidenceOut(BaseModel):
    """One retrieved turn (``zeromem.Evidence``): one trace's verbatim text and provenance."""

    trace_id: str
    text: str
    score: float
    provenance: ProvenanceOut
    why: dict[str, Any] | None = None
    annotations: list[str]
    superseded_by: str | None

    @classmethod
    def from_evidence(cls, ev: Evidence, *, why: bool = True) -> EvidenceOut:
        p = ev.provenance
        return cls(trace_id=ev.trace_id, text=ev.text, score=_finite(ev.score),
                   provenance=ProvenanceOut(trace_id=p.trace_id, session=p.session, speaker=p.speaker,
                                            time=p.time, source_id=p.source_id, seq=p.seq),
                   why={k: _json_value(v) for k, v in ev.why.items()} if why else None,
                   annotations=list(ev.annotations), superseded_by=ev.superseded_by)


class SearchOut(BaseModel):
    query: str
    evidence: list[EvidenceOut]
    no_answer_score: float = Field(description="0–1: how likely memory holds no answer")
    no_answer: bool = Field(False, description="no_answer_score is at or above the no-answer model's "
                                                "threshold: memory probably holds no answer")
    route: dict[str, Any]
    timings: dict[str, float]
    degraded: list[str] = Field(default_factory=list,
                                description="components that failed; the answer used the rest")


class ContextIn(SearchIn):
    budget_tokens: Int | None = Field(2000, ge=1, le=1_000_000)
    include_active: bool = False  # active memory first, then evidence, in the one budget


class ContextOut(BaseModel):
    text: str
    tokens: int
    evidence: list[EvidenceOut]
    degraded: list[str] = Field(default_factory=list)
    active_trace_ids: list[str] = Field(default_factory=list)

    @classmethod
    def from_rendered(cls, rendered: RenderedContext, *, why: bool = True) -> ContextOut:
        return cls(text=rendered.text, tokens=rendered.tokens,
                   evidence=[EvidenceOut.from_evidence(ev, why=why) for ev in rendered.evidence],
                   degraded=list(rendered.degraded),
                   active_trace_ids=[e.trace_id for e in rendered.active])


class AnswerIn(_Request):
    query: str
    k: Int = Field(10, ge=1, le=MAX_K)
    budget_tokens: Int | None = Field(2000, ge=1, le=1_000_000)
    calibrate: bool = True


class AnswerOut(BaseModel):
    answer: str
    raw: str
    grounded: bool | None
    supporting_trace_ids: list[str]
    model: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    context: ContextOut


class ImportOut(BaseModel):
    conversations: dict[str, list[str]]
    traces: int


class DeleteReceiptOut(BaseModel):
    """What a delete removed and where (``zeromem.store.base.DeleteReceipt``)."""

    kind: str = Field(description="trace, session or scope")
    traces: int
    trace_ids: list[str]
    rows: dict[str, int] = Field(description="rows removed per table that can hold the text or what "
                                             "was derived from it (trace_history: events emptied of text)")
    history_text_purged: bool = Field(description="no history event of these traces holds text any more")
    secure_delete: bool = Field(description="freed bytes were overwritten (SQLite secure_delete)")
    checkpointed: bool = Field(description="SQLite's write-ahead log was checkpointed and truncated")
    retained: list[str] = Field(description="what may still hold the text; empty when nothing does")
    compacted: bool = Field(False, description="the erasure rewrote the file (SQLite VACUUM): old "
                                               "copies of rows stayed in the unused space of its pages")

    @classmethod
    def from_receipt(cls, receipt: DeleteReceipt) -> DeleteReceiptOut:
        return cls(**receipt.as_dict())


class DeletedOut(BaseModel):
    deleted: int
    receipt: DeleteReceiptOut | None = None


class ErrorBody(BaseModel):
    type: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorBody


def _finite(value: float) -> float:
    value = float(value)
    return value if math.isfinite(value) else 0.0


def _json_value(value: Any) -> Any:
    """``why`` holds floats (maybe numpy ones), strings and small lists: make them JSON."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) or hasattr(value, "item"):
        number = value.item() if hasattr(value, "item") else value
        return _finite(number) if isinstance(number, float) else number
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return str(value)


# -- memory lifecycle ------------------------------------------------------------------------
class ActiveEntryOut(BaseModel):
    trace_id: str
    text: str
    tokens: int
    omega: float
    omega_eff: float
    newer: int
    reason: str
    session: str | None
    speaker: str | None
    time: str | None
    signals: dict[str, Any]


class ActiveOut(BaseModel):
    budget_tokens: int
    used_tokens: int
    tokenizer: str
    considered: int
    text: str
    entries: list[ActiveEntryOut]
    archived: dict[str, str]

    @classmethod
    def from_active(cls, active: Any) -> ActiveOut:
        return cls(budget_tokens=active.budget_tokens, used_tokens=active.used_tokens,
                   tokenizer=active.tokenizer, considered=active.considered, text=active.text,
                   entries=[ActiveEntryOut(trace_id=e.trace_id, text=e.text, tokens=e.tokens, omega=e.omega,
                                           omega_eff=e.omega_eff, newer=e.newer, reason=e.reason,
                                           session=e.session, speaker=e.speaker, time=e.time,
                                           signals=e.signals) for e in active.entries],
                   archived=dict(active.archived))


class CardOut(BaseModel):
    kind: str
    subject: str
    predicate: str
    object: str
    trace_id: str
    sentence: str
    source_text: str
    session: str | None
    speaker: str | None
    time: str | None
