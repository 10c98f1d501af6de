"""``zeromem keys`` and ``zeromem serve`` as a real process (SIGKILL loses no acknowledged write)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from typer.testing import CliRunner

from zeromem.interfaces.cli import app

runner = CliRunner()


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def test_keys_add_list_revoke(db_path):
    added = run("keys", "add", "--db", db_path, "--user", "ana", "--label", "laptop", "--json")
    assert added.exit_code == 0, added.output
    record = json.loads(added.stdout)
    assert record["key"].startswith(f"zm_{record['key_id']}_") and record["user"] == "ana"
    listed = run("keys", "list", "--db", db_path)
    assert record["key_id"] in listed.stdout and "active" in listed.stdout and "laptop" in listed.stdout
    assert record["key"] not in listed.stdout  # never shown again
    revoked = run("keys", "revoke", record["key_id"], "--db", db_path)
    assert revoked.exit_code == 0 and "revoked" in revoked.stdout
    listed = json.loads(run("keys", "list", "--db", db_path, "--json").stdout)
    assert listed[0]["revoked_at"] is not None


@pytest.mark.parametrize("args, message", [
    (["keys", "add"], "needs a scope"),
    (["keys", "revoke", "deadbeef"], "no API key"),
    (["keys", "revoke", "nope"], "8 hex"),
])
def test_keys_errors_are_one_line(db_path, args, message):
    run("keys", "add", "--db", db_path, "--user", "x")  # the store exists
    result = run(*args, "--db", db_path)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_serve_refuses_no_auth_on_a_public_address(db_path):
    result = run("serve", "--db", db_path, "--no-auth", "--host", "0.0.0.0")
    assert result.exit_code == 2 and "127.0.0.1" in result.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(db_path, port: int) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "zeromem.interfaces.cli", "serve", "--db", str(db_path),
                             "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(proc.stderr.read().decode() if proc.stderr else "server did not start")


@pytest.mark.slow
def test_sigkill_loses_no_acknowledged_write(db_path):
    key = json.loads(run("keys", "add", "--db", db_path, "--user", "ana", "--json").stdout)["key"]
    headers = {"Authorization": f"Bearer {key}"}
    port = _free_port()
    proc = _serve(db_path, port)
    acknowledged: list[str] = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as client:
            for i in range(20):
                batch = [{"text": f"note {i}-{j}", "session": f"s{i}"} for j in range(5)]
                acknowledged += client.post("/v1/traces", json={"traces": batch}).json()["ids"]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    proc = _serve(db_path, port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as client:
            stored = client.get("/v1/traces", params={"limit": 1000}).json()["traces"]
            assert sorted(t["id"] for t in stored) == sorted(acknowledged)
            assert len(stored) % 5 == 0  # batches are whole
            found = client.post("/v1/search", json={"query": "note 7-3", "k": 3}).json()
            assert found["evidence"]
    finally:
        proc.terminate()
        proc.wait(10)
