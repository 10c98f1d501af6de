"""No code of the product (src/zeromem) knows a benchmark's data format: only the lab
(bench/, ``zeromem_bench``, a distribution of its own) does.

The engine, indexes, views, lifecycle and interfaces may only see what the public API carries
(text, session, speaker, times, metadata such as ``title``). The one exception is the LoCoMo
*importer*, a user-facing file format (``zeromem import``, the demo): its field names may
appear in ``ingest/locomo.py`` and in the format detection of ``ingest/__init__.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import zeromem

PACKAGE = Path(zeromem.__file__).parent
# Field names of the benchmark files (keys of their JSON), per benchmark.
FIELDS = {
    "LoCoMo": ["dia_id", "blip_caption", "adversarial_answer", "_date_time", "sample_id"],
    "HotpotQA": ["supporting_facts", "sent_id"],
    "LongMemEval": ["has_answer", "answer_session_ids", "haystack_sessions", "haystack_dates",
                    "haystack_session_ids", "question_date", "question_type"],
    "MemDaily": ["target_step_id", "message_list", "question_list", "ground_truth"],
}
IMPORTER = {"LoCoMo": {"ingest/locomo.py", "ingest/__init__.py"}}


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("benchmark", sorted(FIELDS))
def test_no_module_of_the_product_names_a_benchmark_field(benchmark):
    pattern = re.compile("|".join(re.escape(f) for f in FIELDS[benchmark]))
    allowed = IMPORTER.get(benchmark, set())
    offenders = []
    for path in _sources():
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in allowed:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_scan_sees_the_engine():
    names = {p.relative_to(PACKAGE).as_posix() for p in _sources()}
    assert {"retrieval/engine.py", "retrieval/profile.py", "views/graph.py", "memory.py"} <= names
    assert not any(name.startswith("bench/") for name in names)  # the harness lives in the lab
