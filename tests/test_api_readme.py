"""The README is tested: its Python tour runs as printed, and it opens with two commands.

docs/integrations.md is tested the same way: each Python block after an
``<!-- executed by tests/test_api_readme.py -->`` line runs on its own and prints what its
comments say.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
INTEGRATIONS = ROOT / "docs" / "integrations.md"
EXECUTED = "<!-- executed by tests/test_api_readme.py -->"


def _blocks(language: str, path: Path = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def _executed_integration_blocks() -> list[str]:
    text = INTEGRATIONS.read_text(encoding="utf-8")
    return re.findall(rf"{re.escape(EXECUTED)}\n```python\n(.*?)```", text, re.S)


def test_readme_opens_with_a_pitch_and_exactly_two_commands():
    text = README.read_text(encoding="utf-8")
    first_block = text.index("```")
    assert text[:first_block].count("\n\n") >= 1  # title, then a one-paragraph pitch
    commands = [line.split("#")[0].strip() for line in _blocks("bash")[0].splitlines()]
    assert [c for c in commands if c] == ["make demo", "make test"]


def test_readme_python_example_runs(tmp_path, monkeypatch, example_path, capsys):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / example_path.name).symlink_to(example_path)
    monkeypatch.chdir(tmp_path)
    storage, retrieval, lifecycle = _blocks("python")
    namespace = {"__name__": "readme"}
    exec(compile(storage, str(README), "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2023-03-14T19:12:00"
    assert out[1] == "['add', 'update']"
    assert out[-1] == "2 40"
    # The retrieval example continues in the same session (same names in scope).
    exec(compile(retrieval, str(README), "exec"), namespace)
    out = capsys.readouterr().out
    assert "Logan Square" in out or "Denver" in out  # evidence printed verbatim
    assert "---" in out  # the rendered, dated context block
    # Active memory and cards, on the same store.
    exec(compile(lifecycle, str(README), "exec"), namespace)
    out = capsys.readouterr().out
    assert "allergic to peanuts" in out and "constraint" in out


# docs/integrations.md, "Try each one": each block runs on its own (a fresh namespace, its own memory), and
# prints what its comments say. Ids and times change between runs, so only stable parts are checked.
_INTEGRATIONS = {
    "zeromem.integrations.langgraph": ["home -> Alice moved to Denver in May.", "2 traces in alice's scope"],
    "zeromem.integrations.openai_agents": ["[{'role': 'assistant', 'content': 'Miso is a lovely name!'}]",
                                           "recall ['query']", '"text": "My cat is called Miso."'],
    "zeromem.compat.mem0": ["I'm vegetarian and allergic to peanuts. {'topic': 'food'}", "['ADD', 'UPDATE']\n2\n"],
    "zeromem.integrations.llamaindex": ["<zeromem>", "My cat is called Miso and she loves tuna."],
    "mem.export(": ["1 True I moved to Denver last week."],
    "zeromem import Memory, tracing": ["['zeromem.add', 'zeromem.search']"],
}


def test_every_executed_integration_block_is_checked():
    blocks = _executed_integration_blocks()
    assert len(blocks) == len(_INTEGRATIONS)
    assert all(sum(marker in block for marker in _INTEGRATIONS) == 1 for block in blocks)


@pytest.mark.parametrize("marker", list(_INTEGRATIONS))
def test_integration_examples_run(marker, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    monkeypatch.chdir(tmp_path)
    found = [block for block in _executed_integration_blocks() if marker in block]
    assert len(found) == 1, f"docs/integrations.md has {len(found)} executed python blocks using {marker}"
    exec(compile(found[0], str(INTEGRATIONS), "exec"), {"__name__": "integrations"})
    out = capsys.readouterr().out
    for expected in _INTEGRATIONS[marker]:
        assert expected in out, (expected, out)
