"""``zeromem bench tenants`` on a tiny store: the size distribution, the fill's reuse of
encodings, and one end-to-end run with a real server process and every check of the report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from internals import indexer_of, store_of
from zeromem import Memory
from zeromem.types import Scope
from zeromem_bench.tenants import USER, _zipf_choices, failed, fill, run, scope_sizes


def test_sizes_are_heavy_tailed_and_reach_the_total():
    sizes = scope_sizes(2000, 1_000_000)
    assert sum(sizes) >= 1_000_000 and len(sizes) == 2000
    assert 10 <= sum(s == 20_000 for s in sizes) <= 60  # a few large ones
    assert all(50 <= s <= 500 for s in sizes if s != 20_000)
    assert scope_sizes(2000, 1_000_000) == sizes  # seeded
    assert max(scope_sizes(10, 40, small=(5, 9), large=50)) <= 9  # the small ones already reach it
    with pytest.raises(ValueError):
        scope_sizes(3, 10, small=(9, 5))


def test_zipf_access_favours_few_scopes():
    picks = np.bincount(_zipf_choices(100, 1.1, 20_000, seed=0), minlength=100)
    top = np.sort(picks)[::-1]
    assert top[0] > 10 * top[50] and (picks > 0).sum() > 50


@pytest.mark.slow
def test_fill_derives_every_scope_and_resumes(tmp_path, example_path):
    db = tmp_path / "t.db"
    sizes = [30, 45]
    first = fill(db, example_path, sizes, progress=False)
    assert first["filled_traces"] == 75 and len(first["keys"]) == 2
    again = fill(db, example_path, sizes, progress=False)  # nothing to fill: kept as it is
    assert again["filled_traces"] == 0
    with Memory(db) as mem:
        for index, size in enumerate(sizes):
            scope = Scope(USER.format(index), None)
            assert store_of(mem).count(scope) == size
            assert not indexer_of(mem).pending_sessions(scope)  # derived by the fill
            assert mem.search("hello", user=scope.user)  # each scope answers from its own units


@pytest.mark.slow
def test_bench_tenants_end_to_end(tmp_path, example_path):
    out, picture = tmp_path / "tenants.json", tmp_path / "tenants.png"
    document = run(example_path, scopes=4, traces=200, small=(20, 40), large=80, seconds=4.0,
                   clients=3, workers=1, threads=2, index_cache_mb=64, db=str(tmp_path / "t.db"),
                   k=5, sample_s=0.5, json_out=out, plot_out=picture, progress=False)
    assert json.loads(out.read_text())["benchmark"] == "tenants" and picture.stat().st_size > 0
    assert not failed(document), document["error_samples"]
    assert document["errors"] == 0 and document["cross_scope_results"] == 0
    assert document["acknowledged_missing"] == 0 and document["evidence_checked"] > 0
    assert document["latency_ms"]["search_cold"]["n"] >= 1 and document["cold_searches"] >= 1
    assert document["workers"][0]["rss_ready_mb"] and document["workers"][0]["rss_max_mb"]
    assert document["timeline"]["rss"] and document["store_mb"] > 0
    assert "search" in document["server_timing_ms"]
    cold = document["search_server_ms"]["cold"]
    assert cold["search-cpu"]["n"] == cold["search"]["n"] >= 1  # the search thread's own CPU, per search
    assert 0 < cold["search-cpu"]["p50"] <= cold["search"]["max"]


@pytest.mark.slow
def test_bench_tenants_open_loop_sends_at_the_rate(tmp_path, example_path):
    document = run(example_path, scopes=3, traces=90, small=(20, 40), large=50, seconds=6.0,
                   clients=4, workers=1, threads=2, index_cache_mb=64, db=str(tmp_path / "t.db"),
                   k=5, sample_s=0.5, progress=False, rate=5.0)
    assert not failed(document), document["error_samples"]
    sent = document["timeline"]["requests"]
    assert 10 <= len(sent) <= 50  # Poisson arrivals at 5 / s for 6 s: ~30
    assert all(0 <= r["t"] < 6.0 for r in sent) and document["options"]["rate"] == 5.0
