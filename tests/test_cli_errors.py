"""CLI errors: 'error: message' on stderr, exit code 2, no traceback, nothing changed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from zeromem import Memory
from zeromem.interfaces.cli import app

runner = CliRunner()


@pytest.fixture
def db(db_path):
    with Memory(db_path) as mem:
        mem.add("already here")
    return db_path


def _fails_cleanly(args, message: str):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert "Traceback" not in result.output
    return result


@pytest.mark.parametrize("args, message", [
    (["get", "tzzzzzzzz"], "no trace 'tzzzzzzzz'"),  # an id's shape, no such trace
    (["get", "banana"], "ids look like 't4k2x9q7m'"),
    (["get", "t999"], "ids look like 't4k2x9q7m'"),  # the old shape of ids
    (["delete", "tzzzzzzzz"], "no trace 'tzzzzzzzz'"),
    (["history", "tzzzzzzzz"], "no trace 'tzzzzzzzz'"),
    (["delete"], "either a trace ID or --scope"),
    (["delete", "t1", "--scope", "--yes"], "either a trace ID or --scope"),
    (["list", "--since", "someday"], "since"),
    (["list", "--filter", "novalue"], "KEY=VALUE"),
    (["ingest", "missing.json", "--format", "auto"], "missing.json: no such file"),
    (["ingest", "x.json", "--format", "csv"], "unknown import format"),
])
def test_bad_commands_print_error_and_exit_2(db, snapshot, args, message):
    with Memory(db) as mem:
        before = snapshot(mem)
    _fails_cleanly([*args, "--db", db], message)
    with Memory(db) as mem:
        assert snapshot(mem) == before


def test_malformed_file_among_good_ones_stores_nothing(db, snapshot, tmp_path, example_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": "", "speaker": "x"}\n')
    with Memory(db) as mem:
        before = snapshot(mem)
    _fails_cleanly(["ingest", example_path, bad, "--db", db], "bad.jsonl: line 2")
    with Memory(db) as mem:
        assert snapshot(mem) == before


def test_reading_a_store_that_does_not_exist_creates_nothing(tmp_path):
    missing = tmp_path / "typo.db"
    _fails_cleanly(["list", "--db", missing], "no zeromem store")
    assert not missing.exists()


def test_user_and_user_per_conversation_conflict(db, example_path):
    _fails_cleanly(["ingest", example_path, "--db", db, "--user", "a", "--user-per-conversation"],
                   "not both")


def test_unknown_import_format_through_a_real_process(tmp_path):
    path = tmp_path / "weird.json"
    path.write_text(json.dumps({"hello": "world"}))
    proc = subprocess.run([sys.executable, "-m", "zeromem.interfaces.cli", "ingest", str(path),
                           "--db", str(tmp_path / "m.db")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {path}: top level: unknown format")
    assert "Traceback" not in proc.stderr and proc.stdout == ""
