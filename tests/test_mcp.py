"""`zeromem mcp` end to end through the MCP SDK's own client: the server runs as a subprocess,
over stdio (what an MCP host launches) and over streamable HTTP."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from zeromem import Memory
from zeromem.config import Config
from zeromem.interfaces.mcp_server import build_server

ZEROMEM = [sys.executable, "-m", "zeromem.interfaces.cli"]
TOOLS = {"remember", "recall", "context", "forget", "history"}
TIMEOUT = 120.0

CAT = "My cat is called Miso and she loves sardines."
JOB = "I started a new job as a nurse at the Denver children's hospital."
TRIP = "We are planning a trip to Lisbon in October with my sister."


def _client(db: Path, *args: str) -> Client:
    params = StdioServerParameters(
        command=ZEROMEM[0], args=[*ZEROMEM[1:], "mcp", "--db", str(db), *args],
        env=dict(os.environ))  # the same offline model settings as this test process
    return Client(params, read_timeout_seconds=TIMEOUT, cache=None)


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def _error(client: Client, name: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error, result
    return " ".join(getattr(block, "text", "") for block in result.content)


async def _read(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    [content] = result.contents
    return json.loads(content.text)  # type: ignore[union-attr]


@pytest.mark.slow
def test_stdio_round_trip_and_scope_isolation(tmp_path, caplog):
    db = tmp_path / "memory.db"
    caplog.set_level(logging.WARNING, logger="mcp")

    async def as_u1() -> tuple[str, str]:
        async with _client(db, "--user", "u1") as client:
            assert client.server_info is not None and client.server_info.name == "zeromem"
            assert "no LLM" in (client.instructions or "")

            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == TOOLS | ({"active"} if hasattr(Memory, "active") else set())
            for t in tools:
                params = set(t.input_schema.get("properties", {}))
                assert not params & {"user", "agent", "scope", "user_id", "agent_id"}, (t.name, params)
                assert t.output_schema is not None, t.name  # structured results
                assert "no llm" in (t.description or "").lower(), t.name

            cat = (await _call(client, "remember", {
                "text": CAT, "session": "s1", "speaker": "Ana", "session_time": "2023-05-08T10:00:00",
                "metadata": {"topic": "pets"}}))["trace_id"]
            job = (await _call(client, "remember", {
                "text": JOB, "session": "s1", "speaker": "Ana", "role": "user"}))["trace_id"]
            trip = (await _call(client, "remember", {
                "text": TRIP, "session": "s2", "speaker": "Ana", "session_time": "2023-06-01"}))["trace_id"]
            assert len({cat, job, trip}) == 3

            recalled = await _call(client, "recall", {"query": "What is the name of Ana's cat?", "k": 3})
            best = recalled["evidence"][0]
            assert best["text"] == CAT  # verbatim
            assert best["provenance"] == {"trace_id": cat, "session": "s1", "speaker": "Ana",
                                             "time": "2023-05-08T10:00:00", "source_id": None}
            assert best["why"]["reason"] and isinstance(best["score"], float)
            assert 0.0 <= recalled["no_answer_score"] <= 1.0
            # as_of hides what was said later; now dates "yesterday" in the query; a bad time is refused.
            before = await _call(client, "recall", {"query": "When is the Lisbon trip?", "as_of": "2023-05-20"})
            assert trip not in {ev["trace_id"] for ev in before["evidence"]}
            planned = await _call(client, "recall", {"query": "What trip did we plan yesterday?", "k": 1,
                                                     "now": "2023-06-02T09:00:00"})
            assert planned["evidence"][0]["trace_id"] == planned["evidence"][0]["provenance"]["trace_id"] == trip
            assert "now" in await _error(client, "recall", {"query": "cat", "now": "not a time"})
            dated = await _call(client, "context", {"query": "What trip did we plan yesterday?", "k": 1,
                                                    "now": "2023-06-02", "as_of": "2023-06-02"})
            assert dated["trace_ids"] == [trip]

            ctx = await _call(client, "context", {"query": "Where does Ana work?", "k": 3,
                                                  "budget_tokens": 500})
            assert job in ctx["trace_ids"] and f"[{job}]" in ctx["text"] and JOB in ctx["text"]
            assert 0 < ctx["tokens"] <= 500

            assert [e["event"] for e in (await _call(client, "history", {"trace_id": cat}))["events"]] == ["add"]

            listing = await _read(client, "zeromem://sessions")
            assert (listing["user"], listing["agent"], listing["traces"]) == ("u1", None, 3)
            assert [(s["session"], s["traces"]) for s in listing["sessions"]] == [("s1", 2), ("s2", 1)]
            session = await _read(client, listing["sessions"][0]["uri"])
            assert [t["text"] for t in session["traces"]] == [CAT, JOB]
            trace = await _read(client, f"zeromem://traces/{cat}")
            assert (trace["text"], trace["speaker"], trace["metadata"]) == (CAT, "Ana", {"topic": "pets"})

            assert await _call(client, "forget", {"trace_id": cat}) == {"deleted": cat}
            again = await _call(client, "recall", {"query": "What is the name of Ana's cat?", "k": 3})
            assert cat not in {ev["trace_id"] for ev in again["evidence"]}
            events = (await _call(client, "history", {"trace_id": cat}))["events"]
            assert [e["event"] for e in events] == ["add", "delete"]  # tombstones: the text is erased
            assert all(e["old_text"] is None and e["new_text"] is None for e in events)

            # Errors zeromem raises on purpose come back as tool errors with its message.
            assert "no trace 'tzzzzzzzz'" in await _error(client, "forget", {"trace_id": "tzzzzzzzz"})
            assert "text" in await _error(client, "remember", {"text": "   "})
            assert "50" in await _error(client, "recall", {"query": "cat", "k": 51})
            with pytest.raises(MCPError, match=cat):
                await client.read_resource(f"zeromem://traces/{cat}")
            # The server is still serving after the errors.
            assert (await _read(client, "zeromem://sessions"))["traces"] == 2
            return job, trip

    job, trip = anyio.run(as_u1)

    async def as_u2() -> None:
        async with _client(db, "--user", "u2") as client:
            recalled = await _call(client, "recall", {"query": "Where does Ana work as a nurse?"})
            assert recalled["evidence"] == []
            assert await _read(client, "zeromem://sessions") == {
                "user": "u2", "agent": None, "traces": 0, "sessions": []}
            with pytest.raises(MCPError, match=job):
                await client.read_resource(f"zeromem://traces/{job}")
            with pytest.raises(MCPError):
                await client.read_resource("zeromem://sessions/s1")
            assert job in await _error(client, "forget", {"trace_id": job})
            assert job in await _error(client, "history", {"trace_id": job})

    anyio.run(as_u2)
    # A line on the server's stdout that is not JSON-RPC would have been logged here.
    assert not [r for r in caplog.records if r.name.startswith("mcp")], caplog.text
    with Memory(db, user="u1", config=Config(index_on_write=False)) as mem:
        assert {t.id for t in mem.list()} == {job, trip}  # u2's server changed nothing of u1's


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_streamable_http_serves_and_stops_cleanly(tmp_path):
    port = _free_port()
    proc = subprocess.Popen(
        [*ZEROMEM, "mcp", "--db", str(tmp_path / "m.db"), "--user", "u1",
         "--transport", "http", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.2)

        async def session() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=TIMEOUT) as client:
                stored = await _call(client, "remember", {"text": TRIP, "session": "s1"})
                recalled = await _call(client, "recall", {"query": "When is the Lisbon trip?", "k": 1})
                assert recalled["evidence"][0]["trace_id"] == stored["trace_id"]

        anyio.run(session)
    finally:
        proc.send_signal(2)  # SIGINT: uvicorn shuts down, the command closes the Memory
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out == ""
    assert f"http://127.0.0.1:{port}/mcp" in err


@dataclass(frozen=True)
class _Entry:
    trace_id: str
    omega: float


class _MemoryWithActive(Memory):
    """Stands in for the active memory of a later issue: only its presence matters here."""

    def active(self, *, budget_tokens: int | None = None, user: Any = None, agent: Any = None):
        return (_Entry("t1", 0.5), {"budget_tokens": budget_tokens, "user": user, "agent": agent})


def test_active_tool_is_registered_only_when_memory_has_active(tmp_path):
    async def tools_and_active(memory: Memory) -> tuple[set[str], Any]:
        async with Client(build_server(memory, user="u1", agent="a1"), cache=None) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            result = await _call(client, "active", {"budget_tokens": 300}) if "active" in names else None
            return names, result

    config = Config(index_on_write=False)
    with Memory(tmp_path / "m.db", config=config) as plain:
        names, _ = anyio.run(tools_and_active, plain)
        assert names == TOOLS | ({"active"} if hasattr(Memory, "active") else set())
    with _MemoryWithActive(tmp_path / "m.db", config=config) as extended:
        names, result = anyio.run(tools_and_active, extended)
    assert "active" in names
    assert result == {"active": [{"trace_id": "t1", "omega": 0.5},
                                 {"budget_tokens": 300, "user": "u1", "agent": "a1"}]}
