"""Texts for tests that compare two encoders: the repository's own prose, in a fixed order."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def repo_texts(n: int) -> list[str]:
    """``n`` distinct sentences from the repository's prose (docs, docstrings, comments), in a
    fixed file order: English, some Chinese, code words, short and long."""
    files = sorted(REPO.glob("*.md")) + sorted((REPO / "docs").glob("*.md"))
    files += sorted((REPO / "src" / "zeromem").rglob("*.py")) + sorted((REPO / "tests").glob("test_*.py"))
    seen: dict[str, None] = {}
    for path in files:
        for part in re.split(r"(?<=[.!?。])\s+|\n\s*\n", path.read_text(encoding="utf-8")):
            text = " ".join(part.replace("#", " ").replace('"""', " ").split())
            if 3 <= len(text) <= 800:
                seen.setdefault(text, None)
            if len(seen) == n:
                return list(seen)
    return list(seen)
