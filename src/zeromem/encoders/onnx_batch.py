"""A batch-exact twin of an int8 sentence graph: a text's vector in a batch equals its vector alone.

``onnxruntime.quantization.quantize_dynamic`` quantizes every linear's input per tensor
(``DynamicQuantizeLinear``: one scale and zero point over the whole ``[batch, tokens, hidden]``
activation), so a text run in a batch would get its neighbours' range and another vector. That is
why the int8 embedders encode one text per run, and a run of a short text is mostly fixed cost.

``batch_graph`` rewrites such a graph, at the protobuf level (no ``onnx`` package), so that every
row of the batch is quantized on its own, with ONNX Runtime's own arithmetic:

* each ``DynamicQuantizeLinear`` becomes the same computation per row — min and max over the
  row (including 0), ``scale = (max − min) / 255`` (1 when the row is all zeros), ``zero point =
  round(clip(0 − min / scale, 0, 255))``, then ``QuantizeLinear`` with one scale and zero point per
  row (``axis=0``): the kernel ``DynamicQuantizeLinear`` itself uses;
* ``MatMulInteger`` takes no activation zero point (ONNX Runtime accepts only a scalar one); the
  product is corrected exactly in int32 instead: ``Σ (a − z) w = Σ a w − z · Σ w``;
* the pooling tail (everything after the encoder's last ``LayerNormalization``) runs under a
  ``Scan`` over the batch, on ``[1, tokens, hidden]`` slices: the reductions it makes (mean over
  tokens, L2 norm) then see the shapes of a lone text, and sum in the same order.

A large lookup table only a ``Gather`` reads (the word embeddings, 47 MB for MiniLM) becomes a
graph input (``BatchGraph.tables``), so the caller can feed a view of the original file instead
of a second copy. Activations are taken to be ``[batch, tokens, hidden]``, as in every sentence
encoder ``onnx_build.py`` writes.

Texts of the same token length (no padding) then get vectors equal bit for bit to those of the
original graph run one at a time (tests/test_onnx_batch.py; ``OnnxEmbedder`` checks it again when
it builds the session and falls back to one text per run if not).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from .onnx_proto import FLOAT, INT32, UINT8, _attribute, _bytes, _int, _key, _str, _varint, tensor, value_info

__all__ = ["BatchGraph", "batch_graph"]

_BYTES_WIRE, _VARINT_WIRE, _FIXED64, _FIXED32 = 2, 0, 1, 5
_ATTR_GRAPH = 5
# onnx.proto field numbers
_MODEL_GRAPH = 7
_GRAPH_NODE, _GRAPH_NAME, _GRAPH_INITIALIZER, _GRAPH_INPUT, _GRAPH_OUTPUT = 1, 2, 5, 11, 12
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP, _NODE_ATTRIBUTE, _NODE_DOMAIN = 1, 2, 3, 4, 5, 7
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_INT32_DATA, _TENSOR_NAME, _TENSOR_RAW = 1, 2, 5, 8, 9
_INT8_TYPE = 3
_PREFIX = "rowq/"  # names of the values this rewrite adds


def _fields(buf: memoryview) -> Iterator[tuple[int, int, int | memoryview, memoryview]]:
    """(field number, wire type, value, the field's raw bytes) of a protobuf message."""
    pos, end = 0, len(buf)
    while pos < end:
        start = pos
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | memoryview
        if wire == _VARINT_WIRE:
            value, pos = _read_varint(buf, pos)
        elif wire == _BYTES_WIRE:
            size, pos = _read_varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire == _FIXED64:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == _FIXED32:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value, buf[start:pos]


def _read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


@dataclass
class _Node:
    """A NodeProto: names decoded, attributes kept as their serialized bytes."""

    op_type: str
    inputs: list[str]
    outputs: list[str]
    name: str = ""
    domain: str = ""
    attributes: list[bytes] = field(default_factory=list)
    body_reads: set[str] = field(default_factory=set)  # names a subgraph attribute reads

    @classmethod
    def parse(cls, buf: memoryview) -> _Node:
        node = cls("", [], [])
        for number, _, value, _raw in _fields(buf):
            if not isinstance(value, memoryview):
                continue
            if number == _NODE_INPUT:
                node.inputs.append(bytes(value).decode())
            elif number == _NODE_OUTPUT:
                node.outputs.append(bytes(value).decode())
            elif number == _NODE_NAME:
                node.name = bytes(value).decode()
            elif number == _NODE_OP:
                node.op_type = bytes(value).decode()
            elif number == _NODE_ATTRIBUTE:
                node.attributes.append(bytes(value))
            elif number == _NODE_DOMAIN:
                node.domain = bytes(value).decode()
        return node

    def serialize(self) -> bytes:
        body = b"".join(_str(_NODE_INPUT, i) for i in self.inputs)
        body += b"".join(_str(_NODE_OUTPUT, o) for o in self.outputs)
        body += _str(_NODE_NAME, self.name) + _str(_NODE_OP, self.op_type)
        body += b"".join(_bytes(_NODE_ATTRIBUTE, a) for a in self.attributes)
        if self.domain:
            body += _str(_NODE_DOMAIN, self.domain)
        return body


def _raw_tensor(buf: memoryview) -> tuple[str, int, list[int], memoryview | None]:
    """(name, data type, dims, raw data or None) of a TensorProto."""
    dims: list[int] = []
    name, data_type, raw = "", 0, None
    for number, _, value, _raw in _fields(buf):
        if number == _TENSOR_DIMS and isinstance(value, int):
            dims.append(value)
        elif number == _TENSOR_DIMS and isinstance(value, memoryview):  # packed
            pos = 0
            while pos < len(value):
                dim, pos = _read_varint(value, pos)
                dims.append(dim)
        elif number == _TENSOR_TYPE and isinstance(value, int):
            data_type = value
        elif number == _TENSOR_NAME and isinstance(value, memoryview):
            name = bytes(value).decode()
        elif number == _TENSOR_RAW and isinstance(value, memoryview):
            raw = value
    return name, data_type, dims, raw


def _int8_matrix(buf: memoryview) -> np.ndarray | None:
    """An int8 TensorProto held as raw data, else None."""
    _, data_type, dims, raw = _raw_tensor(buf)
    if data_type != _INT8_TYPE or raw is None:
        return None
    return np.frombuffer(raw, dtype=np.int8).reshape(dims)


class _Builder:
    """The rewritten graph's nodes, in order, and its new constants (named under ``_PREFIX``)."""

    def __init__(self) -> None:
        self.nodes: list[_Node] = []
        self.constants: list[bytes] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.constants.append(tensor(_PREFIX + name, value))
        return _PREFIX + name

    def op(self, op_type: str, *inputs: str, output: str | None = None,
           **attrs: int | float | list[int]) -> str:
        self._count += 1
        name = output or f"{_PREFIX}{op_type}_{self._count}"
        attributes = [_attribute(k, v) for k, v in sorted(attrs.items())]
        self.nodes.append(_Node(op_type, list(inputs), [name], name, "", attributes))
        return name


def _row_quantize(b: _Builder, x: str, outputs: list[str]) -> str:
    """Nodes computing ``DynamicQuantizeLinear(x)``'s three outputs per batch row (a row's
    scale and zero point shaped ``[B, 1, 1]``); returns the zero point as int32 ``[B, 1, 1]``."""
    quantized, scale_out, _ = outputs
    zero, top, one = "rowq/zero", "rowq/qmax", "rowq/one"
    shape = b.op("Shape", x)
    flat = b.op("Reshape", x, "rowq/flat_shape")
    low = b.op("Min", b.op("ReduceMin", flat, axes=[1], keepdims=1), zero)
    high = b.op("Max", b.op("ReduceMax", flat, axes=[1], keepdims=1), zero)
    scale = b.op("Where", b.op("Equal", high, low), one, b.op("Div", b.op("Sub", high, low), top))
    zero_point = b.op("Round", b.op("Clip", b.op("Sub", zero, b.op("Div", low, scale)), zero, top))
    zero_point_u8 = b.op("Cast", zero_point, to=UINT8)
    rows = b.op("QuantizeLinear", flat, b.op("Reshape", scale, "rowq/vector"),
                b.op("Reshape", zero_point_u8, "rowq/vector"), axis=0)
    b.op("Reshape", rows, shape, output=quantized)
    b.op("Unsqueeze", scale, "rowq/axis2", output=scale_out)
    return b.op("Unsqueeze", b.op("Cast", zero_point, to=INT32), "rowq/axis2")


def _ancestors(nodes: list[_Node], targets: set[str]) -> set[int]:
    """Indexes of the nodes ``targets`` depend on (the nodes are in topological order)."""
    needed, out = set(targets), set()
    for k in range(len(nodes) - 1, -1, -1):
        if needed.intersection(nodes[k].outputs):
            out.add(k)
            needed.update(nodes[k].inputs)
    return out


def _graph_attribute(name: str, graph: bytes) -> bytes:
    return _str(1, name) + _bytes(6, graph) + _int(20, _ATTR_GRAPH)


def _input_types(fields: list[tuple[int, memoryview]]) -> dict[str, int]:
    """The element type of each graph input (ValueInfoProto → TypeProto.tensor_type.elem_type)."""
    types = {}
    for number, value in fields:
        if number != _GRAPH_INPUT:
            continue
        name, elem = "", 0
        for field_number, _, part, _raw in _fields(value):
            if field_number == 1 and isinstance(part, memoryview):
                name = bytes(part).decode()
            elif field_number == 2 and isinstance(part, memoryview):
                for tensor_type in (p for n, _, p, _r in _fields(part) if n == 1 and isinstance(p, memoryview)):
                    elem = next((p for n, _, p, _r in _fields(tensor_type) if n == 1 and isinstance(p, int)), 0)
        types[name] = elem
    return types


def _pooled_per_row(nodes: list[_Node], output: str, input_types: dict[str, int]) -> list[_Node] | None:
    """``nodes`` with the pooling tail (the nodes after the last LayerNormalization that the
    output needs) moved under a Scan over the batch; None when the graph has no such tail."""
    norms = [k for k, n in enumerate(nodes) if n.op_type == "LayerNormalization"]
    if not norms:
        return None
    hidden = nodes[norms[-1]].outputs[0]
    encoder = _ancestors(nodes, {hidden})
    tail = sorted(_ancestors(nodes, {output}) - encoder)
    if not tail or any(nodes[k].op_type in ("DynamicQuantizeLinear", "MatMulInteger") for k in tail):
        return None
    produced = {o for k in tail for o in nodes[k].outputs}
    read = {i for k in tail for i in nodes[k].inputs} - produced
    # The per-text inputs of the tail: the encoder's output and the graph inputs it reads.
    types = {hidden: FLOAT} | {name: input_types[name] for name in read if input_types.get(name)}
    per_text = [hidden, *sorted(name for name in types if name != hidden)]
    rename = {name: f"{_PREFIX}scan/{name}" for name in (*per_text, *produced)}
    body = [_Node("Unsqueeze", [f"{_PREFIX}slice/{name}", "rowq/axis0"], [rename[name]], rename[name])
            for name in per_text]
    for k in tail:
        node = nodes[k]
        body.append(_Node(node.op_type, [rename.get(i, i) for i in node.inputs],
                          [rename.get(o, o) for o in node.outputs], _PREFIX + "scan/" + (node.name or node.outputs[0]),
                          node.domain, node.attributes))
    row = f"{_PREFIX}scan/row"
    body.append(_Node("Squeeze", [rename[output], "rowq/axis0"], [row], row))
    graph = b"".join(_bytes(_GRAPH_NODE, n.serialize()) for n in body) + _str(_GRAPH_NAME, "pool_one_text")
    graph += b"".join(_bytes(_GRAPH_INPUT, value_info(f"{_PREFIX}slice/{name}", types[name]))
                      for name in per_text)
    graph += _bytes(_GRAPH_OUTPUT, value_info(row, FLOAT))
    scan = _Node("Scan", per_text, [output], _PREFIX + "pool_scan", "",
                 [_graph_attribute("body", graph), _attribute("num_scan_inputs", len(per_text))],
                 body_reads={i for node in body for i in node.inputs})
    keep = [n for k, n in enumerate(nodes) if k not in set(tail)]
    return [*keep, scan]


@dataclass(frozen=True)
class BatchGraph:
    """The rewritten model and the inputs it reads instead of initializers: each large lookup
    table (word embeddings), a zero-copy view of the original model's bytes, to be fed with
    every run so that the process holds one copy of it (the original graph's)."""

    model: bytes
    tables: dict[str, np.ndarray]


TABLE_MIN_ELEMENTS = 1 << 20  # a Gather's table this large is fed, not copied into the twin


def batch_graph(model: bytes | memoryview, output: str = "embedding") -> BatchGraph | None:
    """``model`` (a serialized ModelProto of a ``quantize_dynamic`` int8 sentence graph) rewritten
    so that each batch row is quantized and pooled on its own; None if the graph is not of that
    form (no ``DynamicQuantizeLinear``, asymmetric weights, or no pooling tail after a
    LayerNormalization). Pass a memory map of the model file to keep the tables off the heap."""
    view = memoryview(model)
    graph_field = [value for number, _, value, _raw in _fields(view) if number == _MODEL_GRAPH]
    if len(graph_field) != 1 or not isinstance(graph_field[0], memoryview):
        return None
    nodes: list[_Node] = []
    weights: dict[str, tuple[memoryview, memoryview]] = {}  # name -> (TensorProto, its field)
    kept: list[memoryview] = []  # every other field of the graph, as it was
    others: list[tuple[int, memoryview]] = []
    for number, _, value, raw in _fields(graph_field[0]):
        if number == _GRAPH_NODE and isinstance(value, memoryview):
            nodes.append(_Node.parse(value))
        elif number == _GRAPH_INITIALIZER and isinstance(value, memoryview):
            weights[_raw_tensor(value)[0]] = (value, raw)
        else:
            if isinstance(value, memoryview):
                others.append((number, value))
            kept.append(raw)
    if not any(n.op_type == "DynamicQuantizeLinear" for n in nodes):
        return None

    b = _Builder()
    b.const("zero", np.array(0.0, dtype=np.float32))
    b.const("qmax", np.array(255.0, dtype=np.float32))
    b.const("one", np.array(1.0, dtype=np.float32))
    b.const("flat_shape", np.array([0, -1], dtype=np.int64))
    b.const("vector", np.array([-1], dtype=np.int64))
    b.const("axis0", np.array([0], dtype=np.int64))
    b.const("axis2", np.array([2], dtype=np.int64))
    zero_points: dict[str, str] = {}  # DynamicQuantizeLinear zero point -> its int32 per-row twin
    for node in nodes:
        if node.op_type == "DynamicQuantizeLinear" and len(node.outputs) == 3:
            zero_points[node.outputs[2]] = _row_quantize(b, node.inputs[0], node.outputs)
        elif node.op_type == "MatMulInteger" and len(node.inputs) >= 3 and node.inputs[2] in zero_points:
            matrix = _int8_matrix(weights[node.inputs[1]][0]) if node.inputs[1] in weights else None
            weight_zero = node.inputs[3] if len(node.inputs) > 3 else ""
            if matrix is None or (weight_zero and not _all_zero(weights.get(weight_zero, (None,))[0])):
                return None  # only symmetric int8 weights (quantize_dynamic's per-channel default)
            colsum = b.const(f"colsum/{node.inputs[1]}", matrix.astype(np.int32).sum(axis=0, dtype=np.int32))
            product = b.op("MatMulInteger", node.inputs[0], node.inputs[1])
            offset = b.op("Mul", zero_points[node.inputs[2]], colsum)
            b.op("Sub", product, offset, output=node.outputs[0])
        else:
            b.nodes.append(node)
    pooled = _pooled_per_row(b.nodes, output, _input_types(others))
    if pooled is None:
        return None
    tables = _lookup_tables(pooled, {name: tensor for name, (tensor, _) in weights.items()})
    parts: list[bytes | memoryview] = [_bytes(_GRAPH_NODE, n.serialize()) for n in pooled]
    parts += kept
    used = {name for node in pooled for name in node.inputs} | _body_inputs(pooled)
    # Initializers no node reads any more (the weights' zero points) are left out: ONNX Runtime
    # would warn about each.
    parts += [raw for name, (_, raw) in weights.items() if name in used and name not in tables]
    parts += [_bytes(_GRAPH_INITIALIZER, c) for c in b.constants]
    parts += [_bytes(_GRAPH_INPUT, value_info(name, FLOAT, list(table.shape))) for name, table in tables.items()]
    size = sum(len(part) for part in parts)
    head = [raw for number, _, _, raw in _fields(view) if number != _MODEL_GRAPH]
    return BatchGraph(b"".join([*head, _key(_MODEL_GRAPH, _BYTES_WIRE), _varint(size), *parts]), tables)


def _body_inputs(nodes: list[_Node]) -> set[str]:
    """Outer-scope names the Scan body reads (constants such as the pooling's axes)."""
    names: set[str] = set()
    for node in nodes:
        if node.op_type == "Scan":
            names.update(node.body_reads)
    return names


def _lookup_tables(nodes: list[_Node], tensors: dict[str, memoryview]) -> dict[str, np.ndarray]:
    """Large float32 initializers read only by Gather nodes (as their table), viewed in place."""
    readers: dict[str, set[str]] = {}
    for node in nodes:
        for k, name in enumerate(node.inputs):
            readers.setdefault(name, set()).add(node.op_type if k == 0 else "other")
    tables = {}
    for name, buf in tensors.items():
        if readers.get(name) != {"Gather"}:
            continue
        _, data_type, dims, raw = _raw_tensor(buf)
        if data_type == FLOAT and raw is not None and int(np.prod(dims)) >= TABLE_MIN_ELEMENTS:
            tables[name] = np.frombuffer(raw, dtype="<f4").reshape(dims)
    return tables


def _all_zero(buf: memoryview | None) -> bool:
    """Whether an initializer (a zero point) holds only zeros."""
    if buf is None:
        return False
    held = False
    for number, _, value, _raw in _fields(buf):
        if number in (_TENSOR_RAW, _TENSOR_INT32_DATA):  # int8 values may be held as int32_data
            held = True
            if (isinstance(value, int) and value) or (isinstance(value, memoryview) and any(bytes(value))):
                return False
    return held
