"""The tokenizer of a model's ``tokenizer.json``, for the ONNX embedder and the export's probes.

zeromem's own WordPiece (wordpiece.py) reads a BERT one without the ``tokenizers`` package;
any other falls back to ``tokenizers`` (the ``[torch]`` extra).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ModelUnavailable
from .wordpiece import WordPieceTokenizer

__all__ = ["load_tokenizer"]


class _HfTokenizer:
    """``tokenizers`` for a tokenizer.json that WordPieceTokenizer does not read."""

    def __init__(self, path: Path, max_length: int) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as err:
            raise ModelUnavailable(f"{path} is not a BERT WordPiece tokenizer; reading it needs the "
                                   "tokenizers package: `pip install 'zeromem[torch]'`") from err
        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=max_length)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [list(e.ids) for e in self._tokenizer.encode_batch(texts)]


def load_tokenizer(path: Path, max_length: int) -> WordPieceTokenizer | _HfTokenizer:
    """The tokenizer of a ``tokenizer.json``: zeromem's WordPiece for a BERT one (no
    ``tokenizers`` package needed: wordpiece.py), else ``tokenizers``."""
    own = WordPieceTokenizer.from_file(path)
    if own is None:
        return _HfTokenizer(path, max_length)
    own.max_length = max_length
    return own
