"""zeromem inside the OpenAI Agents SDK: a ``Session`` that keeps a run's items as traces, and
tools that let the model search (and write) long-term memory. No LLM is called by any of it.

``ZeromemSession`` implements the SDK's ``Session`` protocol (``agents.memory.Session``):
``Runner.run(agent, input, session=ZeromemSession("chat-1", memory))`` stores every input item
the run produces (user messages, the model's messages, tool calls, tool outputs, reasoning
items) as one zeromem trace each, in the session ``"chat-1"`` of the memory's scope, and gives
them back, exactly as they were stored, to the next run. Each trace holds the item's readable
text (searchable like any other trace) and the item itself in its metadata (``ITEM_KEY``), so
``get_items`` returns dicts equal to the ones ``add_items`` received.

``recall_tool`` is a ``FunctionTool`` that searches the memory's scope (every session, not only
the current one) and returns the evidence as JSON text with its provenance; ``remember_tool``
stores a note the model wants to keep. ``recall`` is the same search as a plain function.

The SDK is imported on first use (``pip install 'zeromem[agents]'``); without it, every entry
point raises ``MissingExtra`` saying what to install. docs/integrations.md has the details.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from ..errors import InvalidInput, NotFound
from ..interfaces.extras import require
from ..memory import Memory
from ..store.validate import MAX_METADATA_BYTES
from ..types import ROLES, SAME_SCOPE, Evidence, SameScope, TimeLike, Trace
from ._common import check_scope_part, compact_json

if TYPE_CHECKING:
    from agents import FunctionTool
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings

__all__ = ["ITEM_KEY", "TEXT_FIELD_KEY", "ZeromemSession", "item_role", "item_text", "recall",
           "recall_tool", "remember_tool"]

# The metadata key under which a trace keeps its Agents SDK item (minus the field that the
# trace's text already holds, named under TEXT_FIELD_KEY; see _to_draft). Reserved: a trace
# carrying ITEM_KEY is read back as that item.
ITEM_KEY = "agents_item"
TEXT_FIELD_KEY = "agents_text_field"

# Items of these types are written by a tool (the SDK's *_output items, an approval answer).
_TOOL_ITEM_TYPES = frozenset({"mcp_approval_response", "mcp_list_tools"})
# Message roles of the Responses API → zeromem roles (developer instructions are system text).
_MESSAGE_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
# Keys that identify an item rather than say anything: left out of the generic text form.
_ID_KEYS = frozenset({"type", "id", "call_id", "status", "encrypted_content"})

# How many results ``recall`` asks for at most while it looks past an excluded session.
_MAX_RECALL_FETCH = 1000
_RECALL_DESCRIPTION = (
    "Search long-term memory (earlier conversations and stored notes) for what was said about "
    "something. Returns JSON: the query and a list of evidence, best first, each a verbatim "
    "stored message with its trace_id, session, speaker, time and score. Cite trace_ids when "
    "you rely on them; an empty list means nothing relevant is stored.")
_REMEMBER_DESCRIPTION = (
    "Store a fact or note in long-term memory, verbatim, so that later conversations can "
    "recall it. Write one self-contained statement. Returns JSON with the stored trace_id.")


# -- items ↔ traces ---------------------------------------------------------------------------
def item_role(item: Mapping[str, Any]) -> str:
    """The zeromem role of an Agents SDK item: a message keeps its role (``developer`` is
    ``system``); a tool's output (``function_call_output`` and every other ``*_output``) is
    ``tool``; what the model produces (calls, reasoning, anything else) is ``assistant``."""
    kind = item.get("type")
    role = item.get("role")
    if (kind is None or kind == "message") and isinstance(role, str) and role in _MESSAGE_ROLES:
        return _MESSAGE_ROLES[role]
    if isinstance(kind, str) and (kind.endswith("_output") or kind in _TOOL_ITEM_TYPES):
        return "tool"
    return "assistant"


def item_text(item: Mapping[str, Any]) -> str:
    """The readable, searchable text of an Agents SDK item (never empty).

    A message: its text (content parts joined by newlines; a refusal's text; ``[image]``,
    ``[audio]``, ``[file NAME]`` for media). A function or custom tool call:
    ``name(arguments)``. A tool output: its output. Reasoning: its summary. Anything else:
    ``[type]`` and the item's other fields as compact JSON (inline data URLs shown as
    ``[inline data]``). Where that leaves nothing to show
    (an empty message, reasoning without a summary), a bracketed placeholder such as
    ``[reasoning]`` or ``[empty assistant message]``: zeromem stores no empty text, and the
    item itself is kept whole in the trace's metadata either way.
    """
    kind = item.get("type")
    kind_name = kind if isinstance(kind, str) and kind else "item"
    if (kind is None or kind == "message") and "role" in item:
        text = _content_text(item.get("content"))
        return text if _shows(text) else f"[empty {item.get('role')} message]"
    if kind in ("function_call", "custom_tool_call"):
        args = item.get("arguments") if kind == "function_call" else item.get("input")
        return f"{item.get('name')}({args if isinstance(args, str) else compact_json(args)})"
    if kind in ("function_call_output", "custom_tool_call_output"):
        text = _content_text(item.get("output"))
        return text if _shows(text) else f"[empty {kind} output]"
    if kind == "reasoning":
        text = "\n".join(part.get("text", "") for part in item.get("summary") or ()
                         if isinstance(part, Mapping) and isinstance(part.get("text"), str))
        return text if _shows(text) else "[reasoning]"
    rest = {key: _without_inline_data(value) for key, value in item.items() if key not in _ID_KEYS}
    return f"[{kind_name}] {compact_json(rest)}" if rest else f"[{kind_name}]"


def _without_inline_data(value: Any) -> Any:
    """``value`` with inline data URLs (a screenshot, a file) shown as ``[inline data]``: they
    are bytes, not words to search (the item in the metadata keeps them)."""
    if isinstance(value, str):
        return "[inline data]" if value.startswith("data:") else value
    if isinstance(value, Mapping):
        return {key: _without_inline_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_inline_data(item) for item in value]
    return value


def _content_text(content: Any) -> str:
    """A message's (or tool output's) content as text: a string as it is, parts joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence):
        return "" if content is None else compact_json(content)
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping):
            parts.append(_part_text(part))
    return "\n".join(part for part in parts if part)


