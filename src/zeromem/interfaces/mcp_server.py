"""An MCP server over ``Memory``: what ``zeromem mcp`` serves to an agent.

Tools: ``remember`` (store one trace), ``recall`` (evidence for a query), ``context`` (the
rendered prompt block), ``forget`` (delete one trace) and ``history`` (a trace's add / update /
delete events) and ``active`` (the agent's budgeted working set, ``Memory.active``: the
memory lifecycle's survival-scored constraints, preferences, states and live thread).

Resources: ``zeromem://sessions`` (the scope's sessions with counts),
``zeromem://sessions/{session}`` (one session's traces, verbatim, in conversation order) and
``zeromem://traces/{trace_id}`` (one trace with its provenance).

The scope (user and/or agent) is fixed when the server is built, from the command line: no
tool or resource takes a user or an agent, so the model can neither choose nor change whose
memory it reads and writes. Every call runs deterministic zeromem code; no LLM is involved.
Errors zeromem raises on purpose (``ZeromemError``: bad input, unknown id...) reach the client
as tool errors carrying the library's message, which says how to fix the call.
"""

import contextlib
import dataclasses
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, Literal
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
)
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from .. import __version__
from ..errors import NotFound, ZeromemError
from ..memory import Memory
from ..types import Evidence, Trace

MAX_RECALL_K = 50
SESSIONS_URI = "zeromem://sessions"
SESSION_URI = "zeromem://sessions/{session}"
TRACE_URI = "zeromem://traces/{trace_id}"
_NOW = ("when the question is asked (ISO 8601, e.g. 2024-03-14T20:00): 'two days ago', 'last "
        "week', 昨天 in the query count from that day; without it they are not resolved")
_AS_OF = "answer as of this time (ISO 8601): later messages are hidden"

_INSTRUCTIONS = """\
Long-term memory for one user/agent scope (chosen by whoever started this server; you cannot
change it). Messages are stored verbatim with provenance (trace id, session, speaker, time) in
an embedded SQLite file. Every operation (storing, indexing, searching, deleting) is
deterministic code: no LLM reads, summarizes or rewrites anything. Call `remember` for each
message worth keeping, `recall` to find evidence before answering from memory, `context` for a
ready-to-paste prompt block, `forget` to delete a trace, `history` to see how a trace changed.
Quote or cite trace ids (e.g. t4k2x9q7m) when you rely on recalled evidence."""

Role = Literal["user", "assistant", "tool", "system"]


class Stored(BaseModel):
    """What ``remember`` returns."""

    trace_id: str = Field(description="the new trace's id, e.g. 't4k2x9q7m'; cite it, or pass it to forget/history")
    session: str | None = Field(description="the session the trace was stored in")


class Source(BaseModel):
    """Where one piece of evidence came from: one stored trace."""

    trace_id: str
    session: str | None
    speaker: str | None
    time: str | None = Field(description="event time, else session time (ISO 8601); null if undated")
    source_id: str | None = Field(description="the caller's own id of the message, if one was given")


class EvidenceItem(BaseModel):
    """One retrieved turn: verbatim text, its provenance and why it was chosen."""

    trace_id: str = Field(description="the id of the stored message; cite it, or pass it to forget/history")
    text: str = Field(description="the stored message, verbatim")
    score: float
    provenance: Source
    why: dict[str, str | float] = Field(
        description="compact score breakdown: reason (primary / ranked / a closure reason), "
                    "route, and the signals (graph, ppr, lexical_refinement, hierarchy, "
                    "dense_cosine, compatibility), rounded")
    annotations: list[str] = Field(description="resolved dates of relative expressions, beside the text")
    superseded_by: str | None = Field(description="id of a newer trace that updates this one, if any")


