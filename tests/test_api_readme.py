"""The README is tested: its Python example runs as printed, and it opens with two commands."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


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
