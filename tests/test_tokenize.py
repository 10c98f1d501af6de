"""Tokenization for BM25: English stemming and stopwords, Chinese segmentation, mixed text."""

from hypothesis import given, settings
from hypothesis import strategies as st

from zeromem.encoders.tokenize import tokenize, tokenize_many


def test_english_is_lowercased_stemmed_and_stopword_free():
    assert tokenize("The Classes were RUNNING and she loved them") == ["class", "run", "love"]


def test_possessives_and_contractions_do_not_leave_fragments():
    assert tokenize("Caroline's dog") == ["carolin", "dog"]
    assert tokenize("I don't know, I'm sure it’s fine") == ["know", "sure", "fine"]


def test_numbers_are_kept_whole_and_thousands_separators_dropped():
    assert tokenize("In 2022 I ran 3 races, 2,000 meters and 3.5 km") == \
        ["2022", "ran", "3", "race", "2000", "meter", "3.5", "km"]


def test_chinese_is_segmented_with_search_mode_subwords():
    tokens = tokenize("我昨天去了北京大学")
    assert "北京大学" in tokens and "北京" in tokens and "大学" in tokens
    assert "我" not in tokens and "了" not in tokens  # function characters are stopwords


def test_a_chinese_query_for_part_of_a_compound_matches_the_document_tokens():
    assert set(tokenize("北京")) <= set(tokenize("我在北京大学学习"))


def test_mixed_english_and_chinese_keep_both_scripts():
    assert tokenize("Pottery课程 in 上海") == ["potteri", "课程", "上海"]


def test_kana_becomes_character_bigrams():
    assert tokenize("こんにちは") == ["こん", "んに", "にち", "ちは"]


def test_full_width_characters_match_their_ascii_forms():
    assert tokenize("ＬＧＢＴＱ　２０２３") == tokenize("LGBTQ 2023") == ["lgbtq", "2023"]


def test_empty_and_punctuation_only_text_give_no_tokens():
    assert tokenize("") == []
    assert tokenize("?!... -- ,,") == []


def test_tokenize_many_keeps_order():
    assert tokenize_many(["cats", "", "dogs"]) == [["cat"], [], ["dog"]]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_tokens_are_never_empty_and_tokenizing_is_deterministic(text):
    first = tokenize(text)
    assert all(t and t == t.strip() for t in first)
    assert tokenize(text) == first


_PIECES = st.sampled_from(["Caroline's", "RUNNING", "2,000", "3.5", "don't", "北京大学", "我们",
                           "カタカナ", "ｆｕｌｌ", "é", "\u0301", "Straße", "'", "-", ".", " ", "?",
                           "한국어", "ﬁsh", "x", "7"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_PIECES, max_size=6).map("".join), min_size=1, max_size=5))
def test_no_token_spans_a_newline(parts):
    # The snapshot tokenizes windows and episodes as their turns' tokens end to end.
    assert tokenize("\n".join(parts)) == [t for part in parts for t in tokenize(part)]
