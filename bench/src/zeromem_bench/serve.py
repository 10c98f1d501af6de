"""``zeromem bench serve``: a bounded loopback load test of ``zeromem serve``.

Fill a store with ``scopes`` scopes of ``traces_per_scope`` replica traces of one LoCoMo
conversation, one API key each; start ``servers`` real ``zeromem serve`` processes on it; run
``clients`` concurrent HTTP clients for ``seconds``, each request a write (share
``write_share``: POST /v1/traces) or a search (POST /v1/search with one of the
conversation's questions) in the scope of the client's key. Optionally SIGKILL every server
``kill_at`` seconds in and start it again while the clients keep going.

``db`` is a SQLite file (default: a new file in a temp folder) or a store URL such as
``postgresql://user@host/db``: the fill goes through ``Memory(db)`` and every server runs
``zeromem serve --db <db>``, so ``servers`` > 1 on PostgreSQL is several processes sharing
one database, each with its own in-memory indexes.

Checked afterwards, from every response: errors (any non-2xx, any failed request outside the
kill window), cross-scope results (an evidence id that is not a trace of the searching key's
scope), and the trace count of each scope against the writes acknowledged (every
acknowledged write is stored; a write in flight at the kill may or may not be).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from zeromem._internals import store_of

from .stream import _conversation, fill_drafts, questions_of

USER = "bench-serve-{}"


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"search": [], "write": []})
    statuses: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    down_failures: int = 0  # requests refused while the servers were being restarted
    unacknowledged_writes: int = 0  # writes whose answer was lost to the kill
    acknowledged: dict[int, list[str]] = field(default_factory=dict)
    seen: dict[int, set[str]] = field(default_factory=dict)
    stages: dict[str, dict[str, list[float]]] = field(default_factory=lambda: {"search": {}, "write": {}})


# -- setup -------------------------------------------------------------------------------------
def fill(db: str | Path, data: Path, scopes: int, per_scope: int, progress: bool) -> dict[str, Any]:
    """Store the scopes (a scope that already holds ``per_scope`` traces is kept, so a rerun on
    the same --db skips the fill), index them, make one new key each."""
    from zeromem.memory import Memory
    from zeromem.types import Scope

    conversation = _conversation(data)
    keys: list[str] = []
    start = time.perf_counter()
    with Memory(db) as mem, tqdm(total=scopes * per_scope, desc="fill", unit="trace",
                                 disable=not progress, dynamic_ncols=True) as bar:
        for index in range(scopes):
            user = USER.format(index)
            if fill_scope(mem, user, conversation.drafts, per_scope, bar):
                mem.index(user=user)
            keys.append(store_of(mem).create_api_key(Scope(user, None), "bench serve")[1])
    return {"keys": keys, "fill_s": round(time.perf_counter() - start, 1)}


def fill_scope(mem: Any, user: str, drafts: Sequence[dict[str, Any]], size: int, bar: Any) -> bool:
    """Make scope ``user`` hold ``size`` replica traces; a scope that holds them already is kept
    (a rerun on the same store skips it). Returns whether it was written."""
    from zeromem.types import Scope

    if store_of(mem).count(Scope(user, None)) >= size:
        bar.update(size)
        return False
    mem.delete_scope(user=user)
    for batch in fill_drafts(drafts, size):
        mem.add_many(batch, user=user)
        bar.update(len(batch))
    return True


def _is_url(db: str | Path) -> bool:
    return "://" in str(db)


def _target(db: str | Path | None) -> str | Path:
    """The store to fill and serve: a URL as given, a path as a Path, None a new temp file."""
    if db is None:
        return Path(tempfile.mkdtemp(prefix="zeromem-bench-serve-")) / "serve.db"
    return str(db) if _is_url(db) else Path(db)


def _backend(db: str | Path) -> str:
    scheme = str(db).split("://", 1)[0].lower() if _is_url(db) else "sqlite"
    return "postgres" if scheme.startswith("postgres") else scheme


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(db: str | Path, port: int, threads: int, workers: int = 1, *, preload: bool = True,
                 extra: Sequence[str] = ()) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "zeromem.interfaces.cli", "serve", "--db", str(db),
                             "--port", str(port), "--threads", str(threads), "--workers", str(workers),
                             *(["--preload"] if preload else []), *extra],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # a process group: killed with its workers


def wait_ready(port: int, timeout_s: float = 180.0, times: int = 1) -> float:
    """Seconds until /readyz answered 200 ``times`` times in a row (each request may reach
    another worker process of the server: ask often enough to have met them all)."""
    start = time.perf_counter()
    streak = 0
    while time.perf_counter() - start < timeout_s:
        try:
            with httpx.Client(timeout=2) as fresh:  # a new connection: maybe another worker
                ok = fresh.get(f"http://127.0.0.1:{port}/readyz").status_code == 200
        except httpx.HTTPError:
            ok = False
        streak = streak + 1 if ok else 0
        if streak >= times:
            return time.perf_counter() - start
        time.sleep(0.02 if ok else 0.1)
    raise RuntimeError(f"the server on port {port} did not become ready in {timeout_s:.0f} s")


def stop_servers(procs: list[subprocess.Popen]) -> None:
    """Stop the servers (SIGTERM, then the whole process tree after 30 s)."""
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            _kill_tree(proc)


def _kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL a server and its worker processes (its own process group; see start_server)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def server_timing(header: str | None) -> dict[str, float]:
    """``Server-Timing: auth;dur=0.1, search;dur=12.5`` → {"auth": 0.1, "search": 12.5} (ms)."""
    found: dict[str, float] = {}
    for part in (header or "").split(","):
        name, _, params = part.strip().partition(";")
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "dur" and name:
                with contextlib.suppress(ValueError):
                    found[name] = float(value)
    return found


WORK_STAGES = ("auth", "store", "derive", "search")


def record_stages(sink: dict[str, list[float]], client_ms: float, stages: dict[str, float]) -> None:
    """One response's stages (ms), plus ``http``: the app's time outside the timed stages
    (routing, validation, the thread-pool hop, serializing), and ``outside_app``: the client's
    latency beyond the app (uvicorn, the socket, the client's own event loop)."""
    if "app" not in stages:
        return
    for name, value in stages.items():
        sink.setdefault(name, []).append(value)
    sink.setdefault("http", []).append(stages["app"] - sum(stages.get(name, 0.0) for name in WORK_STAGES))
    sink.setdefault("cpu", []).append(sum(stages.get(f"{name}-cpu", 0.0) for name in WORK_STAGES))
    sink.setdefault("outside_app", []).append(client_ms - stages["app"])
    sink.setdefault("client", []).append(client_ms)


def stage_breakdown(stages: dict[str, list[float]], requests: int) -> dict[str, dict[str, float | None]]:
    """Mean ms per request (over every timed request, 0 where a stage was not used), p50/p95
    over the requests that used the stage."""
    out: dict[str, dict[str, float | None]] = {}
    for name, values in stages.items():
        row = _percentiles(values)
        out[name] = {"mean_per_request": round(sum(values) / requests, 2) if requests else None,
                     "n": row["n"], "p50": row["p50"], "p95": row["p95"]}
    return out


def process_tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and its live descendants
    (a server's worker processes); 0 for what cannot be read (gone, not Linux)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14, 15)
            for task in Path(f"/proc/{current}/task").iterdir():
                pending.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError, IndexError):
            continue
    return total


def request_body(rng: random.Random, write: bool, number: int, sent: int, texts: list[str],
                 questions: list[str], k: int, run_tag: str) -> tuple[str, dict[str, Any]]:
    """Client ``number``'s request ``sent``: a write (one of the texts, marked with the run and
    the request so that every write of every run is new text: a rerun on the same store must
    pay for NER and embeddings as the first did) into the client's own session of this run, or
    a search (one of the questions)."""
    if write:
        return "/v1/traces", {"text": f"{rng.choice(texts)} [w{run_tag}-{number}-{sent}]",
                              "session": f"live-{run_tag}-{number}", "speaker": f"client{number}"}
    return "/v1/search", {"query": rng.choice(questions), "k": k, "why": False}


# -- load --------------------------------------------------------------------------------------
async def _client(number: int, http: httpx.AsyncClient, ports: list[int], keys: list[str],
                  questions: list[str], texts: list[str], write_share: float, deadline: float,
                  k: int, tally: Tally, down: asyncio.Event, rate: float | None, run_tag: str) -> None:
    # Each client writes one session of its own per run (a rerun on the same --db starts new
    # sessions instead of growing old ones): the agent-loop pattern of one live thread per client.
    rng = random.Random(number)
    scope = number % len(keys)
    headers = {"Authorization": f"Bearer {keys[scope]}"}
    sent = 0
    next_at = time.perf_counter()
    while time.perf_counter() < deadline:
        if rate:  # open loop: Poisson arrivals at rate/clients per client, whatever the latency
            next_at += rng.expovariate(rate)
            pause = next_at - time.perf_counter()
            if pause > 0:
                await asyncio.sleep(pause)
            if time.perf_counter() >= deadline:
                break
        port = ports[(number + sent) % len(ports)]
        sent += 1
        write = rng.random() < write_share
        path, body = request_body(rng, write, number, sent, texts, questions, k, run_tag)
        start = time.perf_counter()
        try:
            response = await http.post(f"http://127.0.0.1:{port}{path}", json=body, headers=headers)
        except httpx.HTTPError as exc:
            if down.is_set():
                tally.down_failures += 1
                tally.unacknowledged_writes += int(write)
                await asyncio.sleep(0.05)
            else:
                tally.errors.append(f"{path}: {type(exc).__name__}: {exc}")
            continue
        elapsed = (time.perf_counter() - start) * 1000
        status = str(response.status_code)
        tally.statuses[status] = tally.statuses.get(status, 0) + 1
        if response.status_code >= 300:
            tally.errors.append(f"{path}: {response.status_code} {response.text[:200]}")
            continue
        payload = response.json()
        record_stages(tally.stages["write" if write else "search"], elapsed,
                      server_timing(response.headers.get("server-timing")))
        if write:
            tally.latencies["write"].append(elapsed)
            tally.acknowledged.setdefault(scope, []).extend(payload["ids"])
        else:
            tally.latencies["search"].append(elapsed)
            tally.seen.setdefault(scope, set()).update(
                ev["trace_id"] for ev in payload["evidence"])


async def _killer(procs: list[subprocess.Popen], ports: list[int], db: str | Path, threads: int,
                  workers: int, kill_at: float, down: asyncio.Event, report: dict[str, Any]) -> None:
    await asyncio.sleep(kill_at)
    down.set()
    for proc in procs:
        _kill_tree(proc)
    start = time.perf_counter()
    for index, port in enumerate(ports):
        procs[index] = start_server(db, port, threads, workers)
    for port in ports:
        await asyncio.to_thread(wait_ready, port, 180.0, 8 * workers)
    report["restart_s"] = round(time.perf_counter() - start, 2)
    down.clear()


async def load(ports: list[int], keys: list[str], questions: list[str], texts: list[str], *,
               clients: int, seconds: float, write_share: float, k: int,
               procs: list[subprocess.Popen], db: str | Path, threads: int, workers: int,
               kill_at: float | None, rate: float | None) -> tuple[Tally, dict[str, Any]]:
    tally = Tally()
    report: dict[str, Any] = {}
    run_tag = time.strftime("%Y%m%d%H%M%S")
    down = asyncio.Event()
    # Idle connections are dropped before uvicorn's 5 s keep-alive timeout closes them: reusing one
    # the server is closing at that moment fails with ReadError (a client race, not a server error).
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2.0)
    async with httpx.AsyncClient(timeout=60.0, limits=limits) as http:
        start = time.perf_counter()
        deadline = start + seconds
        tasks = [asyncio.create_task(_client(n, http, ports, keys, questions, texts, write_share,
                                             deadline, k, tally, down,
                                             rate / clients if rate else None, run_tag))
                 for n in range(clients)]
        if kill_at:
            tasks.append(asyncio.create_task(_killer(procs, ports, db, threads, workers, kill_at,
                                                     down, report)))
        await asyncio.gather(*tasks)
        report["wall_s"] = time.perf_counter() - start
    return tally, report


