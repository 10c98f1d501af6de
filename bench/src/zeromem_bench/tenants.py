"""``zeromem bench tenants``: many tenants of very different sizes behind real servers.

One store holds ``scopes`` scopes (one API key each) with heavy-tailed sizes: most draw a
size log-uniformly from ``small`` (default 50–500 turns), and as many as it takes to reach
``traces`` in all hold ``large`` turns each (default 20,000). Every scope is real LoCoMo text
replicated as ``bench scale`` does (copies of one conversation under new session ids).
``workers`` ``zeromem serve`` processes (each ``--workers 1`` on its own port, so the bench
knows which process answered, ``--index-cache-mb`` as given, no ``--preload``) serve it
while ``clients`` HTTP clients send, for ``seconds``, requests to Zipf-distributed scopes
(the scope of popularity rank r is picked with probability ∝ 1/r^zipf; ranks are a random
permutation of the scopes, independent of their size), ``write_share`` of them writes
(POST /v1/traces into a session of the run's own), the rest searches with one of the
conversation's questions, each request to a random worker. By default each client sends its
next request as soon as the last one answered (closed loop: the servers run saturated, and
latency is mostly waiting for a core). With ``rate`` the requests arrive at that many per
second in all (each client a Poisson stream of ``rate / clients``; open loop), and a request's
latency counts from the moment it was due, so a client still waiting on its previous answer
adds that delay instead of hiding it.

Reported: every worker's resident memory over time (VmRSS from /proc/<pid>/status, sampled
every ``sample_s``) against models + cache budget + 15 % (models: its RSS once ready, before
the first request); search latency p50/p95/p99 for cached and for cold searches (cold: the
first search of a scope by that worker process), cold ones also by scope size; the index
cache of each worker (GET /v1/stats ``index_cache``: evictions, hits, misses); errors;
cross-scope results (an evidence trace that is not the searching key's scope's) and whether
every acknowledged write is stored afterwards (both checked on the store itself after the
run); the store's size on disk. ``--plot`` draws RSS and latency over time.

The fill is the slow part, so it is resumable (a scope already holding its size is kept; a
rerun on the same ``--db`` or ``--cache-dir`` only fills what is missing) and it encodes each
distinct text once per fill process: the embedder and the entity extractor of the filling
``Memory`` remember their results by text, so the second and later scopes cost store writes
and unit derivation, not models (within one scope the store already reuses encodings by text
hash). Traces are stored with ``Config(index_on_write=False)`` and each scope is then derived
once by ``Memory.index()``, as ``zeromem ingest`` does.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import random
import sys
import tempfile
import threading
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

from zeromem._internals import encoders_of, store_of
from zeromem.store.factory import redact_url

from . import needs, report
from .memories import remove_db
from .serve import (
    _backend,
    _free_port,
    _is_url,
    _percentiles,
    fill_scope,
    request_body,
    server_timing,
    start_server,
    stop_servers,
    wait_ready,
)
from .stream import _conversation, _copy_db, _file_digest, _file_mb, questions_of

USER = "tenant-{:05d}"
SIZE_BUCKETS = ((0, 150), (151, 500), (501, 5000), (5001, 10**9))
TIMED_STAGES = ("auth", "store", "derive", "search", "prepare", "app")
PREPARED_MS = 5.0  # a search whose scope index took this long to get was built, read or refreshed


# -- the store -----------------------------------------------------------------------------
def scope_sizes(scopes: int, traces: int, small: tuple[int, int] = (50, 500), large: int = 20_000,
                seed: int = 0) -> list[int]:
    """Each scope's size in turns: log-uniform in ``small``; then, in a random order, scopes
    are made ``large`` until the sizes add up to ``traces`` (or every scope is large)."""
    low, high = small
    if not 1 <= low <= high or large < 1 or scopes < 1:
        raise ValueError(f"sizes need 1 <= small min <= small max, large >= 1 and scopes >= 1; "
                         f"got small {low}-{high}, large {large}, scopes {scopes}")
    rng = random.Random(seed)
    sizes = [round(math.exp(rng.uniform(math.log(low), math.log(high)))) for _ in range(scopes)]
    order = list(range(scopes))
    rng.shuffle(order)
    for index in order:
        if sum(sizes) >= traces:
            break
        sizes[index] = max(sizes[index], large)
    return sizes


class _Remembering:
    """An encoder (embedder or entity extractor) that keeps each text's result: a fill that
    stores one conversation in thousands of scopes runs the models once per distinct text."""

    def __init__(self, inner: Any, method: str, memo: dict[str, Any]) -> None:
        self._inner = inner
        self._method = method
        self._memo = memo

    def __getattr__(self, name: str) -> Any:
        if name == self._method:
            return self._call
        return getattr(self._inner, name)

    def _call(self, texts: Sequence[str]) -> Any:
        new = [text for text in dict.fromkeys(texts) if text not in self._memo]
        if new:
            for text, value in zip(new, getattr(self._inner, self._method)(new)):
                self._memo[text] = value
        found = [self._memo[text] for text in texts]
        return np.stack(found) if self._method == "encode" and found else found


def _remembering(mem: Any, memos: dict[str, dict[str, Any]]) -> None:
    encoders = encoders_of(mem)
    encoders.embedder = _Remembering(encoders.embedder, "encode", memos.setdefault("embed", {}))
    encoders.extractor = _Remembering(encoders.extractor, "extract", memos.setdefault("ner", {}))


def fill(target: str | Path, data: Path, sizes: Sequence[int], progress: bool = True) -> dict[str, Any]:
    """Fill every scope to its size (a scope already holding at least that many traces is
    kept), derive it, and make one new API key per scope; returns the keys and timings."""
    from zeromem.config import Config
    from zeromem.memory import Memory
    from zeromem.types import Scope

    conversation = _conversation(data)
    config = Config(index_on_write=False)
    memos: dict[str, dict[str, Any]] = {}
    keys: list[str] = []
    written = 0
    start = time.perf_counter()
    mem = Memory(target, config=config)  # its index cache bounds what the fill holds
    _remembering(mem, memos)
    try:
        with tqdm(total=sum(sizes), desc="fill", unit="trace", disable=not progress,
                  dynamic_ncols=True, smoothing=0.05) as bar:
            for index, size in enumerate(sizes):
                user = USER.format(index)
                if fill_scope(mem, user, conversation.drafts, size, bar):
                    written += size
                mem.index(user=user)  # derives, and writes the scope's snapshot where due
                keys.append(store_of(mem).create_api_key(Scope(user, None), "bench tenants")[1])
    finally:
        mem.close()
    seconds = time.perf_counter() - start
    return {"keys": keys, "fill_s": round(seconds, 1), "filled_traces": written,
            "fill_traces_per_s": round(written / seconds, 1) if written else None,
            "distinct_texts_encoded": len(memos.get("embed", {}))}


def _cache_key(data: Path, sizes: Sequence[int], options: dict[str, Any]) -> str:
    low, high = options["small"]
    shape = f"{len(sizes)}-{sum(sizes)}-{low}-{high}-{options['large']}-{options['seed']}"
    return f"tenants-{data.stem}-{_file_digest(data)}-{shape}"


def prepare_store(data: Path, sizes: Sequence[int], db: str | None, cache_dir: Path | None,
                  workdir: Path, options: dict[str, Any], progress: bool) -> tuple[str | Path, dict[str, Any]]:
    """The store to serve, filled: ``db`` as given (filled in place), else a copy of the
    filled file kept in ``cache_dir`` (filled there first if missing), else a temp file."""
    if db is not None:
        target: str | Path = db if _is_url(db) else Path(db)
        return target, {**fill(target, data, sizes, progress), "cached": False}
    work = workdir / "tenants.db"
    if cache_dir is None:
        return work, {**fill(work, data, sizes, progress), "cached": False}
    cached, filled = _fill_cache(data, sizes, cache_dir, options, progress)
    start = time.perf_counter()
    _copy_db(cached, work)  # the run writes into the copy, never into the cached file
    filled["copy_s"] = round(time.perf_counter() - start, 1)
    return work, filled


def _fill_cache(data: Path, sizes: Sequence[int], cache_dir: Path, options: dict[str, Any],
                progress: bool) -> tuple[Path, dict[str, Any]]:
    """Fill (or finish filling) the store kept in ``cache_dir`` for these sizes. Its JSON
    beside it keeps the first complete fill's report; ``cached`` says a later run found it."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    cached = cache_dir / f"{_cache_key(data, sizes, options)}.db"
    meta = Path(f"{cached}.json")
    filled = fill(cached, data, sizes, progress)  # resumes a partial fill; the keys are new
    if meta.exists():
        filled.update({k: v for k, v in json.loads(meta.read_text(encoding="utf-8")).items()
                       if k != "keys"}, cached=True)
    else:
        filled["cached"] = False
        meta.write_text(json.dumps({k: v for k, v in filled.items() if k not in ("keys", "cached")},
                                   indent=2) + "\n", encoding="utf-8")
    filled["cache_file"] = str(cached)
    return cached, filled


