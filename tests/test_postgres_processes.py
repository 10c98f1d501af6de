"""Several processes on one PostgreSQL database: writer processes through ``Memory(url)`` lose
and duplicate nothing; a SIGKILLed ``zeromem serve --db postgresql://...`` keeps every
acknowledged batch and every batch whole; two ``zeromem serve`` processes on one database see
each other's writes at the very next request. Skipped, saying why, where the embedded
PostgreSQL server cannot run."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from typer.testing import CliRunner

import pg_fixture
from internals import store_of
from zeromem import Memory
from zeromem.config import Config
from zeromem.interfaces.cli import app
from zeromem.types import Scope

pytestmark = pytest.mark.slow  # spawns processes


@pytest.fixture
def pg_url(request):
    """A fresh database on the test PostgreSQL server (skips where it cannot run)."""
    yield from pg_fixture.fresh_database(request)

_ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}


# -- concurrent writer processes ---------------------------------------------------------------
_WRITER = textwrap.dedent("""
    import json, sys
    from zeromem import Memory
    from zeromem.config import Config

    url, n, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    done = []  # (scope user, [(id, text, session)]) per call, in call order
    with Memory(url, user="shared", config=Config(index_on_write=False)) as mem:
        print("ready", flush=True)
        sys.stdin.readline()  # every writer starts at once
        for i in range(calls):
            kind, tag = i % 4, f"p{n} c{i}"
            if kind == 0:    # one trace into the shared session of the shared scope
                rows, user = [(f"{tag} common", "common")], "shared"
                ids = [mem.add(rows[0][0], session="common")]
            elif kind == 1:  # a batch into this writer's session of the shared scope
                rows, user = [(f"{tag} b{j}", f"p{n}") for j in range(3)], "shared"
                ids = mem.add_many([{"text": t, "session": s} for t, s in rows])
            elif kind == 2:  # one trace into this writer's own scope
                rows, user = [(f"{tag} own", "own")], f"own{n}"
                ids = [mem.add(rows[0][0], session="own", user=user)]
            else:            # a batch over the shared session, its own one and no session
                rows, user = [(f"{tag} m0", "common"), (f"{tag} m1", f"p{n}"), (f"{tag} m2", None)], "shared"
                ids = mem.add_many([{"text": t, "session": s} for t, s in rows])
            done.append((user, [(tid, t, s) for tid, (t, s) in zip(ids, rows)]))
    print(json.dumps(done), flush=True)
