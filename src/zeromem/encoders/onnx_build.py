"""Build a BERT sentence-embedding graph straight from its safetensors weights, without torch.

The default English embedder (all-MiniLM-L6-v2, a 6-layer BERT) used to be exported to ONNX by
tracing it through torch, which made torch (~750 MB) a dependency of every install for a
one-time step. This module writes the same computation with ``onnx.helper`` alone: embeddings
(word + token type + position, LayerNorm), N encoder layers (self-attention, GELU feed-forward,
post-LayerNorm residuals), then mean or CLS pooling and L2 normalization.

The graph follows the torch export node for node where it matters to quantization: every
``nn.Linear`` is a ``MatMul`` with a ``[in, out]`` weight initializer followed by the bias
``Add``, and Q, K, V read the same tensor. ``quantize_dynamic`` (MatMul only, per channel) then
quantizes the same weights the same way and inserts its activation quantizers at the same
places, so the int8 vectors match the traced export's (tests/test_onnx_build.py).

Weights are read with numpy from the safetensors file (an 8-byte header length, a JSON header,
then raw little-endian tensors): no safetensors or torch package is needed.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelUnavailable

_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "F64": np.float64, "I64": np.int64}
OPSET = 17  # LayerNormalization is an ONNX op from 17 on
MASK_MIN = float(np.finfo(np.float32).min)  # what transformers adds to the scores of padding


@dataclass(frozen=True)
class BertSpec:
    """What the graph needs to know about a BERT checkpoint (from its config files)."""

    layers: int
    heads: int
    hidden: int
    eps: float
    pooling: str  # "mean" or "cls"
    max_length: int
    pad_id: int


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file as a float32 (or int64) numpy array."""
    with path.open("rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = np.asarray(data[begin:end])
        if info["dtype"] == "BF16":  # bfloat16 is the top half of a float32
            array = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            dtype = _DTYPES.get(info["dtype"])
            if dtype is None:
                raise ValueError(f"unsupported safetensors dtype {info['dtype']!r} for {name}")
            array = raw.view(np.dtype(dtype).newbyteorder("<"))
        array = array.reshape(info["shape"])
        tensors[name] = array.astype(np.int64 if array.dtype.kind in "iu" else np.float32)
    return tensors


def bert_spec(folder: Path) -> BertSpec | None:
    """The spec of a sentence-transformers BERT folder this builder supports, else None.

    Supported: ``model_type == "bert"``, GELU (erf), absolute positions, one safetensors file,
    a fast tokenizer (``tokenizer.json``), mean or CLS pooling. Anything else is left to the
    torch export.
    """
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return None
    if (config.get("model_type") != "bert" or config.get("hidden_act", "gelu") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
            or not (folder / "model.safetensors").is_file() or not (folder / "tokenizer.json").is_file()):
        return None
    pooling = _pooling_mode(folder)
    if pooling is None:
        return None
    max_positions = int(config.get("max_position_embeddings", 512))
    max_length = max_positions
    st_config = folder / "sentence_bert_config.json"
    if st_config.is_file():
        declared = json.loads(st_config.read_text()).get("max_seq_length")
        if declared:
            max_length = min(int(declared), max_positions)
    return BertSpec(layers=int(config["num_hidden_layers"]), heads=int(config["num_attention_heads"]),
                    hidden=int(config["hidden_size"]), eps=float(config.get("layer_norm_eps", 1e-12)),
                    pooling=pooling, max_length=max_length, pad_id=int(config.get("pad_token_id") or 0))


def _pooling_mode(folder: Path) -> str | None:
    """"mean" or "cls" from the Pooling module's config; mean when the folder has none."""
    modules_path = folder / "modules.json"
    pooling_dir = folder / "1_Pooling"
    if modules_path.is_file():
        for module in json.loads(modules_path.read_text()):
            if str(module.get("type", "")).endswith("Pooling"):
                pooling_dir = folder / module.get("path", "1_Pooling")
    config_path = pooling_dir / "config.json"
    if not config_path.is_file():
        return "mean"
    flags = json.loads(config_path.read_text())
    if "pooling_mode" in flags:
        mode = str(flags["pooling_mode"])
        return mode if mode in ("mean", "cls") else None
    chosen = [name for name in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens",
                                "weightedmean_tokens", "lasttoken")
              if flags.get(f"pooling_mode_{name}")]
    if chosen == ["mean_tokens"]:
        return "mean"
    if chosen == ["cls_token"]:
        return "cls"
    return None


class _Graph:
    """A small builder: named nodes and initializers, unique output names."""

    def __init__(self, helper: Any, numpy_helper: Any) -> None:
        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type}_{self._count}"
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def linear(self, x: str, weights: dict[str, np.ndarray], prefix: str) -> str:
        """``nn.Linear`` as torch exports it: MatMul by the transposed weight, then the bias."""
        w = self.const(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)
        b = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("Add", b, self.op("MatMul", x, w))

    def layer_norm(self, x: str, weights: dict[str, np.ndarray], prefix: str, eps: float) -> str:
        gamma = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        beta = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=eps)