def store_mb(target: str | Path) -> float | None:
    """The store's size on disk in MB (a SQLite file with its -wal; a PostgreSQL database)."""
    if not _is_url(target):
        return _file_mb(Path(target))
    from zeromem.memory import Memory

    with Memory(target) as mem:
        return round(store_of(mem).size_bytes() / 2**20, 2)


# -- the servers ---------------------------------------------------------------------------
def proc_rss_mb(pid: int) -> float | None:
    """VmRSS of process ``pid`` in MB (None when it is gone or not on Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _server_options(index_cache_mb: int | None) -> list[str]:
    """``--index-cache-mb`` where this zeromem has it (Config.index_cache_mb)."""
    from zeromem.config import Config

    names = {f.name for f in dataclasses.fields(Config)}
    return ["--index-cache-mb", str(index_cache_mb)] if index_cache_mb is not None and "index_cache_mb" in names else []


def cache_stats(port: int, key: str) -> dict[str, Any] | None:
    """The worker's ``index_cache`` from GET /v1/stats (None when the server reports none)."""
    try:
        response = httpx.get(f"http://127.0.0.1:{port}/v1/stats", timeout=30,
                             headers={"Authorization": f"Bearer {key}"})
        return response.json().get("index_cache") if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


@dataclass
class Run:
    """Everything the load records, by request and by sample."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    acknowledged: dict[int, list[str]] = field(default_factory=dict)
    seen: dict[int, set[str]] = field(default_factory=dict)
    searched: set[tuple[int, int]] = field(default_factory=set)  # (worker, scope) searched once
    samples: list[dict[str, Any]] = field(default_factory=list)
    stats: list[dict[str, Any]] = field(default_factory=list)


def _zipf_choices(scopes: int, exponent: float, count: int, seed: int) -> np.ndarray:
    """``count`` scope numbers, Zipf-distributed over a random popularity order."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, scopes + 1, dtype=np.float64) ** exponent
    ranked = rng.permutation(scopes)
    return ranked[rng.choice(scopes, size=count, p=weights / weights.sum())]


