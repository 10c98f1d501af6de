"""``zeromem serve --metrics``: Prometheus metrics at /metrics (interfaces/server/metrics.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from internals import store_of
from zeromem import Config, Memory
from zeromem.interfaces import extras
from zeromem.interfaces.cli import app as cli
from zeromem.interfaces.server import ServerOptions, ServerSettings, WorkerSpec, create_app
from zeromem.interfaces.server.app import ENVIRONMENT, app_from_environment
from zeromem.interfaces.server.metrics import MULTIPROCESS, multiprocess_dir
from zeromem.store.keys import new_api_key
from zeromem.types import Scope

pytestmark = pytest.mark.slow  # real models (one Memory for the module)


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    mem = Memory(tmp_path_factory.mktemp("metrics") / "m.db", config=Config(index_on_write=True))
    yield mem
    mem.close()


@pytest.fixture(scope="module")
def key(memory) -> str:
    key_id, key, key_hash = new_api_key()
    store_of(memory).add_api_key(key_id, key_hash, Scope("ana", None), None)
    return key


def _families(text: str) -> dict:
    """{metric family name: {(sample name, sorted labels): value}}."""
    return {family.name: {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples}
            for family in text_string_to_metric_families(text)}


def test_metrics_count_requests_by_route_and_report_the_index_cache(memory, key):
    headers = {"Authorization": f"Bearer {key}"}
    app = create_app(memory, ServerSettings(warm_up=False, metrics=True))
    create_app(memory, ServerSettings(warm_up=False, metrics=True))  # its own registry: no clash
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.post("/v1/traces", json={"text": "I moved to Denver.", "session": "s1"},
                           headers=headers).status_code == 201
        for _ in range(2):
            assert client.post("/v1/search", json={"query": "Where did I move?"}, headers=headers).status_code == 200
        assert client.post("/v1/search", json={"query": "x"}).status_code == 401
        assert client.get("/v1/traces/t00000000", headers=headers).status_code == 404
        response = client.get("/metrics")  # no API key needed
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    assert "Denver" not in response.text and "t00000000" not in response.text and "ana" not in response.text
    families = _families(response.text)

    requests = families["zeromem_http_requests"]
    label = (("method", "POST"), ("route", "/v1/search"))
    assert requests[("zeromem_http_requests_total", (*label, ("status", "200")))] == 2
    assert requests[("zeromem_http_requests_total", (*label, ("status", "401")))] == 1
    assert requests[("zeromem_http_requests_total", (("method", "POST"), ("route", "/v1/traces"),
                                                     ("status", "201")))] == 1
    assert requests[("zeromem_http_requests_total", (("method", "GET"), ("route", "/v1/traces/{trace_id}"),
                                                     ("status", "404")))] == 1

    latency = families["zeromem_http_request_duration_seconds"]
    assert latency[("zeromem_http_request_duration_seconds_count", label)] == 3
    assert latency[("zeromem_http_request_duration_seconds_bucket", (("le", "+Inf"), *label))] == 3
    assert latency[("zeromem_http_request_duration_seconds_sum", label)] > 0

    stats = memory.health().index_cache
    assert families["zeromem_index_cache_bytes"][("zeromem_index_cache_bytes", ())] == stats.bytes > 0
    assert families["zeromem_index_cache_budget_bytes"][("zeromem_index_cache_budget_bytes", ())] == \
        stats.budget_bytes
    assert families["zeromem_index_cache_scopes"][("zeromem_index_cache_scopes", ())] == stats.scopes >= 1
    assert families["zeromem_index_cache_hits"][("zeromem_index_cache_hits_total", ())] == stats.hits >= 1
    assert families["zeromem_index_cache_misses"][("zeromem_index_cache_misses_total", ())] == stats.misses
    assert families["zeromem_index_cache_evictions"][("zeromem_index_cache_evictions_total", ())] == \
        stats.evictions
    stages = families["zeromem_server_stage_seconds"]
    assert {"search", "store", "derive", "auth", "app"} <= {dict(labels)["stage"] for _, labels in stages}


def test_a_second_scrape_adds_only_what_happened_since(memory, key):
    app = create_app(memory, ServerSettings(warm_up=False, metrics=True))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        first = _families(client.get("/metrics").text)
        client.post("/v1/search", json={"query": "Denver?"}, headers={"Authorization": f"Bearer {key}"})
        second = _families(client.get("/metrics").text)
    hits = ("zeromem_index_cache_hits_total", ())
    assert second["zeromem_index_cache_hits"][hits] == first["zeromem_index_cache_hits"][hits] + 1
    scrapes = ("zeromem_http_requests_total", (("method", "GET"), ("route", "/metrics"), ("status", "200")))
    assert second["zeromem_http_requests"][scrapes] == 1  # the first scrape, counted once it ended


def test_without_metrics_there_is_no_metrics_route_and_no_middleware(memory):
    app = create_app(memory, ServerSettings(warm_up=False))
    assert "RequestMetrics" not in [middleware.cls.__name__ for middleware in app.user_middleware]
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/metrics").status_code == 404


def test_serve_passes_metrics_to_the_workers_app(memory, tmp_path, monkeypatch):
    options = tmp_path / "options.json"
    options.write_text(WorkerSpec(ServerOptions(db=str(tmp_path / "w.db"), require_auth=False, user="u",
                                                max_body_bytes=1024, metrics=True)).to_json(), encoding="utf-8")
    monkeypatch.setenv(ENVIRONMENT, str(options))
    app = app_from_environment()
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/healthz").status_code == 200
        assert "zeromem_http_requests_total" in client.get("/metrics").text


def test_serve_metrics_without_the_otel_extra_says_how_to_install_it(monkeypatch, tmp_path):
    modules, purpose = extras.EXTRAS["otel"]
    monkeypatch.setitem(extras.EXTRAS, "otel", (("zeromem_no_such_module", *modules), purpose))
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "m.db"), "--no-auth", "--metrics"])
    assert result.exit_code == 2
    assert "pip install 'zeromem[otel]'" in result.output and "--metrics" in result.output


def test_multiprocess_dir_is_made_for_several_workers_only(monkeypatch):
    monkeypatch.delenv(MULTIPROCESS, raising=False)
    with multiprocess_dir(1):
        assert MULTIPROCESS not in os.environ
    with multiprocess_dir(3):
        made = os.environ[MULTIPROCESS]
        assert os.path.isdir(made) and os.stat(made).st_mode & 0o077 == 0
    assert MULTIPROCESS not in os.environ and not os.path.exists(made)
    monkeypatch.setenv(MULTIPROCESS, "/somewhere/of/yours")
    with multiprocess_dir(3):
        assert os.environ[MULTIPROCESS] == "/somewhere/of/yours"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_workers_sum_their_requests_into_every_scrape(tmp_path):
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop(MULTIPROCESS, None)
    proc = subprocess.Popen([sys.executable, "-m", "zeromem.interfaces.cli", "serve", "--db", str(tmp_path / "m.db"),
                             "--port", str(port), "--no-auth", "--user", "u", "--workers", "2", "--metrics"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
            time.sleep(0.2)
        # Fresh connections: the workers share the socket, so requests spread over them. Each
        # worker adds its budget to the live sum once it has answered a request.
        budget = Config().index_cache_mb * (1 << 20)
        requests = 0
        while True:
            assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
            requests += 1
            families = _families(httpx.get(f"{url}/metrics", timeout=10).text)
            requests += 1
            summed = families["zeromem_index_cache_budget_bytes"][("zeromem_index_cache_budget_bytes", ())]
            if summed == 2 * budget:
                break
            assert summed == budget and requests < 400, summed
        for _ in range(3):  # whichever worker answers a scrape reports every worker's requests
            families = _families(httpx.get(f"{url}/metrics", timeout=10).text)
            counted = families["zeromem_http_requests"][
                ("zeromem_http_requests_total", (("method", "GET"), ("route", "/healthz"), ("status", "200")))]
            assert counted == requests // 2 + 1  # + the first /healthz of the start-up wait
    finally:
        proc.terminate()
        proc.wait(timeout=30)
