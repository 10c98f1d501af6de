"""The /v1 routes: one thin handler per ``Memory`` method, always in the caller's scope.

Every handler takes the scope from the API key (``Caller``), never from the request body or
query, so no id, filter or field a client sends can reach another scope. Handlers are plain
``def`` functions: FastAPI runs them on its thread pool, and ``Memory`` is safe to share
between threads (per-scope locks; one store connection guarded by a lock).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import Discriminator, Tag

from ..._internals import retriever_of
from ...errors import InvalidInput, ZeromemError
from ...memory import Memory
from .auth import Caller
from .errors import ApiError
from .schemas import (
    ActiveOut,
    AnswerIn,
    AnswerOut,
    CardOut,
    ContextIn,
    ContextOut,
    DeletedOut,
    DeleteReceiptOut,
    EntityOut,
    EvidenceOut,
    HistoryEventOut,
    HistoryOut,
    ImportOut,
    NeighbourhoodOut,
    NeighbourOut,
    SearchIn,
    SearchOut,
    SessionList,
    SessionOut,
    TraceBatchIn,
    TraceIds,
    TraceIn,
    TraceList,
    TraceOut,
    TracePatch,
)

# {"traces": [...]} is a batch, anything else one trace: errors then name the right fields.
TraceBody = Annotated[Annotated[TraceIn, Tag("one")] | Annotated[TraceBatchIn, Tag("batch")],
                      Discriminator(lambda v: "batch" if isinstance(v, dict) and "traces" in v else "one")]
_bearer = HTTPBearer(auto_error=False, description="an API key from `zeromem keys add`")
router = APIRouter(prefix="/v1")
MAX_LIST = 1000
MAX_FILENAME_BYTES = 200  # an upload is saved under its name; file systems stop at 255 bytes


def caller(request: Request,
           credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Caller:
    header = f"{credentials.scheme} {credentials.credentials}" if credentials else None
    return request.app.state.auth.caller(header)


def memory(request: Request) -> Memory:
    return request.app.state.memory


CallerDep = Annotated[Caller, Depends(caller)]
MemoryDep = Annotated[Memory, Depends(memory)]


def _scope(who: Caller) -> dict[str, Any]:
    return {"user": who.scope.user, "agent": who.scope.agent}


# -- traces ----------------------------------------------------------------------------------
@router.post("/traces", response_model=TraceIds, status_code=201, tags=["traces"],
             summary="Store one trace, or a batch of traces in one transaction")
def add_traces(body: TraceBody, who: CallerDep, mem: MemoryDep) -> TraceIds:
    if isinstance(body, TraceBatchIn):
        ids = mem.add_many([item.model_dump(exclude_none=True) for item in body.traces], **_scope(who))
    else:
        ids = [mem.add(**body.model_dump(exclude_none=True), **_scope(who))]
    return TraceIds(ids=ids)


@router.get("/traces", response_model=TraceList, tags=["traces"],
            summary="List traces in conversation order, filtered")
def list_traces(who: CallerDep, mem: MemoryDep, session: str | None = None,
                since: str | None = None, until: str | None = None,
                filters: Annotated[str | None, Query(
                    description='metadata that must equal these values: a JSON object, e.g. {"topic": "x"}')] = None,
                metadata: Annotated[str | None, Query(include_in_schema=False)] = None,
                limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = 100,
                offset: Annotated[int, Query(ge=0)] = 0) -> TraceList:
    if metadata is not None:  # refused, not ignored: ignoring it would list every trace unfiltered
        raise InvalidInput("metadata is the name `filters` had before 1.0, removed in 1.1: "
                           "pass the JSON object as filters")
    wanted = _json_object(filters, "filters") if filters else None
    traces = mem.list(session=session, since=since, until=until, filters=wanted, limit=limit,
                      offset=offset, **_scope(who))
    return TraceList(traces=[TraceOut.from_trace(t) for t in traces], limit=limit, offset=offset)


@router.get("/traces/{trace_id}", response_model=TraceOut, tags=["traces"])
def get_trace(trace_id: str, who: CallerDep, mem: MemoryDep) -> TraceOut:
    return TraceOut.from_trace(mem.get(trace_id, **_scope(who)))


@router.patch("/traces/{trace_id}", response_model=TraceOut, tags=["traces"],
              summary="Replace a trace's text and/or metadata (the old version stays in history)")
def patch_trace(trace_id: str, body: TracePatch, who: CallerDep, mem: MemoryDep) -> TraceOut:
    if body.text is None and body.metadata is None:
        raise InvalidInput("send 'text' and/or 'metadata' to change")
    return TraceOut.from_trace(mem.update(trace_id, text=body.text, metadata=body.metadata, **_scope(who)))


KeepHistory = Annotated[bool, Query(description="keep the old text and metadata in the history "
                                                "(default: erase them; the history keeps tombstones)")]


@router.delete("/traces/{trace_id}", response_model=DeleteReceiptOut, tags=["traces"],
               summary="Delete a trace and erase its text; the receipt says what was removed where")
def delete_trace(trace_id: str, who: CallerDep, mem: MemoryDep, keep_history: KeepHistory = False
                 ) -> DeleteReceiptOut:
    return DeleteReceiptOut.from_receipt(mem.delete(trace_id, keep_history=keep_history, **_scope(who)))


@router.get("/traces/{trace_id}/history", response_model=HistoryOut, tags=["traces"])
def trace_history(trace_id: str, who: CallerDep, mem: MemoryDep) -> HistoryOut:
    events = mem.history(trace_id, **_scope(who))
    return HistoryOut(trace_id=trace_id, events=[HistoryEventOut.from_event(e) for e in events])


@router.get("/traces/{trace_id}/graph", response_model=NeighbourhoodOut, tags=["traces"],
            summary="The trace's entities and the traces that share them")
def trace_graph(trace_id: str, who: CallerDep, mem: MemoryDep,
                limit: Annotated[int, Query(ge=0, le=200)] = 20) -> NeighbourhoodOut:
    hood = mem.neighbourhood(trace_id, limit=limit, **_scope(who))
    return NeighbourhoodOut(
        trace=TraceOut.from_trace(hood.trace),
        entities=[EntityOut(**dataclasses.asdict(e)) for e in hood.entities],
        neighbours=[NeighbourOut(trace=TraceOut.from_trace(n.trace), shared=list(n.shared))
                    for n in hood.neighbours])


@router.get("/sessions", response_model=SessionList, tags=["traces"])
def list_sessions(who: CallerDep, mem: MemoryDep) -> SessionList:
    return SessionList(sessions=[SessionOut(**dataclasses.asdict(s)) for s in mem.sessions(**_scope(who))])


@router.delete("/sessions/{session:path}", response_model=DeleteReceiptOut, tags=["traces"],
               summary="Delete every trace of a session and erase their text; returns the receipt")
def delete_session(session: str, who: CallerDep, mem: MemoryDep, keep_history: KeepHistory = False
                   ) -> DeleteReceiptOut:
    return DeleteReceiptOut.from_receipt(mem.delete_session(session, keep_history=keep_history,
                                                            **_scope(who)))


@router.post("/import", response_model=ImportOut, status_code=201, tags=["traces"],
             summary="Import a LoCoMo, OpenAI-chat or JSONL file (all of it or nothing)")
def import_file(who: CallerDep, mem: MemoryDep, file: Annotated[UploadFile, File()],
                format: Annotated[str | None, Form(description="locomo, openai or jsonl; default: detect")] = None
                ) -> ImportOut:
    suffix = Path(file.filename or "upload.json").suffix.lower()
    if suffix not in (".json", ".jsonl", ".ndjson"):
        suffix = ".json"
    stem = Path(file.filename or "upload").stem or "upload"  # a JSONL file's conversation name
    if len(stem.encode("utf-8", "surrogatepass")) > MAX_FILENAME_BYTES:
        raise InvalidInput(f"the file name is over {MAX_FILENAME_BYTES} bytes (UTF-8): upload it under a "
                           "shorter name (a JSONL file's name becomes its conversation's name)")
    with tempfile.TemporaryDirectory(prefix="zeromem-import-") as folder:
        path = Path(folder) / f"{stem}{suffix}"
        with path.open("wb") as out:
            while chunk := file.file.read(1 << 20):
                out.write(chunk)
        try:
            imported = mem.import_file(path, format=format, **_scope(who))
        except ZeromemError as exc:
            # The message names the file: the one the client uploaded, not the server's copy.
            message = str(exc).replace(str(path), file.filename or "the upload").replace(folder, ".")
            raise type(exc)(message) from None
    return ImportOut(conversations=imported, traces=sum(len(ids) for ids in imported.values()))


# -- retrieval -------------------------------------------------------------------------------
@router.post("/search", response_model=SearchOut, tags=["retrieval"],
             summary="Evidence for a query: verbatim turns with provenance and the 'why' of each")
def search(body: SearchIn, who: CallerDep, mem: MemoryDep) -> SearchOut:
    result = mem.search_detailed(body.query, k=body.k, session=body.session, as_of=body.as_of,
                                 filters=body.filters, now=body.now, **_scope(who))
    return SearchOut(query=body.query,
                     evidence=[EvidenceOut.from_evidence(ev, why=body.why) for ev in result.evidence],
                     no_answer_score=float(result.no_answer_score), no_answer=result.no_answer,
                     route={"primary": result.explain.route, "rho": result.explain.route_weight},
                     timings=dict(result.explain.timings),
                     degraded=list(result.degraded))


@router.post("/context", response_model=ContextOut, tags=["retrieval"],
             summary="The prompt block for a query: chronological evidence within a token budget")
def context(body: ContextIn, who: CallerDep, mem: MemoryDep) -> ContextOut:
    rendered = mem.render_context(body.query, k=body.k, budget_tokens=body.budget_tokens,
                                  session=body.session, as_of=body.as_of, filters=body.filters,
                                  include_active=body.include_active, now=body.now, **_scope(who))
    return ContextOut.from_rendered(rendered, why=body.why)


@router.post("/answer", response_model=AnswerOut, tags=["retrieval"],
             summary="Answer with the configured reader: the one LLM call, on retrieved evidence")
def answer(body: AnswerIn, request: Request, who: CallerDep, mem: MemoryDep) -> AnswerOut:
    reader = request.app.state.reader
    if reader is None:
        raise ApiError(409, "NoReader", "this server has no reader: start it with "
                                        "--reader-url URL --reader-model NAME")
    result = mem.answer(body.query, reader, k=body.k, budget_tokens=body.budget_tokens,
                        calibrate=body.calibrate, **_scope(who))
    reply, calibration, rendered = result.reader, result.calibration, result.context
    return AnswerOut(
        answer=result.text, raw=getattr(reply, "text", str(reply)),
        grounded=calibration.grounded if calibration else None,
        supporting_trace_ids=list(calibration.support) if calibration else [],
        model=getattr(reply, "model", None), prompt_tokens=getattr(reply, "prompt_tokens", None),
        completion_tokens=getattr(reply, "completion_tokens", None),
        context=ContextOut.from_rendered(rendered))


@router.get("/active", response_model=ActiveOut, tags=["lifecycle"],
            summary="Active memory: the budgeted working set (survival score, decay), no LLM")
def active(who: CallerDep, mem: MemoryDep,
           budget_tokens: Annotated[int, Query(ge=1, le=1_000_000)] = 1000,
           as_of: Annotated[str | None, Query(description="replay the memory as of this time")] = None,
           ) -> ActiveOut:
    return ActiveOut.from_active(mem.active(budget_tokens, as_of=as_of, **_scope(who)))


@router.get("/cards", response_model=list[CardOut], tags=["lifecycle"],
            summary="Cards: subject–predicate–object readings of traces, linked to their source")
def cards(who: CallerDep, mem: MemoryDep, session: str | None = None, kind: str | None = None,
          limit: Annotated[int, Query(ge=1, le=10_000)] = 1000) -> list[CardOut]:
    found = mem.cards(session=session, kind=kind, limit=limit, **_scope(who))
    return [CardOut(**{f: getattr(c, f) for f in CardOut.model_fields}) for c in found]


@router.post("/traces/{trace_id}/pin", response_model=TraceOut, tags=["lifecycle"],
             summary="Keep a trace in active memory whatever its score (pinned; unarchived)")
def pin(trace_id: str, who: CallerDep, mem: MemoryDep) -> TraceOut:
    return TraceOut.from_trace(mem.pin(trace_id, **_scope(who)))


@router.post("/traces/{trace_id}/unpin", response_model=TraceOut, tags=["lifecycle"],
             summary="Drop a trace's pin (active memory keeps it only by its score)")
def unpin(trace_id: str, who: CallerDep, mem: MemoryDep) -> TraceOut:
    return TraceOut.from_trace(mem.unpin(trace_id, **_scope(who)))


@router.post("/traces/{trace_id}/archive", response_model=TraceOut, tags=["lifecycle"],
             summary="Take a trace out of active memory (it stays stored and searchable)")
def archive(trace_id: str, who: CallerDep, mem: MemoryDep) -> TraceOut:
    return TraceOut.from_trace(mem.archive(trace_id, **_scope(who)))


@router.post("/traces/{trace_id}/unarchive", response_model=TraceOut, tags=["lifecycle"],
             summary="Drop a trace's archived flag (active memory may hold it again, by its score)")
def unarchive(trace_id: str, who: CallerDep, mem: MemoryDep) -> TraceOut:
    return TraceOut.from_trace(mem.unarchive(trace_id, **_scope(who)))


# -- scope -----------------------------------------------------------------------------------
@router.get("/stats", tags=["scope"], summary="Counts of traces, sessions, events and derived units")
def stats(who: CallerDep, mem: MemoryDep) -> dict[str, Any]:
    counts = dataclasses.asdict(mem.stats(**_scope(who)))
    counts.pop("path", None)  # where the server keeps its file is not the client's business
    # The worker's in-memory indexes (all scopes together: sizes and counts, never names).
    counts["index_cache"] = dataclasses.asdict(retriever_of(mem).cache_stats())
    # Persisted indexes this worker refused (damaged or forged) and rebuilt from the traces.
    counts["snapshots_discarded"] = retriever_of(mem).scopes.snapshots_discarded
    return counts


@router.get("/whoami", tags=["scope"], summary="The scope this API key reads and writes")
def whoami(who: CallerDep) -> dict[str, Any]:
    return {"user": who.scope.user, "agent": who.scope.agent, "key_id": who.key_id}


@router.post("/reindex", tags=["scope"], summary="Rebuild every derived unit of the scope from its traces")
def reindex(who: CallerDep, mem: MemoryDep) -> dict[str, Any]:
    report = mem.reindex(**_scope(who))
    return {"sessions": report.sessions, "units": report.units, "seconds": report.seconds}


@router.get("/export", tags=["scope"], response_class=StreamingResponse,
            summary="The caller's scope as JSON lines (the `zeromem export` format), streamed",
            responses={200: {"content": {"application/x-ndjson": {}},
                             "description": "header, one line per trace (and history), end line"}})
def export_scope(who: CallerDep, mem: MemoryDep,
                 history: Annotated[bool, Query(description="add history events and deleted traces' "
                                                            "tombstones")] = False) -> StreamingResponse:
    # Never the store's secret id key (it would turn any id into a row number of the whole
    # store): such an export imports with new ids. The first line is read here, so a failing
    # store is an error status, not a cut-short body.
    lines = mem.export(history=history, include_id_key=False, **_scope(who))
    first = next(lines)
    return StreamingResponse(itertools.chain([first], lines), media_type="application/x-ndjson",
                             headers={"Content-Disposition": 'attachment; filename="zeromem-export.jsonl"'})


@router.delete("/scope", response_model=DeletedOut, tags=["scope"],
               summary="Delete everything stored in the caller's scope, and only there")
def delete_scope(who: CallerDep, mem: MemoryDep) -> DeletedOut:
    receipt = mem.delete_scope(**_scope(who))
    return DeletedOut(deleted=receipt.traces, receipt=DeleteReceiptOut.from_receipt(receipt))


def _json_object(text: str, name: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{name} must be a JSON object: {exc}") from None
    except RecursionError:  # the parser recurses once per nested array or object
        raise InvalidInput(f"{name} is nested too deeply to read: metadata filters are "
                           "flat {\"key\": value} objects") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{name} must be a JSON object, got {type(value).__name__}")
    return value
