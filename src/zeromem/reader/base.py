"""The reader interface and the process-wide LLM usage counter.

The reader is the only part of zeromem allowed to call a language model (docs/design.md#principles): it answers a
question from retrieved evidence, after every memory operation is done. Every LLM call in the
process goes through :func:`record_call`, so "memory operations spent zero LLM calls" is a
counted fact: take a :func:`usage` snapshot before ingest and search, another after, and
:func:`assert_no_llm_calls` on the difference. ``tests/test_no_llm_outside_reader.py`` checks
that no module outside ``zeromem.reader`` can reach an LLM without passing here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..errors import LLMForbidden, ZeromemError
from ..retrieval.reading import Reader

__all__ = ["LLMUsage", "Reader", "ReaderAnswer", "ReaderError", "assert_no_llm_calls", "record_call",
           "usage"]


class ReaderError(ZeromemError):
    """The reader's LLM server could not answer (unreachable, refused, malformed reply)."""


@dataclass(frozen=True, slots=True)
class LLMUsage:
    """Counts of LLM calls and tokens; subtract two snapshots to get what happened between."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls_without_usage: int = 0  # the server returned no ``usage``: its tokens are unknown

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(self.calls + other.calls, self.prompt_tokens + other.prompt_tokens,
                        self.completion_tokens + other.completion_tokens,
                        self.calls_without_usage + other.calls_without_usage)

    def __sub__(self, other: LLMUsage) -> LLMUsage:
        return LLMUsage(self.calls - other.calls, self.prompt_tokens - other.prompt_tokens,
                        self.completion_tokens - other.completion_tokens,
                        self.calls_without_usage - other.calls_without_usage)


@dataclass(frozen=True, slots=True)
class ReaderAnswer:
    """One reader reply and what it cost."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    model: str


_lock = threading.Lock()
_usage = LLMUsage()


def record_call(prompt_tokens: int | None, completion_tokens: int | None) -> None:
    """Count one LLM call. Readers call this for every request that reached a model."""
    global _usage
    with _lock:
        missing = prompt_tokens is None or completion_tokens is None
        _usage = LLMUsage(_usage.calls + 1, _usage.prompt_tokens + (prompt_tokens or 0),
                          _usage.completion_tokens + (completion_tokens or 0),
                          _usage.calls_without_usage + int(missing))


def usage() -> LLMUsage:
    """A snapshot of every LLM call this process has made so far."""
    with _lock:
        return _usage


def assert_no_llm_calls(spent: LLMUsage, operation: str) -> None:
    """Raise LLMForbidden if ``spent`` (a snapshot difference) holds any call or token."""
    if spent.calls or spent.tokens:
        raise LLMForbidden(
            f"{operation} made {spent.calls} LLM call(s) and spent {spent.tokens} token(s); "
            "memory operations must spend zero — find the code path that calls a reader "
            "outside the final answering step and remove it"
        )
