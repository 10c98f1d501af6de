"""A reader for any OpenAI-compatible chat-completions server (vLLM, llama.cpp, Ollama, ...).

Plain HTTP through the standard library, so the reader adds no dependency. One question is
one ``POST {base_url}/chat/completions``; the token counts come from the response's
``usage`` object and are recorded in the process-wide counter of :mod:`zeromem.reader.base`.
Connection failures, timeouts, 429 and 5xx replies are retried with a doubling pause; other
errors are raised at once, with the server's message.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

from .base import ReaderAnswer, ReaderError, record_call
from .prompt import build_messages

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_RETRIES = 2
DEFAULT_MAX_TOKENS = 64
_RETRY_PAUSE_S = 0.5
_RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAICompatReader:
    """Answers with one chat-completions call per question; temperature 0 for repeatability.

    ``base_url`` is the API root including its version, e.g. ``http://localhost:8000/v1``.
    The API key is optional (local servers need none): pass it, or set the environment
    variable named by ``api_key_env``.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout_s: float = DEFAULT_TIMEOUT_S,
                 retries: int = DEFAULT_RETRIES, max_tokens: int = DEFAULT_MAX_TOKENS,
                 temperature: float = 0.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r} "
                             "(e.g. http://localhost:8000/v1)")
        if not model:
            raise ValueError("model must name the served model (e.g. the --model of vLLM)")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self.timeout_s = timeout_s
        self.retries = max(0, retries)
        self.max_tokens = max_tokens
        self.temperature = temperature

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
        body = json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_error = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(_RETRY_PAUSE_S * 2 ** (attempt - 1))
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    raw = response.read()
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:300]
                last_error = f"HTTP {exc.code}: {detail}"
                if exc.code not in _RETRYABLE_STATUS:
                    raise ReaderError(f"{self.url} refused the request ({last_error}); check "
                                      "--model, --base-url and the API key") from None
                continue
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                last_error = str(getattr(exc, "reason", exc))
                continue
            try:
                reply = json.loads(raw)
            except json.JSONDecodeError:
                raise ReaderError(f"{self.url} did not return JSON: {raw[:200]!r}") from None
            if not isinstance(reply, dict):
                raise ReaderError(f"{self.url} returned {type(reply).__name__}, not an object")
            return reply
        raise ReaderError(f"{self.url} failed after {self.retries + 1} attempt(s): {last_error}; "
                          "is the server running and is --base-url its /v1 root?")


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
