"""Lexical tokenization for BM25: English and CJK text in one deterministic function.

Rules, in order:

1. NFKC-normalize and casefold (full-width letters and digits become ASCII, "Ä" ~ "ä").
2. Split the text into script runs. Han runs are segmented by jieba in *search mode*
   (``lcut_for_search``): besides the words of the best segmentation it also emits the
   shorter dictionary words inside them ("北京大学" → "北京", "大学", "北京大学"), so a query
   that names only part of a compound still matches it. Both documents and queries go through
   the same function, so the extra sub-words only add matches, they never break one.
   Kana runs (Japanese) have no dictionary here and become overlapping character bigrams, the
   usual fallback for unsegmented scripts. Hangul is space-separated and is handled as words.
3. Other runs give words (letters and digits, inner apostrophes kept: "don't") and numbers
   ("2022", "3.5"; thousands separators dropped so "2,000" == "2000").
4. English possessives are dropped ("Caroline's" → "caroline"), stopwords are removed
   (the 179-word English list shipped with bm25s plus ``lexicon.CONTRACTIONS``, and
   ``lexicon.CHINESE_STOPWORDS``, a short list of Chinese particles and pronouns) and the
   remaining words are Snowball-stemmed (PyStemmer). Numbers and CJK words are not stemmed.

Cost: pure regex + a C stemmer; jieba loads its dictionary (~1 s) only the first time Han text
is seen.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
import threading
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import Stemmer

from ..lexicon import CHINESE_STOPWORDS, CONTRACTIONS


def _bm25s_english_stopwords() -> frozenset[str]:
    """bm25s's ``STOPWORDS_EN_PLUS``, read from its ``stopwords`` module (plain word lists)
    without importing the bm25s package: its ``__init__`` imports scipy.sparse and tqdm, ~0.5 s
    of CPU that every ``import zeromem`` and every CLI call paid for one list."""
    loaded = sys.modules.get("bm25s.stopwords")
    if loaded is None:
        package = importlib.util.find_spec("bm25s")
        folders = package.submodule_search_locations if package is not None else None
        if not folders:
            raise ImportError("bm25s is not installed: `pip install bm25s`")
        spec = importlib.util.spec_from_file_location("_zeromem_bm25s_stopwords",
                                                      f"{next(iter(folders))}/stopwords.py")
        if spec is None or spec.loader is None:
            raise ImportError("bm25s ships no stopwords module")
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
    return frozenset(loaded.STOPWORDS_EN_PLUS)


# Hiragana, katakana (incl. the phonetic extensions), and the Han blocks jieba knows.
_KANA = "\u3040-\u30ff\u31f0-\u31ff"
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_SCRIPT_RUN_RE = re.compile(f"([{_HAN}]+|[{_KANA}]+)")
_HAN_RE = re.compile(f"[{_HAN}]")
_KANA_RE = re.compile(f"[{_KANA}]")
# A number (with decimal or thousands separators) or a word; letters exclude CJK, which was
# split off above.
_WORD_RE = re.compile(r"\d+(?:[.,]\d+)*|[^\W_]+(?:'[^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})

ENGLISH_STOPWORDS = _bm25s_english_stopwords() | CONTRACTIONS

_stemmer_lock = threading.Lock()
_jieba_lock = threading.Lock()
_jieba_module = None


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def _jieba():
    """Import and initialize jieba once (its dictionary load is the slow part)."""
    global _jieba_module
    with _jieba_lock:
        if _jieba_module is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)  # it prints "Building prefix dict" otherwise
            jieba.initialize()
            _jieba_module = jieba
    return _jieba_module


def _han_tokens(run: str) -> list[str]:
    return [w for w in _jieba().lcut_for_search(run) if w.strip() and w not in CHINESE_STOPWORDS]


def _kana_tokens(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


def _word_tokens(chunk: str) -> list[str]:
    out: list[str] = []
    for word in _WORD_RE.findall(chunk):
        if word[0].isdigit():
            out.append(word.replace(",", ""))
            continue
        if word.endswith("'s"):
            word = word[:-2]
        if word and word not in ENGLISH_STOPWORDS:
            out.append(word)
    return out


def _stem(words: list[str]) -> list[str]:
    if not words:
        return words
    with _stemmer_lock:  # PyStemmer objects are not thread-safe
        return _stemmer().stemWords(words)


def tokenize(text: str) -> list[str]:
    """Turn one text into BM25 tokens: lowercase, stopwords out, English stemmed, CJK segmented.

    >>> tokenize("Caroline's pottery classes in May 2022")
    ['carolin', 'potteri', 'class', 'may', '2022']
    """
    if not text:
        return []
    text = unicodedata.normalize("NFKC", text).casefold().translate(_APOSTROPHES)
    tokens: list[str] = []
    for part in _SCRIPT_RUN_RE.split(text):
        if not part:
            continue
        if _HAN_RE.match(part):
            tokens.extend(_han_tokens(part))
        elif _KANA_RE.match(part):
            tokens.extend(_kana_tokens(part))
        else:
            words = _word_tokens(part)
            stems = _stem([w for w in words if not w[0].isdigit()])
            it = iter(stems)
            tokens.extend(w if w[0].isdigit() else next(it) for w in words)
    return [t for t in tokens if t]


def tokenize_many(texts: Sequence[str]) -> list[list[str]]:
    """``tokenize`` applied to each text, in order."""
    return [tokenize(t) for t in texts]

