"""A scope's prepared index as stored bytes, so opening a large store does not re-derive it.

``encode`` turns a ``PreparedScope`` into JSON facts plus one ``.npy`` byte string per array
(``np.save``, no pickles: a file from elsewhere can hold no code); ``decode`` turns them back,
given the scope's traces as the store holds them now. Opening then costs reading the arrays
and rebuilding a few Python lists per turn — no tokenizing, parsing of dates, BM25 building or
SQL per unit — and the sessions that changed after the snapshot are applied as usual.

What is stored is derived: token ids, vectors, graph edges, counts, and the words and entity
names the vocabulary learned. It holds no trace text; ``reindex`` and ``delete_scope`` drop it.

A stored index is trusted only as far as it is checked. ``encode`` adds a SHA-256 checksum
(part ``CHECKSUM_PART``) over the format, the scope's key, the store version the index is at,
the facts and every array, and ``decode`` refuses (``SnapshotRejected``) an index whose
checksum does not match — flipped bytes, a truncated row, a moved version row, rows copied
from another scope — and then one whose arrays or facts fail ``persist_checks.check_state``
(what a forger who recomputes the checksum would still have to pass). A snapshot of an older
format is not an error: ``load_snapshot`` does not return it, and the scope is rebuilt.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Sequence

import numpy as np

from ..store.base import TraceRows
from ..types import Scope
from .persist_checks import SnapshotRejected, check_state
from .prepared import PreparedScope

FORMAT = 10  # 10: checksum and bounds checks; 9: BM25 postings, one CSR per level; 8: turn titles
CHECKSUM_PART = "checksum"  # the part holding the digest (no array is named so)

__all__ = ["CHECKSUM_PART", "FORMAT", "SnapshotRejected", "checksum", "decode", "encode"]


def encode(prep: PreparedScope, scope: Scope) -> tuple[str, dict[str, bytes]]:
    """The scope's prepared index as JSON facts and named array blobs (vectors as the index holds
    them: int8 with a scale per row), sealed by a checksum part for ``scope`` at the index's
    version."""
    arrays, facts = prep.state()
    facts["format"] = FORMAT
    parts = {}
    for name, array in arrays.items():
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
        parts[name] = buffer.getvalue()
    text = json.dumps(facts, ensure_ascii=False)
    parts[CHECKSUM_PART] = checksum(scope, prep.index.version, FORMAT, text, parts)
    return text, parts


def checksum(scope: Scope, version: int, format: int, facts: str, parts: dict[str, bytes]) -> bytes:
    """SHA-256 over everything an index is read with: its format, the scope it belongs to, the
    store version it is at, its facts and every array (by name, length-prefixed, so no two
    different snapshots hash the same bytes). ``parts`` without the checksum part."""
    digest = hashlib.sha256()

    def field(data: bytes) -> None:
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)

    field(b"zeromem persisted index")
    for value in (str(format), scope.user or "", scope.agent or "", str(version), facts):
        field(value.encode("utf-8"))
    for name in sorted(parts):
        field(name.encode("utf-8"))
        field(parts[name])  # hashlib reads large buffers without holding the GIL
    return digest.digest()


def decode(scope: Scope, tokenize_many: Callable[[Sequence[str]], list[list[str]]], facts: str,
           parts: dict[str, bytes], traces: TraceRows, version: int) -> PreparedScope:
    """The stored index at store ``version``; raises ``SnapshotRejected`` when its checksum does
    not match or its arrays and facts fail the bounds checks (persist_checks.py)."""
    parts = dict(parts)
    sealed = parts.pop(CHECKSUM_PART, None)
    if sealed is None:
        raise SnapshotRejected("it has no checksum")
    if sealed != checksum(scope, version, FORMAT, facts, parts):
        raise SnapshotRejected("its checksum does not match (damaged, moved or from another scope)")
    try:
        loaded = json.loads(facts)
        arrays = {name: _view(blob) for name, blob in parts.items()}
    except ValueError as exc:  # (json's and numpy's header errors are ValueErrors)
        raise SnapshotRejected(f"unreadable: {exc}") from exc
    if not isinstance(loaded, dict) or loaded.get("format") != FORMAT or loaded.get("version") != version:
        raise SnapshotRejected("its facts do not match its format and version")
    check_state(arrays, loaded)
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
    if len(blob) - offset != math.prod(shape) * dtype.itemsize:
        raise ValueError("a persisted array's length does not match its header")
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
