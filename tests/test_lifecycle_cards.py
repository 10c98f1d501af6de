"""Cards (lifecycle/cards.py) through the public API and the command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from zeromem import InvalidInput, Memory

pytestmark = pytest.mark.slow

TURNS = [
    {"text": "I'm allergic to peanuts, never put them in my food.", "speaker": "Ana", "session": "s1"},
    {"text": "I prefer morning meetings before 10am.", "speaker": "Ana", "session": "s1"},
    {"text": "I live in Boston with my two cats.", "speaker": "Ana", "session": "s1"},
    {"text": "ok thanks", "speaker": "Bo", "session": "s1"},
    {"text": "What time is it?", "speaker": "Bo", "session": "s1"},
    {"text": "He said it was fine.", "speaker": "Bo", "session": "s1"},
    {"text": "If I had time I would learn piano.", "speaker": "Bo", "session": "s2"},
    {"text": "I went to the Taylor Swift concert with Mel yesterday.", "speaker": "Ana", "session": "s2"},
]


def test_cards_are_conservative_and_linked_to_their_verbatim_source(tmp_path):
    with Memory(tmp_path / "c.db") as mem:
        ids = mem.add_many(TURNS)
        cards = mem.cards()
        by_trace = {c.trace_id: c for c in cards}
        assert set(by_trace) == {ids[0], ids[1], ids[2], ids[7]}  # no card for acks, questions, "he", "if"
        assert (by_trace[ids[0]].kind, by_trace[ids[0]].subject) == ("constraint", "Ana")
        assert (by_trace[ids[1]].kind, by_trace[ids[1]].predicate, by_trace[ids[1]].object) == \
               ("preference", "prefer", "morning meetings")
        assert (by_trace[ids[2]].kind, by_trace[ids[2]].predicate, by_trace[ids[2]].object) == \
               ("state", "live_in", "Boston")
        assert by_trace[ids[7]].kind == "event"
        for card in cards:
            assert card.source_text == mem.get(card.trace_id).text and card.sentence in card.source_text
        assert [c.trace_id for c in mem.cards(kind="preference")] == [ids[1]]
        assert [c.trace_id for c in mem.cards(session="s2")] == [ids[7]]
        assert len(mem.cards(limit=1)) == 1
        mem.update(ids[2], text="I live in Denver now.")
        assert next(c for c in mem.cards() if c.trace_id == ids[2]).object == "Denver"  # from the current text
        with pytest.raises(InvalidInput, match="kind"):
            mem.cards(kind="opinion")


def test_cli_active_and_cards(tmp_path):
    db = tmp_path / "cli.db"
    with Memory(db) as mem:
        mem.add_many(TURNS)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "zeromem", *args, "--db", str(db)],
                              capture_output=True, text=True, check=False)

    shown = run("active", "--budget", "40", "--archived")
    assert shown.returncode == 0, shown.stderr
    assert "active memory:" in shown.stdout and "Ω=" in shown.stdout and "left:" in shown.stdout
    data = json.loads(run("active", "--budget", "40", "--json").stdout)
    assert data["used_tokens"] <= 40 and data["entries"][0]["omega_eff"] <= data["entries"][0]["omega"]
    cards = json.loads(run("cards", "--kind", "state", "--json").stdout)
    assert [c["object"] for c in cards] == ["Boston"]
    bad = run("active", "--budget", "0")
    assert bad.returncode == 2 and bad.stderr.startswith("error:")
