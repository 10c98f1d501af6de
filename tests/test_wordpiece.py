"""zeromem's WordPiece tokenizer against the ``tokenizers`` package, id for id."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sample_texts import repo_texts
from zeromem.encoders import shipped
from zeromem.encoders.wordpiece import WordPieceTokenizer

tokenizers = pytest.importorskip("tokenizers")  # the reference (the [torch] extra brings it)

TOKENIZER_JSON = shipped.FOLDER / "tokenizer.json"
MAX_LENGTH = 256
EDGES = ["", " ", "[CLS]", "a [MASK] b[SEP]c", "ΑΣ ΣΑΣ ός", "İstanbul ǅ ß ﬁ", "Héllo   WORLD, naïve café!",
         "x" * 150, "un" * 60 + " ok", "tab\tnew\nline\rret\x00nul\ufffdrep\u200bzw\u2028ls\u00a0nb",
         "北京大学 东京 ソウル 서울 ㄅ", "emoji 🙂🎉 and ™®©", "$5.00 + 3 = <8> ^_^ `code` |x| ~y~",
         "„quotes“ «guillemets» — dash – ‘single’", "𠀀𪜀 rare han", "\u0301accent first",
         "a" + "\u0300" * 5, "x," * 200]


@pytest.fixture(scope="module")
def pair() -> tuple[WordPieceTokenizer, object]:
    ours = WordPieceTokenizer.from_file(TOKENIZER_JSON)
    assert ours is not None
    ours.max_length = MAX_LENGTH
    theirs = tokenizers.Tokenizer.from_file(str(TOKENIZER_JSON))
    theirs.no_padding()
    theirs.enable_truncation(max_length=MAX_LENGTH)
    return ours, theirs


def _same(pair, text: str) -> None:
    ours, theirs = pair
    assert ours.encode(text) == theirs.encode(text).ids, repr(text)


def test_edge_cases_give_the_same_ids(pair):
    for text in EDGES:
        _same(pair, text)
    _same(pair, "new emoji \U0001fae8 and \U0001fa77 (Unicode 15)")


def test_a_thousand_texts_give_the_same_ids(pair):
    for text in repo_texts(1000):
        _same(pair, text)




def _stable(char: str) -> bool:
    """Assigned in Unicode 3.2 with the same category as in Python's tables: tokenizers' older
    tables agree on it (wordpiece.py, "Known difference"; 3 characters changed category)."""
    old = unicodedata.ucd_3_2_0.category(char)
    return old != "Cn" and old == unicodedata.category(char)


ASSIGNED = st.characters(blacklist_categories=("Cs",)).filter(_stable)


@settings(max_examples=400, deadline=None)
@given(st.text(ASSIGNED, max_size=80))
def test_any_text_gives_the_same_ids(pair, text):
    _same(pair, text)


def test_every_stable_character_gives_the_same_ids(pair):
    chars = [chr(c) for c in range(0x30000) if not 0xD800 <= c <= 0xDFFF and _stable(chr(c))]
    assert len(chars) > 90_000
    for start in range(0, len(chars), 64):  # 64 characters a text, spaced
        _same(pair, " ".join(chars[start:start + 64]))


def test_a_tokenizer_json_of_another_kind_is_refused():
    assert WordPieceTokenizer.from_spec({"model": {"type": "BPE"}}) is None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_text_takes_the_fast_path_to_the_same_words_and_ids(pair, text):
    ours, _ = pair
    assert ours._split(text) == ours._words(ours._normalize(text))  # the per-character steps
    _same(pair, text)
