"""The agent loop: one reader call per turn over memory, inside one budget, with its tokens
accounted — against a fake OpenAI-compatible server on loopback, and the example script's
offline dry run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from internals import store_of
from loopback_server import LoopbackJSONServer
from zeromem import InvalidInput, Memory
from zeromem.agent import AgentLoop
from zeromem.reader import OpenAICompatReader, ReaderError, build_messages, usage

pytestmark = pytest.mark.slow  # every test here opens a Memory with the real small models

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "agent_loop.py"
FIRST = "Do you remember where I live now?"
SECOND = "And what is my cat called?"


class FakeChatServer(LoopbackJSONServer):
    """A /v1/chat/completions endpoint on a free loopback port; records each request body.

    Replies with ``status`` and a completion whose text is ``reply`` and whose ``usage``
    block is ``usage`` (omitted when None).
    """

    def __init__(self) -> None:
        self.status = 200
        self.reply = "Capitol Hill, in Denver."
        self.usage: dict | None = {"prompt_tokens": 250, "completion_tokens": 7}
        super().__init__(self._respond)

    def _respond(self, request: dict) -> tuple[int, dict]:
        if self.status != 200:
            return self.status, {"error": {"message": "model not loaded"}}
        payload: dict = {"object": "chat.completion", "model": request["body"].get("model"),
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": self.reply}}]}
        if self.usage is not None:
            payload["usage"] = dict(self.usage, total_tokens=sum(self.usage.values()))
        return 200, payload


@pytest.fixture
def server():
    fake = FakeChatServer()
    yield fake
    fake.close()


@pytest.fixture
def seeded(tmp_path, example_path):
    """A memory holding the example's three sessions (40 turns) in scope 'priya'."""
    with Memory(tmp_path / "agent.db", user="priya") as memory:
        memory.import_file(example_path)
        yield memory


def _loop(memory: Memory, reader=None, **options) -> AgentLoop:
    options = {"session": "chat", "budget_tokens": 400, "user_speaker": "Priya",
               "prompt_builder": build_messages, **options}
    return AgentLoop(memory, reader, **options)


def _reader(server: FakeChatServer) -> OpenAICompatReader:
    return OpenAICompatReader(server.url, "fake-model", retries=0, timeout_s=10)


def _shown_ids(prompt: str) -> list[str]:
    return re.findall(r"^\[(t[0-9a-z]{8})\]", prompt, flags=re.MULTILINE)


def _whole_history_tokens(loop: AgentLoop, memory: Memory, question: str, turn_id: str) -> int:
    """The stuffed-history prompt of the turn ``turn_id``, counted in one piece (the loop sums
    it line by line): every trace stored before that turn."""
    lines, header = [], None
    for trace in memory.list():
        if store_of(memory).ids.parse(trace.id) >= store_of(memory).ids.parse(turn_id):
            continue
        when = trace.event_time or trace.session_time or ""
        head = f"--- {trace.session} ({when.replace('T', ' ')[:10]}) ---"
        if head != header:
            lines.append(head)
            header = head
        lines.append(f"[{trace.id}] {trace.speaker or trace.role}: {trace.text}")
    messages = build_messages(question, "Conversation history:\n" + "\n".join(lines))
    return sum(loop.count_tokens(m["content"]) for m in messages)