def stored_ids(port: int, key: str) -> set[str]:
    ids: set[str] = set()
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                      headers={"Authorization": f"Bearer {key}"}) as http:
        offset = 0
        while True:
            page = http.get("/v1/traces", params={"limit": 1000, "offset": offset}).json()["traces"]
            ids.update(t["id"] for t in page)
            if len(page) < 1000:
                return ids
            offset += 1000


# -- report ------------------------------------------------------------------------------------
def _percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "p99": None, "max": None}
    arr = np.asarray(values)
    return {"n": len(values), "p50": round(float(np.percentile(arr, 50)), 1),
            "p95": round(float(np.percentile(arr, 95)), 1), "p99": round(float(np.percentile(arr, 99)), 1),
            "max": round(float(arr.max()), 1)}


def run(data: Path, *, db: str | Path | None, scopes: int, per_scope: int, servers: int, clients: int,
        seconds: float, write_share: float, kill_at: float | None, threads: int, k: int,
        json_out: Path | None, workers: int = 1, rate: float | None = None,
        progress: bool = True) -> dict[str, Any]:
    target = _target(db)
    prepared = fill(target, data, scopes, per_scope, progress)
    conversation = _conversation(data)
    questions = questions_of(conversation) or [d["text"] for d in conversation.drafts]
    texts = [d["text"] for d in conversation.drafts]
    ports = [_free_port() for _ in range(servers)]
    procs = [start_server(target, port, threads, workers) for port in ports]
    try:
        # --preload: ready means every scope's index is built, in every worker
        ready_s = max(wait_ready(port, times=8 * workers) for port in ports)
        before = {scope: stored_ids(ports[0], key) for scope, key in enumerate(prepared["keys"])}
        cpu_before = (sum(process_tree_cpu_s(proc.pid) for proc in procs), time.process_time())
        tally, report = asyncio.run(load(ports, prepared["keys"], questions, texts, clients=clients,
                                         seconds=seconds, write_share=write_share, k=k, procs=procs,
                                         db=target, threads=threads, workers=workers,
                                         kill_at=kill_at, rate=rate))
        cpu = (sum(process_tree_cpu_s(proc.pid) for proc in procs) - cpu_before[0],
               time.process_time() - cpu_before[1])
        final = {scope: stored_ids(ports[0], key) for scope, key in enumerate(prepared["keys"])}
    finally:
        stop_servers(procs)
    acknowledged = {scope: set(ids) for scope, ids in tally.acknowledged.items()}
    missing = sum(len(ids - final[scope]) for scope, ids in acknowledged.items())
    expected = {scope: len(before[scope]) + len(acknowledged.get(scope, ())) for scope in final}
    extra = sum(len(final[scope]) - expected[scope] for scope in final)
    cross = sum(len(seen - final[scope]) for scope, seen in tally.seen.items())
    if any(not before[scope] <= final[scope] for scope in final):
        tally.errors.append("a trace stored before the run is gone after it")
    done = len(tally.latencies["search"]) + len(tally.latencies["write"])
    document = {
        "benchmark": "serve", "data": str(data), "backend": _backend(target), "scopes": scopes,
        "traces_per_scope": per_scope, "traces": scopes * per_scope, "servers": servers, "clients": clients,
        "seconds": seconds,
        "write_share": write_share, "kill_at": kill_at, "threads": threads, "workers": workers,
        "offered_rps": rate, "k": k,
        "fill_s": prepared["fill_s"], "ready_s": round(ready_s, 2), "restart_s": report.get("restart_s"),
        "requests_ok": done, "throughput_rps": round(done / report["wall_s"], 1),
        "search_ms": _percentiles(tally.latencies["search"]),
        "write_ms": _percentiles(tally.latencies["write"]),
        "all_ms": _percentiles(tally.latencies["search"] + tally.latencies["write"]),
        "server_timing_ms": {kind: stage_breakdown(stages, len(stages.get("client", ())))
                             for kind, stages in tally.stages.items()},
        "server_cpu_s": round(cpu[0], 1), "client_cpu_s": round(cpu[1], 1),
        "server_cpu_ms_per_request": round(cpu[0] * 1000 / done, 2) if done else None,
        "client_cpu_ms_per_request": round(cpu[1] * 1000 / done, 2) if done else None,
        "machine_load_1min": round(os.getloadavg()[0], 2),
        "statuses": tally.statuses, "errors": len(tally.errors), "error_samples": tally.errors[:5],
        "refused_while_restarting": tally.down_failures,
        "unanswered_writes_in_restart": tally.unacknowledged_writes,
        "acknowledged_writes": sum(len(ids) for ids in acknowledged.values()),
        "acknowledged_missing": missing, "stored_beyond_acknowledged": extra,
        "cross_scope_results": cross, "llm_calls": 0, "cpu_count": os.cpu_count(),
    }
    print_table(document)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(document, indent=2))
    return document