""")


def test_writer_processes_through_memory_lose_and_duplicate_nothing(pg_url):
    writers, calls = 3, 40
    Memory(pg_url).close()  # the schema exists before the writers race (they would wait on it)
    children = [subprocess.Popen([sys.executable, "-c", _WRITER, pg_url, str(n), str(calls)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_ENV)
                for n in range(writers)]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        outputs = [child.communicate(timeout=120)[0] for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    assert [child.returncode for child in children] == [0] * writers
    returned = [json.loads(out.strip().splitlines()[-1]) for out in outputs]

    expected: dict[str, tuple[str, str | None, str]] = {}  # id -> (text, session, scope user)
    calls_per_scope: dict[str, int] = defaultdict(int)
    orders = []  # per writer: its ids by (scope, session), in its call order
    for done in returned:
        assert len(done) == calls
        order: dict[tuple[str, str | None], list[str]] = defaultdict(list)  # this writer's ids by session
        for user, rows in done:
            calls_per_scope[user] += 1
            for tid, text, session in rows:
                assert tid not in expected, f"id {tid} returned twice"
                expected[tid] = (text, session, user)
                order[(user, session)].append(tid)
        orders.append(order)
    assert len(expected) == writers * (calls // 4) * (1 + 3 + 1 + 3)

    with Memory(pg_url, config=Config(index_on_write=False)) as mem:
        stored = {}
        for user, writes in calls_per_scope.items():
            traces = mem.list(user=user)
            assert len({t.id for t in traces}) == len(traces), f"an id twice in scope {user}"
            for t in traces:
                assert t.id not in stored, f"{t.id} in two scopes"
                stored[t.id] = t
            # One version bump per write call: nothing was applied twice or half.
            assert store_of(mem).scope_version(Scope(user)) == writes
        assert sorted(stored) == sorted(expected), "lost or unacknowledged traces"
        for tid, (text, session, user) in expected.items():
            t = stored[tid]
            assert (t.text, t.session, t.user) == (text, session, user)
        by_session: dict[tuple[str, str | None], list] = defaultdict(list)
        for t in stored.values():
            by_session[(t.user, t.session)].append(t)
        for key, traces in by_session.items():
            traces.sort(key=lambda t: t.seq)
            # Implicit seq numbers: 0..n-1, no gap, no repeat, and in commit (= id) order.
            assert [t.seq for t in traces] == list(range(len(traces))), key
            ids = [store_of(mem).ids.parse(t.id) for t in traces]
            assert ids == sorted(ids), f"seq order is not commit order in {key}"
        for order in orders:  # each writer's own traces keep its call order within a session
            for key, ids in order.items():
                seqs = [stored[tid].seq for tid in ids]
                assert seqs == sorted(seqs), key
        assert mem.stats(all_scopes=True).traces == len(expected)


# -- real server processes -------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _key(url: str, user: str) -> dict[str, str]:
    added = CliRunner().invoke(app, ["keys", "add", "--db", url, "--user", user, "--json"])
    assert added.exit_code == 0, added.output
    return {"Authorization": f"Bearer {json.loads(added.stdout)['key']}"}


def _start(url: str) -> tuple[subprocess.Popen, int]:
    """``zeromem serve --db url`` on a free port; its stderr goes to a temp file (a pipe
    nobody reads could fill up and stall the server), shown if it does not come up."""
    port = _free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _stop
    proc = subprocess.Popen([sys.executable, "-m", "zeromem.interfaces.cli", "serve", "--db", url,
                             "--port", str(port), "--threads", "2"],
                            env=_ENV, stdout=subprocess.DEVNULL, stderr=log)
    proc.log = log  # type: ignore[attr-defined]
    return proc, port


def _ready(proc: subprocess.Popen, port: int, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    proc.wait(10)
    proc.log.seek(0)  # type: ignore[attr-defined]
    raise AssertionError("the server did not start:\n" + proc.log.read().decode()[-3000:])  # type: ignore[attr-defined]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    proc.log.close()  # type: ignore[attr-defined]


@contextmanager
def _servers(url: str, count: int) -> Iterator[list[int]]:
    """``count`` ``zeromem serve --db url`` processes (started side by side); their ports."""
    started = [_start(url) for _ in range(count)]
    try:
        for proc, port in started:
            _ready(proc, port)
        yield [port for _, port in started]
    finally:
        for proc, _ in started:
            _stop(proc)


def _all_traces(client: httpx.Client) -> list[dict]:
    traces, offset = [], 0
    while True:
        response = client.get("/v1/traces", params={"limit": 1000, "offset": offset})
        assert response.status_code == 200, response.text
        page = response.json()["traces"]
        traces += page
        if len(page) < 1000:
            return traces
        offset += 1000


def _stream(port: int, headers: dict[str, str], first: int, batch: int, sent: list[int],
            acknowledged: dict[int, list[str]], latencies: list[float], failures: list[str]) -> None:
    """POST batch after batch (batch i: session s<i>) until the server dies under it."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as client:
        for i in range(first, first + 10_000):
            traces = [{"text": f"note {i}-{j} about the garden", "session": f"s{i}"} for j in range(batch)]
            sent.append(i)
            start = time.perf_counter()
            try:
                response = client.post("/v1/traces", json={"traces": traces})
            except httpx.HTTPError:
                return  # the kill: this batch was in flight
            if response.status_code != 201:
                failures.append(f"{response.status_code} {response.text[:300]}")
                return
            latencies.append(time.perf_counter() - start)
            acknowledged[i] = response.json()["ids"]


