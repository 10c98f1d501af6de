"""``Memory.scoped``: a view of one scope that does exactly what ``Memory`` does with the
``user=`` / ``agent=`` keywords, through the public API only."""

from __future__ import annotations

import dataclasses
import inspect
import typing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zeromem
from zeromem import SAME_SCOPE, InvalidInput, Memory, NotFound, ScopedMemory

SCOPE_KEYWORDS = {"user", "agent"}
# Keywords that reach past one scope: the view has no such option.
CROSS_SCOPE = {"export": {"all_scopes"}, "stats": {"all_scopes"}}


def _public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(value) for name, value in vars(cls).items()
            if callable(value) and not name.startswith("_")}


def test_every_view_method_is_the_memory_method_without_the_scope_keywords():
    view = _public_methods(ScopedMemory)
    memory = _public_methods(Memory)
    scoped_in_memory = {name for name, sig in memory.items() if set(sig.parameters) >= SCOPE_KEYWORDS}
    assert scoped_in_memory - {"scoped"} == set(view)  # every scoped operation, nothing else
    for name, sig in view.items():
        expected = [p for p in memory[name].parameters.values()
                    if p.name not in SCOPE_KEYWORDS | CROSS_SCOPE.get(name, set())]
        assert [(p.name, p.kind, p.default) for p in sig.parameters.values()] == \
               [(p.name, p.kind, p.default) for p in expected], name
        returns = typing.get_type_hints(getattr(ScopedMemory, name))["return"]
        assert returns == typing.get_type_hints(getattr(Memory, name))["return"], name


def test_a_view_reads_and_writes_its_scope_only(tmp_path):
    with Memory(tmp_path / "m.db", agent="bot") as mem:
        ana = mem.scoped(user="ana")
        assert (ana.user, ana.agent, ana.scope, ana.memory) == ("ana", "bot", zeromem.Scope("ana", "bot"), mem)
        tid = ana.add("I moved to Denver last week.", speaker="Ana", session="s1")
        mem.add("Bob likes tea.", speaker="Bob", session="s1", user="bob")
        assert ana.get(tid) == mem.get(tid, user="ana")
        assert [t.id for t in ana.list()] == [tid]
        with pytest.raises(NotFound):
            mem.get(tid)  # the memory's own scope (no user) does not hold it
        assert [ev.trace_id for ev in ana.search("Where did Ana move?")] == [tid]
        assert (_untimed(ana.search_detailed("Where did Ana move?"))
                == _untimed(mem.search_detailed("Where did Ana move?", user="ana")))
        assert ana.pin(tid).metadata == {"pinned": True}
        assert ana.archive(tid).metadata == {"archived": True}
        assert ana.unarchive(tid).metadata == {}
        assert [e.event for e in ana.history(tid)] == ["add", "update", "update", "update"]
        assert ana.stats().traces == 1 and mem.stats(all_scopes=True).traces == 2
        assert [s.session for s in ana.sessions()] == ["s1"]
        assert ana.delete_scope().traces == 1
        assert mem.stats(all_scopes=True).traces == 1


def _untimed(result: zeromem.SearchResult) -> zeromem.SearchResult:
    return dataclasses.replace(result, explain=dataclasses.replace(result.explain, timings={}))


def test_scoped_keeps_the_memorys_own_parts_and_refuses_a_bad_name():
    with Memory(":memory:", user="u", agent="a") as mem:
        assert mem.scoped().scope == mem.scope
        assert mem.scoped(agent=None).scope == zeromem.Scope("u", None)
        assert mem.scoped(user=SAME_SCOPE, agent="b").scope == zeromem.Scope("u", "b")
        with pytest.raises(InvalidInput):
            mem.scoped(user="")


# -- property: a sequence of operations through a view gives what the same sequence gives
# through Memory with the keywords, each on a store of its own (ids differ between stores, so
# they are compared by position).
TEXTS = st.sampled_from(["I moved to Denver last week.", "Bob adopted a cat named Miso.",
                         "We ate ramen in Tokyo in May.", "My sister plays the cello.",
                         "The meeting moved to Friday."])
OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), TEXTS, st.sampled_from(["s1", "s2"])),
    st.tuples(st.just("update"), st.integers(0, 5), TEXTS),
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("pin"), st.integers(0, 5)),
    st.tuples(st.just("archive"), st.integers(0, 5)),
    st.tuples(st.just("search"), TEXTS),
    st.tuples(st.just("list"), st.sampled_from([None, "s1", "s2"])),
), max_size=8)


def _run(ops, call, ids):
    """Apply ``ops`` with ``call(method, *args, **kwargs)``; returns each outcome with trace
    ids replaced by their position in ``ids`` (the order they were added)."""
    def plain(value):
        if isinstance(value, str):  # an id, or text naming one ("reply to t5kwegcc9" in a why)
            for position, tid in enumerate(ids):
                value = value.replace(tid, f"#{position}")
            return value
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return plain(dataclasses.asdict(value))
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items() if k not in ("recorded_at", "at", "timings")}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    out = []
    for op, *args in ops:
        try:
            if op == "add":
                ids.append(call("add", args[0], session=args[1], speaker="Ana"))
                result = len(ids)
            elif op in ("update", "delete", "pin", "archive"):
                target = ids[args[0]] if args[0] < len(ids) else "tzzzzzzzz"
                result = (call("update", target, text=args[1]) if op == "update" else call(op, target))
                result = {"deleted": result.traces} if op == "delete" else result
            elif op == "search":
                result = call("search_detailed", args[0], k=3)
            else:
                result = call("list", session=args[0])
            out.append(plain(result))
        except zeromem.ZeromemError as exc:
            out.append(type(exc).__name__)
    return out


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_view_operations_equal_memory_operations_with_the_keywords(tmp_path_factory, ops):
    folder = tmp_path_factory.mktemp("scoped")
    with Memory(folder / "view.db") as viewed, Memory(folder / "keywords.db") as keyed:
        view = viewed.scoped(user="ana", agent="bot")
        through_view = _run(ops, lambda name, *a, **kw: getattr(view, name)(*a, **kw), [])
        with_keywords = _run(ops, lambda name, *a, **kw: getattr(keyed, name)(*a, user="ana", agent="bot", **kw), [])
    assert through_view == with_keywords
