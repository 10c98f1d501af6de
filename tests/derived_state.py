"""What the indexer derived for a store (units, vectors, mentions), to compare two stores."""

from __future__ import annotations

import numpy as np

from internals import store_of
from zeromem import Memory


def derived_state(memory: Memory) -> list[tuple]:
    rows = store_of(memory).read(
        "SELECT u.session, u.level, u.position, u.text, u.rowids, v.vec,"
        " (SELECT group_concat(entity || ':' || count, '|') FROM"
        "   (SELECT entity, count FROM unit_mentions m WHERE m.unit_id = u.id ORDER BY entity))"
        " FROM units u LEFT JOIN unit_vectors v ON v.unit_id = u.id"
        " ORDER BY u.session, u.level, u.position")
    return [(s, lvl, pos, text, ids, None if vec is None else np.frombuffer(vec, np.float32), m)
            for s, lvl, pos, text, ids, vec, m in rows]


def assert_same(a: list[tuple], b: list[tuple]) -> None:
    assert [r[:5] + r[6:] for r in a] == [r[:5] + r[6:] for r in b]
    for x, y in zip(a, b):
        assert (x[5] is None) == (y[5] is None)
        if x[5] is not None:  # batch composition changes float rounding, nothing more
            assert np.allclose(x[5], y[5], atol=1e-5)
