from zeromem.indexes.units import segment_session, split_sentences
from zeromem.types import Trace


def _trace(i, text, speaker="A", attachments=()):
    # The row number a store would hold is passed to segment_session beside the trace (here i).
    return Trace(id=f"id{i}", text=text, user=None, agent=None, session="s1",
                 session_time="2023-05-08T13:56:00", speaker=speaker, role="user", event_time=None,
                 recorded_at="x", seq=i, source_id=None, attachments=attachments)


def test_split_sentences_merges_short_fragments():
    assert split_sentences("Hi. I moved to Denver last week! It is great.") == [
        "Hi. I moved to Denver last week!", "It is great."]


def test_every_level_is_present_and_covers_its_traces():
    traces = [_trace(i, f"Sentence one number {i}. Sentence two number {i}.") for i in range(1, 8)]
    units = segment_session(traces, [t.seq for t in traces], window_turns=4, stride=2)
    levels = {u.level for u in units}
    assert levels == {"turn", "span", "window", "episode"}
    episode = next(u for u in units if u.level == "episode")
    assert episode.rowids == tuple(range(1, 8))
    windows = [u for u in units if u.level == "window"]
    covered = {r for w in windows for r in w.rowids}
    assert covered == set(range(1, 8))  # the tail is never dropped
    assert all(len(w.rowids) == 4 for w in windows)


def test_turn_text_carries_speaker_and_caption():
    units = segment_session([_trace(1, "Look!", speaker="Mel", attachments=("a dog",))], [1])
    turn = next(u for u in units if u.level == "turn")
    assert turn.text == "Mel: Look! [image: a dog]"


def test_segmentation_is_deterministic():
    traces = [_trace(i, f"text {i}. more text here {i}.") for i in range(1, 6)]
    assert segment_session(traces, range(1, 6)) == segment_session(list(traces), [1, 2, 3, 4, 5])


def test_an_image_description_is_a_span_of_its_own():
    units = segment_session([_trace(1, "Here's our latest work.", speaker="Mel",
                                    attachments=("a sunset painting",))], [1])
    spans = [u.text for u in units if u.level == "span"]
    assert spans == ["Mel: Here's our latest work.", "Mel: [image: a sunset painting]"]
