"""encoders/onnx_proto.py writes ONNX models without the onnx package: the onnx package (when
installed) reads them back as written, and ONNX Runtime runs them."""

from __future__ import annotations

import numpy as np
import pytest

from zeromem.encoders.onnx_proto import FLOAT, GraphWriter, tensor, value_info


def _tiny_model() -> tuple[bytes, np.ndarray, np.ndarray]:
    weight = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    bias = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)
    g = GraphWriter("tiny")
    y = g.op("Add", g.op("MatMul", "x", g.const("w", weight)), g.const("b", bias))
    first, second = g.outputs("Split", y, g.const("halves", np.array([2, 2])), count=2, axis=-1)
    g.op("Mul", first, second, output="out")
    g.op("Softmax", y, axis=-1, output="probs")
    model = g.model([value_info("x", FLOAT, ["batch", 3])],
                    [value_info("out", FLOAT, ["batch", 2]), value_info("probs", FLOAT, ["batch", 4])],
                    opset=17, ir_version=8, producer="test")
    return model, weight, bias


def test_onnx_reads_back_what_was_written():
    onnx = pytest.importorskip("onnx")  # the [torch] extra; the core install has no onnx
    from onnx import numpy_helper

    data, weight, _ = _tiny_model()
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model)
    assert model.ir_version == 8 and model.opset_import[0].version == 17
    assert [n.op_type for n in model.graph.node] == ["MatMul", "Add", "Split", "Mul", "Softmax"]
    assert list(model.graph.node[2].output) == ["Split_3", "Split_3:1"]
    assert model.graph.node[4].attribute[0].name == "axis" and model.graph.node[4].attribute[0].i == -1
    assert np.array_equal(numpy_helper.to_array(model.graph.initializer[0]), weight)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert (dims[0].dim_param, dims[1].dim_value) == ("batch", 3)
    negative = onnx.TensorProto()
    negative.ParseFromString(tensor("n", np.array([-1, -(2**40)], dtype=np.int64)))
    assert numpy_helper.to_array(negative).tolist() == [-1, -(2**40)]


def test_onnx_runtime_runs_it():
    import onnxruntime as ort

    data, weight, bias = _tiny_model()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 0.5]], dtype=np.float32)
    out, probs = session.run(None, {"x": x})
    y = x @ weight + bias
    assert np.allclose(out, y[:, :2] * y[:, 2:])
    assert np.allclose(probs, np.exp(y) / np.exp(y).sum(axis=1, keepdims=True))


def test_unsupported_values_are_refused():
    g = GraphWriter("bad")
    with pytest.raises(TypeError):
        g.const("s", np.array(["text"]))
    with pytest.raises(TypeError):
        g.op("Foo", "x", flag=True)
