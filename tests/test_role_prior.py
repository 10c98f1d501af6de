"""A question about the asker ("What did I…") prefers the turns the user wrote (decision D-029).

In an assistant's memory the user's own turns say what happened to the user; the assistant's
replies are long and echo the user's words, so by words alone they often outrank the turn that
holds the fact. Questions about what the assistant said, and questions in the third person, keep
no role preference.
"""

import zeromem.retrieval.engine as engine
from zeromem import Memory

USER_FACT = "Oh and last weekend I fixed up the old harbour bicycle, it needed a new chain."
ECHO = ("Repairing an old harbour bicycle is a great weekend project! A new chain makes a big "
        "difference. When you repair an old bicycle, check the chain, the brakes, the gears and the "
        "tyres; an old harbour bicycle often needs new cables too. Many people repair old bicycles "
        "on a weekend with a few simple tools and a new chain from a local shop.")
ASKED = "What did I repair on the old harbour bicycle?"


def _memory(tmp_path) -> Memory:
    mem = Memory(tmp_path / "m.db", user="ana")
    mem.add_many([
        {"text": USER_FACT, "role": "user", "speaker": "user", "session": "s1"},
        {"text": ECHO, "role": "assistant", "speaker": "assistant", "session": "s1"},
        {"text": "Could you suggest a good route along the coast?", "role": "user", "speaker": "user",
         "session": "s2"},
        {"text": "Try the coastal path from the harbour to the lighthouse: it is flat and quiet.",
         "role": "assistant", "speaker": "assistant", "session": "s2"},
    ], user="ana")
    return mem


def test_a_question_about_the_asker_ranks_the_users_turn_first(tmp_path):
    mem = _memory(tmp_path)
    assert [e.text for e in mem.search(ASKED, user="ana", k=2)] == [USER_FACT, ECHO]
    mem.close()


def test_without_the_role_preference_the_echo_wins(tmp_path, monkeypatch):
    # The control: the long reply that repeats every word outranks the fact by words alone.
    monkeypatch.setattr(engine, "ASKER_ROLE_PENALTY", 0.0)
    mem = _memory(tmp_path)
    assert [e.text for e in mem.search(ASKED, user="ana", k=2)] == [ECHO, USER_FACT]
    mem.close()


def test_a_third_person_question_keeps_the_echo_first(tmp_path):
    mem = _memory(tmp_path)
    top = mem.search("What was repaired on the old harbour bicycle?", user="ana", k=2)
    assert top[0].text == ECHO
    mem.close()


def test_a_question_about_what_the_assistant_said_keeps_its_turns(tmp_path):
    mem = _memory(tmp_path)
    # "you" said it: the assistant's reply is what is asked for, and keeps its place.
    top = mem.search("What did you say I should repair on my old harbour bicycle?", user="ana", k=2)
    assert [e.text for e in top] == [ECHO, USER_FACT]
    mem.close()


def test_a_scope_without_assistant_turns_ranks_as_before(tmp_path):
    # Every turn in the role "user" (a chat between people): the factor is the same for all.
    texts = ["I keep my sketchbooks in the blue drawer.", "I moved the sketchbooks to the attic."]
    mem = Memory(tmp_path / "m.db", user="ana")
    mem.add_many([{"text": t, "session": "s1", "speaker": "Ana"} for t in texts], user="ana")
    asked = [e.text for e in mem.search("Where did I put my sketchbooks?", user="ana", k=2)]
    plain = [e.text for e in mem.search("Where are the sketchbooks put?", user="ana", k=2)]
    assert sorted(asked) == sorted(texts) and sorted(plain) == sorted(texts)
    mem.close()


def test_a_recall_request_is_judged_by_what_it_asks_for(tmp_path, monkeypatch):
    # The asker's "I" around "could you remind me of …" does not make the assistant's words
    # theirs: no role preference is applied, so the assistant's reply naming the restaurant
    # stays ahead of the user's unrelated turn (before D-060 it fell behind it).
    mem = Memory(tmp_path / "m.db", user="ana")
    trip = "I'm going to Bandung next month and want to eat well near Cihampelas Walk."
    named = "Near Cihampelas Walk, Miss Bee Providore serves a great Nasi Goreng with prawn crackers."
    hotel = "Thanks! I also need a hotel."
    mem.add_many([{"text": trip, "role": "user", "speaker": "user", "session": "s1"},
                  {"text": named, "role": "assistant", "speaker": "assistant", "session": "s1"},
                  {"text": hotel, "role": "user", "speaker": "user", "session": "s1"},
                  {"text": "Could you suggest a good route along the coast?", "role": "user",
                   "speaker": "user", "session": "s2"}], user="ana")
    asked = ("I'm planning to visit Bandung again and I was wondering if you could remind me of the "
             "restaurant near Cihampelas Walk with the great Nasi Goreng.")
    ranked = [e.text for e in mem.search(asked, user="ana", k=3)]
    assert ranked.index(named) < ranked.index(hotel)
    monkeypatch.setattr(engine, "ASKER_ROLE_PENALTY", 0.0)
    mem.add("An unrelated note.", session="s9", speaker="user")  # a new version: no cached result
    assert [e.text for e in mem.search(asked, user="ana", k=3)] == ranked
    mem.close()
