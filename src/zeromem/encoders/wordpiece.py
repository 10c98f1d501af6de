"""BERT's WordPiece tokenizer, read from a ``tokenizer.json``, in plain Python.

Why not the ``tokenizers`` package: it requires ``huggingface_hub`` (with hf-xet, fsspec,
httpx2, PyYAML...), ~50 MB of the core install for a tokenizer that is a few rules. This one
covers the configuration BERT models ship (the default all-MiniLM-L6-v2 among them) and is
checked id for id against ``tokenizers`` (tests/test_wordpiece.py); any other configuration is
refused (``from_file`` returns None) and the caller uses ``tokenizers``.

The steps, as ``tokenizers`` runs them for ``BertNormalizer`` + ``BertPreTokenizer`` +
``WordPiece`` + ``TemplateProcessing([CLS] $A [SEP])``:

1. Added tokens (``[CLS]``, ``[MASK]``...) are matched verbatim in the raw text first and kept
   as their own ids.
2. Normalize: drop NUL, U+FFFD and control characters, turn whitespace into spaces; put spaces
   around CJK ideographs; when lowercasing, strip accents (NFD, drop nonspacing marks) and
   lowercase character by character (so a final Σ is σ, as in Rust, not ς).
3. Split on whitespace; every punctuation character (ASCII punctuation or a Unicode P*
   category) is a word of its own.
4. WordPiece: greedy longest match from the left, later pieces prefixed with ``##``; a word
   with an unmatched rest, or longer than ``max_input_chars_per_word``, is ``[UNK]``.
5. Truncate to ``max_length`` minus the two special tokens; add ``[CLS]`` and ``[SEP]``.

Known difference: ``tokenizers`` reads the categories (control, nonspacing mark, punctuation)
from older Unicode tables than Python's (14.0 in 3.11), so a character given one of these
categories after them (a combining mark of Unicode 14, say; 3 characters of Unicode 3.2 changed
category since) may tokenize differently. The tests compare every other character assigned in
Unicode 3.2, random texts of them, and the repository's 1,000-text sample.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


# ASCII text (most of what an English memory holds) skips the per-character steps: the same
# result from str.translate, str.lower and one regex. Cleaning drops the C0 controls and DEL
# except tab and newlines, which become spaces; ASCII has no accents or CJK; BERT counts all 32
# ASCII punctuation and symbol characters as punctuation.
_ASCII_CLEAN = str.maketrans({**{chr(c): None for c in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)},
                              "\t": " ", "\n": " ", "\r": " "})
_ASCII_WORD = re.compile(r"[^\s!-/:-@\[-`{-~]+|[!-/:-@\[-`{-~]")


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK_RANGES)


def _is_control(char: str) -> bool:
    """Cc, Cf, Cs, Co: ``tokenizers``' "other" characters (minus tab and newlines). Not Cn:
    ``tokenizers`` keeps unassigned code points (as [UNK])."""
    return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co")


def _is_whitespace(char: str) -> bool:
    return char.isspace()  # after _is_control: Zs, Zl, Zp and \t \n \r, as Rust's White_Space


def _is_punctuation(char: str) -> bool:
    return char in _ASCII_PUNCTUATION or unicodedata.category(char).startswith("P")


class WordPieceTokenizer:
    """Text → token ids for a BERT ``tokenizer.json`` (single sequences, no padding)."""

    def __init__(self, vocab: dict[str, int], *, unk: str, prefix: str, max_word_chars: int,
                 lowercase: bool, strip_accents: bool, chinese_chars: bool, clean_text: bool,
                 cls_id: int, sep_id: int, added: dict[str, int], max_length: int | None = None) -> None:
        self.vocab = vocab
        self.unk_id = vocab[unk]
        self.prefix = prefix
        self.max_word_chars = max_word_chars
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.chinese_chars = chinese_chars
        self.clean_text = clean_text
        self.cls_id = cls_id
        self.sep_id = sep_id
        self.added = added
        self._added_re = re.compile("|".join(re.escape(t) for t in sorted(added, key=len, reverse=True))) \
            if added else None
        self.max_length = max_length

    @classmethod
    def from_file(cls, path: str | Path) -> WordPieceTokenizer | None:
        """The tokenizer of ``path``, or None when it is not the BERT configuration read here."""
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls.from_spec(spec)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> WordPieceTokenizer | None:
        model, normalizer = spec.get("model") or {}, spec.get("normalizer") or {}
        pre, post = spec.get("pre_tokenizer") or {}, spec.get("post_processor") or {}
        if (model.get("type") != "WordPiece" or normalizer.get("type") != "BertNormalizer"
                or pre.get("type") != "BertPreTokenizer" or post.get("type") != "TemplateProcessing"):
            return None
        single = post.get("single") or []
        shape = [next(iter(part)) for part in single]
        if shape != ["SpecialToken", "Sequence", "SpecialToken"]:
            return None
        first, last = single[0]["SpecialToken"]["id"], single[2]["SpecialToken"]["id"]
        specials = post.get("special_tokens") or {}
        try:
            cls_id, sep_id = specials[first]["ids"][0], specials[last]["ids"][0]
        except (KeyError, IndexError):
            return None
        added = {}
        for token in spec.get("added_tokens") or []:
            if token.get("normalized") or token.get("single_word") or token.get("lstrip") or token.get("rstrip"):
                return None  # matching rules this tokenizer does not implement
            added[token["content"]] = int(token["id"])
        lowercase = bool(normalizer.get("lowercase", True))
        strip = normalizer.get("strip_accents")
        return cls(dict(model["vocab"]), unk=model.get("unk_token", "[UNK]"),
                   prefix=model.get("continuing_subword_prefix", "##"),
                   max_word_chars=int(model.get("max_input_chars_per_word", 100)),
                   lowercase=lowercase, strip_accents=lowercase if strip is None else bool(strip),
                   chinese_chars=bool(normalizer.get("handle_chinese_chars", True)),
                   clean_text=bool(normalizer.get("clean_text", True)),
                   cls_id=int(cls_id), sep_id=int(sep_id), added=added)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def encode(self, text: str) -> list[int]:
        """``[CLS] ids [SEP]``, the ids truncated to ``max_length`` in all (when set)."""
        ids: list[int] = []
        start = 0
        for match in self._added_re.finditer(text) if self._added_re is not None else ():
            ids += self._encode_plain(text[start:match.start()])
            ids.append(self.added[match.group()])
            start = match.end()
        ids += self._encode_plain(text[start:])
        if self.max_length is not None:
            ids = ids[:max(self.max_length - 2, 0)]
        return [self.cls_id, *ids, self.sep_id]

    def _encode_plain(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in self._split(text):
            ids += self._word_ids(word)
        return ids

    def _split(self, text: str) -> list[str]:
        """The normalized words of ``text`` (steps 2 and 3)."""
        if self.clean_text and text.isascii():
            return _ASCII_WORD.findall(text.translate(_ASCII_CLEAN).lower() if self.lowercase
                                       else text.translate(_ASCII_CLEAN))
        return self._words(self._normalize(text))

    def _normalize(self, text: str) -> str:
        if self.clean_text:
            text = "".join(" " if _is_whitespace(c) else c for c in text
                           if c not in "\x00\ufffd" and not _is_control(c))
        if self.chinese_chars:
            text = "".join(f" {c} " if _is_cjk(ord(c)) else c for c in text)
        if self.strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        if self.lowercase:
            text = "".join(c.lower() for c in text)
        return text

    @staticmethod
    def _words(text: str) -> list[str]:
        words: list[str] = []
        for chunk in text.split():
            current: list[str] = []
            for char in chunk:
                if _is_punctuation(char):
                    if current:
                        words.append("".join(current))
                        current = []
                    words.append(char)
                else:
                    current.append(char)
            if current:
                words.append("".join(current))
        return words

    def _word_ids(self, word: str) -> list[int]:
        if len(word) > self.max_word_chars:
            return [self.unk_id]
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return [self.unk_id]
            pieces.append(found)
            start = end
        return pieces