def test_each_turn_is_one_reader_call_over_memory_inside_the_budget(seeded, server):
    loop = _loop(seeded, _reader(server))
    before = usage()
    first = loop.turn(FIRST, now="2023-07-01T10:00:00")
    second = loop.turn(SECOND, now="2023-07-01T10:01:00")

    assert len(server.requests) == 2  # one call per turn, nothing else reached the server
    for result, request in zip((first, second), server.requests):
        assert request["path"] == "/v1/chat/completions"
        sent = request["body"]["messages"]
        assert sent == [dict(m) for m in result.messages]  # the prompt accounted is the one sent
        assert sent[1]["content"].rstrip().endswith("Short answer:")
        counted = sum(loop.count_tokens(m["content"]) for m in sent)
        assert counted == result.prompt_tokens_counted <= loop.budget_tokens == 400
        shown = _shown_ids(sent[1]["content"])
        assert len(shown) == len(set(shown))  # no trace is shown twice
        assert set(shown) == set(result.shown_trace_ids)
        assert result.user_trace_id not in shown  # the turn itself is the question, not memory

    # the evidence zeromem found is in the prompt: where Priya lives now (session 3)
    capitol = next(t for t in seeded.list(session="session_3") if "Capitol Hill" in t.text)
    assert capitol.id in first.evidence_trace_ids + first.active_trace_ids  # shown once, from either
    first_prompt = server.requests[0]["body"]["messages"][1]["content"]
    # verbatim: the whole turn as evidence, or its state-bearing sentence as active memory
    assert f"[{capitol.id}] Priya: " in first_prompt and "I live in Capitol Hill now" in first_prompt
    # the second prompt carries the live thread verbatim, in order, after the evidence
    content = server.requests[1]["body"]["messages"][1]["content"]
    thread = f"[{first.user_trace_id}] Priya: {FIRST}\n[{first.assistant_trace_id}] assistant: {first.text}"
    assert "Conversation so far:\n" + thread in content
    assert second.thread_trace_ids == (first.user_trace_id, first.assistant_trace_id)
    assert not set(second.thread_trace_ids) & set(second.evidence_trace_ids)
    assert content.index("Related memory:") < content.index("Conversation so far:")

    # both turns of both exchanges are stored, verbatim, with their roles
    stored = seeded.list(session="chat")
    assert [(t.role, t.speaker, t.text) for t in stored] == [
        ("user", "Priya", FIRST), ("assistant", "assistant", "Capitol Hill, in Denver."),
        ("user", "Priya", SECOND), ("assistant", "assistant", "Capitol Hill, in Denver.")]
    assert [t.id for t in stored] == [first.user_trace_id, first.assistant_trace_id,
                                      second.user_trace_id, second.assistant_trace_id]
    assert stored[0].event_time == "2023-07-01T10:00:00"
    assert {t.session_time for t in stored} == {"2023-07-01T10:00:00"}

    # accounting: the reader's tokens are the server's usage; the baseline is the whole
    # history stuffed in, counted by the same tokenizer as the prompt
    for result in (first, second):
        assert (result.prompt_tokens, result.completion_tokens) == (250, 7)
        assert not result.usage_estimated
        assert result.memory_llm_calls == 0
        assert result.baseline_tokens > loop.budget_tokens >= result.prompt_tokens_counted
        assert result.saved_tokens == result.baseline_tokens - result.prompt_tokens_counted > 0
        assert result.saving_ratio == pytest.approx(result.saved_tokens / result.baseline_tokens)
    assert first.baseline_tokens == _whole_history_tokens(loop, seeded, FIRST, first.user_trace_id)
    assert second.baseline_tokens == _whole_history_tokens(loop, seeded, SECOND, second.user_trace_id)
    assert second.baseline_tokens > first.baseline_tokens  # the history grew by one exchange

    totals = loop.totals
    assert (totals.turns, totals.reader_calls, totals.failed_turns) == (2, 2, 0)
    assert (totals.prompt_tokens, totals.completion_tokens, totals.memory_llm_calls) == (500, 14, 0)
    assert totals.baseline_tokens == first.baseline_tokens + second.baseline_tokens
    assert totals.saved_tokens == first.saved_tokens + second.saved_tokens
    spent = usage() - before  # the process-wide counter saw exactly the two reader calls
    assert (spent.calls, spent.prompt_tokens, spent.completion_tokens) == (2, 500, 14)


