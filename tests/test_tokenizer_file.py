"""The default model's tokenizer.json through ``tokenizers`` (encoders/tokenizer_file.py).

The expected ids are those zeromem's own WordPiece gave before ``tokenizers`` replaced it
(2026-12-04; the two agreed on all 11,161 texts compared, docs/measurements/
hand-written-inventory.md): a store's vectors were made from these ids, so they must not move.
"""

from __future__ import annotations

import pytest

from zeromem.encoders import shipped
from zeromem.encoders.token_count import WORDPIECE, load_token_counter
from zeromem.encoders.tokenizer_file import TokenizerFile, load_tokenizer
from zeromem.errors import ModelUnavailable

TOKENIZER_JSON = shipped.FOLDER / "tokenizer.json"
EXPECTED = {
    "": [101, 102],
    "When did Caroline go to the LGBTQ support group?":
        [101, 2043, 2106, 7981, 2175, 2000, 1996, 12010, 4160, 2490, 2177, 1029, 102],
    "a [MASK] b[SEP]c": [101, 1037, 103, 1038, 102, 1039, 102],  # added tokens kept whole
    "Héllo   WORLD, naïve café!": [101, 7592, 2088, 1010, 15743, 7668, 999, 102],  # accents stripped
    "北京大学 东京": [101, 1781, 1755, 1810, 1817, 100, 1755, 102],  # one ideograph a word
    "emoji 🙂 and ™": [101, 7861, 29147, 2072, 100, 1998, 1580, 102],
    "tab\tnew\nline\x00nul\ufffdrep\u200bzw": [101, 21628, 2047, 17517, 5313, 2890, 2361, 2480, 2860, 102],
    "ΑΣ ός İstanbul ß ﬁ": [101, 1155, 29733, 1169, 19579, 9960, 1096, 1984, 102],
    "x" * 150: [101, 100, 102],  # a word over max_input_chars_per_word is [UNK]
    "$5.00 + 3 = <8>": [101, 1002, 1019, 1012, 4002, 1009, 1017, 1027, 1026, 1022, 1028, 102],
}


@pytest.fixture(scope="module")
def tokenizer() -> TokenizerFile:
    return load_tokenizer(TOKENIZER_JSON, 256)


def test_the_shipped_tokenizer_gives_the_ids_the_stored_vectors_were_made_from(tokenizer):
    assert {text: tokenizer.encode(text) for text in EXPECTED} == EXPECTED
    assert tokenizer.encode_batch(list(EXPECTED)) == list(EXPECTED.values())


def test_a_long_text_is_truncated_to_max_length_with_its_special_tokens(tokenizer):
    ids = tokenizer.encode("word " * 1000)
    assert len(ids) == 256 and ids[0] == 101 and ids[-1] == 102 and set(ids[1:-1]) == {2773}


def test_the_token_counter_counts_every_token_without_special_ones():
    name, count = load_token_counter()
    assert name == WORDPIECE
    assert count("When did Caroline go to the LGBTQ support group?") == 11
    assert count("word " * 1000) == 1000  # no truncation
    assert count("") == 0


def test_a_file_that_is_not_a_tokenizer_says_so(tmp_path):
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"model": {"type": "Nothing"}}')
    with pytest.raises(ModelUnavailable, match="cannot read the tokenizer"):
        TokenizerFile(bad)