async def _client(number: int, http: httpx.AsyncClient, ports: list[int], keys: list[str],
                  choices: np.ndarray, questions: list[str], texts: list[str], write_share: float,
                  started: float, deadline: float, k: int, run: Run, run_tag: str,
                  rate: float | None = None) -> None:
    rng = random.Random(number)
    arrivals = random.Random(f"arrivals:{number}")
    due = started
    sent = 0
    while True:
        if rate is None:
            due = time.perf_counter()
        else:
            due += arrivals.expovariate(rate)
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
        if due >= deadline:
            break
        scope = int(choices[(number * 7919 + sent) % len(choices)])
        worker = rng.randrange(len(ports))
        sent += 1
        write = rng.random() < write_share
        path, body = request_body(rng, write, number, sent, texts, questions, k, run_tag)
        cold = not write and (worker, scope) not in run.searched
        if not write:
            run.searched.add((worker, scope))
        start = due
        try:
            response = await http.post(f"http://127.0.0.1:{ports[worker]}{path}", json=body,
                                       headers={"Authorization": f"Bearer {keys[scope]}"})
        except httpx.HTTPError as exc:
            run.errors.append(f"{path}: {type(exc).__name__}: {exc}")
            continue
        elapsed = (time.perf_counter() - start) * 1000
        if response.status_code >= 300:
            run.errors.append(f"{path}: {response.status_code} {response.text[:200]}")
            continue
        payload = response.json()
        run.requests.append({"t": round(start - started, 3), "kind": "write" if write else "search",
                             "ms": round(elapsed, 2), "worker": worker, "scope": scope, "cold": cold,
                             "stages": server_timing(response.headers.get("server-timing"))})
        if write:
            run.acknowledged.setdefault(scope, []).extend(payload["ids"])
        else:
            run.seen.setdefault(scope, set()).update(
                ev["trace_id"] for ev in payload["evidence"])


