"""zeromem as a LlamaIndex long-term memory block: ``ZeromemMemoryBlock``.

LlamaIndex's ``Memory`` (``llama_index.core.memory.Memory``) keeps a short-term FIFO of chat
messages; when it grows past its token limit, the oldest messages are flushed to its memory
blocks. ``ZeromemMemoryBlock`` stores those flushed messages verbatim as zeromem traces (one
trace per message, in order), and on every ``Memory.get()`` searches them for the latest user
message and hands back the evidence, rendered with provenance (trace ids, sessions, speakers,
dates) within a token budget. Nothing here calls a language model.

    from llama_index.core.memory import Memory as ChatMemory
    from zeromem.integrations.llamaindex import ZeromemMemoryBlock

    block = ZeromemMemoryBlock(memory=Memory("agent.db", user="ana"))
    chat = ChatMemory.from_defaults(session_id="chat-1", memory_blocks=[block])

LlamaIndex is imported on first use of ``ZeromemMemoryBlock`` (``pip install
'zeromem[llamaindex]'``); without it, that name raises ``MissingExtra`` saying what to
install. docs/integrations.md has the details.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ..encoders.token_count import count_budget_tokens
from ..errors import InvalidInput
from ..interfaces.extras import require
from ..memory import Memory
from ..store.validate import MAX_METADATA_BYTES, clean_metadata
from ..types import ROLES, SAME_SCOPE, Evidence
from ._common import check_scope_part, compact_json

__all__ = ["KWARGS_KEY", "ZeromemMemoryBlock", "message_role", "message_text"]  # noqa: F822 - see __getattr__

# The metadata keys of a stored message: its JSON-able ``additional_kwargs``, the names of
# the ones that could not be stored, and (a message longer than one trace) [part, of parts].
KWARGS_KEY = "llamaindex_kwargs"
DROPPED_KEY = "llamaindex_dropped"
PART_KEY = "llamaindex_part"
# At most this much of a trace's metadata (64 KiB) goes to one message's additional_kwargs;
# larger ones are left out and named under DROPPED_KEY (a flush must not fail on them).
_MAX_KWARGS_BYTES = MAX_METADATA_BYTES // 2
# LlamaIndex message roles → zeromem roles.
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "chatbot": "assistant", "model": "assistant", "tool": "tool", "function": "tool"}
_DEFAULT_SESSION = "llamaindex"


# -- messages → traces ---------------------------------------------------------------------------
def message_role(message: Any) -> str:
    """The zeromem role of a LlamaIndex ``ChatMessage`` (``developer`` → ``system``; ``chatbot``
    and ``model`` → ``assistant``; ``function`` → ``tool``)."""
    role = getattr(message.role, "value", message.role)
    return _ROLES.get(str(role), "user")


def message_text(message: Any) -> str:
    """The text a ``ChatMessage`` is stored as (never empty): its blocks in order, text as it
    is; a tool call as ``name(arguments)``; an image, audio, video or document as ``[image]``,
    ``[audio]``, ``[video]``, ``[document TITLE]``; thinking and cache points left out. A
    message with no blocks to show but OpenAI-style ``tool_calls`` in its additional_kwargs
    shows those calls; with nothing at all, ``[empty ROLE message]``."""
    parts = [_block_text(block) for block in message.blocks]
    text = "\n".join(part for part in parts if part)
    if not text.strip():
        text = "\n".join(_legacy_tool_calls(message.additional_kwargs.get("tool_calls")))
    if not text.strip():
        role = getattr(message.role, "value", message.role)
        text = f"[empty {role} message]"
    return text


def _block_text(block: Any) -> str:
    kind = getattr(block, "block_type", "")
    if kind == "text":
        return str(block.text)
    if kind == "tool_call":
        args = block.tool_kwargs
        return f"{block.tool_name}({args if isinstance(args, str) else compact_json(args)})"
    if kind in ("thinking", "cache"):
        return ""  # the model's own reasoning and prompt-cache markers are not what was said
    if kind == "document":
        title = getattr(block, "title", None)
        return f"[document {title}]" if title else "[document]"
    if kind in ("image", "audio", "video"):
        return f"[{kind}]"
    text = getattr(block, "text", None)  # citation blocks and anything newer
    return text if isinstance(text, str) else f"[{kind or type(block).__name__}]"


def _legacy_tool_calls(calls: Any) -> list[str]:
    if not isinstance(calls, Sequence) or isinstance(calls, (str, bytes)):
        return []
    out = []
    for tool_call in calls:
        function = tool_call.get("function") if isinstance(tool_call, Mapping) else getattr(tool_call, "function", None)
        if isinstance(function, Mapping):
            name, args = function.get("name"), function.get("arguments")
        else:
            name, args = getattr(function, "name", None), getattr(function, "arguments", None)
        if name:
            out.append(f"{name}({args if isinstance(args, str) else compact_json(args)})")
    return out



def _kwargs_metadata(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A message's additional_kwargs as trace metadata: each value that zeromem can store as
    JSON (pydantic objects as their JSON form), the names of the others under DROPPED_KEY.
    ``session_id``, which LlamaIndex's Memory writes into every flushed message, is the
    trace's session already and is not repeated."""
    from pydantic_core import to_jsonable_python

    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in kwargs.items():
        if key == "session_id":
            continue
        try:
            plain = to_jsonable_python(value)
            clean_metadata({"value": plain}, field="additional_kwargs")
        except Exception:  # noqa: BLE001 - not storable as JSON: named, not fatal to the flush
            dropped.append(str(key))
            continue
        kept[str(key)] = plain
    out: dict[str, Any] = {}
    if kept and len(compact_json(kept).encode("utf-8")) <= _MAX_KWARGS_BYTES:
        out[KWARGS_KEY] = kept
    elif kept:
        dropped.extend(kept)
    if dropped:
        out[DROPPED_KEY] = sorted(dropped)
    return out


