"""The tokenizer of a model's ``tokenizer.json``, for the ONNX embedder, the export's probes and
the token counter: the ``tokenizers`` package (a core dependency), the tokenizer the models were
trained with.

zeromem had its own WordPiece for the default model's BERT tokenizer until 2026-12-04, to keep
``tokenizers`` and the ``huggingface_hub`` it requires (+40 MB) out of the core install; both
gave the same ids on every text compared (docs/decisions/0064-hand-written-or-library.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ModelUnavailable

__all__ = ["TokenizerFile", "load_tokenizer"]


class TokenizerFile:
    """Text → token ids of a ``tokenizer.json``: the model's special tokens added, no padding,
    truncated to ``max_length`` ids in all when it is set."""

    def __init__(self, path: Path, max_length: int | None = None) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as err:
            raise ModelUnavailable("reading a tokenizer.json needs the tokenizers package (a core "
                                   "dependency of zeromem): `pip install tokenizers`") from err
        try:
            self._tokenizer: Any = Tokenizer.from_file(str(path))
        except Exception as err:  # tokenizers raises its own exception types for a bad file
            raise ModelUnavailable(f"cannot read the tokenizer {path} ({type(err).__name__}: {err})") from err
        self._tokenizer.no_padding()
        if max_length is None:
            self._tokenizer.no_truncation()
        else:
            self._tokenizer.enable_truncation(max_length=max_length)

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``, special tokens (``[CLS]`` … ``[SEP]``) included."""
        return list(self._tokenizer.encode(text).ids)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        # One text at a time: tokenizers' encode_batch would spread the texts over every core,
        # and zeromem runs its embedders on the threads it is given (EncoderConfig.threads).
        return [self.encode(text) for text in texts]

    def count(self, text: str) -> int:
        """How many tokens ``text`` is, special tokens not counted (every token when
        ``max_length`` is None, as the token counter makes it)."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


def load_tokenizer(path: Path, max_length: int) -> TokenizerFile:
    """The tokenizer of a ``tokenizer.json``, truncating to ``max_length`` ids."""
    return TokenizerFile(path, max_length)
