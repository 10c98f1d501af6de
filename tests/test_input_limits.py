"""Limits and argument checks of the Python API: every refusal is InvalidInput with
the fix, never OverflowError / ValueError / UnicodeError, and changes nothing."""

from __future__ import annotations

import pytest

from zeromem import InvalidInput, Memory

LONG = "u" * 201


@pytest.mark.parametrize("call, message", [
    (lambda m: m.add("ok", user=LONG), "over the limit of 200"),
    (lambda m: m.add("ok", agent=LONG), "over the limit of 200"),
    (lambda m: m.add("ok", user=" priya"), "pass 'priya'"),
    (lambda m: m.add("ok", agent="bot\n"), "pass 'bot'"),
    (lambda m: m.add("ok", user="   "), "only whitespace"),
    (lambda m: m.add("ok", user="pri\x1b[31mya"), "control character"),
    (lambda m: m.add("ok", user="a\x00b"), "control character"),
    (lambda m: m.list(user="a\x9bb"), "control character"),
    (lambda m: m.search("ok", user=LONG), "over the limit of 200"),
    (lambda m: Memory(":memory:", user=LONG).add("ok"), "over the limit of 200"),
])
def test_scope_names_are_checked(mem, snapshot, call, message):
    mem.add("already here")
    before = snapshot(mem)
    with pytest.raises(InvalidInput, match=message):
        call(mem)
    assert snapshot(mem) == before


def test_a_scope_name_of_200_characters_is_fine(mem):
    name = "ü" * 200
    tid = mem.add("ok", user=name)
    assert mem.get(tid, user=name).user == name


def test_metadata_over_64_kib_is_refused(mem, snapshot):
    before = snapshot(mem)
    with pytest.raises(InvalidInput, match="64 KiB"):
        mem.add("ok", metadata={"blob": "x" * 70_000})
    with pytest.raises(InvalidInput, match="64 KiB"):
        mem.add_many([{"text": "ok"}, {"text": "ok", "metadata": {"n": ["é" * 1000] * 40}}])
    assert snapshot(mem) == before
    tid = mem.add("ok", metadata={"blob": "x" * 60_000})
    with pytest.raises(InvalidInput, match="64 KiB"):
        mem.update(tid, metadata={"blob": "x" * 70_000})
    assert mem.get(tid).metadata == {"blob": "x" * 60_000}


@pytest.mark.parametrize("budget", [0, -1, True, 1.5, "100"])
def test_a_budget_that_can_hold_nothing_is_invalid_input(mem, budget):
    mem.add("I live in Denver.")
    with pytest.raises(InvalidInput, match="budget_tokens must be"):
        mem.render_context("Where do I live?", budget_tokens=budget)
    with pytest.raises(InvalidInput, match="budget_tokens must be"):
        mem.render([], budget_tokens=budget)


def test_budget_none_and_one_still_work(mem):
    mem.add("I live in Denver.")
    assert "Denver" in mem.render_context("Where do I live?", budget_tokens=None).text
    assert mem.render_context("Where do I live?", budget_tokens=1).text is not None


@pytest.mark.parametrize("call, message", [
    (lambda m: m.add("ok", seq=10**30), "seq"),
    (lambda m: m.add_many([{"text": "ok", "seq": 10**30}]), "trace #0: seq"),
    (lambda m: m.add("ok", seq=10**5000), "seq"),
    (lambda m: m.add("ok", session=10**5000), "session"),
    (lambda m: m.add("ok", source_id=10**1500), "source_id"),
    (lambda m: m.add("ok", metadata={"\ud800": 1}), "surrogate"),
    (lambda m: m.add("ok", metadata={"a": {"b\udcff": 1}}), "surrogate"),
    (lambda m: m.add("ok", metadata={"a": [{"b": ["\udcff"]}]}), "surrogate"),
    (lambda m: m.add("ok", user="\udcff"), "user contains a lone surrogate"),
    (lambda m: m.add("ok", agent="a\udcff"), "agent contains a lone surrogate"),
    (lambda m: m.add_many([{"text": "ok"}], user="\udcff"), "user"),
    (lambda m: m.list(user="\udcff"), "user"),
    (lambda m: m.search("ok", agent="\udcff"), "agent"),
    (lambda m: m.add("ok", session_time=10**30), "epoch"),
])
def test_unstorable_values_are_invalid_input_and_change_nothing(mem, snapshot, call, message):
    mem.add("already here")
    before = snapshot(mem)
    with pytest.raises(InvalidInput, match=message) as info:
        call(mem)
    assert isinstance(info.value, InvalidInput)
    str(info.value).encode("utf-8")  # the message itself can be printed anywhere
    assert snapshot(mem) == before