def _strip_prefix(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """BertModel names (``embeddings.…``), whether saved bare or under ``bert.``/``model.``."""
    for prefix in ("bert.", "model."):
        if any(name.startswith(prefix + "embeddings.") for name in weights):
            return {name[len(prefix):]: value for name, value in weights.items() if name.startswith(prefix)}
    return weights


def build_bert_graph(folder: Path, spec: BertSpec, target: Path) -> list[str]:
    """Write the fp32 sentence graph of the BERT in ``folder`` to ``target``; return its inputs.

    Inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, [batch, tokens]); output
    ``embedding`` (float32, [batch, hidden], unit rows).
    """
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as err:
        raise ModelUnavailable("building an ONNX graph needs the onnx package: "
                               "`pip install 'zeromem[torch]'`") from err

    weights = _strip_prefix(read_safetensors(folder / "model.safetensors"))
    g = _Graph(helper, numpy_helper)
    f32 = np.float32
    head_dim = spec.hidden // spec.heads

    # Embeddings: word + token type + position (positions 0..tokens-1), then LayerNorm.
    words = g.op("Gather", g.const("word_embeddings", weights["embeddings.word_embeddings.weight"]), "input_ids")
    types = g.op("Gather", g.const("token_type_embeddings", weights["embeddings.token_type_embeddings.weight"]),
                 "token_type_ids")
    # The first ``tokens`` rows of the position table (a Slice: ONNX Runtime's optimizer rewrites
    # Gather(table, Range(0, n)) into a Slice with scalar bounds that it then rejects).
    tokens = g.op("Shape", "input_ids", start=1, end=2)
    pos = g.op("Slice", g.const("position_embeddings", weights["embeddings.position_embeddings.weight"]),
               g.const("zero_1d", np.array([0])), tokens, g.const("axis0", np.array([0])))
    x = g.layer_norm(g.op("Add", g.op("Add", words, types), pos), weights, "embeddings.LayerNorm", spec.eps)

    # Padding: a large negative number added to the attention scores of masked keys.
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    mask4 = g.op("Unsqueeze", mask, g.const("axes12", np.array([1, 2])))
    inverted = g.op("Sub", g.const("one_f32", np.array(1.0, dtype=f32)), mask4)
    score_bias = g.op("Mul", inverted, g.const("mask_min", np.array(MASK_MIN, dtype=f32)))

    # Head reshapes take their target shape from the input at run time, as in the traced graph:
    # a constant shape lets ONNX Runtime fuse the attention residual into SkipLayerNormalization,
    # whose float rounding differs enough to move the next int8 quantization step (cosine 0.993
    # to the traced int8 vectors on some texts instead of 0.99999).
    lead = g.op("Shape", "input_ids")
    split_heads = g.op("Concat", lead, g.const("heads_dims", np.array([-1, head_dim])), axis=0)
    merge_heads = g.op("Concat", lead, g.const("merged_dims", np.array([-1])), axis=0)
    scale = g.const("scale", np.array(1.0 / np.sqrt(head_dim), dtype=f32))
    sqrt2 = g.const("sqrt2", np.array(np.sqrt(2.0), dtype=f32))
    half = g.const("half", np.array(0.5, dtype=f32))
    one = "one_f32"
    for layer in range(spec.layers):
        p = f"encoder.layer.{layer}"
        q = g.op("Transpose", g.op("Reshape", g.linear(x, weights, f"{p}.attention.self.query"), split_heads),
                 perm=[0, 2, 1, 3])
        k = g.op("Transpose", g.op("Reshape", g.linear(x, weights, f"{p}.attention.self.key"), split_heads),
                 perm=[0, 2, 3, 1])
        v = g.op("Transpose", g.op("Reshape", g.linear(x, weights, f"{p}.attention.self.value"), split_heads),
                 perm=[0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), score_bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge_heads)
        attended = g.op("Add", g.linear(context, weights, f"{p}.attention.output.dense"), x)
        x = g.layer_norm(attended, weights, f"{p}.attention.output.LayerNorm", spec.eps)
        h = g.linear(x, weights, f"{p}.intermediate.dense")
        gelu = g.op("Mul", g.op("Mul", h, g.op("Add", g.op("Erf", g.op("Div", h, sqrt2)), one)), half)
        out = g.op("Add", g.linear(gelu, weights, f"{p}.output.dense"), x)
        x = g.layer_norm(out, weights, f"{p}.output.LayerNorm", spec.eps)

    if spec.pooling == "cls":
        pooled = g.op("Gather", x, g.const("first", np.array(0)), axis=1)
    else:
        weight = g.op("Cast", g.op("Unsqueeze", "attention_mask", g.const("last_axis", np.array([-1]))),
                      to=TensorProto.FLOAT)
        axis1 = g.const("axis1", np.array([1]))
        total = g.op("ReduceSum", g.op("Mul", x, weight), axis1, keepdims=0)
        count = g.op("Clip", g.op("ReduceSum", weight, axis1, keepdims=0),
                     g.const("min_count", np.array(1e-9, dtype=f32)))
        pooled = g.op("Div", total, count)
    norm = g.op("Clip", g.op("ReduceL2", pooled, axes=[1], keepdims=1), g.const("min_norm", np.array(1e-12, dtype=f32)))
    g.nodes.append(helper.make_node("Div", [pooled, norm], ["embedding"], name="normalize"))

    inputs = ["input_ids", "attention_mask", "token_type_ids"]
    graph = helper.make_graph(
        g.nodes, "sentence_embedding",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"]) for n in inputs],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", spec.hidden])],
        initializer=g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="zeromem.onnx_build")
    model.ir_version = 8  # what onnxruntime releases since 1.14 load
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return inputs
