"""Input checks shared by every write path. Each failure raises InvalidInput with a fix."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from dateutil import parser as date_parser

from ..errors import InvalidInput
from ..types import ROLES

DEFAULT_MAX_TEXT_CHARS = 100_000
# Integers are stored as signed 64-bit values (SQLite INTEGER, PostgreSQL BIGINT); a larger one
# would pass every other check and then fail inside the insert.
MIN_INT = -(2**63)
MAX_INT = 2**63 - 1
MAX_METADATA_DEPTH = 64


def clean_text(value: Any, *, field: str = "text", max_chars: int = DEFAULT_MAX_TEXT_CHARS) -> str:
    """Return ``value`` as a storable string or raise InvalidInput.

    Bytes are accepted only as strict UTF-8; lone surrogates are refused because SQLite and
    every encoder downstream would mangle them.
    """
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"{field} is not valid UTF-8 (byte {exc.start}): decode it with the right "
                "encoding before storing it"
            ) from None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{field} is empty or whitespace only: "
                           + ("ask with some words" if field == "query" else "store a non-empty message"))
    if len(value) > max_chars:
        raise InvalidInput(
            f"{field} has {len(value)} characters, over the limit of {max_chars}: split it "
            "into several traces or raise max_text_chars"
        )
    check_unicode(value, field)
    return value


def check_unicode(value: str, field: str) -> None:
    """Raise InvalidInput if ``value`` holds a lone surrogate (it cannot be encoded as UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{field} contains a lone surrogate at position {exc.start}: it is not valid "
            "Unicode text; fix the decoding that produced it"
        ) from None


def printable(value: str) -> str:
    """``value`` with lone surrogates escaped (``\\ud800``), safe to put in an error message."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def clean_seq(value: Any) -> int | None:
    """A trace's position in its session: None (assigned on insert) or an int in 0..2**63-1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"seq must be a non-negative int, got "
                           f"{int_text(value) if isinstance(value, int) else repr(value)}")
    if value > MAX_INT:
        raise InvalidInput(f"seq {int_text(value)} is too large: it must be at most 2**63-1 ({MAX_INT})")
    return int(value)


def clean_int(value: Any, field: str) -> int:
    """An int that fits a signed 64-bit column, or InvalidInput naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an int, got {type(value).__name__}")
    if not MIN_INT <= value <= MAX_INT:
        raise InvalidInput(f"{field} = {int_text(value)} is outside the 64-bit integer range "
                           f"({MIN_INT}..{MAX_INT}): store such a number as a string")
    return int(value)


def int_text(value: int) -> str:
    """An int for an error message: its digits, or its size when it is very long (Python
    refuses to print ints of more than 4300 digits)."""
    return str(value) if value.bit_length() <= 256 else f"(an int of {value.bit_length()} bits)"


def clean_scope_part(value: Any, name: str) -> str | None:
    """A scope's ``user`` or ``agent``: None or a string that can be stored."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string or None, got {type(value).__name__}")
    check_unicode(value, name)
    return value


def clean_optional_str(value: Any, field: str, *, max_chars: int = 1000) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int,)) and not isinstance(value, bool) and field in {"session", "source_id"}:
        value = str(value)
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string or None, got {type(value).__name__}")
    value = value.strip()
    if not value:
        return None
    return clean_text(value, field=field, max_chars=max_chars)


def clean_role(value: Any) -> str:
    if value is None:
        return "user"
    if not isinstance(value, str) or value.lower() not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}, got {value!r}")
    return value.lower()


def clean_time(value: Any, field: str) -> str | None:
    """Normalize a timestamp to ISO 8601; accepts datetime, date, epoch seconds or text."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInput(f"{field} must be a date/time, got a bool")
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day).isoformat(timespec="seconds")
    if isinstance(value, (int, float)):
        try:
            stamp = dt.datetime.fromtimestamp(value, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            raise InvalidInput(f"{field} {value!r} is not a usable epoch time in seconds") from None
        return stamp.isoformat(timespec="seconds")
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            # dateutil fills missing fields from *today*; a fixed Jan 1 keeps "May 2023"
            # the same timestamp whatever day it is parsed on.
            parsed = date_parser.parse(text, default=dt.datetime(dt.date.today().year, 1, 1))
        except (ValueError, OverflowError):
            raise InvalidInput(
                f"{field} {value!r} is not a date/time zeromem can read: use ISO 8601 "
                "(2023-05-08T13:56:00) or a form like '1:56 pm on 8 May, 2023'"
            ) from None
        return parsed.isoformat(timespec="seconds")
    raise InvalidInput(f"{field} must be a datetime or a string, got {type(value).__name__}")


def clean_metadata(value: Any, field: str = "metadata") -> dict[str, Any]:
    """A JSON object every backend can store and give back unchanged.

    Checked at every depth: keys are strings, strings hold no lone surrogate, ints fit in 64
    bits, floats are finite, and values are only None, bool, int, float, str, list or dict.
    The first offending place is named in the error, e.g. ``metadata['tags'][2]``.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be a dict, got {type(value).__name__}")
    _check_json(value, field, 0)
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"{field} must be JSON-serializable: {exc}") from None
    return value


def _check_json(value: Any, where: str, depth: int) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise InvalidInput(f"{where} is nested more than {MAX_METADATA_DEPTH} levels deep (or "
                           "contains itself): metadata must be a plain JSON-serializable tree")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        clean_int(value, where)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{where} is {value!r}: metadata must be JSON-serializable, "
                               "and JSON has no NaN or infinity")
    elif isinstance(value, str):
        check_unicode(value, where)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"metadata keys must be strings: {where} has the "
                                   f"{type(key).__name__} key {key!r}")
            check_unicode(key, f"the key {key!r} of {where}")
            _check_json(item, f"{where}[{key!r}]", depth + 1)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]", depth + 1)
    else:
        raise InvalidInput(f"{where} is a {type(value).__name__}: metadata must be "
                           "JSON-serializable (str, int, float, bool, None, list, dict)")


def clean_attachments(value: Any, *, max_chars: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise InvalidInput("attachments must be a list of text descriptions (e.g. image captions)")
    return tuple(clean_text(item, field="attachment", max_chars=max_chars) for item in value)