def failed(document: dict[str, Any]) -> bool:
    return bool(document["errors"] or document["cross_scope_results"] or document["acknowledged_missing"])


def print_table(document: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    offered = f"{document['offered_rps']:.0f} req/s offered" if document["offered_rps"] else "closed loop"
    title = (f"bench serve: {document['clients']} clients ({offered}), {document['seconds']:.0f} s, "
             f"{document['servers']} server(s) × {document['workers']} process(es), {document['scopes']} scopes × "
             f"{document['traces_per_scope']} traces, {document['write_share']:.0%} writes")
    table = Table(title=title)
    for column in ("", "n", "p50 ms", "p95 ms", "p99 ms", "max ms"):
        table.add_column(column, justify="right")
    for name in ("search", "write", "all"):
        row = document[f"{name}_ms"]
        table.add_row(name, *(str(row[key]) if row[key] is not None else "-"
                              for key in ("n", "p50", "p95", "p99", "max")))
    console.print(table)
    print_breakdown(document["server_timing_ms"], console)
    checks = Table(title="checks")
    checks.add_column("")
    checks.add_column("value", justify="right")
    for key in ("throughput_rps", "server_cpu_ms_per_request", "client_cpu_ms_per_request",
                "machine_load_1min", "errors", "cross_scope_results", "acknowledged_writes",
                "acknowledged_missing", "stored_beyond_acknowledged",
                "unanswered_writes_in_restart", "refused_while_restarting", "restart_s", "ready_s", "fill_s",
                "llm_calls"):
        checks.add_row(key, str(document[key]))
    console.print(checks)


def print_breakdown(breakdown: dict[str, dict[str, dict[str, float | None]]], console: Console) -> None:
    """Mean ms per request in each stage (the server's Server-Timing header), per kind."""
    names = [n for n in ("client", "outside_app", "app", "http", "before", "after", *WORK_STAGES, "prepare",
                         "cpu", *(f"{stage}-cpu" for stage in WORK_STAGES))
             if any(n in stages for stages in breakdown.values())]
    if not names:
        return
    table = Table(title="where a request's time goes: mean ms per request (Server-Timing; "
                        "http = app - auth - store - derive - search, of which before and after the "
                        "handler's store/search call; prepare is part of search; *-cpu: CPU of the "
                        "thread in that stage, cpu: their sum)")
    table.add_column("")
    for name in names:
        table.add_column(name, justify="right")
    for kind, stages in breakdown.items():
        table.add_row(kind, *(str(stages[n]["mean_per_request"]) if n in stages else "0" for n in names))
    console.print(table)
