"""A memory of short messages embeds the query without the speakers' names (Engine._embedded)."""

from zeromem import Memory
from zeromem.retrieval import engine as E
from zeromem.retrieval.speaker_names import SpeakerNames


class _Scope:
    """What ``Engine._embedded`` reads of a prepared scope."""

    def __init__(self, median, names):
        self.median_turn_words = median
        self.speaker_names = names


def test_the_embedded_query_leaves_names_out_only_where_messages_are_short():
    Fake = _Scope
    names = SpeakerNames(["Nicolas", "Nebraas"], {}, lambda w: {})
    q = "What hobbies does Nicolas have?"
    assert E.Engine._embedded(Fake(9, names), q) == "What hobbies does have?"
    assert E.Engine._embedded(Fake(E.SHORT_MESSAGE_WORDS + 1, names), q) == q
    assert E.Engine._embedded(Fake(9, names), "Nicolas?") == "Nicolas?"  # nothing left: as written


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
