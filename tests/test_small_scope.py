"""A memory of a few turns is ranked by its turns, not by the views built for long histories.

Below ``prepared.SMALL_SCOPE_TURNS`` live turns (``PreparedScope.small``) the few entities are
named in most turns and idf over a handful of turns is noise: the graph view gets no weight and
BM25 a smaller share. When one speaker wrote such a memory, windows and episodes (which join
statements that do not answer each other, and cover much of the memory) do not count either.
"""

import numpy as np
import pytest

import zeromem.retrieval.engine as engine
import zeromem.retrieval.prepared as prepared
import zeromem.retrieval.turn_scores as turn_scores
from zeromem import Memory
from zeromem.views.hierarchy import LEVEL_WEIGHTS

SISTER = [
    "My sister Ines is thirty-four years old.",
    "My sister Ines has a cat called Pimenta.",
    "My sister Ines is a chemistry teacher at a school in Porto.",
    "My sister Ines was born on the twelfth of March.",
    "My sister Ines plays the cello on weekends.",
    "My neighbour has a pet parrot that talks.",
    "My cousin is a nurse in Braga.",
]
CAT, PARROT = SISTER[1], SISTER[5]
ASKED = "Does my sister Ines have a pet animal?"


def _memory(tmp_path, turns: list[str], speakers: tuple[str, ...] = ("me",)) -> Memory:
    mem = Memory(tmp_path / "m.db", user="u")
    mem.add_many([{"text": t, "session": f"s{i // 6}", "speaker": speakers[i % len(speakers)]}
                  for i, t in enumerate(turns)], user="u")
    return mem


def _scores(mem: Memory, query: str) -> dict[str, float]:
    return {e.text: e.score for e in mem.search_detailed(query, user="u", k=10).evidence}


def test_a_word_most_turns_share_still_counts_in_a_small_memory(tmp_path):
    # "sister Ines" is in 5 of 7 turns, so its idf is near zero and the one turn with "pet"
    # wins on words; the dense cosine (the cat's turn is the closest) decides here.
    mem = _memory(tmp_path, SISTER)
    scores = _scores(mem, ASKED)
    assert scores[CAT] > scores[PARROT]
    assert mem.search(ASKED, user="u", k=1)[0].text == CAT
    mem.close()


def test_without_the_small_scope_rule_the_rare_word_wins(tmp_path, monkeypatch):
    # The control: the same memory ranked as a long history would be.
    monkeypatch.setattr(prepared, "SMALL_SCOPE_TURNS", 0)
    mem = _memory(tmp_path, SISTER)
    scores = _scores(mem, ASKED)
    assert scores[PARROT] > scores[CAT]
    assert mem.search(ASKED, user="u", k=1)[0].text == PARROT
    mem.close()


def _level_mix(why: dict, levels) -> float:
    mix = sum(LEVEL_WEIGHTS[lv] * why[f"h_{lv}"] for lv in levels) / sum(LEVEL_WEIGHTS[lv] for lv in levels)
    return mix + engine.TITLE_WEIGHT * why["h_title"]


ALL_LEVELS = ("turn", "span", "window", "episode")


@pytest.mark.parametrize("n_turns, speakers, levels", [
    (prepared.SMALL_SCOPE_TURNS - 1, ("me",), engine.ONE_SPEAKER_LEVELS),
    (prepared.SMALL_SCOPE_TURNS, ("me",), ALL_LEVELS),
    (prepared.SMALL_SCOPE_TURNS - 1, ("Ana", "Rui"), ALL_LEVELS),  # a conversation keeps its windows
])
def test_windows_and_episodes_count_from_the_threshold_on_or_with_two_speakers(tmp_path, n_turns, speakers, levels):
    turns = [f"Note {i}: the ferry to island {i % 5} leaves at {7 + i % 9} o'clock." for i in range(n_turns)]
    turns[3] = ("The timetable changed this spring and the harbour office printed new sheets for every "
                "island. The ferry to island 3 now leaves at eight in the morning on weekdays. On "
                "Sundays the first ferry to island 3 waits for the train from the city and leaves at "
                "ten. Tickets are sold on board, cash only, and the last boat back is at six.")
    mem = _memory(tmp_path, turns, speakers)
    evidence = mem.search_detailed("When does the ferry to island 3 leave?", user="u", k=8).evidence
    assert any(e.why["h_span"] > 0 for e in evidence)  # the long turn has spans
    assert all(e.why["small_scope"] == (n_turns < prepared.SMALL_SCOPE_TURNS) for e in evidence)
    for e in evidence:
        assert e.why["hierarchy"] == pytest.approx(_level_mix(e.why, levels))
    mem.close()


def _noisy_graph(*args, **kwargs):
    graph = args[0]
    return np.random.default_rng(7).random(graph.n_turns)


def _ranked(mem: Memory, query: str) -> list[tuple[str, float]]:
    return [(e.text, e.score) for e in mem.search_detailed(query, user="u", k=5).evidence]


def test_a_small_memory_ignores_the_graph_view(tmp_path, monkeypatch):
    mem = _memory(tmp_path, SISTER)
    before = _ranked(mem, ASKED)
    monkeypatch.setattr(turn_scores, "graph_scores", _noisy_graph)
    assert _ranked(mem, ASKED) == before
    mem.close()


def test_a_larger_memory_still_uses_the_graph_view(tmp_path, monkeypatch):
    turns = SISTER + [f"My colleague number {i} drives a {c} car to the office."
                      for i, c in enumerate(["red", "blue", "green", "grey", "white", "black"] * 3)]
    assert len(turns) >= prepared.SMALL_SCOPE_TURNS
    mem = _memory(tmp_path, turns)
    before = _ranked(mem, ASKED)
    monkeypatch.setattr(turn_scores, "graph_scores", _noisy_graph)
    assert _ranked(mem, ASKED) != before
    mem.close()
