"""zeromem.compat.mem0: Mem0's Python API (mem0ai 2.2) over zeromem, with zero LLM calls.

The calls are Mem0's documented quickstart ones, unchanged but for the import; the signatures
are checked against the installed ``mem0`` package itself.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 is imported: no PostHog client

import pytest

from zeromem import InvalidInput, NotFound
from zeromem import Memory as ZeromemMemory
from zeromem.compat.mem0 import INFER_NOTE, AsyncMemory, Memory, MemoryNotFound
from zeromem.reader import usage

CHAT = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies."},
]


@pytest.fixture(scope="module")
def shared():
    """One zeromem store for the module (models load once); each test uses its own user ids."""
    with ZeromemMemory(":memory:") as memory:
        yield memory


@pytest.fixture
def m(shared):
    return Memory(shared)


def test_the_signatures_are_mem0s(tmp_path, monkeypatch):
    monkeypatch.setenv("MEM0_DIR", str(tmp_path))
    mem0 = pytest.importorskip("mem0")
    for cls, ours in ((mem0.Memory, Memory), (mem0.AsyncMemory, AsyncMemory)):
        for name in ("add", "search", "get_all", "get", "update", "delete", "delete_all", "history", "reset"):
            theirs = inspect.signature(getattr(cls, name)).parameters
            mine = inspect.signature(getattr(ours, name)).parameters
            assert list(theirs) == [p for p in mine if p in theirs], (cls.__name__, name)
            for param in theirs.values():
                assert param.name in mine, (cls.__name__, name, param.name)
                assert mine[param.name].kind == param.kind, (cls.__name__, name, param.name)
        assert inspect.iscoroutinefunction(ours.search) == inspect.iscoroutinefunction(cls.search)


def test_the_quickstart_round_trip(m):
    before = usage()
    added = m.add(CHAT, user_id="alice", metadata={"category": "movies"})
    assert added["note"] == INFER_NOTE
    assert [r["event"] for r in added["results"]] == ["ADD"] * 4
    assert [r["memory"] for r in added["results"]] == [msg["content"] for msg in CHAT]  # verbatim
    assert [r["role"] for r in added["results"]] == ["user", "assistant", "user", "assistant"]
    first = added["results"][2]["id"]

    found = m.search("Which film genre does Alice love?", filters={"user_id": "alice"})["results"]
    assert CHAT[2]["content"] in [r["memory"] for r in found[:2]]
    hit = next(r for r in found if r["id"] == first)
    assert {"id", "memory", "hash", "metadata", "score", "created_at", "updated_at", "user_id", "role"} <= set(hit)
    assert hit["metadata"] == {"category": "movies"} and hit["user_id"] == "alice"
    assert 0 < hit["score"] <= 1 and "agent_id" not in hit and "run_id" not in hit
    assert hit["provenance"]["version"] == 1 and hit["provenance"]["role"] == "user"

    listed = m.get_all(filters={"user_id": "alice"})["results"]
    assert [r["memory"] for r in listed] == [msg["content"] for msg in CHAT]
    assert "score" not in listed[0]
    assert m.get(first)["memory"] == CHAT[2]["content"]
    assert m.get(first)["score"] is None  # as Mem0's get: a MemoryItem with no score

    assert m.update(first, text="I love sci-fi and space operas.") == {"message": "Memory updated successfully!"}
    assert m.update(first, metadata={"mood": "keen"})["message"]
    after = m.get(first)
    assert after["memory"] == "I love sci-fi and space operas."
    assert after["metadata"] == {"category": "movies", "mood": "keen"}  # merged, as Mem0 merges
    assert after["updated_at"] >= after["created_at"]
    history = m.history(first)
    assert [h["event"] for h in history] == ["ADD", "UPDATE", "UPDATE"]
    assert history[1]["old_memory"] == CHAT[2]["content"]
    assert history[1]["new_memory"] == "I love sci-fi and space operas."
    assert {"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at",
            "is_deleted", "actor_id", "role"} <= set(history[0])

    assert m.delete(first) == {"message": "Memory deleted successfully!"}
    assert m.get(first) is None
    assert [h["event"] for h in m.history(first)] == ["ADD", "UPDATE", "UPDATE", "DELETE"]
    assert m.history(first)[-1]["is_deleted"] is True
    with pytest.raises(MemoryNotFound) as err:
        m.delete(first)
    assert isinstance(err.value, ValueError) and isinstance(err.value, NotFound)

    assert m.delete_all(user_id="alice") == {"message": "Memories deleted successfully!"}
    assert m.get_all(filters={"user_id": "alice"}) == {"results": []}
    spent = usage() - before
    assert (spent.calls, spent.tokens) == (0, 0)


def test_ids_map_to_scopes_and_sessions(m):
    m.add("Runs on Tuesday.", user_id="ana", agent_id="coach", run_id="r1", infer=False)
    m.add("Swims on Friday.", user_id="ana", agent_id="coach", run_id="r2", infer=False)
    m.add("Likes jazz.", user_id="ana")
    coach = m.get_all(filters={"user_id": "ana", "agent_id": "coach"})["results"]
    assert [r["memory"] for r in coach] == ["Runs on Tuesday.", "Swims on Friday."]
    assert coach[0]["agent_id"] == "coach" and coach[0]["run_id"] == "r1"
    assert [r["memory"] for r in m.get_all(filters={"user_id": "ana"})["results"]] == ["Likes jazz."]
    one_run = m.get_all(filters={"user_id": "ana", "agent_id": "coach", "run_id": "r2"})["results"]
    assert [r["memory"] for r in one_run] == ["Swims on Friday."]
    found = m.search("When does she swim?", filters={"user_id": "ana", "agent_id": "coach", "run_id": "r2"})
    assert [r["memory"] for r in found["results"]] == ["Swims on Friday."]
    m.delete_all(user_id="ana", agent_id="coach", run_id="r1")
    assert [r["memory"] for r in m.get_all(filters={"user_id": "ana", "agent_id": "coach"})["results"]] == [
        "Swims on Friday."]
    assert m.get_all(filters={"user_id": "ana"})["results"][0]["memory"] == "Likes jazz."
    added = m.add({"role": "user", "content": "I'm Ana.", "name": "Ana"}, user_id=42, infer=False)
    assert "note" not in added and added["results"][0]["actor_id"] == "Ana"
    assert m.get_all(filters={"user_id": "42"})["results"][0]["actor_id"] == "Ana"  # ints become text


def test_scopes_are_isolated(m):
    m.add("My locker code is 4417.", user_id="bob")
    assert m.search("locker code", filters={"user_id": "carol"})["results"] == []
    assert m.get_all(filters={"user_id": "carol"})["results"] == []
    m.delete_all(user_id="carol")
    assert [r["memory"] for r in m.get_all(filters={"user_id": "bob"})["results"]] == ["My locker code is 4417."]


def test_metadata_filters_limits_and_expiry(m):
    m.add("Tea at four.", user_id="dee", metadata={"kind": "habit"})
    m.add("Dentist on the 3rd.", user_id="dee", metadata={"kind": "event"}, expiration_date="2000-01-01")
    m.add("Gym at six.", user_id="dee", metadata={"kind": "habit"}, expiration_date="2999-12-31")
    habits = m.get_all(filters={"user_id": "dee", "kind": "habit"})["results"]
    assert [r["memory"] for r in habits] == ["Tea at four.", "Gym at six."]
    assert habits[1]["expiration_date"] == "2999-12-31" and "expires_at" not in habits[1]["metadata"]
    assert [r["memory"] for r in m.get_all(filters={"user_id": "dee", "kind": {"eq": "event"}})["results"]] == []
    shown = m.get_all(filters={"user_id": "dee", "kind": "event"}, show_expired=True)["results"]
    assert shown[0]["expiration_date"] == "2000-01-01"
    assert all(r["memory"] != "Dentist on the 3rd." for r in m.search("dentist", filters={"user_id": "dee"})["results"])
    assert len(m.get_all(filters={"user_id": "dee"}, top_k=1)["results"]) == 1
    assert len(m.search("gym", filters={"user_id": "dee"}, top_k=1)["results"]) == 1
    assert len(m.search("gym", filters={"user_id": "dee"}, limit=1)["results"]) == 1  # Mem0 1.x's name
    assert m.search("gym", filters={"user_id": "dee"}, top_k=0)["results"] == []
    assert all(r["score"] >= 0.5 for r in m.search("gym", filters={"user_id": "dee"}, threshold=0.5)["results"])
    explained = m.search("gym", filters={"user_id": "dee"}, explain=True)["results"]
    assert isinstance(explained[0]["score_details"], dict)
    tid = habits[1]["id"]
    m.update(tid, expiration_date=None)
    assert "expiration_date" not in m.get(tid)


def test_refusals_are_clear_and_change_nothing(m):
    def count():
        return len(m.get_all(filters={"user_id": "eve"}, top_k=1000)["results"])

    m.add("Eve likes chess.", user_id="eve")
    cases = [
        (lambda: m.add("x"), "At least one of 'user_id'"),
        (lambda: m.add("x", user_id="eve", memory_type="procedural_memory"), "language model"),
        (lambda: m.add("x", user_id="eve", prompt="extract facts"), "language model"),
        (lambda: m.add(["x"], user_id="eve"), "must be a dict with 'role' and 'content'"),
        (lambda: m.add({"role": "user", "content": [{"type": "image_url"}]}, user_id="eve"), "content must be text"),
        (lambda: m.add("x", user_id="eve", metadata={"user_id": "mallory"}), "identity fields"),
        (lambda: m.add("x", user_id="eve", expiration_date="next week"), "YYYY-MM-DD"),
        (lambda: m.add("x", user_id="e ve"), "cannot contain whitespace"),
        (lambda: m.add([{"role": "user", "content": "fine"}, {"role": "robot", "content": "x"}], user_id="eve"),
         "role"),
        (lambda: m.search("chess", user_id="eve"), "Top-level entity parameters"),
        (lambda: m.get_all(user_id="eve"), "Top-level entity parameters"),
        (lambda: m.search("chess"), "filters must contain at least one of"),
        (lambda: m.search("chess", filters={"user_id": "eve", "OR": [{"a": 1}]}), "equality only"),
        (lambda: m.search("chess", filters={"user_id": "eve", "n": {"gt": 3}}), "equality only"),
        (lambda: m.search("chess", filters={"user_id": "eve"}, threshold=2), "threshold"),
        (lambda: m.search("chess", filters={"user_id": "eve"}, show_expired=True), "get_all"),
        (lambda: m.search("chess", filters={"user_id": "eve"}, top_k=-1), "top_k"),
        (lambda: m.search("chess", filters={"user_id": "eve"}, colour="red"), "unexpected keyword"),
        (lambda: m.search("  ", filters={"user_id": "eve"}), "Invalid query"),
        (lambda: m.delete_all(), "reset()"),
        (lambda: m.update("t0000000a"), "At least one of text"),
    ]
    for call, message in cases:
        with pytest.raises(InvalidInput, match=message):
            call()
    with pytest.raises(MemoryNotFound):
        m.update("tzzzzzzzz", text="x")
    assert m.get("tzzzzzzzz") is None and m.history("tzzzzzzzz") == []
    assert m.add("Eve plays on Sundays.", user_id="eve", metadata={"user_id": "eve"})["results"]  # its own id: fine
    assert count() == 2


def test_configs_that_need_a_model_are_refused(tmp_path, monkeypatch):
    with pytest.raises(InvalidInput, match=r"llm .*language model"):
        Memory.from_config({"llm": {"provider": "openai", "config": {"model": "gpt-4o-mini"}}}, store=":memory:")
    with pytest.raises(InvalidInput, match="embedder"):
        Memory(":memory:", config={"embedder": {"provider": "openai"}})
    with pytest.raises(InvalidInput, match="unknown Mem0 config keys"):
        Memory(":memory:", config={"vectorstore": {}})
    with Memory.from_config({"vector_store": {"provider": "qdrant", "config": {"path": "/nowhere"}},
                             "version": "v1.1"}, store=tmp_path / "m.db") as m:
        assert m.add("kept here", user_id="u")["results"]
        assert m.zeromem.path == str(tmp_path / "m.db")
    monkeypatch.setenv("MEM0_DIR", str(tmp_path))
    mem0 = pytest.importorskip("mem0")
    from mem0.configs.base import MemoryConfig

    Memory(":memory:", config=MemoryConfig()).close()  # its OpenAI defaults were never asked for
    with pytest.raises(InvalidInput, match="custom_instructions"):
        Memory(MemoryConfig(custom_instructions="only food facts"))
    assert mem0.Memory is not Memory


def test_reset_wipes_every_scope(tmp_path):
    with Memory(tmp_path / "r.db") as m:
        m.add("one", user_id="u1")
        m.add("two", agent_id="a1")
        m.add("three", run_id="solo")
        assert m.reset() is None
        for filters in ({"user_id": "u1"}, {"agent_id": "a1"}, {"run_id": "solo"}):
            assert m.get_all(filters=filters)["results"] == []
        assert m.zeromem.stats(all_scopes=True).traces == 0


def test_async_memory(shared):
    async def main():
        am = AsyncMemory(shared)
        added = await am.add(CHAT[:2], user_id="fay")
        tid = added["results"][0]["id"]
        found = await am.search("movie tonight", filters={"user_id": "fay"}, top_k=1)
        assert found["results"][0]["id"] == tid
        assert len((await am.get_all(filters={"user_id": "fay"}))["results"]) == 2
        assert (await am.get(tid))["memory"] == CHAT[0]["content"]
        await am.update(tid, text="Movie night: sci-fi.")
        assert [h["event"] for h in await am.history(tid)] == ["ADD", "UPDATE"]
        await am.delete(tid)
        await am.delete_all(user_id="fay")
        assert (await am.get_all(filters={"user_id": "fay"}))["results"] == []
        with pytest.raises(InvalidInput, match="language model"):
            await am.add("x", user_id="fay", llm=object())

    before = usage()
    asyncio.run(main())
    assert (usage() - before).calls == 0


def test_results_are_json_and_deterministic(shared):
    m = Memory(shared)
    m.add(CHAT, user_id="gus", run_id="s1")
    first = m.search("sci-fi", filters={"user_id": "gus"})
    again = m.search("sci-fi", filters={"user_id": "gus"})
    assert json.loads(json.dumps(first)) == first == again
