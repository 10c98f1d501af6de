"""Opaque trace ids (store/ids.py): short, stable, and revealing nothing about volume."""

from __future__ import annotations

import itertools
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from internals import store_of
from zeromem import Memory
from zeromem.config import Config
from zeromem.errors import InvalidInput, NotFound, StoreError
from zeromem.store.ids import ID_KEY, ROWID_BITS, TraceIdCodec

ID_SHAPE = re.compile(r"t[0-9a-hjkmnp-tv-z]{8}")
KEY = "00112233445566778899aabbccddeeff"


def test_the_codec_is_a_permutation_and_parse_inverts_format():
    codec = TraceIdCodec(KEY)
    rowids = [0, 1, 2, 3, 41, 42, 10**6, (1 << ROWID_BITS) - 1]
    ids = [codec.format(r) for r in rowids]
    assert all(ID_SHAPE.fullmatch(i) for i in ids) and len(set(ids)) == len(ids)
    assert [codec.parse(i) for i in ids] == rowids
    assert codec.parse(f"  {ids[1]}\n") == 1  # surrounding whitespace, as before


def test_consecutive_ids_look_unrelated():
    codec = TraceIdCodec(KEY)
    ids = [codec.format(r) for r in range(1, 201)]
    assert ids != sorted(ids)  # insertion order is not id order
    # No shared prefix beyond chance: consecutive row numbers differ in many characters.
    differing = [sum(a != b for a, b in zip(x[1:], y[1:])) for x, y in itertools.pairwise(ids)]
    assert sum(differing) / len(differing) > 6


def test_another_key_gives_other_ids():
    assert TraceIdCodec(KEY).format(7) != TraceIdCodec("ff" * 16).format(7)


@pytest.mark.parametrize("bad", ["t42", "banana", "", "T4K2X9Q7M", "t4k2x9q7u", "t4k2x9q7mm", "t4k2x9q7",
                                 "t4k2x9q7m\x00", "t4k2x9q7m\n0", "t" + "9" * 5000])
def test_anything_but_an_id_is_not_found_with_a_clear_message(bad):
    with pytest.raises(NotFound, match="ids look like 't4k2x9q7m'"):
        TraceIdCodec(KEY).parse(bad)


def test_a_non_string_is_invalid_input():
    with pytest.raises(InvalidInput, match="string"):
        TraceIdCodec(KEY).parse(42)


def test_row_numbers_outside_40_bits_and_damaged_keys_are_store_errors():
    with pytest.raises(StoreError):
        TraceIdCodec(KEY).format(1 << ROWID_BITS)
    for damaged in ("", "zz" * 16, "00" * 8):
        with pytest.raises(StoreError, match=ID_KEY):
            TraceIdCodec(damaged)


def test_ids_are_stable_across_reopening_and_do_not_reveal_other_scopes(tmp_path):
    db = tmp_path / "m.db"
    config = Config(index_on_write=False)
    with Memory(db, user="ana", config=config) as mem:
        first = mem.add("one")
        mem.add_many([{"text": f"bo's {i}"} for i in range(50)], user="bo")
        second = mem.add("two")
    with Memory(db, user="ana", config=config) as mem:
        assert [t.id for t in mem.list()] == [first, second]
        assert mem.get(second).text == "two"
        # The 50 traces of another scope in between leave no trace in ana's ids.
        assert store_of(mem).ids.parse(second) - store_of(mem).ids.parse(first) == 51
        assert all(ID_SHAPE.fullmatch(i) for i in (first, second))
        with pytest.raises(NotFound, match="no trace"):
            mem.get(store_of(mem).ids.format(store_of(mem).ids.parse(first) + 1))  # bo's: not in this scope


def test_the_id_key_cannot_be_changed_or_removed(tmp_path):
    with Memory(tmp_path / "m.db", config=Config(index_on_write=False)) as mem:
        key = store_of(mem).get_meta(ID_KEY)
        assert key is not None and len(bytes.fromhex(key)) == 16
        for change in (lambda: store_of(mem).set_meta(ID_KEY, "00" * 16),
                       lambda: store_of(mem).setdefault_meta(ID_KEY, "00" * 16),
                       lambda: store_of(mem).delete_meta(ID_KEY)):
            with pytest.raises(InvalidInput, match="trace id key"):
                change()
        assert store_of(mem).get_meta(ID_KEY) == key


def test_every_store_gets_its_own_key(tmp_path):
    keys = set()
    for name in ("a.db", "b.db"):
        with Memory(tmp_path / name, config=Config(index_on_write=False)) as mem:
            keys.add(store_of(mem).get_meta(ID_KEY))
    assert len(keys) == 2


def test_a_store_from_before_opaque_ids_gets_a_key_on_first_open(tmp_path):
    """Schema v7 → v8: the key is made once; ids change once, then stay. The file is a real
    store of the release before scope keys (schema 9, tests/fixtures/) with its key removed
    and its version set back to 7, so every later step runs on the layout it was written for."""
    db = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "fixtures" / "schema9_store.db", db)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DELETE FROM store_meta WHERE key = ?", (ID_KEY,))
    conn.execute("PRAGMA user_version = 7")
    conn.close()
    with Memory(db, user="ana", config=Config(index_on_write=False)) as mem:
        traces = mem.list()
        rows = [store_of(mem).ids.parse(t.id) for t in traces]
        assert traces and all(ID_SHAPE.fullmatch(t.id) for t in traces) and rows == sorted(rows)
        assert store_of(mem).get_meta(ID_KEY)
    with Memory(db, user="ana", config=Config(index_on_write=False)) as mem:
        assert [t.id for t in mem.list()] == [t.id for t in traces]
