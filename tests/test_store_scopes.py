"""A read, list, update or delete in one scope never sees or touches another scope."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zeromem import Memory, NotFound

SCOPES = [(None, None), ("ana", None), ("ana", "bot"), (None, "bot"), ("ben", "bot")]


def test_get_update_delete_history_from_another_scope_are_not_found(mem):
    tid = mem.add("Ana's secret", user="ana")
    for user, agent in [("ben", None), (None, None), ("ana", "bot")]:
        with pytest.raises(NotFound):
            mem.get(tid, user=user, agent=agent)
        with pytest.raises(NotFound):
            mem.update(tid, text="overwritten", user=user, agent=agent)
        with pytest.raises(NotFound):
            mem.delete(tid, user=user, agent=agent)
        with pytest.raises(NotFound):
            mem.history(tid, user=user, agent=agent)
    assert mem.get(tid, user="ana").text == "Ana's secret"


def test_list_and_stats_see_only_their_scope(mem):
    for user, agent in SCOPES:
        mem.add_many([{"text": f"{user}/{agent} {i}", "session": "s1"} for i in range(3)],
                     user=user, agent=agent)
    for user, agent in SCOPES:
        texts = [t.text for t in mem.list(user=user, agent=agent)]
        assert texts == [f"{user}/{agent} {i}" for i in range(3)]
        assert mem.stats(user=user, agent=agent).traces == 3
    assert mem.stats(all_scopes=True).traces == 3 * len(SCOPES)
    assert mem.stats(all_scopes=True).scopes == len(SCOPES)


def test_delete_scope_removes_that_scope_only(mem):
    for user, agent in SCOPES:
        mem.add_many([{"text": "x"}, {"text": "y"}], user=user, agent=agent)
    assert mem.delete_scope(user="ana", agent=None).traces == 2
    assert mem.list(user="ana") == []
    for user, agent in SCOPES:
        if (user, agent) != ("ana", None):
            assert len(mem.list(user=user, agent=agent)) == 2


def test_memory_bound_to_a_scope_uses_it_by_default(db_path):
    with Memory(db_path, user="ana") as ana, Memory(db_path, user="ben") as ben:
        tid = ana.add("hello from ana")
        assert [t.id for t in ana.list()] == [tid]
        assert ben.list() == []
        with pytest.raises(NotFound):
            ben.get(tid)


def test_sessions_with_the_same_name_in_two_scopes_stay_apart(mem):
    a = mem.add("a", session="session_1", user="ana")
    b = mem.add("b", session="session_1", user="ben")
    assert mem.get(a, user="ana").seq == 0 and mem.get(b, user="ben").seq == 0
    assert [t.text for t in mem.list(session="session_1", user="ana")] == ["a"]


scope_st = st.sampled_from(SCOPES)
op_st = st.tuples(st.sampled_from(["add", "delete", "delete_scope"]), scope_st)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op_st, max_size=25))
def test_random_operations_match_a_per_scope_model(mem, ops):
    for user, agent in SCOPES:
        mem.delete_scope(user=user, agent=agent)
    model: dict[tuple, list[str]] = {scope: [] for scope in SCOPES}
    for n, (op, scope) in enumerate(ops):
        user, agent = scope
        if op == "add":
            model[scope].append(mem.add(f"note {n}", user=user, agent=agent))
        elif op == "delete" and model[scope]:
            mem.delete(model[scope].pop(0), user=user, agent=agent)
        elif op == "delete_scope":
            assert mem.delete_scope(user=user, agent=agent).traces == len(model[scope])
            model[scope] = []
    for (user, agent), ids in model.items():
        assert [t.id for t in mem.list(user=user, agent=agent)] == ids
