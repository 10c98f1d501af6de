"""The optional final reader: the only place in zeromem that may call a language model."""

from .base import (
                   LLMUsage,
                   Reader,
                   ReaderAnswer,
                   ReaderError,
                   assert_no_llm_calls,
                   record_call,
                   usage,
)
from .openai_compat import OpenAICompatReader, RetryPolicy
from .prompt import build_messages

__all__ = [
                   "LLMUsage",
                   "OpenAICompatReader",
                   "Reader",
                   "ReaderAnswer",
                   "ReaderError",
                   "RetryPolicy",
                   "assert_no_llm_calls",
                   "build_messages",
                   "record_call",
                   "usage",
]
