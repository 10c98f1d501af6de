"""``zeromem bench stream`` end to end on the shipped example: the agent loop's JSON keys."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from zeromem_bench.cli import bench_app

PER_SIZE = ("add_ms_p50", "add_ms_p95", "add_ms_max", "search_after_write_ms_p50",
            "search_after_write_ms_p95", "search_after_write_ms_max", "search_ms_p50",
            "search_ms_p95", "search_ms_max", "cold_open_first_search_s", "rss_steady_mb",
            "rss_peak_mb", "file_mb", "bm25s_rebuild_ms_p50", "llm_calls", "llm_tokens")
TURNS = 3


def _stream(tmp_path, example_path, sizes: str, *extra: str):
    out = tmp_path / "stream.json"
    result = CliRunner().invoke(bench_app, [
        "stream", "--data", str(example_path), "--sizes", sizes, "--turns", str(TURNS),
        "--json", str(out), "--no-progress", *extra])
    assert result.exit_code == 0, result.output
    return result, json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.slow  # spawns a fill, loop, cold-open and baseline process per size
def test_stream_writes_every_metric_per_size_with_the_harness_conventions(tmp_path, example_path):
    cache = tmp_path / "cache"
    result, document = _stream(tmp_path, example_path, "0,12", "--cache-dir", str(cache))
    assert "search after add" in result.output
    assert document["benchmark"] == "stream"
    for key in ("k", "data", "config", "versions", "git", "machine", "argv", "notes"):
        assert key in document
    assert document["config"]["sizes"] == [0, 12]
    assert document["data"]["stream_turns"] == TURNS
    assert set(document["sizes"]) == {"0", "12"}
    for size, row in document["sizes"].items():
        for key in PER_SIZE:
            assert key in row, (size, key)
        assert row["turns"] == TURNS
        assert row["traces"] == int(size) + TURNS  # the prefill plus the streamed turns
        assert row["llm_calls"] == 0 and row["llm_tokens"] == 0
        assert 0 < row["add_ms_p50"] <= row["add_ms_p95"] <= row["add_ms_max"]
        assert 0 < row["search_after_write_ms_p50"] <= row["search_after_write_ms_max"]
        assert 0 < row["search_ms_p50"] <= row["search_ms_max"]
        assert row["cold_open_first_search_s"] > 0 and row["file_mb"] > 0
        assert row["bm25s_rebuild_ms_p50"] > 0
        if row["rss_peak_mb"] is not None:  # /proc is Linux-only
            assert row["rss_peak_mb"] >= row["rss_steady_mb"] > 0
    assert document["sizes"]["12"]["fill"]["cached"] is False
    assert len(list(cache.glob("*.db"))) == 1  # N=0 needs no fill

    _, again = _stream(tmp_path, example_path, "12", "--cache-dir", str(cache))
    assert again["sizes"]["12"]["fill"]["cached"] is True
    assert again["sizes"]["12"]["traces"] == 12 + TURNS  # the cached file was copied, not mutated


@pytest.mark.parametrize("args, message", [
    (["--data", "no/such/file.json"], "--data"),
    (["--sizes", "10,10"], "--sizes"),
])
def test_stream_bad_options_fail_with_error_and_exit_2(tmp_path, example_path, args, message):
    base = ["stream", "--data", str(example_path), "--no-progress"]
    result = CliRunner().invoke(bench_app, [*base, *args])
    assert result.exit_code == 2
    assert "error:" in result.output and message in result.output