def _sampler(pids: list[int], ports: list[int], key: str, started: float, stop: threading.Event,
             sample_s: float, stats_every: int, run: Run) -> None:
    tick = 0
    while not stop.is_set():
        now = round(time.perf_counter() - started, 2)
        run.samples.append({"t": now, "rss_mb": [proc_rss_mb(pid) for pid in pids]})
        if tick % stats_every == 0:
            run.stats.append({"t": now, "index_cache": [cache_stats(port, key) for port in ports]})
        tick += 1
        stop.wait(sample_s)


async def load(ports: list[int], pids: list[int], keys: list[str], questions: list[str],
               texts: list[str], *, clients: int, seconds: float, write_share: float, k: int,
               zipf: float, seed: int, sample_s: float, rate: float | None = None) -> Run:
    run = Run()
    run_tag = time.strftime("%Y%m%d%H%M%S")
    choices = _zipf_choices(len(keys), zipf, 200_000, seed)
    # Idle connections are dropped before uvicorn's 5 s keep-alive timeout closes them: reusing one
    # the server is closing at that moment fails with ReadError (a client race, not a server error).
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=2.0)
    stop = threading.Event()
    started = time.perf_counter()
    sampler = threading.Thread(target=_sampler, args=(pids, ports, keys[0], started, stop, sample_s,
                                                      max(1, round(5 / sample_s)), run), daemon=True)
    sampler.start()
    try:
        async with httpx.AsyncClient(timeout=120.0, limits=limits) as http:
            deadline = started + seconds
            await asyncio.gather(*(_client(n, http, ports, keys, choices, questions, texts,
                                           write_share, started, deadline, k, run, run_tag,
                                           rate / clients if rate else None)
                                   for n in range(clients)))
    finally:
        stop.set()
        sampler.join()
    run.stats.append({"t": round(time.perf_counter() - started, 2),
                      "index_cache": [cache_stats(port, keys[0]) for port in ports]})
    run.samples.append({"t": round(time.perf_counter() - started, 2),
                        "rss_mb": [proc_rss_mb(pid) for pid in pids]})
    return run


def check_store(target: str | Path, run: Run) -> dict[str, int]:
    """On the store itself: evidence from outside the searching scope, and acknowledged
    writes that are not stored in their scope."""
    from zeromem.errors import ZeromemError
    from zeromem.memory import Memory

    def stored(mem: Memory, trace_id: str, scope: int) -> bool:
        try:
            mem.get(trace_id, user=USER.format(scope), agent=None)
        except ZeromemError:
            return False
        return True

    with Memory(target) as mem:
        cross = sum(not stored(mem, tid, scope) for scope, ids in run.seen.items() for tid in ids)
        missing = sum(not stored(mem, tid, scope) for scope, ids in run.acknowledged.items() for tid in ids)
    return {"cross_scope_results": cross, "acknowledged_missing": missing,
            "acknowledged_writes": sum(len(ids) for ids in run.acknowledged.values()),
            "evidence_checked": sum(len(ids) for ids in run.seen.values())}


# -- the report ------------------------------------------------------------------------------
def _bucket(size: int) -> str:
    for low, high in SIZE_BUCKETS:
        if low <= size <= high:
            return f"{low}-{high}" if high < 10**9 else f">{low - 1}"
    return "?"


