"""Trace ids: the public, opaque form of a trace's row number (the one place that converts).

A trace's row number (``rowid``) is global to the store and grows by one per trace, so showing
it would tell every scope how many traces the other scopes hold, and how fast they grow. The
public id is the row number passed through a keyed permutation of the 40-bit numbers — a
Feistel network of ``ROUNDS`` rounds whose round function is keyed BLAKE2b — written as ``"t"``
and 8 lowercase Crockford base-32 characters (``"t4k2x9q7m"``): short, copyable, no ``i l o u``.
Consecutive traces get unrelated ids, and nothing about volume can be read off them without the
key. Parsing is the inverse permutation; only that exact form is an id (surrounding whitespace
aside), so each trace has one id string.

The key is a random secret of the store (``store_meta``, ``ID_KEY``), made when the store is
created or upgraded (SQLite schema v8, PostgreSQL schema v3) and copied by ``zeromem migrate``,
so ids stay the same across processes, reopenings and backends. Row numbers stay internal:
the store, the indexes and the views work with them; every conversion between a row number and
an id goes through ``TraceIdCodec.format`` / ``TraceIdCodec.parse``.
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import lru_cache
from typing import Any

from ..errors import InvalidInput, NotFound, StoreError

ID_KEY = "trace_id_key"  # the store_meta row that holds the key (hex)
ROWID_BITS = 40  # row numbers below 2**40 (about 1.1e12 traces per store)
ROUNDS = 8
EXAMPLE = "t4k2x9q7m"  # what an id looks like, for messages
_HALF = ROWID_BITS // 2
_MASK = (1 << _HALF) - 1
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base 32, lowercase
_CHARS = ROWID_BITS // 5
# base64's base 32 (RFC 4648, the same 5-bit groups) ⇄ this alphabet: the C codec does the work.
_RFC_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_TO_CROCKFORD = str.maketrans(_RFC_ALPHABET, _ALPHABET)
_FROM_CROCKFORD = str.maketrans(_ALPHABET, _RFC_ALPHABET)
_SHAPE = re.compile(rf"t([{_ALPHABET}]{{{_CHARS}}})")
_CACHE = 1 << 14  # ids converted recently (an index build converts each trace a few times)


class TraceIdCodec:
    """Row number ⇄ public id of one store, keyed by the store's secret (hex)."""

    def __init__(self, key_hex: str) -> None:
        try:
            key = bytes.fromhex(key_hex)
        except (TypeError, ValueError):
            key = b""
        if not 16 <= len(key) <= 64:
            raise StoreError(f"the store's trace id key ({ID_KEY} in store_meta) is damaged: "
                             "it must be 32 to 128 hex digits")
        keyed = hashlib.blake2b(key=key, digest_size=4, person=b"zeromem-trace-id")
        self._rounds = []
        for i in range(ROUNDS):  # one keyed hash per round, its number already absorbed
            one = keyed.copy()
            one.update(bytes((i,)))
            self._rounds.append(one)
        self.format = lru_cache(maxsize=_CACHE)(self._format)
        self._decode = lru_cache(maxsize=_CACHE)(self._decode_text)

    def _round(self, i: int, half: int) -> int:
        h = self._rounds[i].copy()
        h.update(half.to_bytes(3, "big"))
        return int.from_bytes(h.digest(), "big") & _MASK

    def _format(self, rowid: int) -> str:
        """The public id of the trace with row number ``rowid``."""
        if not 0 <= rowid < 1 << ROWID_BITS:
            raise StoreError(f"trace row number {rowid} is outside the {ROWID_BITS}-bit range ids cover")
        left, right = rowid >> _HALF, rowid & _MASK
        for i in range(ROUNDS):
            left, right = right, left ^ self._round(i, right)
        value = (left << _HALF) | right
        return "t" + base64.b32encode(value.to_bytes(ROWID_BITS // 8, "big")).decode("ascii").translate(_TO_CROCKFORD)

    def _decode_text(self, text: str) -> int | None:
        match = _SHAPE.fullmatch(text)
        if match is None:
            return None
        value = int.from_bytes(base64.b32decode(match.group(1).translate(_FROM_CROCKFORD)), "big")
        left, right = value >> _HALF, value & _MASK
        for i in reversed(range(ROUNDS)):
            left, right = right ^ self._round(i, left), left
        return (left << _HALF) | right

    def parse(self, value: Any) -> int:
        """The row number behind a public id: InvalidInput for a non-string, NotFound for
        anything that is not an id's shape (an id of another store or scope, or one made up,
        decodes to a row number that the store then does not find in the scope: NotFound)."""
        if not isinstance(value, str):
            raise InvalidInput(f"a trace id is a string like {EXAMPLE!r}, got {type(value).__name__}")
        rowid = self._decode(value.strip())
        if rowid is None:
            raise NotFound(f"no trace with id {value!r}: ids look like {EXAMPLE!r} ('t' and "
                           f"{_CHARS} lowercase letters or digits; see `zeromem list`)")
        return rowid
