"""``zeromem serve --compat mem0``: Mem0's own ``MemoryClient`` (mem0ai 2.2), unchanged, against a
real zeromem server on loopback; Mem0's self-hosted routes; key isolation; the Mem0 importer."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 is imported: no PostHog client

import pytest
from fastapi.testclient import TestClient

from internals import store_of
from zeromem import InvalidInput
from zeromem import Memory as ZeromemMemory
from zeromem.compat.mem0 import Memory as Mem0Memory
from zeromem.ingest import load_file
from zeromem.interfaces.server import ServerSettings, create_app
from zeromem.reader import usage
from zeromem.store.keys import new_api_key
from zeromem.types import Scope

LOCAL = "http://127.0.0.1"
uvicorn = pytest.importorskip("uvicorn")


def _key(memory: ZeromemMemory, user: str | None, agent: str | None = None) -> str:
    key_id, key, key_hash = new_api_key()
    store_of(memory).add_api_key(key_id, key_hash, Scope(user, agent), None)
    return key


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    with ZeromemMemory(tmp_path_factory.mktemp("mem0") / "m.db") as mem:
        yield mem


@pytest.fixture(scope="module")
def server(memory):
    """A real zeromem server with --compat mem0 on a free loopback port, in a thread."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(memory, ServerSettings(warm_up=False, compat_mem0=True))
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def mem0_client(tmp_path_factory):
    os.environ["MEM0_DIR"] = str(tmp_path_factory.mktemp("mem0home"))  # mem0 writes its config there
    mem0 = pytest.importorskip("mem0")
    return mem0


@pytest.fixture(scope="module")
def http(memory):
    app = create_app(memory, ServerSettings(warm_up=False, compat_mem0=True))
    with TestClient(app, base_url=LOCAL) as client:
        yield client


def test_the_real_mem0_client_runs_unchanged(server, memory, mem0_client):
    before = usage()
    client = mem0_client.MemoryClient(api_key=_key(memory, "alice"), host=server)
    messages = [{"role": "user", "content": "I'm vegetarian and allergic to peanuts."},
                {"role": "assistant", "content": "Noted: vegetarian, no peanuts."}]
    added = client.add(messages, user_id="alice", metadata={"topic": "food"})
    assert [r["event"] for r in added["results"]] == ["ADD", "ADD"]
    tid = added["results"][0]["id"]
    found = client.search("What should I cook for Alice?", filters={"user_id": "alice"}, top_k=3)
    assert found["results"][0]["memory"] == messages[0]["content"]
    assert found["results"][0]["metadata"] == {"topic": "food"}
    page = client.get_all(filters={"user_id": "alice"})
    assert page["count"] == 2 and [r["memory"] for r in page["results"]] == [m["content"] for m in messages]
    assert client.get_all(filters={"user_id": "alice"}, page=2, page_size=1)["results"][0]["id"] == \
        added["results"][1]["id"]
    assert client.get(tid)["memory"] == messages[0]["content"]
    updated = client.update(tid, text="I'm vegan and allergic to peanuts.")
    assert updated["memory"] == "I'm vegan and allergic to peanuts."
    assert [h["event"] for h in client.history(tid)] == ["ADD", "UPDATE"]
    client.delete(tid)
    with pytest.raises(mem0_client.exceptions.MemoryError):  # 404: the client's MemoryNotFoundError
        client.get(tid)
    assert client.delete_all(user_id="alice")["message"]
    assert client.get_all(filters={"user_id": "alice"})["results"] == []
    client.add("Reset me.", user_id="alice")
    assert client.users()["results"][0]["name"] == "alice"
    assert client.reset()["message"]
    assert client.get_all(filters={"user_id": "alice"})["count"] == 0
    assert (usage() - before).calls == 0


def test_the_async_client_too(server, memory, mem0_client):
    import asyncio

    async def main():
        client = mem0_client.AsyncMemoryClient(api_key=_key(memory, "zed"), host=server)
        added = await client.add("Zed takes the 7:40 train.", user_id="zed")
        tid = added["results"][0]["id"]
        found = await client.search("train", filters={"user_id": "zed"})
        assert found["results"][0]["id"] == tid
        await client.delete_all(user_id="zed")
        assert (await client.get_all(filters={"user_id": "zed"}))["results"] == []

    asyncio.run(main())