def summarize(run: Run, sizes: Sequence[int], budget_mb: float | None, ready_rss: list[float | None],
              wall_s: float) -> dict[str, Any]:
    searches = [r for r in run.requests if r["kind"] == "search"]
    writes = [r for r in run.requests if r["kind"] == "write"]
    latency = {"search_cached": _percentiles([r["ms"] for r in searches if not r["cold"]]),
               "search_cold": _percentiles([r["ms"] for r in searches if r["cold"]]),
               "write": _percentiles([r["ms"] for r in writes])}
    built = [r for r in searches if r["stages"].get("prepare", 0.0) >= PREPARED_MS]
    latency["search_prepare_over_5ms"] = _percentiles([r["ms"] for r in built])
    for low, high in SIZE_BUCKETS:
        name = _bucket(low)
        latency[f"search_cold_{name}"] = _percentiles(
            [r["ms"] for r in searches if r["cold"] and low <= sizes[r["scope"]] <= high])
    stages = {name: _percentiles([r["stages"][name] for r in run.requests if name in r["stages"]])
              for name in TIMED_STAGES}
    # The same searches as the server timed them (its Server-Timing header): the whole search,
    # the part that got the scope's index, and the CPU time of the thread that ran the search
    # (wall time beyond it is waiting: for the GIL, the store, the other cores).
    server_side: dict[str, dict[str, Any]] = {}
    groups = {"cached": [r for r in searches if not r["cold"]], "cold": [r for r in searches if r["cold"]]}
    for low, high in SIZE_BUCKETS:
        groups[f"cold {_bucket(low)}"] = [r for r in searches if r["cold"] and low <= sizes[r["scope"]] <= high]
    for name, group in groups.items():
        server_side[name] = {stage: _percentiles([r["stages"][stage] for r in group if stage in r["stages"]])
                             for stage in ("search", "prepare", "search-cpu")}
    workers = []
    for index, ready in enumerate(ready_rss):
        series = [s["rss_mb"][index] for s in run.samples if s["rss_mb"][index] is not None]
        limit = round((ready + budget_mb) * 1.15, 1) if ready is not None and budget_mb is not None else None
        peak = max(series) if series else None
        final_cache = run.stats[-1]["index_cache"][index] if run.stats else None
        workers.append({"worker": index, "rss_ready_mb": ready, "rss_max_mb": peak,
                        "rss_final_mb": series[-1] if series else None, "rss_limit_mb": limit,
                        "rss_within_limit": None if limit is None or peak is None else peak <= limit,
                        "index_cache": final_cache})
    return {"requests_ok": len(run.requests), "throughput_rps": round(len(run.requests) / wall_s, 1),
            "latency_ms": latency, "server_timing_ms": stages, "search_server_ms": server_side,
            "workers": workers,
            "errors": len(run.errors), "error_samples": run.errors[:5],
            "cold_searches": sum(r["cold"] for r in searches),
            "scopes_touched": len({r["scope"] for r in run.requests})}


