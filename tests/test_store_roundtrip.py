"""add → get gives back exactly what was stored: text byte for byte, and every provenance field."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zeromem import Config, Memory
from zeromem.store.validate import shows_nothing

# Any Unicode except surrogates (not encodable text); text that shows nothing (whitespace,
# control or zero-width characters only) is refused on purpose.
any_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1,
                   max_size=300).filter(lambda s: not shows_nothing(s))
chinese_text = st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
                       min_size=1, max_size=80)


@pytest.fixture
def mem(db_path):
    """What a write stores is under test here, not retrieval: writes are not indexed (the
    indexing of each hypothesis example made this file ~2 CPU minutes)."""
    memory = Memory(db_path, config=Config(index_on_write=False))
    yield memory
    memory.close()


fixture_ok = settings(max_examples=150, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])


@fixture_ok
@given(text=any_text)
def test_add_then_get_returns_any_unicode_text_byte_for_byte(mem, text):
    got = mem.get(mem.add(text)).text
    assert got.encode("utf-8") == text.encode("utf-8")


@fixture_ok
@given(text=chinese_text, speaker=chinese_text)
def test_chinese_text_and_speaker_round_trip(mem, text, speaker):
    trace = mem.get(mem.add(text, speaker=speaker, session="会话1"))
    assert (trace.text, trace.speaker, trace.session) == (text, speaker, "会话1")


@fixture_ok
@given(texts=st.lists(any_text, min_size=1, max_size=20))
def test_add_many_preserves_every_text_and_its_order(mem, texts):
    ids = mem.add_many([{"text": t, "session": "batch"} for t in texts])
    assert [mem.get(i).text for i in ids] == texts


def test_text_survives_close_and_reopen(db_path):
    text = "  Leading and trailing spaces,\ttabs,\nnewlines, emoji 🥖 and 中文 stay.  "
    with Memory(db_path) as first:
        tid = first.add(text)
    with Memory(db_path) as second:
        assert second.get(tid).text == text


def test_every_provenance_field_round_trips(mem):
    tid = mem.add("I moved to Denver.", session="session_2", speaker="Priya", role="user",
                  session_time="10:05 am on 2 May, 2023", event_time="2023-05-01T09:00:00",
                  seq=2, source_id="D2:3", metadata={"mood": "happy", "n": 3, "tags": ["move"]},
                  attachments=["a photo of moving boxes"])
    trace = mem.get(tid)
    assert trace.id == tid and tid.startswith("t")
    assert (trace.session, trace.speaker, trace.role, trace.seq, trace.source_id) == (
        "session_2", "Priya", "user", 2, "D2:3")
    assert trace.session_time == "2023-05-02T10:05:00"
    assert trace.event_time == "2023-05-01T09:00:00"
    assert trace.metadata == {"mood": "happy", "n": 3, "tags": ["move"]}
    assert trace.attachments == ("a photo of moving boxes",)
    assert trace.text == "I moved to Denver."  # the caption never leaks into the utterance
    assert trace.recorded_at and trace.version == 1


def test_seq_is_assigned_in_order_within_each_session(mem):
    ids = mem.add_many([{"text": "a", "session": "s1"}, {"text": "b", "session": "s2"},
                        {"text": "c", "session": "s1"}])
    later = mem.add("d", session="s1")
    assert [mem.get(i).seq for i in ids] == [0, 0, 1]
    assert mem.get(later).seq == 2


def test_utf8_bytes_are_accepted_and_stored_as_text(mem):
    assert mem.get(mem.add("café 咖啡".encode())).text == "café 咖啡"
