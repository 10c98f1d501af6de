"""A reader for any OpenAI-compatible chat-completions server (vLLM, llama.cpp, Ollama, ...).

HTTP through httpx (the ``reader`` extra: ``pip install 'zeromem[reader]'``; it is imported
when a reader is made, never with ``zeromem``). One question is one
``POST {base_url}/chat/completions``; the token counts come from the response's ``usage``
object and are recorded in the process-wide counter of :mod:`zeromem.reader.base`, once per
reply that reached us (a retried failure is no call: no model answered it).

Retries (:class:`RetryPolicy`): connection failures, timeouts, 408, 409, 429 and 5xx replies
are retried; the pause is the server's ``Retry-After`` when it sends one (seconds or an HTTP
date, capped), else a doubling pause. Other errors are raised at once, with the server's
message.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import ReaderAnswer, ReaderError, record_call
from .prompt import build_messages

if TYPE_CHECKING:  # imported where a reader is made: `import zeromem` stays without httpx
    import httpx

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_RETRIES = 2
DEFAULT_MAX_TOKENS = 64
DEFAULT_PAUSE_S = 0.5
DEFAULT_MAX_PAUSE_S = 30.0
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


# Why a policy of our own over httpx rather than a library's: httpx's own transport retries
# cover only failed connects, not a 429 or 503 reply; the official `openai` client has the same
# policy built in (Retry-After, 408/409/429/5xx, doubling pause) but would add pydantic and
# four more packages to the install for one POST, and tenacity (9.x: `wait_exception` hands the
# exception to a function of ours) and stamina do not read Retry-After, so the part that needs
# care (delay-seconds or an HTTP date, capped) would be ours anyway; what tenacity would take
# over is the ten-line loop (docs/decisions/0064-hand-written-or-library.md). This is that
# part, tested against a real local server (tests/test_reader.py).
@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long to wait before trying a chat request again.

    ``retries`` attempts after the first; before retry ``n`` (1-based) the pause is the
    server's ``Retry-After`` when it sent one, else ``pause_s * 2 ** (n - 1)``; either is
    capped at ``max_pause_s``. Deterministic: no jitter (one reader per process talks to one
    server; there is no herd to spread).
    """

    retries: int = DEFAULT_RETRIES
    pause_s: float = DEFAULT_PAUSE_S
    max_pause_s: float = DEFAULT_MAX_PAUSE_S
    statuses: frozenset[int] = RETRYABLE_STATUS

    def pause(self, retry: int, retry_after: str | None = None, *,
              now: dt.datetime | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        asked = retry_after_seconds(retry_after, now=now)
        wanted = asked if asked is not None else self.pause_s * 2 ** (retry - 1)
        return max(0.0, min(wanted, self.max_pause_s))


def retry_after_seconds(value: str | None, *, now: dt.datetime | None = None) -> float | None:
    """A ``Retry-After`` header as seconds from ``now``: delay-seconds or an HTTP date (RFC
    9110 §10.2.3); None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - (now or dt.datetime.now(dt.UTC))).total_seconds())


class OpenAICompatReader:
    """Answers with one chat-completions call per question; temperature 0 for repeatability.

    ``base_url`` is the API root including its version, e.g. ``http://localhost:8000/v1``.
    The API key is optional (local servers need none): pass it, or set the environment
    variable named by ``api_key_env``. ``retries``, ``pause_s`` and ``max_pause_s`` make the
    :class:`RetryPolicy`.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout_s: float = DEFAULT_TIMEOUT_S,
                 retries: int = DEFAULT_RETRIES, max_tokens: int = DEFAULT_MAX_TOKENS,
                 temperature: float = 0.0, pause_s: float = DEFAULT_PAUSE_S,
                 max_pause_s: float = DEFAULT_MAX_PAUSE_S) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r} "
                             "(e.g. http://localhost:8000/v1)")
        if not model:
            raise ValueError("model must name the served model (e.g. the --model of vLLM)")
        try:
            import httpx
        except ImportError:
            raise ReaderError("the OpenAI-compatible reader needs httpx, which is not installed: "
                              "pip install 'zeromem[reader]'") from None
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self.timeout_s = timeout_s
        self.retry = RetryPolicy(max(0, retries), pause_s, max_pause_s)
        self.max_tokens = max_tokens
        self.temperature = temperature
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        # One client: its connection pool keeps the server's connection between questions.
        self._client: httpx.Client = httpx.Client(headers=headers, timeout=timeout_s)

    @property
    def retries(self) -> int:
        return self.retry.retries

    def close(self) -> None:
        """Close the connection pool (a reader is usable until then)."""
        self._client.close()

    def answer(self, question: str, context: Any) -> ReaderAnswer:
        """Ask ``question`` over ``context`` (text, or a rendered context with ``.text``);
        count the call and its tokens."""
        text = context if isinstance(context, str) else getattr(context, "text", None)
        if not isinstance(text, str):
            raise TypeError("context must be a string or a rendered context with a .text string")
        return self.chat(build_messages(question, text))

    def chat(self, messages: list[dict[str, str]], *, max_tokens: int | None = None) -> ReaderAnswer:
        """Send chat ``messages`` as they are (one call, counted); the agent loop uses this."""
        payload = {"model": self.model, "messages": messages, "temperature": self.temperature,
                   "max_tokens": self.max_tokens if max_tokens is None else max_tokens}
        reply = self._post(payload)
        usage = reply.get("usage") or {}
        prompt_tokens = _int_or_none(usage.get("prompt_tokens"))
        completion_tokens = _int_or_none(usage.get("completion_tokens"))
        record_call(prompt_tokens, completion_tokens)
        try:
            text = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ReaderError(f"{self.url} answered without choices[0].message.content: "
                              f"{json.dumps(reply)[:300]}") from None
        return ReaderAnswer(str(text or "").strip(), prompt_tokens, completion_tokens, self.model)

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        import httpx

        body = json.dumps(payload).encode("utf-8")
        last_error = ""
        retry_after: str | None = None
        for attempt in range(self.retry.retries + 1):
            if attempt:
                time.sleep(self.retry.pause(attempt, retry_after))
            retry_after = None
            try:
                response = self._client.post(self.url, content=body)
            except httpx.TimeoutException as exc:
                last_error = f"no reply within {self.timeout_s:g} s ({type(exc).__name__})"
                continue
            except httpx.TransportError as exc:  # refused, reset, DNS, protocol errors
                last_error = str(exc) or type(exc).__name__
                continue
            if response.status_code >= 300:
                last_error = f"HTTP {response.status_code}: {response.text[:300]}"
                if response.status_code not in self.retry.statuses:
                    raise ReaderError(f"{self.url} refused the request ({last_error}); check "
                                      "--model, --base-url and the API key")
                retry_after = response.headers.get("Retry-After")
                continue
            try:
                reply = json.loads(response.content)
            except json.JSONDecodeError:
                raise ReaderError(f"{self.url} did not return JSON: {response.content[:200]!r}") from None
            if not isinstance(reply, dict):
                raise ReaderError(f"{self.url} returned {type(reply).__name__}, not an object")
            return reply
        raise ReaderError(f"{self.url} failed after {self.retry.retries + 1} attempt(s): {last_error}; "
                          "is the server running and is --base-url its /v1 root?")


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
