"""Every relative link in the README, ARCHITECTURE.md, CHANGELOG.md and docs/ names a file of the
repository, and no document names the single-file decision log that was split into
docs/decisions/ (tools/rewrite_decision_refs.py rewrites such references)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CHANGELOG.md",
                    *(ROOT / "docs").rglob("*.md")])
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_relative_links_name_files_that_exist():
    broken = []
    for path in DOCUMENTS:
        for target in _LINK.findall(path.read_text(encoding="utf-8")):
            target = target.split("#", 1)[0]
            if not target or "://" in target or target.startswith("mailto:"):
                continue
            if not (path.parent / target).exists():
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert not broken, "\n".join(broken)


def test_no_document_names_the_old_decision_log():
    stale = [f"{path.relative_to(ROOT)}:{number}" for path in DOCUMENTS
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"(?<![\w/])decisions\.md", line)]
    assert not stale, "run python tools/rewrite_decision_refs.py:\n" + "\n".join(stale)
