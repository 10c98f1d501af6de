"""The server's large-load lane (interfaces/server/lanes.py): a search that would first load a
large scope runs outside the request threads; a held or small scope runs on them as before."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from internals import retriever_of
from zeromem import Memory
from zeromem.interfaces.server import ServerSettings, create_app, lanes
from zeromem.types import Scope

LOCAL = "http://127.0.0.1"

pytestmark = pytest.mark.slow

LINES = ["Caroline went to the LGBTQ support group on Monday.",
         "Melanie painted a sunrise over the lake last week.",
         "Caroline is thinking about adoption agencies.",
         "Melanie's kids love the pottery class she signed them up for."]


@pytest.fixture()
def served(tmp_path):
    mem = Memory(tmp_path / "m.db")
    for i, line in enumerate(LINES):
        mem.add(line, session="s1", speaker="Caroline" if i % 2 == 0 else "Melanie",
                event_time=f"2023-05-0{i + 1}T10:00:00")
    app = create_app(mem, ServerSettings(require_auth=False, warm_up=False))  # scope: user None
    with TestClient(app, base_url=LOCAL) as client:
        yield client, mem, app
    mem.close()


def _lanes_used(monkeypatch) -> list[str]:
    """Record each request whose work was handed to the large-load lane."""
    used: list[str] = []
    real = lanes._large_loads

    def recording(request):
        used.append("large")
        return real(request)

    monkeypatch.setattr(lanes, "_large_loads", recording)
    return used


def test_load_turns_is_zero_when_held_and_the_trace_count_otherwise(served):
    _, mem, _ = served
    scopes = retriever_of(mem).scopes
    assert scopes.load_turns(Scope(None)) == len(LINES)
    assert scopes.load_turns(Scope("nobody")) == 0
    mem.search("who paints?")
    assert scopes.load_turns(Scope(None)) == 0  # held: nothing to load
    scopes.forget(Scope(None))
    assert scopes.load_turns(Scope(None)) == len(LINES)


def test_a_cold_large_scope_runs_in_the_large_load_lane_with_the_same_answer(served, monkeypatch):
    client, mem, app = served
    used = _lanes_used(monkeypatch)
    body = {"query": "What did Melanie paint?", "k": 3}
    monkeypatch.setattr(lanes, "LARGE_LOAD_TURNS", len(LINES))  # this scope counts as large
    in_lane = client.post("/v1/search", json=body)
    assert in_lane.status_code == 200, in_lane.text
    assert used == ["large"]
    assert app.state.large_loads.total_tokens == lanes.LARGE_LOAD_THREADS

    retriever_of(mem).scopes.forget(Scope(None))  # cold again, now below the threshold
    monkeypatch.setattr(lanes, "LARGE_LOAD_TURNS", len(LINES) + 1)
    on_threads = client.post("/v1/search", json=body)
    assert used == ["large"]
    ids = [e["trace_id"] for e in in_lane.json()["evidence"]]
    assert ids == [e["trace_id"] for e in on_threads.json()["evidence"]]
    assert "painted a sunrise" in in_lane.json()["evidence"][0]["text"]


def test_a_held_scope_stays_on_the_request_threads_whatever_its_size(served, monkeypatch):
    client = served[0]
    used = _lanes_used(monkeypatch)
    assert client.post("/v1/context", json={"query": "adoption", "k": 2}).status_code == 200
    assert used == []  # cold but small
    monkeypatch.setattr(lanes, "LARGE_LOAD_TURNS", 1)
    # Held now (the context request loaded it): no load, so no lane.
    assert client.post("/v1/search", json={"query": "pottery", "k": 2}).status_code == 200
    assert client.post("/v1/context", json={"query": "pottery", "k": 2}).status_code == 200
    assert used == []
