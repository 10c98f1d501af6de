"""Every malformed input gets a clear error and leaves the store exactly as it was."""

from __future__ import annotations

import pytest

from zeromem import Config, InvalidInput, Memory, NotFound

LIMIT = 100_000  # Config().max_text_chars

BAD_CALLS = {
    "empty text": (lambda m, t: m.add(""), InvalidInput, "empty"),
    "whitespace-only text": (lambda m, t: m.add(" \n\t\u3000"), InvalidInput, "empty"),
    "text over the size limit": (lambda m, t: m.add("x" * (LIMIT + 1)), InvalidInput, "limit"),
    "int text": (lambda m, t: m.add(123), InvalidInput, "must be a string"),
    "None text": (lambda m, t: m.add(None), InvalidInput, "must be a string"),
    "list text": (lambda m, t: m.add(["a"]), InvalidInput, "must be a string"),
    "bytes with bad UTF-8": (lambda m, t: m.add(b"caf\xe9"), InvalidInput, "UTF-8"),
    "lone surrogate": (lambda m, t: m.add("a\ud800b"), InvalidInput, "surrogate"),
    "unparseable session_time": (lambda m, t: m.add("ok", session_time="when pigs fly"),
                                 InvalidInput, "date/time"),
    "impossible event_time": (lambda m, t: m.add("ok", event_time="2023-13-45"),
                              InvalidInput, "date/time"),
    "bad role": (lambda m, t: m.add("ok", role="robot"), InvalidInput, "role"),
    "negative seq": (lambda m, t: m.add("ok", seq=-1), InvalidInput, "seq"),
    "metadata not a dict": (lambda m, t: m.add("ok", metadata="x"), InvalidInput, "metadata"),
    "metadata with NaN": (lambda m, t: m.add("ok", metadata={"x": float("nan")}),
                          InvalidInput, "JSON"),
    "metadata not JSON": (lambda m, t: m.add("ok", metadata={"x": object()}), InvalidInput, "JSON"),
    "empty attachment": (lambda m, t: m.add("ok", attachments=[""]), InvalidInput, "attachment"),
    "non-string user": (lambda m, t: m.add("ok", user=5), InvalidInput, "user"),
    "unknown id on get": (lambda m, t: m.get("tzzzzzzzz"), NotFound, "no trace 'tzzzzzzzz' in scope"),
    "malformed id on get": (lambda m, t: m.get("banana"), NotFound, "t4k2x9q7m"),
    "old-style id on get": (lambda m, t: m.get("t1"), NotFound, "ids look like"),
    "non-string id": (lambda m, t: m.get(7), InvalidInput, "string"),
    "unknown id on update": (lambda m, t: m.update("tzzzzzzzz", text="x"), NotFound, "tzzzzzzzz"),
    "unknown id on delete": (lambda m, t: m.delete("tzzzzzzzz"), NotFound, "tzzzzzzzz"),
    "update to empty text": (lambda m, t: m.update(t, text="   "), InvalidInput, "empty"),
    "update with nothing": (lambda m, t: m.update(t), InvalidInput, "needs"),
    "update with bad metadata": (lambda m, t: m.update(t, metadata=[1]), InvalidInput, "metadata"),
    "unknown field in a batch": (lambda m, t: m.add_many([{"text": "ok"}, {"text": "ok", "colour": 1}]),
                                 InvalidInput, "unknown fields"),
    "bad trace late in a batch": (lambda m, t: m.add_many([{"text": "ok"}] * 50 + [{"text": ""}]),
                                  InvalidInput, "trace #50"),
    "batch item not a dict": (lambda m, t: m.add_many([{"text": "ok"}, "hello"]), InvalidInput, "dict"),
    "batch item without text": (lambda m, t: m.add_many([{"speaker": "x"}]), InvalidInput, "text"),
    "batch that is a string": (lambda m, t: m.add_many("hello"), InvalidInput, "list"),
    "list with a bad metadata key": (lambda m, t: m.list(filters={"bad key": 1}), InvalidInput, "key"),
    "list with a negative limit": (lambda m, t: m.list(limit=-1), InvalidInput, "limit"),
    "list with a negative offset": (lambda m, t: m.list(offset=-1), InvalidInput, "offset"),
    "list with a bad since": (lambda m, t: m.list(since="someday"), InvalidInput, "since"),
    # Values that pass a shallow check but that no backend can store.
    "seq beyond 64 bits": (lambda m, t: m.add("ok", seq=2**63), InvalidInput, "seq"),
    "seq beyond 64 bits late in a batch": (
        lambda m, t: m.add_many([{"text": "ok"}, {"text": "ok", "seq": 2**64}]), InvalidInput, "trace #1: seq"),
    "lone surrogate in a nested metadata value": (
        lambda m, t: m.add("ok", metadata={"a": ["x", {"b": "\ud800"}]}), InvalidInput,
        "metadata['a'][1]['b'] contains a lone surrogate"),
    "lone surrogate in a metadata key": (lambda m, t: m.add("ok", metadata={"\udc00": 1}),
                                         InvalidInput, "surrogate"),
    "metadata int beyond 64 bits": (lambda m, t: m.add("ok", metadata={"n": 2**63}),
                                    InvalidInput, "metadata['n'] = 9223372036854775808 is outside"),
    "seq of 5000 digits": (lambda m, t: m.add("ok", seq=10**5000), InvalidInput, "an int of 16610 bits"),
    "metadata int of 5000 digits": (lambda m, t: m.add("ok", metadata={"n": -(10**5000)}),
                                    InvalidInput, "an int of 16610 bits"),
    "metadata int below -2**63": (lambda m, t: m.add("ok", metadata={"n": [-(2**63) - 1]}),
                                  InvalidInput, "64-bit"),
    "nested non-string metadata key": (lambda m, t: m.add("ok", metadata={"a": {1: "x"}}),
                                       InvalidInput, "keys must be strings"),
    "nested infinite metadata float": (lambda m, t: m.add("ok", metadata={"a": [float("inf")]}),
                                       InvalidInput, "JSON"),
    "lone surrogate in user": (lambda m, t: m.add("ok", user="\ud800"), InvalidInput, "user contains"),
    "lone surrogate in agent": (lambda m, t: m.add("ok", agent="a\udfff"), InvalidInput, "agent"),
    "lone surrogate in speaker": (lambda m, t: m.add("ok", speaker="\ud800"), InvalidInput, "speaker"),
    "update with a surrogate in metadata": (lambda m, t: m.update(t, metadata={"x": "\ud800"}),
                                            InvalidInput, "surrogate"),
    "list with a limit beyond 64 bits": (lambda m, t: m.list(limit=2**63), InvalidInput, "limit"),
    "list filter beyond 64 bits": (lambda m, t: m.list(filters={"n": 2**64}), InvalidInput, "64-bit"),
    "list filter with a surrogate": (lambda m, t: m.list(filters={"n": "\ud800"}), InvalidInput,
                                     "surrogate"),
}


