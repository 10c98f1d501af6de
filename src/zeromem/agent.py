"""The agent-loop helper: one user turn in, one reader call, one reply out, with the tokens
accounted: the reader's tokens against stuffing the whole history into the prompt.

Per turn, :meth:`AgentLoop.turn`

1. stores the user's message verbatim as a trace (session, speaker, ``role="user"``, the
   session's start time and the turn's own time) — before anything can fail, so a reader
   error loses nothing;
2. builds the prompt inside ONE token budget: active memory first (``Memory.active``, DMF's
   working set, without this session's turns, which the live thread shows), then the live thread
   (the session's last turns, verbatim, in order, newest kept first when the budget is tight)
   and the evidence ``Memory.search_detailed`` finds for the user's text, best first, rendered by
   ``Memory.render``; a trace already shown (the live thread, active memory, the turn itself)
   is never repeated;
3. calls the reader once: ``reader.chat(messages)`` with exactly the messages counted (the
   agent prompt of ``zeromem.reader.prompt.build_agent_messages`` unless ``prompt_builder``
   says otherwise), or ``reader.answer(user_text, context)`` for a reader without ``chat``;
4. stores the reply as a trace (``role="assistant"``);
5. returns the reply with its accounting (:class:`TurnResult`) and adds it to
   :attr:`AgentLoop.totals`.

Token counts. The budget, the prompt as the loop sees it and the "stuff the whole history
into the prompt" baseline are all counted by one tokenizer, :func:`zeromem.encoders.token_count.
load_token_counter`: the WordPiece vocabulary of the default embedding model, shipped with
zeromem (no download), or a regex word counter when that file is absent; ``TurnResult.tokenizer``
names which. WordPiece splits rare words and numbers into pieces the way an LLM's BPE does, so it
tracks a server's count more closely than the memory's budget unit (``token_count.
count_budget_tokens``: whole words and punctuation), which undercounts; it is also the counter
``zeromem bench`` reports contexts with, so numbers from both are comparable. The reader's own
prompt and completion tokens come from the server's ``usage`` when it sends one; otherwise they
are counted with the same tokenizer and ``usage_estimated`` is set. The saving compares baseline and prompt in the SAME
tokenizer (``saved_tokens = baseline_tokens - prompt_tokens_counted``): the server's tokenizer
is unknown here, and a difference across two tokenizers would mean nothing.

Memory operations spend zero LLM calls: the process-wide counter of ``zeromem.reader.base`` is
read before and after each stretch of memory work (never around the reader call) and
:func:`~zeromem.reader.base.assert_no_llm_calls` raises ``LLMForbidden`` if it moved. That
counter is process-wide, so another thread calling a reader at the same moment would be
blamed too: run one loop per process, or at least no reader calls beside it.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .encoders.token_count import load_token_counter
from .errors import InvalidInput, LLMForbidden
from .lifecycle.active import entry_line
from .memory import Memory
from .reader.base import assert_no_llm_calls, usage
from .reader.prompt import build_agent_messages
from .types import Evidence, Trace

__all__ = ["AgentLoop", "AnswersQuestions", "LoopTotals", "PromptBuilder", "TurnResult",
           "plain_prompt"]

_log = logging.getLogger("zeromem")

#: Builds the chat messages a reader sends for (question, context); used to count and show
#: the prompt. ``zeromem.reader.build_messages`` is what ``OpenAICompatReader`` uses.
PromptBuilder = Callable[[str, str], Sequence[Mapping[str, str]]]

DEFAULT_BUDGET_TOKENS = 2000
DEFAULT_K = 10
DEFAULT_LIVE_TURNS = 6
# Active memory may take at most this share of what the fixed part of the prompt leaves, so
# the live thread and the evidence always keep room.
DEFAULT_ACTIVE_SHARE = 0.5

_ACTIVE_TITLE = "Active memory:"
_EVIDENCE_TITLE = "Related memory:"
_THREAD_TITLE = "Conversation so far:"
_HISTORY_TITLE = "Conversation history:"


class AnswersQuestions(Protocol):
    """What the loop needs of a reader (``zeromem.reader.Reader``; ``OpenAICompatReader``)."""

    def answer(self, question: str, context: Any) -> Any:
        """One LLM call: a ``ReaderAnswer`` (``.text``, ``.prompt_tokens``,
        ``.completion_tokens``) or plain text."""
        ...


def plain_prompt(question: str, context: str) -> list[dict[str, str]]:
    """The prompt counted when no builder is given: the memory block, then the user's text.

    It leaves out whatever instructions the reader adds around them; pass the reader's own
    builder (``zeromem.reader.build_messages`` for ``OpenAICompatReader``) to count those too.
    """
    body = f"{context}\n\n{question}" if context else question
    return [{"role": "user", "content": body}]


class _Saving:
    """The saving of a prompt against the whole history stuffed in, both counted by one
    tokenizer; shared by one turn and the running totals."""

    __slots__ = ()
    baseline_tokens: int
    prompt_tokens_counted: int

    @property
    def saved_tokens(self) -> int:
        return self.baseline_tokens - self.prompt_tokens_counted

    @property
    def saving_ratio(self) -> float:
        """Share of the stuffed-history prompt the loop did not send (0 when there is none)."""
        return self.saved_tokens / self.baseline_tokens if self.baseline_tokens else 0.0


@dataclass(frozen=True, slots=True)
class TurnResult(_Saving):
    """One turn of the loop: the reply, what the prompt showed, and what it cost.

    ``prompt_tokens`` / ``completion_tokens`` are the reader's (the server's ``usage``; counted
    by ``tokenizer`` and flagged ``usage_estimated`` when the server sent none, and always in
    a dry run). ``prompt_tokens_counted``, ``budget_tokens`` and ``baseline_tokens`` (the same
    prompt with the scope's whole history stuffed in instead of the selected memory) are all
    counted by ``tokenizer``; ``saved_tokens`` is their difference.
    """

    text: str | None  # the reply; None in a dry run (no reader)
    user_trace_id: str
    assistant_trace_id: str | None
    messages: tuple[Mapping[str, str], ...]  # the prompt, as the prompt builder shapes it
    context: str  # the memory block handed to the reader
    active_trace_ids: tuple[str, ...]
    evidence_trace_ids: tuple[str, ...]
    thread_trace_ids: tuple[str, ...]
    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool
    prompt_tokens_counted: int
    budget_tokens: int
    baseline_tokens: int
    memory_llm_calls: int
    tokenizer: str
    over_budget: bool = False  # the user's text alone did not fit: sent anyway, no memory
    warnings: tuple[str, ...] = ()

    @property
    def dry_run(self) -> bool:
        return self.text is None

    @property
    def shown_trace_ids(self) -> tuple[str, ...]:
        """Every trace the prompt showed, in prompt order (active, evidence, live thread)."""
        return self.active_trace_ids + self.evidence_trace_ids + self.thread_trace_ids

@dataclass(slots=True)
class LoopTotals(_Saving):
    """Running sums over the turns of one :class:`AgentLoop` (failed turns count apart)."""

    turns: int = 0
    reader_calls: int = 0
    failed_turns: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_turns: int = 0
    prompt_tokens_counted: int = 0
    baseline_tokens: int = 0
    memory_llm_calls: int = 0

    def add(self, result: TurnResult) -> None:
        """Fold one finished turn into the sums."""
        self.turns += 1
        self.reader_calls += 0 if result.dry_run else 1
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens
        self.estimated_turns += int(result.usage_estimated)
        self.prompt_tokens_counted += result.prompt_tokens_counted
        self.baseline_tokens += result.baseline_tokens
        self.memory_llm_calls += result.memory_llm_calls


@dataclass(frozen=True, slots=True)
class _ActiveBlock:
    """The part of ``Memory.active`` a prompt shows: its text and the traces in it."""

    text: str
    trace_ids: tuple[str, ...]


@dataclass(slots=True)
class _Prompt:
    """The prompt being assembled: its three memory sections and what they show."""

    active: str = ""
    evidence: str = ""
    thread: list[str] = field(default_factory=list)
    active_ids: tuple[str, ...] = ()
    evidence_ids: tuple[str, ...] = ()
    thread_ids: tuple[str, ...] = ()

    def block(self) -> str:
        # Oldest-looking material first and the live thread last, right above the user's
        # text: the model reads the conversation where it continues.
        parts = []
        if self.active:
            parts.append(f"{_ACTIVE_TITLE}\n{self.active}")
        if self.evidence:
            parts.append(f"{_EVIDENCE_TITLE}\n{self.evidence}")
        if self.thread:
            parts.append(_THREAD_TITLE + "\n" + "\n".join(self.thread))
        return "\n\n".join(parts)


class AgentLoop:
    """A conversation with an LLM whose memory is a :class:`~zeromem.Memory`.

    >>> loop = AgentLoop(Memory(":memory:"), reader=None, session="chat-1")  # doctest: +SKIP
    >>> result = loop.turn("Where did I say I was moving?")                  # doctest: +SKIP
    >>> result.messages, result.prompt_tokens, result.saved_tokens           # doctest: +SKIP

    ``reader=None`` is a dry run: turns are stored and the prompt is built and counted, but
    nothing is called and no reply is stored. The loop works in the memory's own scope; one
    loop drives one session and is not meant to be shared between threads.

    ``budget_tokens`` bounds the whole prompt as ``prompt_builder`` shapes it (counted by
    :attr:`tokenizer`; the chat template's few role tokens are not counted). The user's text
    is always sent whole; memory fills what is left: active memory (at most ``active_share``
    of it), then up to ``live_turns`` turns of the live thread, then up to ``k`` pieces of
    evidence. ``token_counter`` replaces the default ``(name, count)`` pair; its tokens must
    not span whitespace (the baseline is summed line by line).
    """

    def __init__(self, memory: Memory, reader: AnswersQuestions | None = None, *,
                 session: str | None = None, budget_tokens: int = DEFAULT_BUDGET_TOKENS,
                 k: int = DEFAULT_K, live_turns: int = DEFAULT_LIVE_TURNS,
                 user_speaker: str = "user", assistant_speaker: str = "assistant",
                 prompt_builder: PromptBuilder | None = None,
                 active_share: float = DEFAULT_ACTIVE_SHARE,
                 token_counter: tuple[str, Callable[[str], int]] | None = None) -> None:
        for name, value, least in (("budget_tokens", budget_tokens, 1), ("k", k, 0),
                                   ("live_turns", live_turns, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise InvalidInput(f"{name} must be an integer >= {least}, got {value!r}")
        if not 0.0 <= active_share <= 1.0:
            raise InvalidInput(f"active_share must be between 0 and 1, got {active_share!r}")
        if reader is not None and not callable(getattr(reader, "answer", None)):
            raise InvalidInput("reader must have an answer(question, context) method "
                               "(e.g. zeromem.reader.OpenAICompatReader), or be None for a dry run")
        self.memory = memory
        self.reader = reader
        self.session = session or dt.datetime.now().strftime("agent-%Y%m%d-%H%M%S")
        self.budget_tokens = budget_tokens
        self.k = k
        self.live_turns = live_turns
        self.user_speaker = user_speaker
        self.assistant_speaker = assistant_speaker
        self.prompt_builder: PromptBuilder = prompt_builder or build_agent_messages
        self.active_share = active_share
        self.tokenizer, self.count_tokens = token_counter or load_token_counter()
        self.totals = LoopTotals()
        self._session_time: str | None = None
        # trace id -> (version, tokens of its history line): the baseline re-counts only
        # traces that are new or changed since the last turn.
        self._line_tokens: dict[str, tuple[int, int]] = {}

    # -- the turn ---------------------------------------------------------------------------
    def turn(self, text: str, *, now: Any = None) -> TurnResult:
        """Store ``text`` as the user's turn, ask the reader once, store and return its reply.

        ``now`` is the turn's time (datetime or text; default: the local clock), stored as the
        trace's event time. A reader error (``zeromem.reader.ReaderError``) propagates after
        the user's turn is stored; ``InvalidInput`` for unusable text is raised before anything
        is stored.
        """
        when = _clock(now)
        before = usage()
        user_id = self._store(text, self.user_speaker, "user", when)
        prompt, warnings, over = self._build(text, user_id)
        messages = tuple(self.prompt_builder(text, prompt.block()))
        counted = self._count_messages(messages)
        baseline = self._baseline(text, user_id)
        spent = usage() - before
        assert_no_llm_calls(spent, "the agent loop's memory operations before the reader call")

        reply_text: str | None = None
        assistant_id: str | None = None
        prompt_tokens, completion_tokens, estimated = counted, 0, True
        if self.reader is not None:
            try:
                # A chat-capable reader gets exactly the messages counted above; a plain
                # question answerer (the reader protocol) gets the question and the block.
                chat = getattr(self.reader, "chat", None)
                reply = chat(list(messages)) if callable(chat) else self.reader.answer(text, prompt.block())
            except Exception:
                self.totals.failed_turns += 1
                raise
            reply_text, prompt_tokens, completion_tokens, estimated = self._reply(reply, counted)
            before = usage()
            if reply_text.strip():
                assistant_id = self._store(reply_text, self.assistant_speaker, "assistant",
                                           _clock(None) if now is None else when)
            else:
                warnings.append("the reader replied with empty text; no assistant turn stored")
            after = usage() - before
            assert_no_llm_calls(after, "storing the agent loop's reply")
            spent = spent + after

        result = TurnResult(
            text=reply_text, user_trace_id=user_id, assistant_trace_id=assistant_id,
            messages=messages, context=prompt.block(), active_trace_ids=prompt.active_ids,
            evidence_trace_ids=prompt.evidence_ids, thread_trace_ids=prompt.thread_ids,
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            usage_estimated=estimated, prompt_tokens_counted=counted,
            budget_tokens=self.budget_tokens, baseline_tokens=baseline,
            memory_llm_calls=spent.calls, tokenizer=self.tokenizer, over_budget=over,
            warnings=tuple(warnings))
        self.totals.add(result)
        return result

    # -- writing ----------------------------------------------------------------------------
    def _store(self, text: str, speaker: str, role: str, when: str) -> str:
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(f"the {role}'s turn must be non-empty text, got {text!r}")
        return self.memory.add(text, session=self.session, speaker=speaker, role=role,
                               session_time=self._start_time(when), event_time=when)

    def _start_time(self, when: str) -> str:
        """The session's time: kept from its first stored turn, so a resumed session keeps
        the date its relative expressions ("yesterday") are resolved against."""
        if self._session_time is None:
            first = self.memory.list(session=self.session, limit=1)
            self._session_time = (first[0].session_time if first and first[0].session_time
                                  else when)
        return self._session_time

    # -- the prompt -------------------------------------------------------------------------
    def _count_messages(self, messages: Iterable[Mapping[str, str]]) -> int:
        return sum(self.count_tokens(str(message.get("content", ""))) for message in messages)

    def _fits(self, question: str, prompt: _Prompt) -> bool:
        return self._count_messages(self.prompt_builder(question, prompt.block())) <= self.budget_tokens

    def _build(self, question: str, user_id: str) -> tuple[_Prompt, list[str], bool]:
        """Fill one budget: active memory, then the live thread, then searched evidence."""
        prompt = _Prompt()
        warnings: list[str] = []
        fixed = self._count_messages(self.prompt_builder(question, ""))
        if fixed > self.budget_tokens:
            warnings.append(f"the user's text alone takes {fixed} tokens, more than the budget "
                            f"of {self.budget_tokens}: it is sent without memory")
            return prompt, warnings, True
        shown = {user_id}
        self._add_active(question, prompt, shown, fixed, warnings)
        self._add_thread(question, prompt, shown)
        self._add_evidence(question, prompt, shown, warnings)
        return prompt, warnings, False

    def _add_active(self, question: str, prompt: _Prompt, shown: set[str], fixed: int,
                    warnings: list[str]) -> None:
        """Active memory (DMF working set) when this Memory offers one.

        The contract expected of ``Memory.active(budget_tokens=N)``: text, or an object with a
        ``.text`` block and the traces it shows as ``.evidence`` (Evidence, like a
        ``RenderedContext``: their ``.trace_id``) or ``.trace_ids``.
        """
        active = getattr(self.memory, "active", None)
        if not callable(active):
            return
        cap = int((self.budget_tokens - fixed) * self.active_share)
        if cap <= 0:
            return
        got = active(budget_tokens=cap)
        entries = getattr(got, "entries", None)
        if entries is not None:
            # The live thread (this session) comes next, whole and in order, and the turn
            # itself is the question: active memory brings only what lies outside them.
            kept = [e for e in entries if e.trace_id not in shown and e.session != self.session]
            got = _ActiveBlock("\n".join(entry_line(e.trace_id, e.speaker, e.text) for e in kept),
                               tuple(e.trace_id for e in kept))
        text = got if isinstance(got, str) else getattr(got, "text", "")
        if not isinstance(text, str) or not text.strip():
            return
        prompt.active = text.strip()
        if not self._fits(question, prompt):
            # Its own counter may differ from ours; an opaque block cannot be cut, so it
            # goes rather than push the prompt over the budget.
            prompt.active = ""
            warnings.append("active memory did not fit the budget by this loop's tokenizer; left out")
            return
        ids = [ev.trace_id for ev in getattr(got, "evidence", ()) if isinstance(getattr(ev, "trace_id", None), str)]
        ids += list(getattr(got, "trace_ids", ()))
        prompt.active_ids = tuple(dict.fromkeys(ids))
        shown.update(prompt.active_ids)

    def _add_thread(self, question: str, prompt: _Prompt, shown: set[str]) -> None:
        """The session's last turns before this one, newest kept first; stops at the first
        turn that does not fit, so the thread never has a hole in it."""
        if not self.live_turns:
            return
        recent = [t for t in self.memory.list(session=self.session) if t.id not in shown]
        kept: list[Trace] = []
        for trace in reversed(recent[-self.live_turns:]):
            prompt.thread = [_line(t) for t in [trace, *kept]]
            if not self._fits(question, prompt):
                break
            kept.insert(0, trace)
        prompt.thread = [_line(t) for t in kept]
        prompt.thread_ids = tuple(t.id for t in kept)
        shown.update(prompt.thread_ids)

    def _add_evidence(self, question: str, prompt: _Prompt, shown: set[str],
                      warnings: list[str]) -> None:
        """Searched evidence, best first, each admitted only if the rendered prompt still fits
        (a smaller one further down may fit where a long one did not)."""
        if not self.k:
            return
        try:
            # Over-fetch by what is already shown: the user's own turn matches itself best.
            searched = self.memory.search_detailed(question, k=self.k + len(shown))
        except LLMForbidden:
            raise
        except Exception as exc:  # noqa: BLE001 - answer from what still works, say so (docs/design.md#degraded-search)
            _log.warning("zeromem agent loop: memory search failed, answering without it: %s", exc)
            warnings.append(f"memory search failed ({exc}); answered from the live thread only")
            return
        # A search missing a model still answers; what it went without is passed on.
        warnings.extend(f"memory search degraded: {line}" for line in getattr(searched, "degraded", ()))
        fresh = [ev for ev in searched.evidence if ev.trace_id not in shown][: self.k]
        admitted: list[Evidence] = []
        for ev in fresh:
            rendered = self.memory.render([*admitted, ev], budget_tokens=None)
            prompt.evidence = rendered.text
            if self._fits(question, prompt):
                admitted.append(ev)
        prompt.evidence = self.memory.render(admitted, budget_tokens=None).text if admitted else ""
        prompt.evidence_ids = tuple(ev.trace_id for ev in admitted)
        shown.update(prompt.evidence_ids)

    # -- accounting -------------------------------------------------------------------------
    def _reply(self, reply: Any, counted: int) -> tuple[str, int, int, bool]:
        """The reply text and the reader's tokens: the server's usage where it gave them."""
        text = getattr(reply, "text", reply)
        if not isinstance(text, str):
            raise InvalidInput("reader.answer must return text or an object with .text, "
                               f"got {type(reply).__name__}")
        prompt_tokens = getattr(reply, "prompt_tokens", None)
        completion_tokens = getattr(reply, "completion_tokens", None)
        estimated = not isinstance(prompt_tokens, int) or not isinstance(completion_tokens, int)
        return (text, prompt_tokens if isinstance(prompt_tokens, int) else counted,
                completion_tokens if isinstance(completion_tokens, int) else self.count_tokens(text),
                estimated)

    def _baseline(self, question: str, user_id: str) -> int:
        """Tokens of the same prompt with the scope's whole history (all but this turn) as
        the memory block instead.

        Summed line by line: both of zeromem's counters split at whitespace first, so the
        count of newline-joined lines is the sum of their counts, and only lines new or
        changed since the last turn are tokenized again. Reading the scope's traces is still
        one pass over them per turn.
        """
        history = [trace for trace in self.memory.list() if trace.id != user_id]
        if not history:  # nothing to stuff: the same prompt as one with no memory in it
            return self._count_messages(self.prompt_builder(question, ""))
        total = self._count_messages(self.prompt_builder(question, _HISTORY_TITLE))
        header = None
        for trace in history:
            head = _header(trace)
            if head != header:
                total += self.count_tokens(head)
                header = head
            cached = self._line_tokens.get(trace.id)
            if cached is None or cached[0] != trace.version:
                cached = (trace.version, self.count_tokens(_line(trace)))
                self._line_tokens[trace.id] = cached
            total += cached[1]
        return total


def _clock(now: Any) -> str:
    """The turn's time as text Memory.add accepts; the local clock by default, because that
    is the calendar the user's "yesterday" and "next week" mean."""
    if now is None:
        return dt.datetime.now().replace(microsecond=0).isoformat()
    if isinstance(now, (dt.datetime, dt.date)):
        return now.isoformat()
    if isinstance(now, str) and now.strip():
        return now
    raise InvalidInput(f"now must be a datetime or a date/time string, got {now!r}")


def _line(trace: Trace) -> str:
    # The same "[id] speaker: text" shape as zeromem.retrieval.render, so the live thread and
    # the evidence read alike and every line names the trace it came from.
    return f"[{trace.id}] {trace.speaker or trace.role}: {trace.text}"


def _header(trace: Trace) -> str:
    when = trace.event_time or trace.session_time
    stamp = when.replace("T", " ")[:10] if when else "undated"
    return f"--- {trace.session or 'no session'} ({stamp}) ---"

