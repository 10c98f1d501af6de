"""A scope's prepared index as stored bytes, so opening a large store does not re-derive it.

``encode`` turns a ``PreparedScope`` into JSON facts plus one ``.npy`` byte string per array
(``np.save``, no pickles: a file from elsewhere can hold no code); ``decode`` turns them back,
given the scope's traces as the store holds them now. Opening then costs reading the arrays
and rebuilding a few Python lists per turn — no tokenizing, parsing of dates, BM25 building or
SQL per unit — and the sessions that changed after the snapshot are applied as usual.

What is stored is derived: token ids, vectors, graph edges, counts, and the words and entity
names the vocabulary learned. It holds no trace text; ``reindex`` and ``delete_scope`` drop it.
"""

from __future__ import annotations

import functools
import io
import json
import math
import re
from collections.abc import Callable, Sequence

import numpy as np

from ..store.base import TraceRows
from ..types import Scope
from .prepared import PreparedScope

FORMAT = 9  # 9: BM25 postings, one CSR per level; 8: turn titles; 7: state assertions carry session and seq


def encode(prep: PreparedScope) -> tuple[str, dict[str, bytes]]:
    """The scope's prepared index as JSON facts and named array blobs (vectors as the index holds
    them: int8 with a scale per row)."""
    arrays, facts = prep.state()
    facts["format"] = FORMAT
    parts = {}
    for name, array in arrays.items():
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
        parts[name] = buffer.getvalue()
    return json.dumps(facts, ensure_ascii=False), parts


def decode(scope: Scope, tokenize_many: Callable[[Sequence[str]], list[list[str]]], facts: str,
           parts: dict[str, bytes], traces: TraceRows) -> PreparedScope | None:
    """The stored index, or None if it was written in a format this version cannot read."""
    loaded = json.loads(facts)
    if loaded.get("format") != FORMAT:
        return None
    arrays = {name: _view(blob) for name, blob in parts.items()}
    return PreparedScope.load_state(scope, tokenize_many, arrays, loaded, traces)


# The header ``np.save`` writes for a plain C-ordered array; anything else takes numpy's parser.
_PLAIN_HEADER = re.compile(rb"\{'descr': '([<>|=][a-zA-Z][0-9]*)', 'fortran_order': False, "
                           rb"'shape': \(((?:[0-9]+, ?)*[0-9]*)\), \} *\n")


def _view(blob: bytes) -> np.ndarray:
    """The array stored in ``.npy`` bytes, as a read-only view of them (no copy; structures
    copy an array the first time they write to it)."""
    shape, fortran, dtype, offset = _header(blob)
    if fortran or dtype.hasobject:
        raise ValueError("unexpected array layout in a persisted index")
    return np.frombuffer(blob, dtype=dtype, count=math.prod(shape), offset=offset).reshape(shape)


@functools.lru_cache(maxsize=64)
def _dtype(descr: bytes) -> np.dtype:
    return np.dtype(descr.decode("ascii"))


def _header(blob: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """Shape, Fortran order, dtype and data offset of ``.npy`` bytes."""
    # numpy's reader evaluates the header with ast (~50 µs); a scope has ~120 arrays, read on
    # every cold open, so the plain header np.save writes is matched directly.
    if blob[:8] == b"\x93NUMPY\x01\x00" and len(blob) >= 10:
        end = 10 + int.from_bytes(blob[8:10], "little")
        plain = _PLAIN_HEADER.fullmatch(blob, 10, end)
        if plain is not None:
            shape = tuple(int(size) for size in plain[2].split(b",") if size.strip())
            return shape, False, _dtype(plain[1]), end
    stream = io.BytesIO(blob)
    version = np.lib.format.read_magic(stream)
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    shape, fortran, dtype = read_header(stream)
    return shape, fortran, dtype, stream.tell()
