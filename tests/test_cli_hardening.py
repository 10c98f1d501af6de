"""The CLI never shows a traceback for bad input and never prints stored text raw."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from zeromem import Memory
from zeromem.interfaces.cli import app, safe
from zeromem.interfaces.cli_retrieval import example_path as packaged_example

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
ESC = "\x1b"


@pytest.fixture
def db(tmp_path, example_path):
    path = tmp_path / "m.db"
    with Memory(path, user="demo") as mem:
        mem.import_file(example_path)
    return path


def _cli(*args: str | bytes | Path) -> subprocess.CompletedProcess[bytes]:
    """Run the CLI in a real process: argv bytes reach it as the OS gives them."""
    argv = [os.fsencode(a) if isinstance(a, (str, Path)) else a for a in args]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([os.fsencode(sys.executable), b"-m", b"zeromem.interfaces.cli", *argv],
                          capture_output=True, timeout=120, env=env, check=False)


def _clean_failure(proc: subprocess.CompletedProcess[bytes], message: str) -> None:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, err
    assert "Traceback" not in err and err.startswith("error: ") and message in err, err
    assert err.count("\n") == 1  # one line saying how to fix it


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    ([b"list", b"--user", b"\xff\xfe"], "user contains a lone surrogate"),
    ([b"search", b"cat", b"--agent", b"bot\xff"], "agent contains a lone surrogate"),
    ([b"list", b"--filter", b"mood=\xff"], "lone surrogate"),
    ([b"list", b"--filter", b"\xff=1"], "lone surrogate"),
    ([b"list", b"--since", b"2023-05-08T13:56:00+25:00"], "24 hours"),
    ([b"search", b"cat", b"--as-of", b"2023-05-08T13:56:00+25:00"], "24 hours"),
    ([b"list", b"--since", b"May 32"], "no year"),
    ([b"list", b"--filter", b"k=" + b"[" * 100_000], "nested too deeply"),
])
def test_bad_arguments_through_a_real_process(db, args, message):
    _clean_failure(_cli(*args, b"--db", os.fsencode(db)), message)


@pytest.mark.slow
def test_non_utf8_user_on_ingest_stores_nothing(db, example_path, snapshot):
    with Memory(db) as mem:
        before = snapshot(mem)
    _clean_failure(_cli("ingest", example_path, "--db", db, b"--user", b"\xff"), "lone surrogate")
    with Memory(db) as mem:
        assert snapshot(mem) == before


def _fails(args: list[str], message: str) -> None:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and message in result.stderr, result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_deeply_nested_import_files_are_refused(tmp_path, db, snapshot):
    deep_json = tmp_path / "deep.json"
    deep_json.write_text("[" * 100_000 + "]" * 100_000)
    deep_jsonl = tmp_path / "deep.jsonl"
    deep_jsonl.write_text('{"text": "x", "metadata": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}\n")
    with Memory(db) as mem:
        before = snapshot(mem)
    _fails(["ingest", deep_json, "--db", db], "deep.json: nested too deeply")
    _fails(["ingest", deep_jsonl, "--db", db], "deep.jsonl: line 1: nested too deeply")
    with Memory(db) as mem:
        assert snapshot(mem) == before


def test_metadata_nested_past_the_limit_in_a_file_is_refused(tmp_path, db):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"text": "x", "metadata": {"a": ' + "[" * 100 + "]" * 100 + "}}\n")
    _fails(["ingest", path, "--db", db], "nested more than 64 levels")


def test_a_meta_value_with_a_huge_number_is_an_error(db):
    _fails(["list", "--db", db, "--filter", "n=" + "9" * 5000], "--filter 'n'")


@pytest.mark.parametrize("name, content", [
    ("notes.jsonl", '{"text": "hello"}\n'),
    ("chat.json", json.dumps([{"role": "user", "content": "hi"}])),
])
def test_demo_on_a_file_without_questions_says_so(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    _fails(["demo", path], "has no questions")


def test_demo_with_malformed_questions_says_so(tmp_path, example_data):
    path = tmp_path / "q.json"
    path.write_text(json.dumps(dict(example_data, qa=[{"answer": "x"}])))
    _fails(["demo", path], "qa[0] has no 'question'")


# -- terminal escapes in stored text ------------------------------------------------------------
@pytest.fixture
def hostile(tmp_path):
    """A store whose texts, speaker, session, metadata and attachment hold terminal escapes."""
    path = tmp_path / "h.db"
    with Memory(path) as mem:
        tid = mem.add(f"cat {ESC}[2J{ESC}]0;pwned\x07 here\rX \x9b31m\u202egnp.exe",
                      speaker=f"Eve{ESC}[31m", session=f"s{ESC}[1m", source_id=f"D{ESC}1",
                      metadata={"m": f"{ESC}[5m"}, attachments=[f"photo {ESC}[8m"])
        mem.update(tid, text=f"dog {ESC}[2J cat \x9b31m \u202e\x7f")  # json leaves C1 raw
    return path, tid


@pytest.mark.parametrize("args", [
    ["list"], ["list", "--full"], ["get", "{tid}"], ["history", "{tid}"], ["stats"],
    ["search", "cat", "--why", "--context"], ["list", "--json"], ["get", "{tid}", "--json"],
    ["search", "cat", "--json"],
])
def test_stored_escapes_are_shown_not_obeyed(hostile, args):
    path, tid = hostile
    result = runner.invoke(app, [a.format(tid=tid) for a in args] + ["--db", str(path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for raw in (ESC, "\x07", "\r", "\x9b", "\u202e"):
        assert raw not in out, (raw, out)
    if "--json" in args:
        json.loads(out)
        assert "\\u001b" in out
    else:
        assert "\\x1b" in out


def test_safe_escapes_controls_and_keeps_text():
    assert safe("a\tb\nc é 新") == "a\tb\nc é 新"
    assert safe(f"{ESC}[31mred\r\x00\x7f\x9b\u202e") == "\\x1b[31mred\\x0d\\x00\\x7f\\x9b\\u202e"


def test_ingest_report_escapes_speaker_names(tmp_path):
    path = tmp_path / "evil.jsonl"
    path.write_text(json.dumps({"text": "hi", "speaker": f"Eve{ESC}[31m"}) + "\n")
    result = runner.invoke(app, ["ingest", str(path), "--db", str(tmp_path / "m.db")])
    assert result.exit_code == 0 and ESC not in result.stdout and "Eve\\x1b[31m" in result.stdout


# -- search --why and the demo ----------------------------------------------------------------
def test_why_names_trace_ids_not_internal_nodes(db):
    result = runner.invoke(app, ["search", "Where did Priya live before she moved to Denver?",
                                 "--db", str(db), "--user", "demo", "--why", "--k", "8"])
    assert result.exit_code == 0
    reasons = [line.split("reason=")[1].split(",")[0] for line in result.stdout.splitlines()
               if "reason=" in line]
    assert reasons and any(r != "primary" for r in reasons)
    with Memory(db, user="demo") as mem:
        ids = {t.id for t in mem.list()}
    for reason in reasons:
        for word in reason.split():
            assert not word.isdigit(), reason  # a bare node number
            if re.fullmatch(r"t[0-9a-z]{8}", word.rstrip(",")):
                assert word.rstrip(",") in ids, reason


def test_packaged_example_is_the_repository_example():
    packaged = resources.files("zeromem") / "examples" / "locomo_moving_city.json"
    assert packaged.is_file()
    assert packaged.read_bytes() == (REPO / "examples" / "locomo_moving_city.json").read_bytes()
    with packaged_example() as path:
        assert "examples" in path.parts and path.parent != REPO / "examples"
    assert '"examples/*.json"' in (REPO / "pyproject.toml").read_text()


def test_demo_without_a_file_uses_the_packaged_example_and_reports_hits(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing of the repository is reachable by relative path
    result = runner.invoke(app, ["demo", "--k", "5"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "no_answer_score (0 to 1)" in out and "holds no answer" in out
    assert "expected evidence: found D3:2 (hit)" in out  # Q2, Capitol Hill
    assert out.count("expected evidence: ") == 7
    assert "answer in the file: Biscuit" in out
    adversarial = out.split("Q8:")[1]
    assert "adversarial: the conversation does not answer this" in adversarial
    assert "answer in the file" not in adversarial and "gold" not in out
    assert "of 7 answerable questions" in out and "1 adversarial question(s) not counted" in out
    assert "LLM calls in memory operations: 0" in out
