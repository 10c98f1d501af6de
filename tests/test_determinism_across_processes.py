"""The same history and query give the same evidence in another process too, whatever
Python's per-process string hashing (sets and dicts of strings iterate in other orders)."""

from __future__ import annotations

import os
import subprocess
import sys

from zeromem import Memory
from zeromem.ingest import load_file

_SEARCH_ALL = """
import hashlib, json, sys
from zeromem import Memory
from zeromem.ingest import load_file
conversation = load_file(sys.argv[2])[0]
with Memory(sys.argv[1], user="demo") as mem:
    lines = []
    for q in conversation.qa:
        for ev in mem.search(q["question"], k=10):
            lines.append(f"{ev.trace_id} {ev.score!r} {ev.why['reason']}")
print(hashlib.sha256("\\n".join(lines).encode()).hexdigest(), len(lines))
"""


def test_evidence_does_not_depend_on_the_process_hash_seed(tmp_path, example_path):
    db = tmp_path / "m.db"
    with Memory(db, user="demo") as mem:
        mem.add_many(load_file(example_path)[0].drafts)
        mem.index()
    outputs = []
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "HF_HUB_OFFLINE": "1"}
        done = subprocess.run([sys.executable, "-c", _SEARCH_ALL, str(db), str(example_path)],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.split())
    assert outputs[0] == outputs[1]
    assert int(outputs[0][1]) > 0
