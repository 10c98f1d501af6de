"""A memory of short messages embeds the query without the speakers' names (query_reading.embedded)."""

import pytest

from zeromem import Memory
from zeromem.config import Config, RetrievalConfig
from zeromem.retrieval.prepared import SHORT_MESSAGE_WORDS, SMALL_SCOPE_TURNS
from zeromem.retrieval.query_reading import embedded
from zeromem.retrieval.speaker_names import SpeakerNames


class _Scope:
    """What ``query_reading.embedded`` reads of a prepared scope."""

    def __init__(self, median, names, n_live=SMALL_SCOPE_TURNS):
        self.short_messages = median <= SHORT_MESSAGE_WORDS
        self.speaker_names = names
        self.small = n_live < SMALL_SCOPE_TURNS


def test_the_embedded_query_leaves_names_out_only_where_messages_are_short():
    Fake = _Scope
    names = SpeakerNames(["Nicolas", "Nebraas"], {}, lambda w: {})
    q = "What hobbies does Nicolas have?"
    assert embedded(Fake(9, names), q) == "What hobbies does have?"
    assert embedded(Fake(SHORT_MESSAGE_WORDS + 1, names), q) == q
    assert embedded(Fake(9, names), "Nicolas?") == "Nicolas?"  # nothing left: as written
    # a small scope keeps the names: they may be all that ties a question to its person's turns
    assert embedded(Fake(9, names, n_live=SMALL_SCOPE_TURNS - 1), q) == q


def test_a_question_naming_the_speaker_of_a_few_short_messages_finds_them():
    """Three turns, the name the only tie between the question and Ana's turns: they are found
    (with the name left out of the embedding they scored nothing and the search returned only
    the question asked in another session)."""
    memory = Memory(":memory:", user="ana")
    try:
        ids = memory.add_many([
            {"text": "I moved to Lisbon in March.", "session": "s1", "speaker": "Ana", "role": "user"},
            {"text": "Lisbon is beautiful in spring.", "session": "s1", "role": "assistant"},
        ])
        memory.add("Where do I live now?", session="current", role="user")
        found = [ev.trace_id for ev in memory.search("Where does Ana live?", k=5)]
        assert found[:2] == ids
        assert [ev.trace_id for ev in memory.search("Where does Ana live?", k=5, session="s1")] == ids
    finally:
        memory.close()


def test_median_turn_words_follows_writes_and_deletes(tmp_path):
    memory = Memory(tmp_path / "m.db", user="u")
    try:
        ids = [memory.add(text, speaker=speaker, session="s1")
               for text, speaker in [("hi", "Ann"), ("how are you doing today my friend", "Bob"),
                                     ("ok", "Ann")]]
        memory.index()
        scope = memory._scope(memory.user if hasattr(memory, "user") else "u", None)
        assert memory._retriever.prepared(scope).median_turn_words == 1  # 1, 1, 7 words
        memory.delete(ids[0])
        memory.delete(ids[2])
        memory.index()
        assert memory._retriever.prepared(scope).median_turn_words == 7
    finally:
        memory.close()


LONGER = [  # paragraphs, one per session, no speaker
    "The harbour lighthouse keeper, Mr. Okafor, climbed the lighthouse stairs every evening to light the "
    "lamp for the fishing boats.",
    "Visitors asked the lighthouse keeper about the lighthouse lamp, and the keeper told them how the lamp "
    "was trimmed each night.",
    "In the winter the lighthouse keeper repaired the lighthouse shutters and kept a log of every storm that "
    "reached the harbour.",
    "Mr. Okafor painted violet sunsets over the bay in oils, and his paintings hung in the village hall for "
    "the summer fair.",
    "The village hall also held a market on Saturdays where farmers sold cheese, bread and honey from the "
    "valley farms nearby.",
    "A ferry crossed the bay twice a day, carrying tourists, bicycles and post between the island and the "
    "mainland harbour town.",
]
SHORTER = ["lighthouse keeper Okafor", "the lighthouse keeper again", "lighthouse keeper lamp",
           "he painted sunsets", "cheese at the market", "ferry late",
           # past a small scope (SMALL_SCOPE_TURNS): a chat, not a handful of notes
           "ok", "lol", "see you soon", "haha yes", "good night", "sure thing", "omg", "me too", "nice one",
           "cool", "thanks!", "brb", "on my way", "no worries", "yep", "what time?", "at 6", "perfect",
           "love it", "same here", "wow", "true", "maybe later", "got it"]
FEW_SHORT = SHORTER[:6]  # a small scope of short messages: the bonus still acts


def _evidence(path, texts, coverage_gain):
    config = Config(retrieval=RetrievalConfig(coverage_gain=coverage_gain))
    with Memory(path, config=config) as memory:
        if not memory.list(limit=1):
            memory.add_many([{"text": text, "session": f"s{i}"} for i, text in enumerate(texts)])
        prep = memory._retriever.prepared(memory.scope)
        found = [ev.trace_id for ev in memory.search("What did the lighthouse keeper paint?", k=3)]
        return prep.short_messages, found


@pytest.mark.parametrize("texts, short, acts", [(LONGER, False, True), (SHORTER, True, False),
                                               (FEW_SHORT, True, True)])
def test_the_coverage_bonus_acts_except_in_a_chat_of_short_messages(tmp_path, texts, short, acts):
    path = tmp_path / "m.db"
    is_short, with_bonus = _evidence(path, texts, 0.2)
    _, without = _evidence(path, texts, 0.0)
    assert is_short is short
    # where it acts, the turn that covers "paint" comes before another "lighthouse keeper" one;
    # in a chat of short messages the bonus is off and the evidence the same
    assert (with_bonus != without) is acts
