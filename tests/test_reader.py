"""The OpenAI-compatible reader against a local HTTP server speaking /v1/chat/completions."""

from __future__ import annotations

import datetime as dt
import socket
import time

import pytest

from loopback_server import LoopbackJSONServer
from zeromem.reader import (
    OpenAICompatReader,
    ReaderError,
    RetryPolicy,
    build_messages,
    usage,
)
from zeromem.reader.openai_compat import retry_after_seconds


class _Server(LoopbackJSONServer):
    """Replies with the queued (status, body) pairs, in order; records every request."""

    def __init__(self) -> None:
        self.replies: list[tuple] = []  # (status, body) or (status, body, headers)
        self.default: tuple | None = None  # the reply once ``replies`` is empty
        self.delays: list[float] = []  # seconds to wait before each reply, in order
        super().__init__(self._respond)

    def _respond(self, _: dict) -> tuple:
        if self.delays:
            time.sleep(self.delays.pop(0))
        return self.replies.pop(0) if self.replies else self.default or (500, {"error": "none left"})


def _completion(text: str, prompt: int | None = 120, completion: int | None = 4) -> dict:
    reply: dict = {"id": "x", "object": "chat.completion",
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
    if prompt is not None:
        reply["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + (completion or 0)}
    return reply


@pytest.fixture
def server():
    srv = _Server()
    yield srv
    srv.close()


def test_answer_posts_the_context_and_question_and_returns_the_reply(server):
    server.replies.append((200, _completion(" 7 May 2023 ")))
    reader = OpenAICompatReader(server.url, "tiny-model")
    answer = reader.answer("When did Caroline go?", "[8 May 2023] Caroline: I went yesterday.")
    assert answer.text == "7 May 2023"
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "tiny-model"
    assert request["body"]["temperature"] == 0.0
    user = request["body"]["messages"][-1]["content"]
    assert "Caroline: I went yesterday." in user and "When did Caroline go?" in user


def test_calls_and_tokens_are_counted_from_the_usage_object(server):
    server.replies += [(200, _completion("a", 100, 3)), (200, _completion("b", 50, 2))]
    reader = OpenAICompatReader(server.url, "m")
    before = usage()
    reader.answer("q1", "ctx")
    reader.answer("q2", "ctx")
    spent = usage() - before
    assert (spent.calls, spent.prompt_tokens, spent.completion_tokens) == (2, 150, 5)
    assert spent.calls_without_usage == 0


def test_a_reply_without_usage_is_counted_as_a_call_with_unknown_tokens(server):
    server.replies.append((200, _completion("a", prompt=None)))
    before = usage()
    answer = OpenAICompatReader(server.url, "m").answer("q", "ctx")
    spent = usage() - before
    assert answer.prompt_tokens is None
    assert (spent.calls, spent.tokens, spent.calls_without_usage) == (1, 0, 1)


def test_api_key_from_the_environment_is_sent_as_bearer(server, monkeypatch):
    monkeypatch.setenv("ZM_TEST_KEY", "sekret")
    server.replies.append((200, _completion("a")))
    OpenAICompatReader(server.url, "m", api_key_env="ZM_TEST_KEY").answer("q", "ctx")
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sekret"


def test_server_errors_are_retried_then_succeed(server):
    server.replies += [(503, {"error": "busy"}), (200, _completion("ok"))]
    answer = OpenAICompatReader(server.url, "m", retries=2, pause_s=0).answer("q", "ctx")
    assert answer.text == "ok"
    assert len(server.requests) == 2


def test_a_429_waits_the_servers_retry_after_and_only_the_answer_is_counted(server):
    server.replies += [(429, {"error": "slow down"}, {"Retry-After": "1"}), (200, _completion("ok", 30, 2))]
    before = usage()
    start = time.monotonic()
    answer = OpenAICompatReader(server.url, "m", retries=1, pause_s=0).answer("q", "ctx")
    waited = time.monotonic() - start
    spent = usage() - before
    assert answer.text == "ok" and len(server.requests) == 2
    assert waited >= 0.95  # Retry-After, not the (zero) pause of the policy
    assert (spent.calls, spent.prompt_tokens, spent.completion_tokens) == (1, 30, 2)


def test_server_errors_without_retry_after_wait_a_doubling_pause(server):
    server.replies += [(503, {"error": "busy"}), (502, {"error": "bad gateway"}), (200, _completion("ok"))]
    before = usage().calls
    start = time.monotonic()
    answer = OpenAICompatReader(server.url, "m", retries=2, pause_s=0.2).answer("q", "ctx")
    assert answer.text == "ok" and len(server.requests) == 3
    assert time.monotonic() - start >= 0.55  # 0.2 s, then 0.4 s
    assert usage().calls == before + 1


def test_a_timed_out_request_is_retried(server):
    server.delays.append(1.0)  # the first request outlives the reader's timeout
    server.default = (200, _completion("ok"))
    before = usage().calls
    answer = OpenAICompatReader(server.url, "m", retries=1, timeout_s=0.3, pause_s=0).answer("q", "ctx")
    assert answer.text == "ok" and len(server.requests) == 2
    assert usage().calls == before + 1


def test_a_server_that_never_answers_in_time_gives_up_naming_the_timeout(server):
    server.delays += [0.6, 0.6]
    server.default = (200, _completion("too late"))
    before = usage().calls
    with pytest.raises(ReaderError, match=r"after 2 attempt.*no reply within 0.2 s"):
        OpenAICompatReader(server.url, "m", retries=1, timeout_s=0.2, pause_s=0).answer("q", "ctx")
    assert usage().calls == before  # no model answered: nothing to count


def test_the_retry_policy_reads_retry_after_as_seconds_or_an_http_date():
    policy = RetryPolicy(retries=3, pause_s=0.5, max_pause_s=10)
    assert [policy.pause(n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]
    assert policy.pause(1, "3") == 3.0
    assert policy.pause(1, "120") == 10  # capped
    assert policy.pause(2, "soon") == 1.0  # unreadable: the policy's own pause
    now = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
    assert retry_after_seconds("Thu, 01 Jan 2026 12:00:04 GMT", now=now) == 4.0
    assert retry_after_seconds("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0  # in the past
    assert retry_after_seconds(None) is None and retry_after_seconds(" ") is None


def test_client_errors_fail_at_once_with_the_servers_message(server):
    server.replies.append((404, {"error": "model 'm' not found"}))
    with pytest.raises(ReaderError, match=r"not found.*--model"):
        OpenAICompatReader(server.url, "m", retries=3).answer("q", "ctx")
    assert len(server.requests) == 1


def test_persistent_server_errors_give_up_after_the_retries(server):
    server.replies += [(500, {"error": "boom"})] * 3
    with pytest.raises(ReaderError, match="after 3 attempt"):
        OpenAICompatReader(server.url, "m", retries=2, pause_s=0).answer("q", "ctx")


def test_unreachable_server_raises_a_reader_error_naming_the_url():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(ReaderError, match=f"127.0.0.1:{port}.*server running"):
        OpenAICompatReader(url, "m", retries=1, timeout_s=2, pause_s=0).answer("q", "ctx")


def test_a_reply_without_choices_is_an_error_and_still_counted(server):
    server.replies.append((200, {"usage": {"prompt_tokens": 5, "completion_tokens": 0}}))
    before = usage()
    with pytest.raises(ReaderError, match="choices"):
        OpenAICompatReader(server.url, "m").answer("q", "ctx")
    assert (usage() - before).calls == 1


def test_non_json_reply_is_an_error(server):
    server.replies.append((200, b"<html>proxy</html>"))
    with pytest.raises(ReaderError, match="JSON"):
        OpenAICompatReader(server.url, "m").answer("q", "ctx")


def test_configuration_mistakes_are_refused_up_front():
    with pytest.raises(ValueError, match="http"):
        OpenAICompatReader("localhost:8000/v1", "m")
    with pytest.raises(ValueError, match="model"):
        OpenAICompatReader("http://localhost:8000/v1", "")


def test_prompt_carries_context_question_and_the_locomo_abstention_phrase():
    messages = build_messages("Where does Ana live?", "Ana: I moved to Denver.")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "No information available" in messages[0]["content"]
    assert "Ana: I moved to Denver." in messages[1]["content"]
    assert messages[1]["content"].rstrip().endswith("Short answer:")
    with pytest.raises(ValueError):
        build_messages("  ", "ctx")


def test_memory_answer_calls_the_reader_once_and_calibrates_against_its_evidence(server, mem):
    mem.add_many([
        {"text": "I went to the support group yesterday.", "speaker": "Ana", "session": "s1",
         "session_time": "1:56 pm on 8 May, 2023"},
        {"text": "I have three kids.", "speaker": "Ana", "session": "s2", "session_time": "2 June 2023"},
    ])
    reader = OpenAICompatReader(server.url, "m")
    before = usage().calls
    server.replies.append((200, _completion("yesterday")))
    out = mem.answer("When did Ana go to the support group?", reader, k=2)
    assert usage().calls == before + 1  # the one LLM call
    assert out.reader.text == "yesterday" and out.text == "7 May 2023"
    assert out.calibration.grounded and out.calibration.answer_type == "date"
    assert set(out.calibration.support) <= {ev.trace_id for ev in out.context.evidence}
    server.replies.append((200, _completion("three")))
    raw = mem.answer("How many kids does Ana have?", reader, calibrate=False)
    assert raw.text == "three" and raw.calibration is None