def run(data: Path, *, scopes: int = 2000, traces: int = 1_000_000, small: tuple[int, int] = (50, 500),
        large: int = 20_000, seconds: float = 300.0, clients: int = 50, workers: int = 2,
        threads: int = 4, index_cache_mb: int | None = 1024, db: str | None = None,
        cache_dir: Path | None = None, write_share: float = 0.2, zipf: float = 1.1, k: int = 10,
        seed: int = 0, sample_s: float = 1.0, json_out: Path | None = None, plot_out: Path | None = None,
        progress: bool = True, console: Console | None = None, fill_only: bool = False,
        rate: float | None = None, citus_add_node: str | None = None,
        rebalance_at: float = 1 / 3) -> dict[str, Any]:
    sizes = scope_sizes(scopes, traces, small, large, seed)
    conversation = _conversation(data)
    questions = questions_of(conversation) or [d["text"] for d in conversation.drafts]
    texts = [d["text"] for d in conversation.drafts]
    options = {"scopes": scopes, "traces": traces, "small": list(small), "large": large,
               "seconds": seconds, "clients": clients, "workers": workers, "threads": threads,
               "index_cache_mb": index_cache_mb, "write_share": write_share, "zipf": zipf, "k": k,
               "seed": seed, "sample_s": sample_s, "cache_dir": str(cache_dir) if cache_dir else None,
               "rate": rate, "citus_add_node": citus_add_node, "rebalance_at": rebalance_at}
    if citus_add_node is not None and (db is None or not _is_url(db)):
        raise ValueError("--citus-add-node needs --db naming the Citus coordinator's database (postgresql://...)")
    if fill_only:
        if db is None and cache_dir is None:
            raise ValueError("--fill-only keeps the filled store: give --db or --cache-dir")
        if db is not None:
            target: str | Path = db if _is_url(db) else Path(db)
            filled = fill(target, data, sizes, progress)
        else:
            assert cache_dir is not None
            target, filled = _fill_cache(data, sizes, cache_dir, options, progress)
        filled.pop("keys")
        document = {"benchmark": "tenants", "fill_only": True, "scopes": scopes, "traces": sum(sizes),
                    "store_mb": store_mb(target),
                    "fill": filled, "options": options}
        Console().print_json(json.dumps(document))
        if json_out is not None:
            report.write_json(document, json_out)
        return document
    with tempfile.TemporaryDirectory(prefix="zeromem-tenants-") as tmp:
        target, filled = prepare_store(data, sizes, db, cache_dir, Path(tmp), options, progress)
        keys = filled.pop("keys")
        file_mb = store_mb(target)
        ports = [_free_port() for _ in range(workers)]
        extra = _server_options(index_cache_mb)
        procs = [start_server(target, port, threads, 1, preload=False, extra=extra) for port in ports]
        try:
            ready_s = max(wait_ready(port) for port in ports)
            time.sleep(1.0)  # the warm-up thread has loaded the models when /readyz answers
            ready_rss = [proc_rss_mb(proc.pid) for proc in procs]
            placement_before = _placement(target) if citus_add_node else None
            started = time.perf_counter()
            mover = None
            if citus_add_node is not None:
                from .rebalance import Rebalance

                if placement_before is None:
                    raise ValueError(f"{redact_url(str(target))} is not a distributed zeromem store on Citus")
                mover = Rebalance(str(target), citus_add_node, seconds * rebalance_at, started)
                mover.start()
            tally = asyncio.run(load(ports, [p.pid for p in procs], keys, questions, texts,
                                     clients=clients, seconds=seconds, write_share=write_share,
                                     k=k, zipf=zipf, seed=seed, sample_s=sample_s, rate=rate))
            wall_s = time.perf_counter() - started
            if mover is not None:
                mover.join()
        finally:
            stop_servers(procs)
        checks = check_store(target, tally)
        citus = None
        if mover is not None:
            from .rebalance import phases, shards_per_node

            citus = {"added_node": citus_add_node, "marks_s": mover.marks, "state": mover.state,
                     "error": mover.error, "phases": phases(tally.requests, mover.marks, wall_s),
                     "before": shards_per_node(placement_before),
                     "after": shards_per_node(_placement(target))}
        if not _is_url(target) and db is None:
            remove_db(Path(target))
    budget = float(index_cache_mb) if extra and index_cache_mb is not None else None
    document = {
        "benchmark": "tenants", "data": str(data), "backend": _backend(target),
        "store": redact_url(str(target)) if db is not None else "temporary copy",
        "options": options, "index_cache_supported": bool(extra),
        "scopes": scopes, "traces": sum(sizes), "size_min": min(sizes), "size_max": max(sizes),
        "size_median": int(np.median(sizes)), "large_scopes": sum(s >= large for s in sizes),
        "store_mb": file_mb, "fill": filled, "ready_s": round(ready_s, 2),
        **summarize(tally, sizes, budget, ready_rss, wall_s), **checks,
        **({"citus": citus} if citus is not None else {}),
        "timeline": {"rss": tally.samples, "index_cache": tally.stats,
                     "requests": [{**{key: r[key] for key in ("t", "kind", "ms", "worker", "scope", "cold")},
                                   "size": sizes[r["scope"]], "stages": r["stages"]} for r in tally.requests]},
        "llm_calls": 0, "machine": report.machine(), "git": report.git_commit(), "argv": sys.argv,
    }
    print_tables(document, console)
    if json_out is not None:
        report.write_json(document, json_out)
    if plot_out is not None:
        plot(document, plot_out)
    return document