class Recalled(BaseModel):
    """What ``recall`` returns."""

    query: str
    evidence: list[EvidenceItem] = Field(description="best first")
    no_answer_score: float = Field(
        description="0..1; how likely memory holds no answer (the evidence covers little of the "
                    "query, is far in meaning, misses its names or was said by someone else); "
                    "at or above zeromem.retrieval.calibrate.NO_ANSWER_THRESHOLD: probably none")
    no_answer: bool = Field(False, description="no_answer_score is at or above that threshold: memory "
                                               "probably holds no answer; say so instead of guessing")


class ContextBlock(BaseModel):
    """What ``context`` returns."""

    text: str = Field(description="the prompt block: evidence grouped by session, chronological, dated")
    tokens: int = Field(description="its size in word-and-punctuation tokens")
    trace_ids: list[str] = Field(description="ids of the traces the block shows, best first")


class Forgotten(BaseModel):
    """What ``forget`` returns."""

    deleted: str = Field(description="the id of the deleted trace")


class Event(BaseModel):
    """One change to a trace."""

    event: str = Field(description="add, update or delete")
    at: str = Field(description="when it happened (ISO 8601, UTC)")
    old_text: str | None
    new_text: str | None
    old_metadata: dict[str, Any] | None
    new_metadata: dict[str, Any] | None


class History(BaseModel):
    """What ``history`` returns."""

    trace_id: str
    events: list[Event] = Field(description="oldest first")


