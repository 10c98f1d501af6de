"""``rows.parse_rowids`` reads a unit's stored row-number list exactly as ``json.loads`` does."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from zeromem.store.rows import parse_rowids

rowids = st.lists(st.integers(min_value=1, max_value=2**62), max_size=40)


@given(rowids)
def test_the_sqlite_form_parses_as_json_does(values):
    text = json.dumps(values)  # "[3, 4]": how SQLite rows store them
    assert parse_rowids(text) == tuple(json.loads(text))


@given(rowids)
def test_the_postgres_form_parses_as_json_does(values):
    text = "[" + ",".join(map(str, values)) + "]"  # array_to_json: "[3,4]"
    assert parse_rowids(text) == tuple(json.loads(text))


def test_anything_else_goes_through_json():
    assert parse_rowids(" [1, 2]") == (1, 2)
    assert parse_rowids("[]") == ()
