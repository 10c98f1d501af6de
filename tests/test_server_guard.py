"""The server is not a door for web pages: foreign Hosts get 421, cross-site Origins
403, keys or no keys; every response carries the security headers; oversized chunked bodies
are 413; and the server's other rough edges the attack found (deep filters, upload paths,
ports, body limits, the worker options)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from internals import store_of
from zeromem import Config, Memory
from zeromem.interfaces.cli import app as cli_app
from zeromem.interfaces.cli_service import worker_options
from zeromem.interfaces.server import ServerOptions, ServerSettings, WorkerSpec, create_app
from zeromem.interfaces.server.app import ENVIRONMENT
from zeromem.interfaces.server.guard import allowed_hosts, host_name
from zeromem.store.keys import new_api_key
from zeromem.types import Scope

LOCAL = "http://127.0.0.1:8420"
EVIL = "http://evil.example"


def _client(mem: Memory, **settings) -> TestClient:
    app = create_app(mem, ServerSettings(warm_up=False, **settings))
    return TestClient(app, base_url=LOCAL, raise_server_exceptions=False)


@pytest.fixture()
def memory(tmp_path):
    with Memory(tmp_path / "m.db", user="me", config=Config(index_on_write=False)) as mem:
        yield mem


def _key(mem: Memory, user: str) -> dict[str, str]:
    key_id, key, key_hash = new_api_key()
    store_of(mem).add_api_key(key_id, key_hash, Scope(user, None), None)
    return {"Authorization": f"Bearer {key}"}


def _upload(text: bytes = b'{"text": "planted by a web page"}\n') -> dict:
    return {"file": ("notes.jsonl", text, "application/json")}


def test_a_cross_site_upload_is_refused_and_stores_nothing(memory):
    client = _client(memory, require_auth=False, user="me")
    refused = client.post("/v1/import", headers={"Origin": EVIL}, files=_upload())
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "CrossOriginRefused"
    assert "--allow-origin" in refused.json()["error"]["message"]
    for origin in ("null", "http://127.0.0.1:9999", "http://localhost:8420"):
        assert client.post("/v1/traces", headers={"Origin": origin}, json={"text": "x"}).status_code == 403
    assert memory.stats(user="me").traces == 0
    # the inspector's own origin, and programs that send none, are served
    assert client.post("/v1/traces", headers={"Origin": LOCAL}, json={"text": "mine"}).status_code == 201
    assert client.post("/v1/traces", json={"text": "from curl"}).status_code == 201
    assert memory.stats(user="me").traces == 2


def test_keys_do_not_open_the_door_either(memory):
    headers = _key(memory, "me")
    client = _client(memory)
    assert client.get("/v1/whoami", headers={**headers, "Origin": EVIL}).status_code == 403
    assert client.get("/v1/whoami", headers={**headers, "Host": "attacker.example:8420"}).status_code == 421
    assert client.get("/v1/whoami", headers=headers).status_code == 200


@pytest.mark.parametrize("host", ["attacker.example:8420", "attacker.example", "127.0.0.1.evil:8420",
                                  "[::2]:8420", "0.0.0.0:8420"])
def test_a_foreign_host_is_421_dns_rebinding_reads_nothing(memory, host):
    memory.add("the door code is 4411", session="s")
    client = _client(memory, require_auth=False, user="me")
    response = client.get("/v1/traces", headers={"Host": host})
    assert response.status_code == 421
    assert response.json()["error"]["type"] == "MisdirectedRequest"
    assert "--allow-host" in response.json()["error"]["message"]
    assert "4411" not in response.text
    assert client.get("/", headers={"Host": host}).status_code == 421


@pytest.mark.parametrize("host", ["127.0.0.1:8420", "localhost:8420", "[::1]:8420", "LOCALHOST", "127.0.0.1"])
def test_loopback_hosts_are_served(memory, host):
    client = _client(memory, require_auth=False, user="me")
    assert client.get("/v1/whoami", headers={"Host": host}).status_code == 200


def test_allow_lists_open_exactly_what_they_name(memory):
    client = _client(memory, require_auth=False, user="me", host="0.0.0.0",
                     allow_hosts=("memory.example.com",), allow_origins=("http://localhost:3000",))
    ok = client.get("/v1/whoami", headers={"Host": "memory.example.com", "Origin": "http://localhost:3000"})
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == "http://localhost:3000"
    preflight = client.options("/v1/traces", headers={"Origin": "http://localhost:3000",
                                                      "Access-Control-Request-Method": "POST"})
    assert preflight.status_code == 204
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert client.get("/v1/whoami", headers={"Host": "other.example.com"}).status_code == 421
    assert client.get("/v1/whoami", headers={"Origin": "http://localhost:3001"}).status_code == 403
    anything = _client(memory, require_auth=False, user="me", allow_hosts=("*",), allow_origins=("*",))
    assert anything.get("/v1/whoami", headers={"Host": "x.example", "Origin": EVIL}).status_code == 200


def test_host_names_are_compared_without_port_or_case():
    assert host_name("[::1]:8420") == "::1"
    assert host_name("LocalHost:1") == "localhost"
    assert host_name("::1") == "::1"
    assert allowed_hosts("0.0.0.0", []) == frozenset({"127.0.0.1", "localhost", "::1"})
    assert "10.0.0.5" in allowed_hosts("10.0.0.5", [])


def test_every_response_carries_the_security_headers(memory):
    client = _client(memory, require_auth=False, user="me")
    for path in ("/", "/index.html", "/inspector.js", "/v1/whoami", "/healthz", "/nope"):
        response = client.get(path)
        assert response.headers["x-frame-options"] == "DENY", path
        assert response.headers["x-content-type-options"] == "nosniff", path
        policy = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy, path
        assert "unsafe-inline" not in policy
    refused = client.get("/", headers={"Origin": EVIL})
    assert refused.headers["x-frame-options"] == "DENY"
    docs = client.get("/docs")  # Swagger UI's inline script: every header but the script policy
    assert docs.status_code == 200 and docs.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in docs.headers["content-security-policy"]


def test_a_chunked_body_over_the_limit_is_413(memory):
    client = _client(memory, require_auth=False, user="me", max_body_bytes=1000)

    def chunks():
        for _ in range(10):
            yield b" " * 500

    for path in ("/v1/traces", "/v1/search"):
        response = client.post(path, content=chunks(), headers={"Content-Type": "application/json"})
        assert response.status_code == 413, (path, response.text)
        assert response.json()["error"]["type"] == "PayloadTooLarge"
    upload = client.post("/v1/import", files=_upload(b'{"text": "x"}\n' * 200))
    assert upload.status_code == 413
    assert memory.stats(user="me").traces == 0


def test_a_deeply_nested_metadata_filter_is_a_400(memory):
    client = _client(memory, require_auth=False, user="me")
    deep = '{"a": ' * 3000 + "1" + "}" * 3000
    response = client.get("/v1/traces", params={"filters": deep})
    assert response.status_code == 400, response.text
    assert "nested too deeply" in response.json()["error"]["message"]
    body = {"query": "x", "filters": json.loads('{"a": ' * 500 + "1" + "}" * 500)}
    assert client.post("/v1/search", json=body).status_code in (400, 422)
    raw = '{"query": "x", "filters": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}"
    assert client.post("/v1/search", content=raw, headers={"Content-Type": "application/json"}
                       ).status_code in (400, 422)


def test_import_errors_name_the_uploaded_file_not_the_server_copy(memory):
    client = _client(memory, require_auth=False, user="me")
    response = client.post("/v1/import", files={"file": ("my-notes.jsonl", b"{not json\n", "application/json")})
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "my-notes.jsonl" in message
    assert "zeromem-import-" not in message and "/tmp" not in message


runner = CliRunner()


@pytest.mark.parametrize(("args", "says"), [
    (["--port", "99999"], "65535"), (["--port", "0"], "greater than or equal to 1"),
    (["--max-body-mb", "-1"], "--max-body-mb"), (["--max-body-mb", "0"], "--max-body-mb"),
    (["--max-body-mb", "nan"], "--max-body-mb")])
def test_serve_refuses_a_port_or_body_limit_it_cannot_honour(tmp_path, args, says):
    result = runner.invoke(cli_app, ["serve", "--db", str(tmp_path / "m.db"), *args])
    assert result.exit_code != 0
    assert says in result.output
    assert not (tmp_path / "m.db").exists()  # refused before anything starts


def test_worker_options_keep_a_database_password_out_of_the_environment():
    url = "postgresql://zeromem:hunter2-secret@db.example:5432/memory"
    with worker_options(WorkerSpec(ServerOptions(db=url))) as path:
        assert "hunter2" not in os.environ[ENVIRONMENT]
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert json.loads(path.read_text())["server"]["db"] == url
    assert not path.exists()
    assert ENVIRONMENT not in os.environ


def test_a_killed_servers_worker_file_is_removed_by_the_next_serve(tmp_path, monkeypatch):
    """A server killed with SIGKILL leaves its worker file (its store URL inside); the next
    `zeromem serve` removes the files whose server is gone and keeps a running one's."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    orphan = tmp_path / f"zeromem-serve-{gone.pid}-abc.json"
    running = tmp_path / f"zeromem-serve-{os.getppid()}-def.json"
    unrelated = tmp_path / "zeromem-serve-old.json"
    for path in (orphan, running, unrelated):
        path.write_text("{}")
    with worker_options(WorkerSpec(ServerOptions(db="postgresql://u:secret@h/db"))) as path:
        assert path.name.startswith(f"zeromem-serve-{os.getpid()}-") and path.exists()
        assert not orphan.exists() and running.exists() and unrelated.exists()
    assert not path.exists()
