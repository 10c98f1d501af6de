"""The REST API through the real app (FastAPI's TestClient): every route and every error."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from internals import store_of
from zeromem import Config, EncoderConfig, Memory
from zeromem.interfaces.server import ServerSettings, create_app
from zeromem.reader.base import ReaderAnswer
from zeromem.store.keys import new_api_key
from zeromem.types import Scope

LOCAL = "http://127.0.0.1"  # the server answers to loopback Hosts only (guard.py)

pytestmark = pytest.mark.slow


def make_key(mem: Memory, user: str | None, agent: str | None = None) -> dict[str, str]:
    key_id, key, key_hash = new_api_key()
    store_of(mem).add_api_key(key_id, key_hash, Scope(user, agent), None)
    return {"Authorization": f"Bearer {key}", "X-Key-Id": key_id}


class EchoReader:
    """A reader with the reader protocol that answers with the first evidence line."""

    def answer(self, question, context):
        first = context.text.splitlines()[1] if context.text else ""
        return ReaderAnswer(text=first.split("] ", 1)[-1], prompt_tokens=42, completion_tokens=7,
                            model="echo")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    mem = Memory(tmp_path_factory.mktemp("srv") / "m.db", config=Config(index_on_write=True))
    settings = ServerSettings(max_body_bytes=200_000, warm_up=False, reader=None)
    app = create_app(mem, settings)
    app.state.auth.cache_s = 0.0  # revocation is visible at once in tests
    with TestClient(app, base_url=LOCAL) as client:
        yield client, mem, app
    mem.close()


@pytest.fixture()
def client(served):
    return served[0]


@pytest.fixture()
def alice(served):
    return make_key(served[1], "alice")


def test_health_and_readiness(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True


def test_openapi_lists_every_route(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path in ["/v1/traces", "/v1/traces/{trace_id}", "/v1/traces/{trace_id}/history", "/v1/search",
                 "/v1/context", "/v1/answer", "/v1/active", "/v1/import", "/v1/stats", "/v1/scope",
                 "/v1/sessions", "/v1/traces/{trace_id}/graph", "/v1/reindex"]:
        assert path in paths, path
    assert client.get("/docs").status_code == 200


@pytest.mark.parametrize("header", [None, "Basic abc", "Bearer ", "Bearer not-a-key",
                                    "Bearer zm_00000000_" + "x" * 43])
def test_missing_or_bad_key_is_401(client, header):
    headers = {"Authorization": header} if header is not None else {}
    response = client.get("/v1/stats", headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "Unauthorized"


def test_revoked_key_stops_working(served):
    client, mem, _ = served
    headers = make_key(mem, "carol")
    assert client.get("/v1/stats", headers=headers).status_code == 200
    store_of(mem).revoke_api_key(headers["X-Key-Id"])
    assert client.get("/v1/stats", headers=headers).status_code == 401


def test_trace_crud_with_history(client, alice):
    created = client.post("/v1/traces", headers=alice, json={
        "text": "I moved to Denver last week.", "speaker": "Ana", "session": "s1",
        "session_time": "2023-05-01T10:00:00", "metadata": {"topic": "home"}})
    assert created.status_code == 201
    (tid,) = created.json()["ids"]
    got = client.get(f"/v1/traces/{tid}", headers=alice).json()
    assert got["text"] == "I moved to Denver last week." and got["speaker"] == "Ana" and got["version"] == 1
    patched = client.patch(f"/v1/traces/{tid}", headers=alice, json={"text": "I moved to Boulder last week."})
    assert patched.status_code == 200 and patched.json()["version"] == 2
    # keep_history: this test reads the old text back (a default delete erases it).
    deleted = client.delete(f"/v1/traces/{tid}", headers=alice, params={"keep_history": "true"})
    assert deleted.status_code == 200 and deleted.json()["trace_ids"] == [tid]  # the receipt
    assert client.get(f"/v1/traces/{tid}", headers=alice).status_code == 404
    events = client.get(f"/v1/traces/{tid}/history", headers=alice).json()["events"]
    assert [e["event"] for e in events] == ["add", "update", "delete"]
    assert events[1]["old_text"] == "I moved to Denver last week."


def test_batch_is_all_or_nothing(client, served):
    headers = make_key(served[1], "batcher")
    ok = client.post("/v1/traces", headers=headers, json={"traces": [
        {"text": "one", "session": "b"}, {"text": "two", "session": "b"}]})
    assert ok.status_code == 201 and len(ok.json()["ids"]) == 2
    bad = client.post("/v1/traces", headers=headers, json={"traces": [
        {"text": "three", "session": "b"}, {"text": "four", "session": "b", "role": "robot"}]})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "InvalidInput"
    assert "role" in bad.json()["error"]["message"]
    assert [t["text"] for t in client.get("/v1/traces", headers=headers).json()["traces"]] == ["one", "two"]


def test_list_filters_and_paging(client, served):
    headers = make_key(served[1], "lister")
    client.post("/v1/traces", headers=headers, json={"traces": [
        {"text": f"note {i}", "session": "a" if i < 3 else "b", "metadata": {"n": i % 2}} for i in range(5)]})
    by_session = client.get("/v1/traces", headers=headers, params={"session": "b"}).json()["traces"]
    assert [t["text"] for t in by_session] == ["note 3", "note 4"]
    by_meta = client.get("/v1/traces", headers=headers, params={"filters": json.dumps({"n": 1})}).json()
    assert [t["text"] for t in by_meta["traces"]] == ["note 1", "note 3"]
    old_name = client.get("/v1/traces", headers=headers, params={"metadata": json.dumps({"n": 1})})
    assert old_name.status_code == 400 and "pass the JSON object as filters" in old_name.json()["error"]["message"]
    assert client.post("/v1/traces/t4k2x9q7m/restore", headers=headers).status_code in (404, 405)  # now /pin
    page = client.get("/v1/traces", headers=headers, params={"limit": 2, "offset": 1}).json()["traces"]
    assert [t["text"] for t in page] == ["note 1", "note 2"]
    bad = client.get("/v1/traces", headers=headers, params={"filters": "{nope"})
    assert bad.status_code == 400
    too_many = client.get("/v1/traces", headers=headers, params={"limit": 100_000})
    assert too_many.status_code == 422 and too_many.json()["error"]["type"] == "InvalidRequest"
    sessions = client.get("/v1/sessions", headers=headers).json()["sessions"]
    assert [(s["session"], s["traces"]) for s in sessions] == [("a", 3), ("b", 2)]


@pytest.mark.parametrize("body, field", [
    ({"txt": "x"}, "txt"),
    ({"text": 5}, "text"),
    ({"traces": []}, "traces"),
    ({"traces": [{"text": "x", "colour": "red"}]}, "colour"),
])
def test_bad_bodies_are_422_naming_the_field(client, alice, body, field):
    response = client.post("/v1/traces", headers=alice, json=body)
    assert response.status_code == 422
    assert field in response.json()["error"]["message"]


def test_library_errors_keep_their_class_and_message(client, alice):
    empty = client.post("/v1/traces", headers=alice, json={"text": "   "})
    assert empty.status_code == 400 and empty.json()["error"]["type"] == "InvalidInput"
    missing = client.patch("/v1/traces/tzzzzzzzz", headers=alice, json={"text": "x"})
    assert missing.status_code == 404 and "tzzzzzzzz" in missing.json()["error"]["message"]
    nothing = client.patch("/v1/traces/t1", headers=alice, json={})
    assert nothing.status_code == 400
    bad_id = client.get("/v1/traces/42", headers=alice)
    assert bad_id.status_code == 404


def test_body_over_the_limit_is_413_and_stores_nothing(client, served):
    headers = make_key(served[1], "big")
    response = client.post("/v1/traces", headers=headers, json={"text": "x" * 300_000})
    assert response.status_code == 413 and response.json()["error"]["type"] == "PayloadTooLarge"
    assert client.get("/v1/stats", headers=headers).json()["traces"] == 0


def test_search_context_and_why(client, served, example_path):
    headers = make_key(served[1], "searcher")
    with example_path.open("rb") as handle:
        imported = client.post("/v1/import", headers=headers, files={"file": ("moving.json", handle)})
    assert imported.status_code == 201 and imported.json()["traces"] == 40
    result = client.post("/v1/search", headers=headers,
                         json={"query": "Which neighbourhood did Priya live in?", "k": 3}).json()
    assert len(result["evidence"]) == 3 and result["degraded"] == []
    top = result["evidence"][0]
    assert any(place in top["text"] for place in ("Logan Square", "Capitol Hill"))
    assert top["provenance"]["trace_id"] == top["trace_id"] and top["provenance"]["session"]
    assert {"graph", "hierarchy", "dense_cosine"} <= set(top["why"])
    bare = client.post("/v1/search", headers=headers, json={"query": "Priya", "k": 2, "why": False}).json()
    assert bare["evidence"][0]["why"] is None
    context = client.post("/v1/context", headers=headers,
                          json={"query": "Which neighbourhood did Priya live in?", "k": 5, "budget_tokens": 120}).json()
    assert context["tokens"] <= 120 + 40 and context["text"].startswith("---")
    assert len(context["evidence"]) >= 1
    traces = client.get("/v1/traces", headers=headers, params={"limit": 100}).json()["traces"]
    logan = [t["id"] for t in traces if "Logan Square" in t["text"]]
    graph = client.get(f"/v1/traces/{logan[0]}/graph", headers=headers).json()
    assert any(e["entity"] == "logan square" for e in graph["entities"])
    assert {n["trace"]["id"] for n in graph["neighbours"]} >= set(logan[1:])
    assert client.post("/v1/search", headers=headers, json={"query": "x", "k": 0}).status_code == 422


def test_answer_needs_a_reader_then_uses_it(served, example_path):
    client, mem, app = served
    headers = make_key(mem, "asker")
    client.post("/v1/traces", headers=headers, json={"text": "My cat is called Biscuit.", "speaker": "Ana"})
    refused = client.post("/v1/answer", headers=headers, json={"query": "What is Ana's cat called?"})
    assert refused.status_code == 409 and refused.json()["error"]["type"] == "NoReader"
    app.state.reader = EchoReader()
    try:
        answered = client.post("/v1/answer", headers=headers, json={"query": "What is Ana's cat called?"}).json()
    finally:
        app.state.reader = None
    assert "Biscuit" in answered["answer"] and answered["prompt_tokens"] == 42
    assert answered["context"]["evidence"][0]["provenance"]["speaker"] == "Ana"


def test_import_of_a_bad_file_stores_nothing(client, served):
    headers = make_key(served[1], "importer")
    bad = client.post("/v1/import", headers=headers,
                      files={"file": ("x.jsonl", b'{"text": "ok"}\n{"text": ""}\n')})
    assert bad.status_code == 400 and "line 2" in bad.json()["error"]["message"]
    good = client.post("/v1/import", headers=headers, data={"format": "jsonl"},
                       files={"file": ("x.jsonl", b'{"text": "ok"}\n{"text": "fine"}\n')})
    assert good.status_code == 201 and good.json()["traces"] == 2
    assert client.get("/v1/stats", headers=headers).json()["traces"] == 2


def test_stats_whoami_active_reindex_and_delete_scope(client, served):
    mem = served[1]
    mine, other = make_key(mem, "dana", "bot"), make_key(mem, "erin")
    (tid,) = client.post("/v1/traces", headers=mine, json={"text": "Dana likes tea."}).json()["ids"]
    client.post("/v1/traces", headers=other, json={"text": "Erin likes coffee."})
    assert client.get("/v1/whoami", headers=mine).json()["user"] == "dana"
    stats = client.get("/v1/stats", headers=mine).json()
    assert stats["traces"] == 1 and "path" not in stats
    client.post("/v1/search", headers=mine, json={"query": "tea"})
    cache = client.get("/v1/stats", headers=mine).json()["index_cache"]  # the worker's, no scope names
    assert cache["scopes"] >= 1 and 0 < cache["bytes"] <= cache["budget_bytes"] and cache["misses"] >= 1
    active = client.get("/v1/active", headers=mine)
    assert active.status_code == 200 and active.json()["used_tokens"] <= active.json()["budget_tokens"]
    assert [e["trace_id"] for e in active.json()["entries"]] == [tid]
    assert client.post("/v1/reindex", headers=mine).json()["sessions"] == 1
    assert client.delete("/v1/scope", headers=mine).json()["deleted"] == 1
    assert client.get("/v1/stats", headers=mine).json()["traces"] == 0
    assert client.get("/v1/stats", headers=other).json()["traces"] == 1


def test_a_missing_embedder_degrades_search_and_readiness(tmp_path):
    config = Config(encoders=EncoderConfig(embedding_model=str(tmp_path / "no-such-model")))
    mem = Memory(tmp_path / "d.db", config=config)
    app = create_app(mem, ServerSettings(warm_up=False))
    headers = make_key(mem, "dee")
    with TestClient(app, base_url=LOCAL) as client:
        stored = client.post("/v1/traces", headers=headers, json={"text": "Dee keeps bees in Lyon."})
        assert stored.status_code == 201  # a missing model never fails a write
        found = client.post("/v1/search", headers=headers, json={"query": "Who keeps bees?", "k": 3}).json()
        assert found["evidence"][0]["text"] == "Dee keeps bees in Lyon."
        assert found["degraded"] and found["degraded"][0].startswith("embedder")
        ready = client.get("/readyz").json()
        assert ready["ready"] is True and ready["embedder"].startswith("unavailable")
    mem.close()


def test_search_counts_relative_times_from_now(client, served):
    headers = make_key(served[1], "baker")
    texts = {"2024-03-01T19:00:00": "I made a lemon tart for Sofia.",
             "2024-03-11T19:00:00": "I made a mushroom risotto for Sofia.",
             "2024-03-05T08:00:00": "The bus to the office was late again.",
             "2024-03-06T08:00:00": "We painted the fence green on Sunday."}
    created = client.post("/v1/traces", headers=headers, json={"traces": [
        {"text": text, "session": f"s{i}", "session_time": when} for i, (when, text) in enumerate(texts.items())]})
    assert created.status_code == 201, created.text
    query = {"query": "What did I make for Sofia three days ago?", "k": 2}
    late = client.post("/v1/search", headers=headers, json={**query, "now": "2024-03-14T20:00:00"}).json()
    early = client.post("/v1/search", headers=headers, json={**query, "now": "2024-03-04T09:00:00"}).json()
    assert late["evidence"][0]["text"] == texts["2024-03-11T19:00:00"]
    assert early["evidence"][0]["text"] == texts["2024-03-01T19:00:00"]
    bad = client.post("/v1/search", headers=headers, json={**query, "now": "soonish"})
    assert bad.status_code == 400 and "now" in bad.text