def _part_text(part: Mapping[str, Any]) -> str:
    kind = str(part.get("type", ""))
    for key in ("text", "refusal"):
        if isinstance(part.get(key), str):
            return str(part[key])
    if kind in ("input_image", "output_image"):
        return "[image]"
    if kind == "input_audio":
        return "[audio]"
    if kind == "input_file":
        name = part.get("filename")
        return f"[file {name}]" if isinstance(name, str) and name else "[file]"
    return f"[{kind}]" if kind else ""


def _shows(text: str) -> bool:
    return bool(text.strip())



def _to_draft(item: Any, index: int, session: str, speakers: Mapping[str, str],
              event_time: TimeLike) -> dict[str, Any]:
    """One item as a trace draft. When the text is exactly one string field of the item (a
    message's ``content``, a tool's ``output``), the metadata keeps the item without it and
    names the field: a long tool output is then stored once, in the text, where its limit is
    ``Config.max_text_chars``, instead of also counting against the 64 KiB of metadata."""
    if not isinstance(item, Mapping):
        raise InvalidInput(f"session item #{index} must be a dict (a TResponseInputItem), "
                           f"got {type(item).__name__}")
    text = item_text(item)
    role = item_role(item)
    stored = dict(item)
    metadata: dict[str, Any] = {}
    for field in ("content", "output"):
        if stored.get(field) == text and isinstance(stored.get(field), str):
            del stored[field]
            metadata[TEXT_FIELD_KEY] = field
            break
    metadata[ITEM_KEY] = stored
    size = len(compact_json(metadata).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise InvalidInput(
            f"session item #{index} ({item.get('type') or 'message'}) is {size} bytes as JSON "
            f"besides its text, over the {MAX_METADATA_BYTES}-byte (64 KiB) limit of a trace's "
            "metadata, where ZeromemSession keeps it; nothing was stored. Pass large media by "
            "URL or file id rather than inline data")
    return {"text": text, "session": session, "role": role, "speaker": speakers.get(role),
            "event_time": event_time, "metadata": metadata}


def _to_item(trace: Trace) -> dict[str, Any]:
    """The item a trace holds. A trace written by other means (``Memory.add``, an import)
    comes back as a plain message; a ``tool`` trace as an assistant one, since the Responses
    API has no message role for a tool and a tool output needs the call it answers."""
    stored = trace.metadata.get(ITEM_KEY)
    if isinstance(stored, dict):
        item = dict(stored)
        field = trace.metadata.get(TEXT_FIELD_KEY)
        if isinstance(field, str):
            item[field] = trace.text
        return item
    role = trace.role if trace.role in ("user", "assistant", "system") else "assistant"
    return {"role": role, "content": trace.text}



class ZeromemSession:
    """The Agents SDK's ``Session`` protocol on a zeromem ``Memory``.

    ``session_id`` names the zeromem session the items go to, in the memory's own scope
    (``user`` / ``agent`` override it, as in every ``Memory`` method). Every item is one trace,
    in order (the traces' ``seq``); ``get_items`` returns the stored items, equal to what
    ``add_items`` received; ``pop_item`` deletes the latest trace (its text is erased, as
    ``Memory.delete`` does); ``clear_session`` deletes the session's traces.

    ``speakers`` maps zeromem roles to speaker names stored with the traces (e.g.
    ``{"user": "Ana", "assistant": "Helper"}``): zeromem's retrieval links a turn to who said
    it. ``timestamps`` (default True) stores when each batch was added as the traces'
    ``event_time``, so evidence carries a time and "what did I say yesterday" can be
    answered; False stores no time. ``session_settings`` is the SDK's ``SessionSettings``
    (or a dict): its ``limit`` is how many of the latest items ``get_items()`` returns.

    The SDK calls the methods from its event loop; each runs the (blocking) store call in a
    worker thread, so the loop is never held by a write or a read.
    """

    session_id: str
    session_settings: SessionSettings | None

    def __init__(self, session_id: str, memory: Memory, *, user: str | SameScope | None = SAME_SCOPE,
                 agent: str | SameScope | None = SAME_SCOPE, speakers: Mapping[str, str] | None = None,
                 timestamps: bool = True,
                 session_settings: SessionSettings | Mapping[str, Any] | None = None) -> None:
        require("agents", "zeromem.integrations.openai_agents.ZeromemSession")
        from agents.memory.session_settings import SessionSettings, coerce_session_settings

        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInput(f"session_id must be a non-empty string, got {session_id!r}")
        if not isinstance(memory, Memory):
            raise InvalidInput(f"memory must be a zeromem Memory, got {type(memory).__name__}")
        if not isinstance(timestamps, bool):
            raise InvalidInput(f"timestamps must be True or False, got {timestamps!r}")
        speakers = dict(speakers or {})
        odd = [role for role, name in speakers.items() if role not in ROLES or not isinstance(name, str)]
        if odd:
            raise InvalidInput(f"speakers maps roles {ROLES} to speaker names; {odd[0]!r} is not one")
        self.session_id = session_id
        self.memory = memory
        self._user = check_scope_part(user, "user")
        self._agent = check_scope_part(agent, "agent")
        self._speakers = speakers
        self._timestamps = timestamps
        try:
            self.session_settings = (SessionSettings() if session_settings is None
                                     else coerce_session_settings(dict(session_settings)
                                                                  if isinstance(session_settings, Mapping)
                                                                  else session_settings))
        except Exception as exc:  # noqa: BLE001 - the SDK's own validation error, re-worded
            raise InvalidInput(f"session_settings is not valid SessionSettings: {exc}") from None

    def __repr__(self) -> str:
        return f"ZeromemSession({self.session_id!r}, {self.memory.path!r})"

    # -- the Session protocol --------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items in chronological order: all of them, or the latest ``limit``
        (``None``: ``session_settings.limit``, itself None for all)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidInput(f"limit must be a non-negative int or None, got {limit!r}")
        if limit == 0:
            return []
        traces = await asyncio.to_thread(self._latest, limit)
        return cast("list[TResponseInputItem]", [_to_item(trace) for trace in traces])

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store the items, in order, in one transaction: all of them or (on an error) none."""
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise InvalidInput("add_items takes a list of items (TResponseInputItem dicts)")
        if not items:
            return
        when = datetime.now(UTC) if self._timestamps else None
        drafts = [_to_draft(item, index, self.session_id, self._speakers, when)
                  for index, item in enumerate(items)]
        await asyncio.to_thread(self.memory.add_many, drafts, user=self._user, agent=self._agent)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the latest item and return it (None when the session is empty). Its trace is
        deleted and its text erased, as ``Memory.delete`` does."""
        return cast("TResponseInputItem | None", await asyncio.to_thread(self._pop))

    async def clear_session(self) -> None:
        """Delete every item of this session (and only of this session), erasing their text."""
        await asyncio.to_thread(self._clear)

    # -- blocking halves, run in a worker thread -------------------------------------------------
    def _count(self) -> int:
        for info in self.memory.sessions(user=self._user, agent=self._agent):
            if info.session == self.session_id:
                return info.traces
        return 0

    def _latest(self, limit: int | None) -> list[Trace]:
        if limit is None:
            return self.memory.list(session=self.session_id, user=self._user, agent=self._agent)
        offset = max(0, self._count() - limit)
        return self.memory.list(session=self.session_id, limit=limit, offset=offset,
                                user=self._user, agent=self._agent)

    def _pop(self) -> dict[str, Any] | None:
        while True:  # another writer may pop the same trace first: then take the next one
            latest = self._latest(1)
            if not latest:
                return None
            try:
                self.memory.delete(latest[0].id, user=self._user, agent=self._agent)
            except NotFound:
                continue
            return _to_item(latest[0])

    def _clear(self) -> None:
        with contextlib.suppress(NotFound):  # nothing stored yet: already clear
            self.memory.delete_session(self.session_id, user=self._user, agent=self._agent)


# -- tools -----------------------------------------------------------------------------------
def _tool_error(ctx: Any, error: Exception) -> str:
    """What the model reads when a tool call fails. zeromem's InvalidInput says what was wrong
    with the arguments (an empty or over-long query) and how to fix it, so the model sees it;
    any other failure gets the SDK's default message, which discloses nothing."""
    if isinstance(error, InvalidInput):
        return f"The call was refused: {error}"
    from agents.tool import default_tool_error_function

    return default_tool_error_function(ctx, error)


def _evidence_json(ev: Evidence) -> dict[str, Any]:
    out: dict[str, Any] = {"trace_id": ev.trace_id, "session": ev.session, "speaker": ev.speaker,
                           "time": ev.time, "score": round(ev.score, 4), "text": ev.text}
    if ev.superseded_by:
        out["superseded_by"] = ev.superseded_by  # a newer trace updates this one
    return out


def recall(memory: Memory, query: str, *, k: int = 5, session: str | None = None,
           exclude_session: str | None = None, now: TimeLike = None,
           user: str | SameScope | None = SAME_SCOPE, agent: str | SameScope | None = SAME_SCOPE) -> str:
    """What ``recall_tool`` returns to the model, as a plain function: ``memory.search``'s
    evidence as JSON text, ``{"query": ..., "evidence": [{"trace_id", "session", "speaker",
    "time", "score", "text"}, ...]}`` (and ``superseded_by`` where a newer trace updates one).

    ``session`` keeps one session's traces; ``exclude_session`` leaves one out (typically the
    conversation the model is in, whose question would otherwise come back as its own best
    match); the search then asks for more results until ``k`` others are found or the scope
    has no more.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be a positive int, got {k!r}")
    asked = k
    while True:
        found = memory.search(query, k=asked, session=session, now=now, user=user, agent=agent)
        evidence = [ev for ev in found if exclude_session is None or ev.session != exclude_session]
        if len(evidence) >= k or len(found) < asked or asked >= _MAX_RECALL_FETCH:
            break
        asked = min(asked * 4, _MAX_RECALL_FETCH)
    return json.dumps({"query": query, "evidence": [_evidence_json(ev) for ev in evidence[:k]]},
                      ensure_ascii=False)


def recall_tool(memory: Memory, *, k: int = 5, session: str | None = None,
                exclude_session: str | None = None, name: str = "recall",
                description: str | None = None, clock: Callable[[], TimeLike] | None = None,
                user: str | SameScope | None = SAME_SCOPE,
                agent: str | SameScope | None = SAME_SCOPE) -> FunctionTool:
    """A ``FunctionTool`` (``Agent(tools=[recall_tool(memory)])``) that searches the memory's
    scope for the model's ``query`` and returns at most ``k`` evidence items as JSON text (see
    ``recall``). ``session`` limits it to one session, ``exclude_session`` leaves one out
    (pass the ``ZeromemSession``'s id: the model already sees that conversation). ``clock``
    (e.g. ``lambda: datetime.now(UTC)``) is asked for ``now`` at each call, so "yesterday" in
    a query means the day before the call (without it, relative dates are not resolved). A
    bad query (empty, too long) comes back to the model as the SDK's tool error message."""
    require("agents", "zeromem.integrations.openai_agents.recall_tool")
    from agents import function_tool

    if not isinstance(memory, Memory):
        raise InvalidInput(f"memory must be a zeromem Memory, got {type(memory).__name__}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be a positive int, got {k!r}")
    user, agent = check_scope_part(user, "user"), check_scope_part(agent, "agent")

    async def search_memory(query: str) -> str:
        """Search long-term memory.

        Args:
            query: What to look for, as a question or keywords (e.g. "Where does Ana live?").
        """
        now = clock() if clock is not None else None
        return await asyncio.to_thread(recall, memory, query, k=k, session=session,
                                       exclude_session=exclude_session, now=now, user=user, agent=agent)

    return function_tool(search_memory, name_override=name, failure_error_function=_tool_error,
                         description_override=description or _RECALL_DESCRIPTION)


def remember_tool(memory: Memory, *, session: str = "agent-notes", speaker: str | None = None,
                  name: str = "remember", description: str | None = None,
                  user: str | SameScope | None = SAME_SCOPE,
                  agent: str | SameScope | None = SAME_SCOPE) -> FunctionTool:
    """A ``FunctionTool`` with which the model stores a note verbatim (role ``assistant``, in
    ``session``, with ``speaker``, timed now) and gets back ``{"trace_id": ...}``."""
    require("agents", "zeromem.integrations.openai_agents.remember_tool")
    from agents import function_tool

    if not isinstance(memory, Memory):
        raise InvalidInput(f"memory must be a zeromem Memory, got {type(memory).__name__}")
    if not isinstance(session, str) or not session.strip():
        raise InvalidInput(f"session must be a non-empty string, got {session!r}")
    user, agent = check_scope_part(user, "user"), check_scope_part(agent, "agent")

    async def store_note(text: str) -> str:
        """Store a note in long-term memory.

        Args:
            text: The fact or note to keep, as one self-contained statement.
        """
        trace_id = await asyncio.to_thread(memory.add, text, session=session, speaker=speaker,
                                           role="assistant", event_time=datetime.now(UTC),
                                           user=user, agent=agent)
        return json.dumps({"trace_id": trace_id})

    return function_tool(store_note, name_override=name, failure_error_function=_tool_error,
                         description_override=description or _REMEMBER_DESCRIPTION)