@pytest.fixture
def populated(mem):
    ids = mem.add_many([{"text": "I live in Chicago.", "session": "s1", "speaker": "Priya"},
                        {"text": "Nice!", "session": "s1", "speaker": "Marcus"}])
    mem.update(ids[0], text="I live in Denver.")
    mem.add("other scope", user="ben")
    return mem, ids[0]


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_input_raises_a_clear_error_and_changes_nothing(populated, snapshot, case):
    mem, existing = populated
    call, error, words = BAD_CALLS[case]
    before = snapshot(mem)
    with pytest.raises(error) as info:
        call(mem, existing)
    assert words.lower() in str(info.value).lower()
    assert snapshot(mem) == before


def test_the_size_limit_is_configurable(db_path):
    with Memory(db_path, config=Config(max_text_chars=10)) as mem:
        assert mem.get(mem.add("x" * 10)).text == "x" * 10
        with pytest.raises(InvalidInput, match="limit of 10"):
            mem.add("x" * 11)


def test_errors_are_zeromem_errors_and_builtin_ones(mem):
    from zeromem import ZeromemError
    with pytest.raises(ZeromemError):
        mem.add("")
    with pytest.raises(ValueError):  # InvalidInput is also a ValueError
        mem.add("")
    with pytest.raises(KeyError):  # NotFound is also a KeyError
        mem.get("t12345")