def _split(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut after a whitespace where one is
    near the end of a piece, so that no word is split when it can be helped."""
    pieces = []
    while len(text) > limit:
        cut = limit
        space = max(text.rfind(" ", limit // 2, limit), text.rfind("\n", limit // 2, limit))
        if space > 0:
            cut = space + 1
        pieces.append(text[:cut])
        text = text[cut:]
    pieces.append(text)
    return [piece for piece in pieces if piece.strip()] or pieces[:1]



# -- the block (built on first use: LlamaIndex is an optional dependency) -------------------------
_BLOCK_CLASS: Any = None


def _block_class() -> Any:
    """Define ``ZeromemMemoryBlock`` on LlamaIndex's ``BaseMemoryBlock`` (once)."""
    global _BLOCK_CLASS
    if _BLOCK_CLASS is not None:
        return _BLOCK_CLASS
    require("llamaindex", "zeromem.integrations.llamaindex.ZeromemMemoryBlock")
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import BaseMemoryBlock
    from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, field_validator

    class ZeromemMemoryBlock(BaseMemoryBlock[str]):
        """A LlamaIndex memory block backed by a zeromem ``Memory``: messages flushed from
        short-term memory are stored verbatim, and each ``get`` adds the evidence zeromem
        finds for the latest user message(s), with provenance, within ``budget_tokens``.

        ``memory``: the zeromem Memory; ``user`` / ``agent`` override its scope (nothing is
        read or written outside it). ``session``: the zeromem session messages are stored in
        (None: the LlamaIndex Memory's ``session_id``, else ``"llamaindex"``). ``k``: at most
        this many evidence turns; ``budget_tokens``: their size in zeromem tokens (words and
        punctuation; None for no limit). ``query_messages``: how many of the latest user
        messages form the query. ``this_session_only``: search only the session messages are
        stored in (default: every session of the scope, so earlier conversations are found).
        ``speakers``: zeromem roles → speaker names stored with the traces. ``timestamps``
        (default True): each message's ``event_time`` is when it was flushed (a ChatMessage
        carries no time of its own), so evidence is dated; False stores no time.
        """

        model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True)

        name: str = Field(default="zeromem", description="The name of the memory block.")
        description: str | None = Field(
            default="Long-term memory: earlier messages, verbatim, found by zeromem (no LLM).",
            description="A description of the memory block.")
        memory: Memory = Field(exclude=True, description="The zeromem Memory to store in and search.")
        session: str | None = Field(default=None, description="The zeromem session of stored messages.")
        # strict: "5" or True is not silently taken for a number, nor "yes" for True
        k: int = Field(default=5, ge=1, strict=True, description="At most this many evidence turns.")
        budget_tokens: int | None = Field(default=500, ge=1, strict=True,
                                          description="Evidence size in zeromem tokens (None: no limit).")
        query_messages: int = Field(default=1, ge=1, strict=True,
                                    description="Latest user messages that form the query.")
        this_session_only: bool = Field(default=False, strict=True,
                                        description="Search only the session stored to.")
        speakers: dict[str, str] = Field(default_factory=dict, description="Roles → speaker names.")
        timestamps: bool = Field(default=True, strict=True, description="Store when each message was flushed.")
        user: Any = Field(default=SAME_SCOPE, exclude=True, description="The scope's user.")
        agent: Any = Field(default=SAME_SCOPE, exclude=True, description="The scope's agent.")
        # The evidence behind the last text _aget returned, for atruncate to re-render.
        _last: tuple[str, tuple[Evidence, ...]] = PrivateAttr(default=("", ()))

        def __init__(self, **data: Any) -> None:
            """Keyword arguments are the fields above; a bad one is an InvalidInput."""
            try:
                super().__init__(**data)
            except ValidationError as exc:
                raise InvalidInput(f"ZeromemMemoryBlock: {exc}") from None

        @field_validator("session")
        @classmethod
        def _session(cls, value: str | None) -> str | None:
            if value is not None and not value.strip():
                raise ValueError("session must be a non-empty string or None")
            return value

        @field_validator("speakers")
        @classmethod
        def _speakers(cls, value: dict[str, str]) -> dict[str, str]:
            odd = [role for role in value if role not in ROLES]
            if odd:
                raise ValueError(f"speakers maps roles {ROLES} to speaker names; {odd[0]!r} is not one")
            return value

        @field_validator("user", "agent")
        @classmethod
        def _scope_part(cls, value: Any) -> Any:
            try:
                return check_scope_part(value, "user / agent")
            except InvalidInput as exc:
                raise ValueError(str(exc)) from None

        def _session_for(self, session_id: Any) -> str:
            if self.session is not None:
                return self.session
            return session_id if isinstance(session_id, str) and session_id.strip() else _DEFAULT_SESSION

        async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
            """The evidence for the latest user message(s): zeromem's rendered context (one
            line per turn: ``[trace_id] speaker: text``, grouped by session and date), or ""
            when there is nothing to search for or nothing found."""
            users = [message_text(m) for m in messages or () if message_role(m) == "user"
                     and any(getattr(b, "block_type", "") == "text" for b in m.blocks)]
            query = "\n".join(users[-self.query_messages:]).strip()
            if not query:
                return ""
            session = self._session_for(block_kwargs.get("session_id")) if self.this_session_only else None
            context = await asyncio.to_thread(
                self.memory.render_context, query, k=self.k, budget_tokens=self.budget_tokens,
                session=session, user=self.user, agent=self.agent)
            self._last = (context.text, tuple(context.evidence))
            return context.text

        async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
            """Shrink the block when LlamaIndex's Memory is over its token limit (only for a
            ``priority`` above 0): the same evidence re-rendered in ``tokens_to_truncate``
            fewer zeromem tokens, which keeps the best-ranked turns; None when nothing fits.
            (LlamaIndex counts with its own tokenizer: if the result still counts as too big
            there, it drops the block, as it does for every block.)"""
            text, evidence = self._last
            target = count_budget_tokens(content) - max(int(tokens_to_truncate), 0)
            if text != content or not evidence or target < 1:
                return None
            shorter = await asyncio.to_thread(self.memory.render, list(evidence), budget_tokens=target,
                                              user=self.user, agent=self.agent)
            return shorter.text or None

        async def _aput(self, messages: list[ChatMessage]) -> None:
            """Store the messages, in order, one trace each (a message longer than
            ``Config.max_text_chars`` as several, marked [part, of parts]), in one transaction."""
            limit = self.memory.config.max_text_chars
            when = datetime.now(UTC) if self.timestamps else None
            drafts: list[dict[str, Any]] = []
            for message in messages:
                role = message_role(message)
                session = self._session_for(message.additional_kwargs.get("session_id"))
                metadata = _kwargs_metadata(message.additional_kwargs)
                pieces = _split(message_text(message), limit)
                for index, piece in enumerate(pieces):
                    part = {PART_KEY: [index + 1, len(pieces)]} if len(pieces) > 1 else {}
                    drafts.append({"text": piece, "session": session, "role": role,
                                   "speaker": self.speakers.get(role), "event_time": when,
                                   "metadata": {**metadata, **part}})
            if drafts:
                await asyncio.to_thread(self.memory.add_many, drafts, user=self.user, agent=self.agent)

    ZeromemMemoryBlock.__module__ = __name__
    _BLOCK_CLASS = ZeromemMemoryBlock
    return ZeromemMemoryBlock


def __getattr__(name: str) -> Any:
    """``ZeromemMemoryBlock`` is defined on first access (LlamaIndex is imported then)."""
    if name == "ZeromemMemoryBlock":
        return _block_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