def test_a_key_for_alice_never_reaches_bob(server, memory, mem0_client):
    bob = mem0_client.MemoryClient(api_key=_key(memory, "bob"), host=server)
    secret = bob.add("Bob's safe code is 7731.", user_id="bob")["results"][0]["id"]
    alice = mem0_client.MemoryClient(api_key=_key(memory, "alice"), host=server)
    for call in (lambda: alice.search("safe code", filters={"user_id": "bob"}),
                 lambda: alice.get_all(filters={"user_id": "bob"}),
                 lambda: alice.add("I'm bob now", user_id="bob"),
                 lambda: alice.delete_all(user_id="bob")):
        with pytest.raises(mem0_client.exceptions.MemoryError, match=r"this API key reads and writes user_id='alice'"):
            call()
    for call in (lambda: alice.get(secret), lambda: alice.history(secret), lambda: alice.delete(secret),
                 lambda: alice.update(secret, text="hacked")):
        with pytest.raises(mem0_client.exceptions.MemoryError):  # 404: not in alice's scope
            call()
    assert all("7731" not in r["memory"]
               for r in alice.search("safe code", filters={"user_id": "alice"})["results"])
    assert bob.get(secret)["memory"] == "Bob's safe code is 7731."
    with pytest.raises(ValueError):  # a wrong key fails at the client's /v1/ping/
        mem0_client.MemoryClient(api_key="zm_not_a_key", host=server)


def test_the_self_hosted_routes(http, memory):
    key = _key(memory, "cleo")
    auth = {"Authorization": f"Token {key}"}
    bearer = {"Authorization": f"Bearer {key}"}
    body = {"messages": [{"role": "user", "content": "Cleo's flight is on 12 May."}],
            "user_id": "cleo", "run_id": "trip", "metadata": {"kind": "travel"}}
    added = http.post("/memories", json=body, headers=auth)
    assert added.status_code == 200, added.text
    tid = added.json()["results"][0]["id"]
    listed = http.get("/memories", params={"user_id": "cleo"}, headers=bearer).json()["results"]
    assert [r["memory"] for r in listed] == ["Cleo's flight is on 12 May."] and listed[0]["run_id"] == "trip"
    assert http.get("/memories", headers=auth).json()["results"] == listed  # ids absent: the key's scope
    assert http.get(f"/memories/{tid}", headers=auth).json()["memory"] == "Cleo's flight is on 12 May."
    found = http.post("/search", json={"query": "When does Cleo fly?", "user_id": "cleo"}, headers=auth).json()
    assert found["results"][0]["id"] == tid
    assert http.put(f"/memories/{tid}", json={"text": "Cleo's flight moved to 14 May."}, headers=auth).status_code \
        == 200
    history = http.get(f"/memories/{tid}/history", headers=auth).json()
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert http.post("/memories", json={**body, "user_id": "dan"}, headers=auth).status_code == 403
    assert http.get("/memories", params={"agent_id": "bot"}, headers=auth).status_code == 403
    assert http.post("/configure", json={"llm": {}}, headers=auth).status_code == 400
    assert http.post("/memories", json={**body, "custom_instructions": "x"}, headers=auth).status_code == 400
    assert http.post("/memories", json={**body, "colour": "red"}, headers=auth).status_code == 400
    assert http.get("/memories", headers={"Authorization": "Token nope"}).status_code == 401
    assert http.get("/memories").status_code == 401
    assert http.delete(f"/memories/{tid}", headers=auth).status_code == 200
    assert http.get(f"/memories/{tid}", headers=auth).status_code == 404
    http.post("/memories", json=body, headers=auth)
    assert http.delete("/memories", params={"user_id": "cleo", "run_id": "trip"}, headers=auth).status_code == 200
    assert http.get("/memories", headers=auth).json()["results"] == []
    http.post("/memories", json=body, headers=auth)
    assert http.post("/reset", headers=auth).json() == {"message": "All memories reset"}
    assert http.get("/memories", headers=auth).json()["results"] == []


