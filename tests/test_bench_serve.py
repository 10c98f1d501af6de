"""``zeromem bench serve`` end to end on a tiny store: real server processes, a SIGKILL and a
restart in the middle, and every check of the report."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import pg_fixture
from internals import store_of
from zeromem import Memory
from zeromem.main import app
from zeromem.types import Scope
from zeromem_bench.serve import USER, failed, run

pytestmark = pytest.mark.slow


@pytest.fixture
def pg_url(request):
    """A fresh database on the test PostgreSQL server (skips where it cannot run)."""
    yield from pg_fixture.fresh_database(request)


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


def test_bench_serve_on_postgres_with_two_server_processes(tmp_path, example_path, pg_url):
    """`zeromem bench serve --db postgresql://...`: the fill through Memory(url), two server
    processes on the one database with the clients spread over them, every check clean; a
    second run on the same database reuses the filled scopes."""
    out = tmp_path / "serve.json"
    args = ["bench", "serve", "--data", example_path, "--db", pg_url, "--scopes", 2,
            "--traces-per-scope", 30, "--servers", 2, "--clients", 4, "--seconds", 5,
            "--write-share", 0.3, "--threads", 2, "--k", 5, "--json", out, "--no-progress"]
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert document["backend"] == "postgres" and document["servers"] == 2
    assert document["errors"] == 0, document["error_samples"]
    assert document["cross_scope_results"] == 0 and document["acknowledged_missing"] == 0
    assert document["stored_beyond_acknowledged"] == 0 and document["acknowledged_writes"] > 0
    assert document["search_ms"]["n"] > 0 and document["restart_s"] is None
    with Memory(pg_url) as mem:  # the fill, plus what the run acknowledged
        counts = [store_of(mem).count(Scope(USER.format(i), None)) for i in range(2)]
        assert sum(counts) == 2 * 30 + document["acknowledged_writes"]
        assert store_of(mem).scopes() == [Scope(USER.format(i), None) for i in range(2)]
    # A rerun keeps the filled scopes (no delete and refill) and writes into new sessions.
    again = run(example_path, db=pg_url, scopes=2, per_scope=30, servers=1, clients=2, seconds=2.0,
                write_share=0.5, kill_at=None, threads=2, k=5, json_out=None, progress=False)
    assert not failed(again), again["error_samples"]
    with Memory(pg_url) as mem:
        assert sum(store_of(mem).count(Scope(USER.format(i), None)) for i in range(2)) == \
            sum(counts) + again["acknowledged_writes"]
