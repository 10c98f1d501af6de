"""The batch-exact twin of an int8 graph (encoders/onnx_batch.py): a text's vector in a batch
equals its vector alone, bit for bit, so batching never changes what a store holds."""

from __future__ import annotations

import logging
from collections import defaultdict

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sample_texts import repo_texts
from zeromem.encoders import embed as embed_module
from zeromem.encoders import onnx_batch
from zeromem.encoders.embed import BATCH_MIN, OnnxEmbedder
from zeromem.encoders.onnx_batch import batch_graph
from zeromem.encoders.onnx_proto import FLOAT, INT64, GraphWriter, value_info

HIDDEN, OUT = 8, 5


def _tiny_quantized_graph(weight_zero: int = 0) -> bytes:
    """One dynamically quantized linear, a LayerNormalization and a masked mean: the shape of
    ``quantize_dynamic``'s output on a sentence encoder, small enough to reason about."""
    rng = np.random.default_rng(7)
    g = GraphWriter("tiny")
    weights = g.const("w", rng.integers(-127, 128, (HIDDEN, OUT)).astype(np.int8))
    w_scale = g.const("w_scale", rng.uniform(0.01, 0.05, OUT).astype(np.float32))
    w_zero = g.const("w_zero", np.full(OUT, weight_zero, dtype=np.int8))
    q, scale, zero = g.outputs("DynamicQuantizeLinear", "x", count=3)
    product = g.op("Cast", g.op("MatMulInteger", q, weights, zero, w_zero), to=FLOAT)
    bias = g.const("bias", rng.normal(size=OUT).astype(np.float32))
    linear = g.op("Add", g.op("Mul", product, g.op("Mul", scale, w_scale)), bias)
    hidden = g.op("LayerNormalization", linear, g.const("gamma", np.ones(OUT, dtype=np.float32)),
                  g.const("beta", np.zeros(OUT, dtype=np.float32)), axis=-1, epsilon=1e-5)
    weight = g.op("Cast", g.op("Unsqueeze", "attention_mask", g.const("last", np.array([-1]))), to=FLOAT)
    axis1 = g.const("axis1", np.array([1]))
    total = g.op("ReduceSum", g.op("Mul", hidden, weight), axis1, keepdims=0)
    g.op("Div", total, g.op("ReduceSum", weight, axis1, keepdims=0), output="embedding")
    return g.model([value_info("x", FLOAT, ["batch", "tokens", HIDDEN]),
                    value_info("attention_mask", INT64, ["batch", "tokens"])],
                   [value_info("embedding", FLOAT, ["batch", OUT])], opset=17, ir_version=8, producer="test")


def _session(model: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), rows=st.integers(2, 9), tokens=st.integers(1, 12),
       spread=st.floats(0.01, 100.0))
def test_each_row_of_a_batch_gets_its_lone_vector(seed, rows, tokens, spread):
    original = _session(_tiny_quantized_graph())
    twin = batch_graph(_tiny_quantized_graph())
    assert twin is not None and twin.tables == {}
    batched = _session(twin.model)
    rng = np.random.default_rng(seed)
    # Rows at very different scales: a shared quantization range would crush the small ones.
    x = (rng.normal(size=(rows, tokens, HIDDEN)) * rng.uniform(0.001, spread, (rows, 1, 1))).astype(np.float32)
    x[0] = 0.0  # an all-zero row: scale 1, as DynamicQuantizeLinear
    mask = np.ones((rows, tokens), dtype=np.int64)
    together = batched.run(None, {"x": x, "attention_mask": mask})[0]
    alone = np.concatenate([original.run(None, {"x": x[i:i + 1], "attention_mask": mask[i:i + 1]})[0]
                            for i in range(rows)])
    np.testing.assert_array_equal(together, alone)
    # and the original graph itself would not have given these vectors in a batch
    if spread > 10 and rows > 2:
        plain = original.run(None, {"x": x, "attention_mask": mask})[0]
        assert not np.array_equal(plain, alone)


def test_graphs_it_cannot_make_exact_are_refused():
    assert batch_graph(_tiny_quantized_graph(weight_zero=3)) is None  # asymmetric weights
    g = GraphWriter("fp32")
    g.op("Relu", "x", output="embedding")
    plain = g.model([value_info("x", FLOAT, ["batch", 4])], [value_info("embedding", FLOAT, ["batch", 4])],
                    opset=17, ir_version=8, producer="test")
    assert batch_graph(plain) is None  # nothing quantized dynamically


@pytest.fixture(scope="module")
def int8_embedder() -> OnnxEmbedder:
    return OnnxEmbedder(quantize=True)


def test_shipped_graph_batches_texts_of_one_length_exactly(int8_embedder):
    texts = repo_texts(600)
    encodings = int8_embedder._tokenizer.encode_batch(texts)
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, ids in enumerate(encodings):
        by_length[len(ids)].append(i)
    assert sum(len(rows) for rows in by_length.values() if len(rows) >= BATCH_MIN) > 300
    alone = np.stack([int8_embedder.encode([text])[0] for text in texts])
    together = int8_embedder.encode(texts)
    np.testing.assert_array_equal(together, alone)
    assert int8_embedder._batched() is not None  # the twin was built and passed its check


def test_the_twin_reads_the_word_table_from_the_graph_file(int8_embedder):
    _, tables = int8_embedder._batched()
    assert list(tables) == ["word_embeddings"]
    table = tables["word_embeddings"]
    assert isinstance(table, np.memmap) and not table.flags.writeable and table.shape[1] == int8_embedder.dim


def test_without_a_twin_texts_run_alone_with_the_same_vectors(monkeypatch, caplog):
    # Texts of one token length, so that a batch is attempted whatever the repository's prose
    # happens to hold today.
    texts = repo_texts(120) + [f"a sentence of the same length: {word}" for word in
                               ("one", "two", "three", "four", "five", "six")]
    expected = OnnxEmbedder(quantize=True).encode(texts)

    def broken(model):
        raise RuntimeError("no twin here")

    monkeypatch.setattr(onnx_batch, "batch_graph", broken)
    fallback = OnnxEmbedder(quantize=True)
    with caplog.at_level(logging.WARNING, logger=embed_module.__name__):
        np.testing.assert_array_equal(fallback.encode(texts), expected)
    assert "one text at a time" in caplog.text and fallback._batched() is None
