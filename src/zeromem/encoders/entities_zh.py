"""Entity mentions in Chinese text from ``jieba.posseg`` tags (no Chinese spaCy pipeline
installs offline, so the part-of-speech tagger stands in for NER).

Tags → labels (``_LABELS``): ``nr`` (person name) → PERSON, ``ns`` (place) → GPE, ``nt``
(organization) → ORG, ``nz`` (other proper noun) → MISC; these rank as NER mentions do.
A run of two or more adjacent noun-like words (``_NOUNISH``: n, ns, nt, nz, vn, eng; a person's
name ends a run, a trailing verbal noun is dropped: "上海工作" is no name) is a compound name as
a whole ("深圳银行柜员招聘会", "金融科技精英论坛"): a MISC mention, outranking the place inside
it, when it holds a proper noun (ns, nt, nz), else a NOUN_PHRASE mention, the role the tagger's
noun phrases play for English. Offsets are character offsets into the given text.
Deterministic: jieba's dictionary and HMM are fixed for a given install.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

_LABELS = {"nr": "PERSON", "nrfg": "PERSON", "nrt": "PERSON", "ns": "GPE", "nt": "ORG", "nz": "MISC"}
_NOUNISH = frozenset({"n", "ns", "nt", "nz", "vn", "eng"})
_PROPER = frozenset({"ns", "nt", "nz"})
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_lock = threading.Lock()
_posseg: Any = None


def has_han(text: str) -> bool:
    """True when ``text`` holds a Han character."""
    return bool(_HAN.search(text))


def _tagger() -> Any:
    global _posseg
    with _lock:
        if _posseg is None:
            import jieba
            from jieba import posseg

            jieba.setLogLevel(logging.WARNING)
            _posseg = posseg
    return _posseg


def tagged(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, word, tag) for every word jieba.posseg finds in ``text``."""
    out = []
    position = 0
    for pair in _tagger().lcut(text):
        word, flag = pair.word, pair.flag
        start = text.find(word, position)
        if start < 0:
            continue
        position = start + len(word)
        out.append((start, position, word, flag))
    return out


def han_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, label) of the named entities and noun compounds in ``text``."""
    return spans_of(tagged(text))


def spans_of(words: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str]]:
    """``han_spans`` from a text's ``tagged`` words (a caller that needs both tags once)."""
    spans: list[tuple[int, int, str]] = []
    run: list[tuple[int, int, str, str]] = []

    def flush() -> None:
        while run and run[-1][3] == "vn":  # a compound name ends with a noun: "上海工作" is not one
            run.pop()
        if len(run) >= 2 and any(_HAN.search(word) for _, _, word, _ in run):
            proper = any(flag in _PROPER for _, _, _, flag in run)
            spans.append((run[0][0], run[-1][1], "MISC" if proper else "NOUN_PHRASE"))
        run.clear()

    for start, end, word, flag in words:
        label = _LABELS.get(flag)
        if label is not None and len(word) >= 2:
            spans.append((start, end, label))
        if flag in _NOUNISH and (not run or run[-1][1] == start):
            run.append((start, end, word, flag))
        else:
            flush()
    flush()
    return spans
