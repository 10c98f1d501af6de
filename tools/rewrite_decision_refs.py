"""Rewrite references to the old single-file docs/decisions.md into paths of docs/decisions/.

    python tools/rewrite_decision_refs.py [PATH ...]          # default: the repository (src, tests, bench, docs, ...)
    python tools/rewrite_decision_refs.py --check [PATH ...]  # list what would change, change nothing

``docs/decisions.md#d-041-...`` (any anchor of record D-041) becomes
``docs/decisions/0041-learned-ranker.md``; ``decisions.md#d-046`` in a file under docs/ becomes
``decisions/0046-int8-batches.md``; a reference to D-024 (the register of ranking constants)
becomes ``docs/ranking-constants.md``; ``docs/decisions.md D-044`` becomes the record's path; a bare
``decisions.md`` becomes the index, ``decisions/README.md``. The record files are read from
docs/decisions/, so the map follows them. Exits 1 when a Python line would pass 120 characters
(ruff's limit) with the path: there the reference is written ``decision D-041`` instead (the
record's title starts with its id, and the index lists them all).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["src", "tests", "bench", "docs", "examples", "README.md", "ARCHITECTURE.md", "CHANGELOG.md",
           "pyproject.toml", "Makefile"]
SUFFIXES = {".py", ".md", ".txt", ".toml", ".cfg", ".json", ".html", ".js"}
LINE_LIMIT = 120


def record_files() -> dict[str, str]:
    """'041' → '0041-learned-ranker.md'."""
    return {path.name[1:4]: path.name for path in (ROOT / "docs" / "decisions").glob("0*.md")}


def rewrite(text: str, files: dict[str, str]) -> str:
    def record(number: str) -> str:
        if number not in files:
            raise KeyError(f"no record D-{number} in docs/decisions/")
        return files[number]

    # D-024 is the register of ranking constants: a reference to it means the register's rows.
    text = re.sub(r"(?<![\w/])(docs/)?decisions\.md#d-024[a-z0-9-]*",
                  lambda m: f"{m[1] or ''}ranking-constants.md", text)
    # "decisions.md#d-014, #d-045": the second anchor names a record of the same file.
    text = re.sub(r"(decisions)\.md#d-(\d{3})[a-z0-9-]*, #d-(\d{3})[a-z0-9-]*",
                  lambda m: f"{m[1]}/{record(m[2])}, {m[1]}/{record(m[3])}", text)
    text = re.sub(r"(decisions)\.md#d-(\d{3})[a-z0-9-]*", lambda m: f"{m[1]}/{record(m[2])}", text)
    text = re.sub(r"(decisions)\.md,? (?:record )?D-(\d{3})\b", lambda m: f"{m[1]}/{record(m[2])}", text)
    return re.sub(r"(?<![\w/])((?:docs/)?decisions)\.md\b", r"\1/README.md", text)


def short(text: str) -> str:
    """The same references as ids only, for a line the paths would make too long."""
    text = re.sub(r"(?:docs/)?decisions\.md#d-(\d{3})[a-z0-9-]*, #d-(\d{3})[a-z0-9-]*", r"decisions D-\1, D-\2", text)
    text = re.sub(r"(?:docs/)?decisions\.md#d-(\d{3})[a-z0-9-]*", r"decision D-\1", text)
    return re.sub(r"(?:docs/)?decisions\.md,? (?:record )?D-(\d{3})\b", r"decision D-\1", text)


def rewrite_python(text: str, files: dict[str, str]) -> str:
    lines = []
    for line in text.splitlines(keepends=True):
        new = rewrite(line, files)
        lines.append(short(line) if len(new.rstrip("\n")) > LINE_LIMIT else new)
    return "".join(lines)


def candidates(args: list[str]) -> list[Path]:
    found: list[Path] = []
    for arg in args or DEFAULT:
        path = ROOT / arg if not Path(arg).is_absolute() else Path(arg)
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += [p for p in sorted(path.rglob("*")) if p.is_file() and p.suffix in SUFFIXES
                      and not any(part.startswith(".") or part == "__pycache__" for part in p.parts)]
    return found


def main(argv: list[str]) -> int:
    check = "--check" in argv
    files = record_files()
    changes: dict[Path, str] = {}
    for path in candidates([a for a in argv if a != "--check"]):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if "decisions.md" not in text:
            continue
        new = rewrite_python(text, files) if path.suffix == ".py" else rewrite(text, files)
        if new != text:
            changes[path] = new
    for path in changes:
        print(f"{'would rewrite' if check else 'rewrote'} {path}")
    if not check:
        for path, new in changes.items():
            path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
