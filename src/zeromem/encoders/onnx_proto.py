"""Serialize an ONNX model without the ``onnx`` package: the few protobuf messages a graph needs.

ONNX Runtime (a core dependency) loads a model from bytes, but writing those bytes normally
takes the ``onnx`` package, which the core install does not have (it comes with the
``[torch]`` extra). A graph built at load time from installed weights (``e5_graph.py``) only
needs ModelProto, GraphProto, NodeProto, AttributeProto (int, float, ints), TensorProto (raw
data) and ValueInfoProto; this module writes exactly those in protobuf's wire format. Field
numbers are those of ``onnx/onnx.proto`` (proto2; repeated scalars are written unpacked, which
every protobuf reader accepts).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

# onnx.TensorProto.DataType
FLOAT, UINT8, INT8, INT32, INT64, FLOAT16 = 1, 2, 3, 6, 7, 10
_DATA_TYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.uint8): UINT8, np.dtype(np.int8): INT8,
               np.dtype(np.int32): INT32, np.dtype(np.int64): INT64, np.dtype(np.float16): FLOAT16}
# onnx.AttributeProto.AttributeType
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7
_VARINT, _FIXED32, _BYTES = 0, 5, 2


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64: two's complement, ten bytes
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _int(number: int, value: int) -> bytes:
    return _key(number, _VARINT) + _varint(value)


def _bytes(number: int, value: bytes) -> bytes:
    return _key(number, _BYTES) + _varint(len(value)) + value


def _str(number: int, value: str) -> bytes:
    return _bytes(number, value.encode())


def tensor(name: str, value: np.ndarray) -> bytes:
    """A TensorProto holding ``value`` (little-endian raw data)."""
    array = np.ascontiguousarray(value)
    data_type = _DATA_TYPES.get(array.dtype)
    if data_type is None:
        raise TypeError(f"no ONNX data type for {array.dtype}")
    dims = b"".join(_int(1, d) for d in array.shape)
    raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return b"".join([dims, _int(2, data_type), _str(8, name), _key(9, _BYTES), _varint(len(raw)), raw])


def _attribute(name: str, value: int | float | list[int]) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | float | list):
        raise TypeError(f"unsupported attribute {name}={value!r}")
    if isinstance(value, list):
        body = b"".join(_int(8, int(v)) for v in value) + _int(20, _ATTR_INTS)
    elif isinstance(value, int):
        body = _int(3, value) + _int(20, _ATTR_INT)
    else:
        body = _key(2, _FIXED32) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
    return _str(1, name) + body


def value_info(name: str, elem_type: int, dims: list[int | str] | None = None) -> bytes:
    """A ValueInfoProto: a tensor input or output; a str dim is symbolic, ``dims=None`` leaves
    the shape unknown (a subgraph's inputs and outputs)."""
    tensor_type = _int(1, elem_type)
    if dims is not None:
        tensor_type += _bytes(2, b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _str(2, d)) for d in dims))
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


@dataclass
class GraphWriter:
    """Collects nodes and initializers; ``model()`` returns the serialized ModelProto."""

    name: str
    nodes: list[bytes] = field(default_factory=list)
    initializers: list[bytes] = field(default_factory=list)
    domains: dict[str, int] = field(default_factory=dict)  # extra operator sets: domain -> version
    _count: int = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(tensor(name, value))
        return name

    def op(self, op_type: str, *inputs: str, domain: str = "", output: str | None = None,
           **attrs: int | float | list[int]) -> str:
        """Add a node; return its output's name. An empty input name skips an optional input."""
        return self._node(op_type, inputs, 1, domain, output, attrs)[0]

    def outputs(self, op_type: str, *inputs: str, count: int, domain: str = "",
                **attrs: int | float | list[int]) -> list[str]:
        """Add a node with ``count`` outputs; return their names."""
        return self._node(op_type, inputs, count, domain, None, attrs)

    def _node(self, op_type: str, inputs: tuple[str, ...], count: int, domain: str, output: str | None,
              attrs: dict[str, int | float | list[int]]) -> list[str]:
        self._count += 1
        node_name = output or f"{op_type}_{self._count}"
        names = [node_name] + [f"{node_name}:{k}" for k in range(1, count)]
        body = b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in names)
        body += _str(3, node_name) + _str(4, op_type)
        body += b"".join(_bytes(5, _attribute(k, v)) for k, v in sorted(attrs.items()))
        if domain:
            body += _str(7, domain)
        self.nodes.append(body)
        return names

    def model(self, inputs: list[bytes], outputs: list[bytes], *, opset: int, ir_version: int,
              producer: str) -> bytes:
        # One join at the end: the initializers (megabytes) are copied once, not per nesting level.
        graph = [_str(2, self.name)]
        for number, bodies in ((1, self.nodes), (5, self.initializers), (11, inputs), (12, outputs)):
            for body in bodies:
                graph += [_key(number, _BYTES) + _varint(len(body)), body]
        opsets = [_bytes(8, _str(1, "") + _int(2, opset))]
        opsets += [_bytes(8, _str(1, d) + _int(2, v)) for d, v in sorted(self.domains.items())]
        size = sum(len(part) for part in graph)
        return b"".join([_int(1, ir_version), _str(2, producer), *opsets, _key(7, _BYTES), _varint(size), *graph])
