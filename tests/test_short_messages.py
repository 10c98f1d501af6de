"""A memory of short messages embeds the query without the speakers' names (query_reading.embedded)."""

from zeromem import Memory
from zeromem.retrieval.prepared import SMALL_SCOPE_TURNS
from zeromem.retrieval.query_reading import SHORT_MESSAGE_WORDS, embedded
from zeromem.retrieval.speaker_names import SpeakerNames


class _Scope:
    """What ``query_reading.embedded`` reads of a prepared scope."""

    def __init__(self, median, names, n_live=SMALL_SCOPE_TURNS):
        self.median_turn_words = median
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
