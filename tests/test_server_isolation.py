"""Key isolation, as a property: whatever ids, filters or fields a key sends, it never sees or
changes another scope's traces."""

from __future__ import annotations

import itertools
import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from internals import store_of
from zeromem import Memory
from zeromem.interfaces.server import ServerSettings, create_app
from zeromem.store.keys import new_api_key
from zeromem.types import Scope

LOCAL = "http://127.0.0.1"  # the server answers to loopback Hosts only (guard.py)

pytestmark = pytest.mark.slow
_run = itertools.count()

OPS = st.lists(st.tuples(st.sampled_from("ab"),
                         st.sampled_from(["add", "get", "patch", "delete", "history", "graph",
                                          "list", "search", "sessions"]),
                         st.integers(0, 30)), min_size=1, max_size=12)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    mem = Memory(tmp_path_factory.mktemp("iso") / "m.db")
    app = create_app(mem, ServerSettings(warm_up=False))
    with TestClient(app, base_url=LOCAL) as test_client:
        yield test_client, mem
    mem.close()


def _key(mem: Memory, user: str, agent: str | None) -> dict[str, str]:
    key_id, key, key_hash = new_api_key()
    store_of(mem).add_api_key(key_id, key_hash, Scope(user, agent), None)
    return {"Authorization": f"Bearer {key}"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_a_key_never_reaches_another_scope(client, ops):
    http, mem = client
    run = next(_run)
    # Same user, different agents for one pair of runs: agent alone must also isolate.
    users = {"a": (f"alice{run}", None), "b": (f"alice{run}", "bot")} if run % 2 else \
        {"a": (f"alice{run}", None), "b": (f"bob{run}", None)}
    keys = {who: _key(mem, *users[who]) for who in "ab"}
    owner: dict[str, str] = {}
    texts: dict[str, str] = {}
    for step, (who, op, pick) in enumerate(ops):
        other = "b" if who == "a" else "a"
        headers = keys[who]
        ids = sorted(owner)
        target = ids[pick % len(ids)] if ids else "t1"
        foreign = owner.get(target) == other
        if op == "add":
            text = f"secret-{who}-{run}-{step} about the harbour"
            tid = http.post("/v1/traces", headers=headers,
                            json={"text": text, "session": f"s{step % 2}"}).json()["ids"][0]
            owner[tid], texts[tid] = who, text
            continue
        if op in ("get", "patch", "delete", "history", "graph"):
            if op == "get":
                response = http.get(f"/v1/traces/{target}", headers=headers)
            elif op == "patch":
                new_text = f"secret-{who}-{run}-{step} patched"
                response = http.patch(f"/v1/traces/{target}", headers=headers, json={"text": new_text})
                if response.status_code == 200:
                    texts[target] = new_text
            elif op == "delete":
                response = http.delete(f"/v1/traces/{target}", headers=headers)
                if response.status_code == 200:  # the delete receipt
                    owner.pop(target)
            elif op == "history":
                response = http.get(f"/v1/traces/{target}/history", headers=headers)
            else:
                response = http.get(f"/v1/traces/{target}/graph", headers=headers)
            if foreign:
                assert response.status_code == 404, (op, response.text)
        elif op == "list":
            response = http.get("/v1/traces", headers=headers, params={"filters": json.dumps({})})
            assert {t["id"] for t in response.json()["traces"]} == {t for t, o in owner.items() if o == who}
        elif op == "search":
            response = http.post("/v1/search", headers=headers, json={"query": "secret harbour", "k": 20})
            found = {ev["trace_id"] for ev in response.json()["evidence"]}
            assert found <= {t for t, o in owner.items() if o == who}
        else:
            response = http.get("/v1/sessions", headers=headers)
        assert f"secret-{other}-{run}" not in response.text, (op, response.text)
    for tid, who in owner.items():  # nothing one key did changed the other's traces
        assert http.get(f"/v1/traces/{tid}", headers=keys[who]).json()["text"] == texts[tid]
