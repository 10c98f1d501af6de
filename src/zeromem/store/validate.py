"""Input checks shared by every write path. Each failure raises InvalidInput with a fix."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from dateutil import parser as date_parser

from ..errors import InvalidInput
from ..types import ROLES

DEFAULT_MAX_TEXT_CHARS = 100_000


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
        raise InvalidInput(f"{field} is empty or whitespace only: store a non-empty message")
    if len(value) > max_chars:
        raise InvalidInput(
            f"{field} has {len(value)} characters, over the limit of {max_chars}: split it "
            "into several traces or raise max_text_chars"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{field} contains a lone surrogate at position {exc.start}: it is not valid "
            "Unicode text; fix the decoding that produced it"
        ) from None
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
            stamp = dt.datetime.fromtimestamp(value, tz=dt.timezone.utc)
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


def clean_metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"metadata must be a dict, got {type(value).__name__}")
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"metadata must be JSON-serializable: {exc}") from None
    for key in value:
        if not isinstance(key, str):
            raise InvalidInput("metadata keys must be strings")
    return value


def clean_attachments(value: Any, *, max_chars: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise InvalidInput("attachments must be a list of text descriptions (e.g. image captions)")
    return tuple(clean_text(item, field="attachment", max_chars=max_chars) for item in value)