def _placement(target: str | Path) -> dict[str, Any] | None:
    from zeromem.store import open_store

    with open_store(str(target)) as store:
        where = getattr(store, "placement", None)
        return where() if callable(where) else None


def failed(document: dict[str, Any]) -> bool:
    return bool(document["errors"] or document["cross_scope_results"] or document["acknowledged_missing"]
                or (document.get("citus") or {}).get("error"))


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def print_tables(document: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    options = document["options"]
    title = (f"bench tenants ({document['backend']}): {document['scopes']} scopes, {document['traces']:,} traces "
             f"(sizes {document['size_min']}-{document['size_max']}, median {document['size_median']}, "
             f"{document['large_scopes']} large), {options['workers']} worker(s), {options['clients']} clients, "
             f"{options['seconds']:.0f} s, {options['write_share']:.0%} writes, zipf {options['zipf']}, "
             + (f"open loop at {options['rate']} req/s" if options.get("rate") else "closed loop"))
    table = Table(title=title)
    for column in ("", "n", "p50 ms", "p95 ms", "p99 ms", "max ms"):
        table.add_column(column, justify="right")
    for name, row in document["latency_ms"].items():
        table.add_row(name.replace("_", " "), *(_cell(row[key]) for key in ("n", "p50", "p95", "p99", "max")))
    console.print(table)
    stages = Table(title="server timers (Server-Timing header, ms per request that used the stage)")
    for column in ("stage", "n", "p50", "p95", "p99"):
        stages.add_column(column, justify="right")
    for name, row in document["server_timing_ms"].items():
        stages.add_row(name, *(_cell(row[key]) for key in ("n", "p50", "p95", "p99")))
    console.print(stages)
    inside = Table(title="searches as the server timed them (ms: search / prepare = getting the scope's index / "
                         "CPU = the search thread's own CPU time)")
    for column in ("searches", "n", "search p50", "search p95", "search p99", "prepare p50", "prepare p95",
                   "prepare p99", "CPU p50", "CPU p95"):
        inside.add_column(column, justify="right")
    for name, row in document["search_server_ms"].items():
        inside.add_row(name, _cell(row["search"]["n"]),
                       *(_cell(row[stage][key]) for stage in ("search", "prepare") for key in ("p50", "p95", "p99")),
                       *(_cell(row.get("search-cpu", {}).get(key)) for key in ("p50", "p95")))
    console.print(inside)
    memory = Table(title="workers: resident memory (MB) and index cache")
    for column in ("worker", "RSS ready", "RSS max", "RSS final", "limit (ready+budget)×1.15", "within",
                   "cache MB", "scopes", "hits", "misses", "evictions"):
        memory.add_column(column, justify="right")
    for row in document["workers"]:
        cache = row["index_cache"] or {}
        cache_mb = round(cache["bytes"] / 2**20, 1) if cache.get("bytes") is not None else None
        memory.add_row(str(row["worker"]), _cell(row["rss_ready_mb"]), _cell(row["rss_max_mb"]),
                       _cell(row["rss_final_mb"]), _cell(row["rss_limit_mb"]), _cell(row["rss_within_limit"]),
                       _cell(cache_mb), *(_cell(cache.get(key)) for key in ("scopes", "hits", "misses", "evictions")))
    console.print(memory)
    checks = Table(title="checks")
    checks.add_column("")
    checks.add_column("value", justify="right")
    for key in ("throughput_rps", "requests_ok", "errors", "cross_scope_results", "evidence_checked",
                "acknowledged_writes", "acknowledged_missing", "cold_searches", "scopes_touched",
                "store_mb", "ready_s", "llm_calls"):
        checks.add_row(key, _cell(document[key]))
    fill = document["fill"]
    checks.add_row("fill s (traces written, traces/s)",
                   f"{fill.get('fill_s')} ({fill.get('filled_traces')}, {fill.get('fill_traces_per_s')})")
    console.print(checks)
    print_citus(document, console)


def print_citus(document: dict[str, Any], console: Console) -> None:
    """The rebalance run's phases and placement (``--citus-add-node``)."""
    citus = document.get("citus")
    if not citus:
        return
    table = Table(title=f"Citus: {citus['added_node']} added at {citus['marks_s'].get('added')} s, "
                        f"rebalance {citus['state']} at {citus['marks_s'].get('done')} s"
                        + (f" (error: {citus['error']})" if citus["error"] else ""))
    for column in ("phase", "seconds", "requests", "req/s", "p50 ms", "p95 ms", "writes"):
        table.add_column(column)
    for name, phase in citus["phases"].items():
        table.add_row(name, *(_cell(phase[key]) for key in ("seconds", "requests", "req_s", "p50_ms",
                                                            "p95_ms", "writes")))
    console.print(table)
    nodes = Table(title="shard groups / scopes per node")
    for column in ("node", "before", "after"):
        nodes.add_column(column)
    before, after = citus["before"] or {}, citus["after"] or {}
    for node in sorted(set(before) | set(after)):
        nodes.add_row(node, *(f"{p[node]['shards']} / {p[node]['scopes']}" if node in p else "-"
                              for p in (before, after)))
    console.print(nodes)


def plot(document: dict[str, Any], path: str | Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError(needs.missing_message("--plot", ["matplotlib"])) from None
    timeline = document["timeline"]
    fig, (rss_ax, lat_ax) = plt.subplots(2, 1, figsize=(10, 8), sharex=True)
    for worker in document["workers"]:
        index = worker["worker"]
        points = [(s["t"], s["rss_mb"][index]) for s in timeline["rss"] if s["rss_mb"][index] is not None]
        if points:
            line = rss_ax.plot(*zip(*points), label=f"worker {index} RSS")[0]
            if worker["rss_limit_mb"] is not None:
                rss_ax.axhline(worker["rss_limit_mb"], linestyle="--", color=line.get_color(), linewidth=0.8,
                               label=f"worker {index} limit")
    for worker in document["workers"]:
        index = worker["worker"]
        points = [(s["t"], s["index_cache"][index]["bytes"] / 2**20) for s in timeline["index_cache"]
                  if s["index_cache"][index] and s["index_cache"][index].get("bytes") is not None]
        if points:
            rss_ax.plot(*zip(*points), linestyle=":", label=f"worker {index} index cache")
    rss_ax.set_ylabel("resident MB")
    rss_ax.legend(loc="lower right", fontsize=8)
    for kind, cold, colour, label in (("search", False, "tab:blue", "search, cached"),
                                      ("search", True, "tab:red", "search, cold"),
                                      ("write", False, "tab:green", "write")):
        points = [(r["t"], r["ms"]) for r in timeline["requests"] if r["kind"] == kind and r["cold"] == cold]
        if points:
            lat_ax.scatter(*zip(*points), s=3, alpha=0.3, color=colour, label=label)
            windows: dict[int, list[float]] = {}
            for t, ms in points:
                windows.setdefault(int(t // 10), []).append(ms)
            if len(windows) > 1:
                lat_ax.plot([10 * w + 5 for w in sorted(windows)],
                            [float(np.percentile(windows[w], 95)) for w in sorted(windows)],
                            color=colour, linewidth=1.5, label=f"{label}, p95 per 10 s")
    lat_ax.set_yscale("log")
    lat_ax.set_ylabel("latency ms")
    lat_ax.set_xlabel("seconds into the run")
    lat_ax.legend(loc="upper right", fontsize=8, markerscale=4)
    fig.suptitle(f"bench tenants ({document['backend']}): {document['scopes']} scopes, "
                 f"{document['traces']:,} traces")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