def test_the_routes_are_off_without_the_option(memory):
    app = create_app(memory, ServerSettings(warm_up=False))
    with TestClient(app, base_url=LOCAL) as client:
        headers = {"Authorization": f"Bearer {_key(memory, 'x')}"}
        assert client.get("/v1/ping/", headers=headers).status_code in (404, 405)
        assert client.post("/v3/memories/add/", json={}, headers=headers).status_code in (404, 405)
        assert client.get("/v1/whoami", headers=headers).json()["user"] == "x"


def test_mem0_export_imports_as_traces(tmp_path, memory):
    source = Mem0Memory(memory)
    source.add([{"role": "user", "content": "I keep bees."},
                {"role": "assistant", "content": "How many hives?", "name": "helper"}],
               user_id="ivy", run_id="chat-1", metadata={"src": "app"})
    source.add("Ivy's honey sells at the Saturday market.", user_id="ivy", agent_id="shop")
    export = source.get_all(filters={"user_id": "ivy"}, top_k=100)
    plain = source.get_all(filters={"user_id": "ivy", "agent_id": "shop"})["results"]
    (tmp_path / "ivy.json").write_text(json.dumps(export))
    (tmp_path / "shop.json").write_text(json.dumps(plain))  # a plain list, as Mem0 before 1.0

    [conv] = load_file(tmp_path / "ivy.json")  # detected: {"results": [...]} with id + memory
    assert conv.format == "mem0" and conv.name == "ivy"
    with ZeromemMemory(":memory:", user="ivy") as target:
        result = target.import_file(tmp_path / "ivy.json", format="mem0")
        traces = target.list()
        assert [t.text for t in traces] == [r["memory"] for r in export["results"]]
        assert [t.source_id for t in traces] == [r["id"] for r in export["results"]]
        assert traces[0].session == "chat-1" and traces[1].speaker == "helper" and traces[1].role == "assistant"
        assert traces[0].metadata == {"src": "app", "mem0": {"updated_at": export["results"][0]["updated_at"]}}
        assert traces[0].event_time == export["results"][0]["created_at"]
        assert target.import_file(tmp_path / "ivy.json").skipped == {"ivy": 2}  # again: nothing new
        assert sum(len(ids) for ids in result.values()) == 2
        back = Mem0Memory(target).get_all(filters={"user_id": "ivy"})["results"]
        assert [r["memory"] for r in back] == [r["memory"] for r in export["results"]]
        target.import_file(tmp_path / "shop.json", agent="shop")
        assert [t.text for t in target.list(agent="shop")] == ["Ivy's honey sells at the Saturday market."]
        assert target.list(agent="shop")[0].metadata["mem0"]["agent_id"] == "shop"

    (tmp_path / "bad.json").write_text(json.dumps({"results": [{"id": "1", "memory": "ok"},
                                                               {"id": "2", "memory": "x", "role": "robot"}]}))
    with pytest.raises(InvalidInput, match=r"bad\.json: results\[1\]\.role"):
        load_file(tmp_path / "bad.json")


def test_serve_takes_compat_mem0_and_its_workers_answer_it(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from zeromem.interfaces.cli import app as cli
    from zeromem.interfaces.server.app import ENVIRONMENT, app_from_environment

    refused = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "m.db"), "--compat", "langmem"])
    assert refused.exit_code == 2 and "--compat langmem" in refused.output and "mem0" in refused.output
    from zeromem.interfaces.server import ServerOptions, WorkerSpec

    options = ServerOptions(db=str(tmp_path / "w.db"), require_auth=True, max_body_bytes=1 << 20, compat=("mem0",))
    (tmp_path / "options.json").write_text(WorkerSpec(options).to_json())
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "options.json"))
    worker = app_from_environment()  # what each `zeromem serve` worker builds from the options file
    paths = set(worker.openapi()["paths"])
    assert {"/v1/ping/", "/v3/memories/add/", "/memories", "/search", "/v1/search"} <= paths
    worker.state.memory.close()


def test_the_compat_module_needs_no_mem0():
    import subprocess
    import sys

    code = ("import sys; sys.modules['mem0'] = None\n"  # importing mem0 now fails
            "from zeromem.compat.mem0 import Memory\n"
            "m = Memory(':memory:'); print(m.add('x', user_id='u', infer=False)['results'][0]['event'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0 and done.stdout.strip() == "ADD", done.stderr