def build_server(memory: Memory, *, user: str | None, agent: str | None,
                 name: str = "zeromem") -> MCPServer:
    """An MCP server exposing ``memory`` in the scope (``user``, ``agent``) and no other.

    The caller owns ``memory`` (and closes it); the server only calls it. Run the result with
    ``server.run("stdio")`` or ``server.run("streamable-http", host=..., port=...)``.
    """
    scope: dict[str, Any] = {"user": user, "agent": agent}
    server: MCPServer = MCPServer(
        name, instructions=_INSTRUCTIONS, version=__version__,
        # A stdio server's stderr is shown to the person running the agent: per-request INFO
        # lines from the SDK would bury the warnings that matter.
        log_level="WARNING")

    def tool(title: str, **hints: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        # The docstring is written for the model; getdoc strips the indentation it would see.
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            server.add_tool(fn, title=title, description=inspect.getdoc(fn),
                            annotations=ToolAnnotations(title=title, open_world_hint=False, **hints),
                            structured_output=True)
            return fn
        return register

    @tool("Remember a message", read_only_hint=False, destructive_hint=False, idempotent_hint=False)
    def remember(
        text: Annotated[str, Field(description="the message, stored exactly as given")],
        session: Annotated[str | None, Field(description="conversation/session id it belongs to")] = None,
        speaker: Annotated[str | None, Field(description="who said it, e.g. 'Priya'")] = None,
        role: Annotated[Role | None, Field(description="user, assistant, tool or system (default user)")] = None,
        session_time: Annotated[str | None, Field(
            description="when the session took place: ISO 8601 or e.g. '7:12 pm on 14 March, 2023'")] = None,
        event_time: Annotated[str | None, Field(description="when this message was said, if known")] = None,
        metadata: Annotated[dict[str, Any] | None, Field(
            description="free JSON object kept with the trace, e.g. {\"topic\": \"pets\"}")] = None,
    ) -> Stored:
        """Store one message in long-term memory, verbatim, and get its trace id back.

        Call it for every message worth remembering (the user's statements, facts, preferences,
        decisions, tool results), one call per message, with the session and speaker so that
        later evidence carries its provenance. Nothing is summarized or rewritten and no LLM is
        involved: the text is indexed by deterministic code and can be recalled right away.
        Returns {trace_id, session}.
        """
        with _tool_errors():
            trace_id = memory.add(text, session=session, speaker=speaker, role=role,
                                  session_time=session_time, event_time=event_time,
                                  metadata=metadata, **scope)
        return Stored(trace_id=trace_id, session=session)

    @tool("Recall evidence", read_only_hint=True)
    def recall(
        query: Annotated[str, Field(description="the question or cue, in natural language")],
        k: Annotated[int, Field(ge=1, le=MAX_RECALL_K, description="at most this many turns")] = 10,
        session: Annotated[str | None, Field(description="search only this session")] = None,
        now: Annotated[str | None, Field(description=_NOW)] = None,
        as_of: Annotated[str | None, Field(description=_AS_OF)] = None,
    ) -> Recalled:
        """Search long-term memory for evidence about a question, before answering from memory.

        Returns at most k stored messages, best first, each verbatim with its provenance (trace
        id, session, speaker, time), a score, a compact `why` (which signals chose it) and
        annotations such as resolved dates ("last week" = 2023-05-01..07). `superseded_by`
        marks a message that a newer one updates (the newest state wins). `no_answer_score`
        near 1 means memory probably does not hold the answer: say so instead of guessing.
        Retrieval is deterministic code (lexical, dense, entity graph); no LLM is involved.
        """
        with _tool_errors():
            result = memory.search_detailed(query, k=k, session=session, now=now, as_of=as_of, **scope)
        return Recalled(query=query, evidence=[_evidence(ev) for ev in result.evidence],
                        no_answer_score=result.no_answer_score, no_answer=result.no_answer)

    @tool("Memory context block", read_only_hint=True)
    def context(
        query: Annotated[str, Field(description="the question the block should help answer")],
        k: Annotated[int, Field(ge=1, le=MAX_RECALL_K, description="at most this many turns")] = 10,
        budget_tokens: Annotated[int, Field(ge=1, description="the block's size limit in tokens")] = 2000,
        session: Annotated[str | None, Field(description="use only this session")] = None,
        now: Annotated[str | None, Field(description=_NOW)] = None,
        as_of: Annotated[str | None, Field(description=_AS_OF)] = None,
    ) -> ContextBlock:
        """The evidence for a question as one prompt block, ready to put in your context.

        Same retrieval as `recall`, rendered chronologically, grouped by session with dates,
        each line `[trace id] speaker: verbatim text`, within budget_tokens (the best evidence
        is kept first). Returns {text, tokens, trace_ids}. No LLM is involved.
        """
        with _tool_errors():
            rendered = memory.render_context(query, k=k, budget_tokens=budget_tokens,
                                             session=session, now=now, as_of=as_of, **scope)
        return ContextBlock(text=rendered.text, tokens=rendered.tokens,
                            trace_ids=[ev.trace_id for ev in rendered.evidence])

    @tool("Forget a trace", read_only_hint=False, destructive_hint=True, idempotent_hint=False)
    def forget(trace_id: Annotated[str, Field(description="the trace id, e.g. 't4k2x9q7m'")]) -> Forgotten:
        """Delete one stored message by its trace id (from remember or recall).

        It leaves every index at once: recall and context no longer return it. Its history
        keeps a 'delete' event and its time, not the text (erased). An unknown id is an error. Returns {deleted}.
        No LLM is involved.
        """
        with _tool_errors():
            memory.delete(trace_id, **scope)
        return Forgotten(deleted=trace_id)

    @tool("Trace history", read_only_hint=True)
    def history(trace_id: Annotated[str, Field(description="the trace id, e.g. 't4k2x9q7m'")]) -> History:
        """Every change to one stored message, oldest first: add, update, delete.

        Each event has its time and the text and metadata before and after, so you can see what
        a trace said before it was corrected or deleted (texts verbatim). Returns
        {trace_id, events}. No LLM is involved.
        """
        with _tool_errors():
            events = memory.history(trace_id, **scope)
        return History(trace_id=trace_id, events=[
            Event(event=e.event, at=e.at, old_text=e.old_text, new_text=e.new_text,
                  old_metadata=e.old_metadata, new_metadata=e.new_metadata) for e in events])

    if callable(getattr(memory, "active", None)):
        @tool("Active memory", read_only_hint=True)
        def active(
            budget_tokens: Annotated[int | None, Field(
                ge=1, description="size of the working set in tokens (the library default if omitted)")] = None,
        ) -> dict[str, Any]:
            """The working set of memory that currently stays active for this scope.

            What deterministic scoring keeps within the token budget (constraints and
            preferences last longest, acknowledgements leave first); nothing is lost: evicted
            messages stay recallable. Returns {active: ...}. No LLM is involved.
            """
            with _tool_errors():
                result = (memory.active(**scope) if budget_tokens is None
                          else memory.active(budget_tokens=budget_tokens, **scope))
            return {"active": _jsonable(result)}

    @server.resource(SESSIONS_URI, name="sessions", title="Sessions in this memory",
                     description="The scope's sessions in conversation order, with their trace "
                                 "counts, first and last times and the URI of each.",
                     mime_type="application/json")
    def sessions() -> dict[str, Any]:
        with _resource_errors():
            listed = memory.sessions(**scope)
        # Traces without a session have no session resource; read them one by one.
        entries = [{**dataclasses.asdict(entry),
                    "uri": None if entry.session is None else session_uri(entry.session)} for entry in listed]
        return {**scope, "traces": sum(e["traces"] for e in entries), "sessions": entries}

    @server.resource(SESSION_URI, name="session", title="One session's traces",
                     description="Every trace of one session, verbatim with provenance, in "
                                 "conversation order.", mime_type="application/json")
    def session_traces(session: str) -> dict[str, Any]:
        with _resource_errors():
            traces = memory.list(session=session, **scope)
        if not traces:
            raise ResourceNotFoundError(f"no session {session!r} in this memory; read "
                                        f"{SESSIONS_URI} for the sessions there are")
        return {"session": session, "traces": [_trace(t) for t in traces]}

    @server.resource(TRACE_URI, name="trace", title="One trace",
                     description="One stored trace: verbatim text, session, speaker, role, "
                                 "times, source id, metadata, attachments.",
                     mime_type="application/json")
    def trace(trace_id: str) -> dict[str, Any]:
        with _resource_errors():
            return _trace(memory.get(trace_id, **scope))

    return server


def session_uri(session: str) -> str:
    """The resource URI of one session (its id percent-encoded, so any id fits)."""
    return SESSION_URI.replace("{session}", quote(session, safe=""))


def trace_uri(trace_id: str) -> str:
    """The resource URI of one trace."""
    return TRACE_URI.replace("{trace_id}", quote(trace_id, safe=""))


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    # ToolError is the SDK's "anticipated failure": its message reaches the model, whereas
    # any other exception is reported as a bare "Error executing tool ...".
    try:
        yield
    except ZeromemError as exc:
        raise ToolError(str(exc)) from exc


@contextlib.contextmanager
def _resource_errors() -> Iterator[None]:
    try:
        yield
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except ZeromemError as exc:
        raise ResourceError(str(exc)) from exc


def _evidence(ev: Evidence) -> EvidenceItem:
    return EvidenceItem(
        trace_id=ev.trace_id, text=ev.text, score=ev.score,
        provenance=Source(trace_id=ev.provenance.trace_id, session=ev.provenance.session,
                          speaker=ev.provenance.speaker, time=ev.provenance.time,
                          source_id=ev.provenance.source_id),
        why=_compact_why(ev.why), annotations=list(ev.annotations), superseded_by=ev.superseded_by)


def _compact_why(why: Mapping[str, Any]) -> dict[str, str | float]:
    # The per-level hierarchy scores (h_turn, h_span...) are already summed into 'hierarchy';
    # three decimals are enough to compare items and keep the answer short for the model.
    out: dict[str, str | float] = {}
    for key, value in why.items():
        if key.startswith("h_"):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            out[key] = str(value)
        else:
            out[key] = round(float(value), 3)
    return out


def _trace(trace: Trace) -> dict[str, Any]:
    return {**_jsonable(trace), "uri": trace_uri(trace.id)}


def _jsonable(value: Any) -> Any:
    """Dataclasses, mappings and sequences as plain JSON values (unknown objects as text)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    return str(value)
