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

import io
import json
from typing import Callable, Sequence

import numpy as np

from ..types import Scope, Trace
from .prepared import PreparedScope

FORMAT = 1


def encode(prep: PreparedScope) -> tuple[str, dict[str, bytes]]:
    arrays, facts = prep.state()
    facts["format"] = FORMAT
    parts = {}
    for name, array in arrays.items():
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
        parts[name] = buffer.getvalue()
    return json.dumps(facts, ensure_ascii=False), parts


def decode(scope: Scope, tokenize_many: Callable[[Sequence[str]], list[list[str]]], facts: str,
           parts: dict[str, bytes], traces: dict[int, Trace]) -> PreparedScope | None:
    """The stored index, or None if it was written in a format this version cannot read."""
    loaded = json.loads(facts)
    if loaded.get("format") != FORMAT:
        return None
    arrays = {name: np.load(io.BytesIO(blob), allow_pickle=False) for name, blob in parts.items()}
    return PreparedScope.load_state(scope, tokenize_many, arrays, loaded, traces)