def test_sigkill_of_a_postgres_server_mid_stream_keeps_every_acknowledged_batch_whole(pg_url):
    """Three rounds of: a server, a stream of batch writes, SIGKILL while the next batch is in
    flight (right after an answer, then half-way and nine tenths through a typical write, so
    that kills land before, inside and after the commit). Then every acknowledged batch is
    there as written, and every batch in flight at a kill is there whole or not at all."""
    headers, batch = _key(pg_url, "ana"), 20
    acknowledged: dict[int, list[str]] = {}
    in_flight: list[int] = []  # the batch each kill interrupted
    failures: list[str] = []
    for share in (0.0, 0.5, 0.9):
        proc, port = _start(pg_url)
        sent: list[int] = []
        latencies: list[float] = []
        first = (max(acknowledged) + 2) if acknowledged else 0
        try:
            _ready(proc, port)
            writer = threading.Thread(target=_stream, args=(port, headers, first, batch, sent,
                                                            acknowledged, latencies, failures))
            writer.start()
            deadline = time.monotonic() + 60
            while len(latencies) < 4 and writer.is_alive() and time.monotonic() < deadline:
                time.sleep(0.002)
            assert len(latencies) >= 4 and not failures, failures
            time.sleep(share * sorted(latencies)[len(latencies) // 2])
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            writer.join(30)
        finally:
            _stop(proc)
        assert not writer.is_alive() and not failures, failures
        assert sent[-1] not in acknowledged
        in_flight.append(sent[-1])

    with _servers(pg_url, 1) as (port,), httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as client:
        stored = _all_traces(client)
        by_id = {t["id"]: t for t in stored}
        assert len(by_id) == len(stored), "an id listed twice"
        for i, ids in acknowledged.items():  # every acknowledged write is there, as written
            assert len(ids) == batch
            for j, tid in enumerate(ids):
                assert tid in by_id, f"acknowledged {tid} (batch {i}) is gone"
                assert (by_id[tid]["text"], by_id[tid]["session"]) == (f"note {i}-{j} about the garden", f"s{i}")
        sessions: dict[str, int] = defaultdict(int)
        for t in stored:
            sessions[t["session"]] += 1
        assert set(sessions.values()) == {batch}, f"a batch landed in part: {dict(sessions)}"
        extra = set(sessions) - {f"s{i}" for i in acknowledged}
        assert extra <= {f"s{i}" for i in in_flight}, "only a batch in flight at a kill may be there unacknowledged"
        found = client.post("/v1/search", json={"query": "note 3-4 about the garden", "k": 3})
        assert found.status_code == 200 and found.json()["evidence"], found.text
        after = client.post("/v1/traces", json={"text": "written after the restarts", "session": "s-after"})
        assert after.status_code == 201, after.text  # the scope is not left locked


FACTS = [
    ("Ana planted three lemon trees in the backyard.", "How many lemon trees did Ana plant?"),
    ("Ben adopted a grey cat and named it Pixel.", "What is the name of Ben's cat?"),
    ("The team moved the standup meeting to half past nine on Tuesdays.", "When is the standup meeting?"),
    ("Priya started taking cello lessons at the conservatory.", "Which instrument is Priya learning?"),
    ("Marco booked a flight to Lisbon for the first week of October.", "Where is Marco flying in October?"),
    ("A plumber named Dave replaced the water heater on Friday.", "Who replaced the water heater?"),
]


def test_a_write_acknowledged_by_one_server_is_found_by_the_next_search_on_another(pg_url):
    headers = _key(pg_url, "ana")
    with Memory(pg_url, user="ana") as mem:  # a few older traces, indexed
        mem.add_many([{"text": f"Small talk number {i} about the weather.", "session": "old"} for i in range(6)])
    with _servers(pg_url, 2) as ports:
        clients = [httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30)
                   for port in ports]
        try:
            for client in clients:  # both warm: each holds the scope's index at this version
                warm = client.post("/v1/search", json={"query": "weather", "k": 3})
                assert warm.status_code == 200 and warm.json()["evidence"], warm.text
            for i, (text, question) in enumerate(FACTS):
                writer, reader = clients[i % 2], clients[1 - i % 2]
                response = writer.post("/v1/traces", json={"text": text, "session": f"s{i}"})
                assert response.status_code == 201, response.text
                tid = response.json()["ids"][0]
                found = reader.post("/v1/search", json={"query": question, "k": 8, "why": False})
                assert found.status_code == 200, found.text
                seen = {ev["trace_id"] for ev in found.json()["evidence"]}
                assert tid in seen, f"write {i} ({tid}) on one server not found by the next search on the other"
                assert reader.get(f"/v1/traces/{tid}").json()["text"] == text
            # A delete is a write too: gone from the other server's next search.
            gone = response.json()["ids"][0]
            assert clients[1].delete(f"/v1/traces/{gone}").status_code == 200
            found = clients[0].post("/v1/search", json={"query": FACTS[-1][1], "k": 8, "why": False})
            assert gone not in {ev["trace_id"] for ev in found.json()["evidence"]}
            assert clients[0].get(f"/v1/traces/{gone}").status_code == 404
        finally:
            for client in clients:
                client.close()
