"""What the message-based adapters (Agents SDK, LlamaIndex) share."""

from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidInput
from ..types import SAME_SCOPE, SameScope


def compact_json(value: Any) -> str:
    """``value`` as compact, key-sorted JSON (its repr when it is not JSON): the readable text
    of a structured part of a message."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


def check_scope_part(value: Any, name: str) -> str | SameScope | None:
    """An adapter's ``user=`` / ``agent=`` argument, or InvalidInput naming what it takes."""
    if value is SAME_SCOPE or value is None or isinstance(value, str):
        return value
    raise InvalidInput(f"{name} must be a string, None or SAME_SCOPE, got {type(value).__name__}")