def test_a_server_error_is_a_reader_error_and_the_users_turn_is_kept(seeded, server):
    server.status = 400
    loop = _loop(seeded, _reader(server))
    with pytest.raises(ReaderError, match="HTTP 400"):
        loop.turn(FIRST)
    assert len(server.requests) == 1
    stored = seeded.list(session="chat")
    assert [(t.role, t.text) for t in stored] == [("user", FIRST)]  # nothing lost
    assert (loop.totals.turns, loop.totals.failed_turns) == (0, 1)

    # the server is back: the unanswered turn is part of the live thread of the next one
    server.status = 200
    again = loop.turn("Are you there?")
    assert again.thread_trace_ids == (stored[0].id,)
    assert [t.role for t in seeded.list(session="chat")] == ["user", "user", "assistant"]


def test_without_usage_the_tokens_are_counted_and_marked_estimated(seeded, server):
    server.usage = None
    loop = _loop(seeded, _reader(server))
    result = loop.turn(FIRST)
    assert result.usage_estimated
    assert result.prompt_tokens == result.prompt_tokens_counted
    assert result.completion_tokens == loop.count_tokens(server.reply)
    assert loop.totals.estimated_turns == 1


def test_a_dry_run_stores_the_turn_and_builds_the_prompt_without_a_reader(seeded):
    loop = _loop(seeded)
    before = usage()
    result = loop.turn(FIRST)
    assert usage() - before == type(before)()  # no LLM call at all
    assert result.dry_run and result.text is None and result.assistant_trace_id is None
    assert result.usage_estimated and result.prompt_tokens == result.prompt_tokens_counted
    assert [t.role for t in seeded.list(session="chat")] == ["user"]
    assert result.evidence_trace_ids and loop.totals.reader_calls == 0


def test_active_memory_comes_first_and_is_not_repeated(tmp_path, example_path):
    asked: list[int] = []

    class WithActive(Memory):
        def active(self, *, budget_tokens: int) -> object:
            asked.append(budget_tokens)
            trace = next(t for t in self.list(session="session_3") if "Capitol Hill" in t.text)
            return type("Block", (), {"text": f"[{trace.id}] Priya: {trace.text}",
                                      "trace_ids": (trace.id,)})()

    with WithActive(tmp_path / "active.db", user="priya") as memory:
        memory.import_file(example_path)
        result = _loop(memory).turn(FIRST)
    content = result.messages[1]["content"]
    assert content.index("Active memory:") < content.index("Related memory:")
    assert result.active_trace_ids and result.active_trace_ids[0] not in result.evidence_trace_ids
    shown = _shown_ids(content)
    assert len(shown) == len(set(shown))
    assert 0 < asked[0] < 400


def test_a_turn_longer_than_the_budget_is_sent_whole_without_memory(seeded):
    loop = _loop(seeded, budget_tokens=60)  # the reader's instructions alone exceed it
    result = loop.turn(FIRST)
    assert result.over_budget and result.warnings
    assert result.shown_trace_ids == ()
    assert FIRST in result.messages[1]["content"]
    assert result.prompt_tokens_counted > loop.budget_tokens


def test_empty_text_is_refused_before_anything_is_stored(seeded):
    loop = _loop(seeded)
    with pytest.raises(InvalidInput):
        loop.turn("   ")
    assert seeded.list(session="chat") == []


def test_the_example_script_prints_the_prompt_offline(tmp_path, example_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1", ZEROMEM_DB=str(tmp_path / "unused.db"))
    env.pop("OPENAI_API_KEY", None)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--db", str(tmp_path / "x.db"), "--import", str(example_path),
         "--name", "Priya", "--budget", "600", "--say", FIRST, "--say", SECOND],
        check=False, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "dry run, no LLM is called" in out
    assert out.count("----- prompt that would be sent -----") == 2
    assert "I live in Capitol Hill now" in out  # retrieved evidence is in the printed prompt
    assert f"User: {FIRST}" in out and f"User: {SECOND}" in out  # the agent prompt
    assert out.count("memory LLM calls 0") == 3  # each turn and the totals
    assert "totals: 2 turn(s), 0 reader call(s)" in out
    with Memory(tmp_path / "x.db") as memory:
        assert [t.text for t in memory.list() if t.text in (FIRST, SECOND)] == [FIRST, SECOND]
