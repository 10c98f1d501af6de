"""``zeromem bench serve`` end to end on a tiny store: real server processes, a SIGKILL and a
restart in the middle, and every check of the report."""

from __future__ import annotations

import json

import pytest

from zeromem.bench.serve import failed, run

pytestmark = pytest.mark.slow


def test_bench_serve_survives_a_kill_and_checks_every_response(tmp_path, example_path):
    out = tmp_path / "serve.json"
    document = run(example_path, db=tmp_path / "serve.db", scopes=2, per_scope=40, servers=1,
                   clients=4, seconds=6.0, write_share=0.3, kill_at=2.0, threads=2, k=5,
                   json_out=out, progress=False)
    assert json.loads(out.read_text())["benchmark"] == "serve"
    assert not failed(document), document["error_samples"]
    assert document["errors"] == 0 and document["cross_scope_results"] == 0
    assert document["acknowledged_missing"] == 0 and document["acknowledged_writes"] > 0
    assert document["restart_s"] is not None and document["search_ms"]["n"] > 0
    assert 0 <= document["stored_beyond_acknowledged"] <= document["unanswered_writes_in_restart"]
