"""``Server-Timing`` on every response of ``zeromem serve``, and the per-process totals."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from internals import store_of
from zeromem import Config, Memory
from zeromem.interfaces.server import ServerSettings, create_app
from zeromem.store.keys import new_api_key
from zeromem.types import Scope
from zeromem_bench.serve import server_timing

pytestmark = pytest.mark.slow


def test_every_stage_a_request_uses_is_timed_and_summed(tmp_path):
    mem = Memory(tmp_path / "m.db", config=Config(index_on_write=True))
    key_id, key, key_hash = new_api_key()
    store_of(mem).add_api_key(key_id, key_hash, Scope("ana", None), None)
    headers = {"Authorization": f"Bearer {key}"}
    app = create_app(mem, ServerSettings(warm_up=False))
    create_app(mem, ServerSettings(warm_up=False))  # a second app on the Memory times nothing twice
    with TestClient(app, base_url="http://127.0.0.1") as client:  # a loopback Host (guard.py)
        write = client.post("/v1/traces", json={"text": "I moved to Denver.", "session": "s1"},
                            headers=headers)
        search = client.post("/v1/search", json={"query": "Where did I move?"}, headers=headers)
        refused = client.post("/v1/search", json={"query": "x"})
        totals = client.get("/v1/timings", headers=headers).json()
        assert client.get("/v1/timings").status_code == 401
    mem.close()
    stages = server_timing(write.headers["server-timing"])
    assert write.status_code == 201 and {"auth", "store", "derive", "app"} <= set(stages)
    assert "search" not in stages and stages["app"] >= stages["store"] + stages["derive"]
    stages = server_timing(search.headers["server-timing"])
    assert search.status_code == 200 and {"auth", "search", "prepare", "app"} <= set(stages)
    assert stages["search"] >= stages["prepare"] and "store" not in stages
    assert refused.status_code == 401 and "app" in server_timing(refused.headers["server-timing"])
    assert totals["requests"] == 3 and set(totals["seconds"]) >= {"auth", "store", "derive", "search", "app"}


def test_server_timing_parses_the_header():
    assert server_timing("auth;dur=0.10, search;dur=12.5;desc=x, bad;dur=y, ;dur=1") == {
        "auth": 0.1, "search": 12.5}
    assert server_timing(None) == {}
