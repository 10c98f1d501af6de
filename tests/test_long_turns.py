"""Long turns on the write path: the costly encoders read a turn's head
(``EncoderConfig.max_encoded_chars``), BM25 and the regex extractors read all of it, and a
turn under the limit is derived exactly as without one (real encoders)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derived_state import assert_same, derived_state
from internals import encoders_of, store_of
from zeromem import Memory
from zeromem.config import Config
from zeromem.encoders.entities import head_chars
from zeromem.indexes.units import segment_session, split_sentences
from zeromem.lifecycle.signals import SignalAnalyzer

SENTENCES = [
    "I adopted a grey cat named Biscuit.", "We moved to Denver in June.", "My sister plays the cello.",
    "The bakery sells rye bread on Sundays.", "I started a pottery class. It is relaxing.",
    "Lisbon is on my list for October!", "Running helps me destress. I run every morning.",
    "Our team won the regional chess cup.", "Thanks!", "Maya said the recital is on May 3rd.",
]
FILLER = ("Here is a general overview of the options you could consider for the weekend trip, "
          "with some notes on cost and timing for each one. ")


def memory_with(path, limit):
    config = Config()
    config.encoders.max_encoded_chars = limit
    return Memory(path, config=config)




def test_head_chars_cuts_at_a_space_and_keeps_short_text():
    assert head_chars("one two three", 9) == "one two"
    assert head_chars("one two\nthree", 10) == "one two"
    assert head_chars("abcdefghij", 4) == "abcd"  # one long word: cut inside it
    assert head_chars("short", 100) == "short"
    assert head_chars("no limit at all", None) == "no limit at all"


def test_span_offsets_count_the_text_before_each_sentence():
    text = "First sentence here. Second one follows. Third closes it."
    memory_units = segment_session([_trace(text)], [1])
    spans = [u for u in memory_units if u.level == "span"]
    sentences = split_sentences(text)
    assert [u.offset for u in spans] == [0, len(sentences[0]) + 1,
                                         len(sentences[0]) + len(sentences[1]) + 2]
    assert all(u.offset == 0 for u in memory_units if u.level != "span")


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(st.tuples(st.sampled_from(["s1", "s2"]), st.lists(st.sampled_from(SENTENCES),
                                                                          min_size=1, max_size=4)),
                      min_size=1, max_size=8))
def test_turns_under_the_limit_are_derived_as_without_it(tmp_path, turns):
    """Same input, same units, vectors and mentions: the limit changes nothing below it."""
    states = []
    for limit in (1000, None):
        memory = memory_with(tmp_path / f"{limit}-{abs(hash(str(turns)))}.db", limit)
        memory.add_many([{"text": " ".join(words), "session": s, "speaker": "Ana"} for s, words in turns])
        memory.index()
        states.append(derived_state(memory))
        memory.close()
    assert_same(*states)


def test_a_long_turn_is_embedded_through_its_head_and_searchable_everywhere(tmp_path):
    tail = 'Also, the old lighthouse of Quillfarne reopens in spring, see "The Salt Road" guide.'
    text = FILLER * 12 + tail  # ~1,500 characters before the tail
    memory = memory_with(tmp_path / "long.db", 1000)
    tid = memory.add(text, session="s1", speaker="assistant")
    memory.add("Sounds good, thanks.", session="s1", speaker="user")
    memory.index()
    rows = [r for r in derived_state(memory) if r[1] == "span"]
    with_vec = [r for r in rows if r[5] is not None]
    without = [r for r in rows if r[5] is None]
    assert with_vec and without and any("Quillfarne" in r[3] for r in without)
    turn = next(r for r in derived_state(memory) if r[1] == "turn" and "Quillfarne" in r[3])
    mean = np.mean([r[5] for r in with_vec], axis=0)
    assert np.allclose(turn[5], mean / np.linalg.norm(mean), atol=1e-5)  # the head's spans only
    assert "salt road" in (turn[6] or "")  # quoted titles are found in the whole text
    hits = memory.search("Quillfarne lighthouse reopening", k=3)
    assert any(tid == item.trace_id for item in hits)  # BM25 reads the tail
    assert not memory.health().degraded
    memory.close()


def test_long_turns_incremental_equals_rebuild_with_shared_sentences(tmp_path):
    """A sentence in the head of one turn and the tail of another never lends its vector."""
    shared = "The ferry to Inishmore leaves at nine every morning from the pier."
    memory = memory_with(tmp_path / "shared.db", 300)
    memory.add(FILLER * 4 + shared, session="a", speaker="assistant")
    memory.index()
    memory.add(shared + " " + FILLER, session="b", speaker="assistant")
    memory.index()
    incremental = derived_state(memory)
    memory.reindex()
    assert_same(incremental, derived_state(memory))
    tail_span = next(r for r in incremental if r[0] == "a" and r[1] == "span" and r[3].endswith("pier."))
    head_span = next(r for r in incremental if r[0] == "b" and r[1] == "span" and "Inishmore" in r[3])
    assert tail_span[5] is None and head_span[5] is not None
    memory.close()


def test_entity_vectors_do_not_depend_on_the_worker_chunks(tmp_path):
    names = [f"Zorblax{chr(65 + i % 26)}{chr(65 + i // 26)}" for i in range(300)]
    memory = Memory(tmp_path / "entities.db")
    memory.add_many([{"text": f'I read "{name} Chronicles" on the train.', "session": "s", "speaker": "Ana"}
                     for name in names])
    memory.index()
    stored = dict(store_of(memory).read("SELECT entity, vec FROM entity_vectors"))
    keys = sorted(stored)
    assert len(keys) > 128  # more than one chunk
    direct = encoders_of(memory).embedder.encode(keys)
    for key, vec in zip(keys, direct):
        assert np.allclose(np.frombuffer(stored[key], np.float32), vec, atol=1e-6)
    memory.close()


def test_sentiment_and_density_read_the_head():
    from zeromem.encoders.factory import load_extractor

    extractor = load_extractor(Config().encoders)
    analyzer = SignalAnalyzer(extractor.nlp, max_chars=60)
    head = "I absolutely love this wonderful, beautiful little garden."
    long_text = head + " " + "It is terrible, awful and horrible. " * 5
    short, long_ = analyzer.analyze([head, long_text], [0, 0])
    assert long_.sentiment == short.sentiment and long_.density == short.density
    assert long_.tokens > short.tokens  # the budget still counts every word


def test_density_of_a_text_written_again_is_not_tagged_again():
    """A repeated text's mentions come from the store (no NER pass to remember its tags): the
    analyzer hands the densities it tags to the extractor's memory, and they equal a fresh
    tagging."""
    from zeromem.encoders.factory import load_extractor

    extractor = load_extractor(Config().encoders)
    analyzer = SignalAnalyzer(extractor.nlp, extractor.density, remember_density=extractor.remember_density)
    first = analyzer.analyze(SENTENCES, [0] * len(SENTENCES))
    tagged = []
    real_pipe = analyzer.nlp.pipe
    analyzer.nlp.pipe = lambda texts, **kw: real_pipe(tagged.extend(texts) or tagged[-len(texts):], **kw)
    try:
        again = analyzer.analyze([*SENTENCES[:3], "A new line about the Louvre."], [0] * 4)
    finally:
        del analyzer.nlp.pipe
    assert tagged == ["A new line about the Louvre."]
    assert [s.density for s in again[:3]] == [s.density for s in first[:3]]
    fresh = SignalAnalyzer(extractor.nlp).analyze(SENTENCES[:3], [0] * 3)
    assert [s.density for s in fresh] == [s.density for s in first[:3]]


def _trace(text):
    from zeromem.types import Trace

    return Trace(id="t1", text=text, speaker="Ana", role="user", session="s", seq=0,
                 session_time=None, user="u", agent=None, event_time=None, recorded_at="x",
                 source_id=None)
