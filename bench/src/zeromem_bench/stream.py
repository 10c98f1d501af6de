"""The agent loop on real data: ``zeromem bench stream``.

An agent writes and reads its memory in turns: add the new message, search, answer, add the
reply, search again. For each size N this benchmark

1. pre-fills one scope with N traces made of real LoCoMo turns, the way ``bench scale`` does
   (replicas of one conversation under new session ids and marked source ids), and indexes
   it (``Memory.index()``); with ``--cache-dir`` the filled file is kept, keyed by the data
   file's content and N, and copied before the loop mutates it;
2. in a fresh subprocess (so its RSS is this size's alone): opens the file, runs one warm-up
   search, then for each turn of a LoCoMo conversation (stored under new ``#stream`` session
   ids, so it never collides with the replicas) ``add``\\ s the turn with its speaker, session
   and session time, ``search``\\ es right away with one of the conversation's questions
   (categories 1-4, cycling) — the search after a write — and ``search``\\ es again with the next
   question with no write in between — the reference. Latencies are wall-clock around the
   public calls, so whatever a write makes the next search redo is counted;
3. in another fresh subprocess: ``Memory(path)`` + the first ``search`` on the file the loop
   left (cold open);
4. in a third subprocess, the plain-bm25s baseline: after each added turn, rebuild one bm25s
   index over every turn of the scope (tokenized with ``encoders.tokenize``) and query it.

Every LLM call is counted by :mod:`zeromem.reader.base` around the loop, as the harness does;
the run fails if memory operations made any.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from zeromem.indexes.topk import top_indices

from . import report
from .memories import remove_db

USER = "stream"
DEFAULT_SIZES = (0, 10_000, 100_000)
K = 10
STREAM_SUFFIX = "#stream"
# The conversation a bench with no --data replays: this file under the folder the environment
# variable names (the benchmark data live outside the package; a user passes --data instead).
DATA_ENV = "ZEROMEM_BENCH_DATA"
_DEFAULT_CONVERSATION = "locomo/30.json"


class BenchError(RuntimeError):
    """A benchmark subprocess failed; the message says which step and why."""


def default_data() -> Path:
    """The default conversation: ``$ZEROMEM_BENCH_DATA/locomo/30.json``."""
    folder = os.environ.get(DATA_ENV)
    candidate = Path(folder).expanduser() / _DEFAULT_CONVERSATION if folder else None
    if candidate is not None and candidate.is_file():
        return candidate
    raise FileNotFoundError(f"no --data given and no {_DEFAULT_CONVERSATION} under ${DATA_ENV} "
                            f"({folder or 'not set'}): pass --data FILE, one LoCoMo conversation")


# -- data ------------------------------------------------------------------------------------
def _conversation(path: Path) -> Any:
    from zeromem.ingest import load_file

    conversations = load_file(path, format="locomo")
    if len(conversations) != 1:
        raise ValueError(f"{path} holds {len(conversations)} conversations; give a file with "
                         "exactly one LoCoMo conversation (e.g. $DATA/locomo/30.json)")
    return conversations[0]


def questions_of(conversation: Any) -> list[str]:
    """The conversation's answerable questions (categories 1-4), in file order."""
    return [str(q["question"]) for q in conversation.qa or []
            if q.get("category") in (1, 2, 3, 4) and q.get("question")]


def replica(drafts: Sequence[dict[str, Any]], copy: int) -> list[dict[str, Any]]:
    """Copy ``copy`` of a conversation, as ``bench scale`` stores it (new session ids)."""
    from .scale import _replica

    return _replica(list(drafts), copy)


def fill_drafts(drafts: Sequence[dict[str, Any]], size: int):
    """Yield the batches (one replica each, the last one cut) that make a scope of ``size``."""
    stored, copy = 0, 0
    while stored < size:
        batch = replica(drafts, copy)[: size - stored]
        yield batch
        stored += len(batch)
        copy += 1


def stream_turn(draft: dict[str, Any]) -> dict[str, Any]:
    """A turn of the streamed conversation as ``Memory.add`` keywords: its own session ids."""
    item = {key: value for key, value in draft.items() if key != "seq"}
    item["session"] = f"{draft.get('session') or 'session'}{STREAM_SUFFIX}"
    if draft.get("source_id"):
        item["source_id"] = f"{draft['source_id']}{STREAM_SUFFIX}"
    return item


def _baseline_text(draft: dict[str, Any]) -> str:
    from .baselines import format_turn, readable_time

    return format_turn(draft["text"], speaker=draft.get("speaker"),
                       session_time=readable_time(draft.get("session_time")),
                       attachments=draft.get("attachments") or ())


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _file_mb(path: Path) -> float:
    total = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    return round(total / 2**20, 2)


def _copy_db(source: Path, target: Path) -> None:
    for suffix in ("", "-wal"):
        src, dst = Path(f"{source}{suffix}"), Path(f"{target}{suffix}")
        if dst.exists():
            dst.unlink()
        if src.exists():
            shutil.copyfile(src, dst)


def proc_status_mb() -> dict[str, float | None]:
    """This process's peak (VmHWM) and current (VmRSS) resident set, MB; None off Linux."""
    found: dict[str, float | None] = {"VmHWM": None, "VmRSS": None}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in found:
                found[key] = round(int(value.split()[0]) / 1024, 1)
    except (OSError, ValueError):
        pass
    return {"peak": found["VmHWM"], "steady": found["VmRSS"]}


def _stats(values: Sequence[float], name: str) -> dict[str, float | None]:
    if not values:
        return {f"{name}_p50": None, f"{name}_p95": None, f"{name}_max": None}
    array = np.asarray(values, dtype=np.float64)
    return {f"{name}_p50": round(float(np.percentile(array, 50)), 3),
            f"{name}_p95": round(float(np.percentile(array, 95)), 3),
            f"{name}_max": round(float(array.max()), 3)}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


# -- subprocess steps (module-level so a spawned interpreter can import them) ----------------
def in_subprocess(step: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` in a fresh spawned interpreter and return its result."""
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        try:
            return pool.submit(fn, *args).result()
        except BrokenProcessPool:
            raise BenchError(f"{step}: the subprocess died without a result (killed for "
                             "memory? see dmesg)") from None


def fill_step(path: str, data: str, size: int, progress: bool) -> dict[str, Any]:
    """Store ``size`` replica traces of ``data`` in a new scope and index it."""
    from zeromem.memory import Memory

    conversation = _conversation(Path(data))
    with Memory(path, user=USER) as mem:
        start = time.perf_counter()
        with tqdm(total=size, desc=f"fill {size}", unit="trace", disable=not progress,
                  dynamic_ncols=True) as bar:
            for batch in fill_drafts(conversation.drafts, size):
                mem.add_many(batch)
                bar.update(len(batch))
        write_s = time.perf_counter() - start
        start = time.perf_counter()
        refreshed = mem.index(progress=progress)
        index_s = time.perf_counter() - start
        traces = mem.stats().traces
    return {"traces": traces, "write_s": round(write_s, 2), "index_s": round(index_s, 2),
            "encoded_texts": getattr(refreshed, "encoded_texts", None)}


def warm_models() -> float:
    """Load the default embedder and entity extractor (process-wide, shared with every
    ``Memory``) so the loop's first write or search does not pay for model loading; seconds."""
    from zeromem.config import EncoderConfig
    from zeromem.encoders.factory import load_embedder, load_extractor

    start = time.perf_counter()
    config = EncoderConfig()
    embedder = load_embedder(config)
    embedder.encode(["warming up the models"])
    embedder.encode_query("warming up the models?")
    load_extractor(config).extract(["Warming up in Denver with Priya."])
    return time.perf_counter() - start


def loop_step(path: str, stream_data: str, turns: int | None, questions: list[str], k: int,
              label: str, progress: bool) -> dict[str, Any]:
    """The agent loop on ``path``: add a turn, search, search again; raw timings back."""
    from zeromem.memory import Memory
    from zeromem.reader import base as reader_base

    drafts = _conversation(Path(stream_data)).drafts[:turns]
    model_load_s = warm_models()
    before = reader_base.usage()
    start = time.perf_counter()
    mem = Memory(path, user=USER)
    mem.search(questions[0], k=k)
    warm_open_s = time.perf_counter() - start
    add_ms: list[float] = []
    after_ms: list[float] = []
    plain_ms: list[float] = []
    encode_ms: list[float] = []
    empty = 0
    for i, draft in enumerate(tqdm(drafts, desc=f"{label} loop", unit="turn",
                                   disable=not progress, dynamic_ncols=True)):
        item = stream_turn(draft)
        text = item.pop("text")
        t0 = time.perf_counter()
        mem.add(text, **item)
        add_ms.append((time.perf_counter() - t0) * 1000.0)
        for question, sink in ((questions[(2 * i) % len(questions)], after_ms),
                               (questions[(2 * i + 1) % len(questions)], plain_ms)):
            t0 = time.perf_counter()
            result = mem.search_detailed(question, k=k)
            sink.append((time.perf_counter() - t0) * 1000.0)
            encode_ms.append(float(result.explain.timings.get("encode_ms") or 0.0))
            empty += not result.evidence
    spent = reader_base.usage() - before
    reader_base.assert_no_llm_calls(spent, f"bench stream loop at {label}")
    traces = mem.stats().traces
    rss = proc_status_mb()
    mem.close()
    return {"add_ms": add_ms, "search_after_write_ms": after_ms, "search_ms": plain_ms,
            "encode_ms": encode_ms, "empty_results": empty, "traces": traces,
            "warm_open_first_search_s": round(warm_open_s, 3), "rss": rss,
            "model_load_s": round(model_load_s, 3),
            "llm_calls": spent.calls, "llm_tokens": spent.tokens}


def cold_step(path: str, question: str, k: int) -> dict[str, Any]:
    """``Memory(path)`` + the first search, in an interpreter that has not touched the file."""
    from zeromem.memory import Memory

    start = time.perf_counter()
    mem = Memory(path, user=USER)
    evidence = mem.search(question, k=k)
    elapsed = time.perf_counter() - start
    mem.close()
    return {"cold_open_first_search_s": round(elapsed, 3), "evidence": len(evidence)}


def bm25s_step(data: str, size: int, stream_data: str, turns: int | None,
               questions: list[str], k: int, label: str, progress: bool) -> dict[str, Any]:
    """Plain bm25s as a streaming memory: rebuild over every turn of the scope after each add
    (``turns``: the baseline's own cap, ``--baseline-turns`` or else the loop's)."""
    import logging

    import bm25s

    from zeromem.encoders.tokenize import tokenize, tokenize_many

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    base = [_baseline_text(d) for batch in fill_drafts(_conversation(Path(data)).drafts, size)
            for d in batch]
    docs = [tokens for tokens in tokenize_many(base) if tokens]  # untimed: the scope as filled
    drafts = _conversation(Path(stream_data)).drafts[:turns]
    rebuild_ms: list[float] = []
    found = 0
    for i, draft in enumerate(tqdm(drafts, desc=f"{label} bm25s", unit="turn",
                                   disable=not progress, dynamic_ncols=True)):
        question = questions[(2 * i) % len(questions)]
        t0 = time.perf_counter()
        tokens = tokenize_many([_baseline_text(stream_turn(draft))])[0]
        if tokens:  # bm25s, like the engine's lexical index, is given non-empty documents
            docs.append(tokens)
        hits: list[int] = []
        if docs:
            index = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
            index.index(docs, show_progress=False)
            ids = index.get_tokens_ids([t for t in tokenize(question) if t])
            if ids:
                scores = np.asarray(index.get_scores_from_ids(ids))
                hits = [int(j) for j in top_indices(scores, k) if scores[j] > 0]
        rebuild_ms.append((time.perf_counter() - t0) * 1000.0)
        found += len(hits)
    return {"bm25s_rebuild_ms": rebuild_ms, "docs": len(docs), "hits": found}


# -- the benchmark ---------------------------------------------------------------------------
def _cached_fill(data: Path, size: int, work: Path, cache_dir: Path | None,
                 progress: bool) -> dict[str, Any]:
    """Put a filled, indexed file of ``size`` traces at ``work``; reuse/keep it in the cache."""
    if cache_dir is None:
        return {"cached": False, **in_subprocess(f"fill {size}", fill_step, str(work), str(data),
                                                size, progress)}
    cache_dir.mkdir(parents=True, exist_ok=True)
    key = f"stream-{data.stem}-{_file_digest(data)}-{size}"
    cached, meta = cache_dir / f"{key}.db", cache_dir / f"{key}.json"
    if cached.exists() and meta.exists():
        _copy_db(cached, work)
        return {**json.loads(meta.read_text(encoding="utf-8")), "cached": True,
                "cache_file": str(cached)}
    building = cache_dir / f"{key}.building.db"
    remove_db(building)
    filled = in_subprocess(f"fill {size}", fill_step, str(building), str(data), size, progress)
    filled.update(data=str(data), size=size, git=report.git_commit(),
                  zeromem=report.versions().get("zeromem"))
    _copy_db(building, cached)
    remove_db(building)
    meta.write_text(json.dumps(filled, indent=2) + "\n", encoding="utf-8")
    _copy_db(cached, work)  # the loop mutates the copy, never the cached file
    return {**filled, "cached": False, "cache_file": str(cached)}


def _texts_in_prefill(data: Path, size: int, stream_data: Path, turns: int | None) -> int:
    """How many streamed turns repeat a text already in the pre-filled scope: the store reuses
    their encodings, so their writes are cheaper than new text would be."""
    drafts = _conversation(data).drafts
    prefill = {d["text"] for d in drafts[: min(size, len(drafts))]}
    return sum(d["text"] in prefill for d in _conversation(stream_data).drafts[:turns])


def measure_size(size: int, data: Path, stream_data: Path, turns: int | None,
                 questions: list[str], workdir: Path, cache_dir: Path | None, k: int = K,
                 progress: bool = True, baseline_turns: int | None = None) -> dict[str, Any]:
    """Every number of one size N (see the module docstring)."""
    work = workdir / f"stream-{size}.db"
    remove_db(work)
    fill = (_cached_fill(data, size, work, cache_dir, progress) if size > 0
            else {"cached": False, "traces": 0})
    label = f"N={size}"
    try:
        loop = in_subprocess(f"loop {label}", loop_step, str(work), str(stream_data), turns,
                             questions, k, label, progress)
        file_mb = _file_mb(work)
        start = time.perf_counter()
        cold = in_subprocess(f"cold open {label}", cold_step, str(work), questions[0], k)
        cold_process_s = time.perf_counter() - start
    finally:
        remove_db(work)
    caps = [t for t in (turns, baseline_turns) if t is not None]
    baseline = in_subprocess(f"bm25s {label}", bm25s_step, str(data), size, str(stream_data),
                             min(caps) if caps else None, questions, k, label, progress)
    row: dict[str, Any] = {"prefilled_traces": fill.get("traces", 0), "traces": loop["traces"],
                           "turns": len(loop["add_ms"]),
                           "stream_texts_in_prefill": _texts_in_prefill(data, size, stream_data,
                                                                        turns)}
    row.update(_stats(loop["add_ms"], "add_ms"))
    row.update(_stats(loop["search_after_write_ms"], "search_after_write_ms"))
    row.update(_stats(loop["search_ms"], "search_ms"))
    row.update(_stats(baseline["bm25s_rebuild_ms"], "bm25s_rebuild_ms"))
    row["bm25s_turns"] = len(baseline["bm25s_rebuild_ms"])
    row["encode_ms_p50"] = _stats(loop["encode_ms"], "e")["e_p50"]
    row["search_after_write_vs_search_p50"] = _ratio(row["search_after_write_ms_p50"],
                                                     row["search_ms_p50"])
    row["bm25s_rebuild_vs_search_after_write_p50"] = _ratio(row["bm25s_rebuild_ms_p50"],
                                                            row["search_after_write_ms_p50"])
    row.update({"cold_open_first_search_s": cold["cold_open_first_search_s"],
                "cold_process_s": round(cold_process_s, 3),
                "warm_open_first_search_s": loop["warm_open_first_search_s"],
                "model_load_s": loop["model_load_s"],
                "rss_steady_mb": loop["rss"]["steady"], "rss_peak_mb": loop["rss"]["peak"],
                "file_mb": file_mb, "empty_results": loop["empty_results"],
                "llm_calls": loop["llm_calls"], "llm_tokens": loop["llm_tokens"], "fill": fill})
    return row


def _cell(value: Any, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _triple(row: dict[str, Any], name: str) -> str:
    return " / ".join(_cell(row[f"{name}_{p}"]) for p in ("p50", "p95", "max"))


def print_tables(document: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    sizes = document["sizes"]
    turns = next(iter(sizes.values()))["turns"] if sizes else 0
    latency = Table(title=f"bench stream: the agent loop, {turns} turns per size, k={document['k']}"
                          " (ms, p50 / p95 / max, wall clock)")
    for header in ("N", "traces", "add", "search after add", "search, no write",
                   "after/no-write p50", "bm25s rebuild+query", "bm25s/after-add p50"):
        latency.add_column(header, justify="right", no_wrap=header in ("N", "traces"))
    for size, row in sizes.items():
        latency.add_row(size, str(row["traces"]), _triple(row, "add_ms"),
                        _triple(row, "search_after_write_ms"), _triple(row, "search_ms"),
                        _cell(row["search_after_write_vs_search_p50"], 2),
                        _triple(row, "bm25s_rebuild_ms"),
                        _cell(row["bm25s_rebuild_vs_search_after_write_p50"], 2))
    console.print(latency)
    resources = Table(title="bench stream: open, memory, disk, LLM")
    for header in ("N", "cold open + 1st search s", "RSS steady MB", "RSS peak MB", "file MB",
                   "fill s (cached)", "LLM calls", "LLM tokens"):
        resources.add_column(header, justify="right")
    for size, row in sizes.items():
        fill = row["fill"]
        fill_s = (f"{(fill.get('write_s') or 0) + (fill.get('index_s') or 0):.1f}"
                  f"{' (cached)' if fill.get('cached') else ''}" if int(size) else "-")
        resources.add_row(size, _cell(row["cold_open_first_search_s"], 2),
                          _cell(row["rss_steady_mb"]), _cell(row["rss_peak_mb"]),
                          _cell(row["file_mb"]), fill_s, str(row["llm_calls"]),
                          str(row["llm_tokens"]))
    console.print(resources)


NOTES = [
    ("each size N runs in fresh subprocesses: fill (skipped with a cache hit), the loop (its "
     "VmHWM/VmRSS are rss_peak_mb/rss_steady_mb, read right after the loop), the cold open, "
     "the bm25s baseline"),
    ("latencies are wall clock around Memory.add / Memory.search_detailed (k as given), so the "
     "work a write leaves for the next search is counted; the loop process first loads the "
     "embedder and entity extractor (model_load_s), then opens the file and runs one warm-up "
     "search (warm_open_first_search_s)"),
    ("stream_texts_in_prefill: streamed turns whose text is already in the pre-filled scope "
     "(always all of them when --stream-data is --data and N >= its turns); the store reuses "
     "stored encodings of such text, so their writes are cheaper than new text; give another "
     "conversation as --stream-data to stream new text"),
    ("search_after_write: the search right after each add, with question 2i; search: the next "
     "search, with question 2i+1, no write in between (questions: categories 1-4, cycling)"),
    ("cold_open_first_search_s: Memory(path) + first search in a new interpreter (imports and "
     "process start excluded; cold_process_s includes them) on the file the loop left"),
    "file_mb: the db file plus its -wal after the loop",
    ("bm25s_rebuild: tokenize the new turn (encoders.tokenize), rebuild one bm25s Lucene BM25 "
     "index over every turn of the scope (the harness baselines' turn form), take the top k "
     "for the search-after-add question; the prefill is tokenized once, untimed; over the "
     "first bm25s_turns streamed turns (--baseline-turns caps them)"),
    "llm_calls / llm_tokens: reader.base usage counter around the loop (the run fails if it moves)",
]


def run(data: Path | None = None, stream_data: Path | None = None,
        sizes: Sequence[int] = DEFAULT_SIZES, turns: int | None = None,
        json_out: Path | None = None, cache_dir: Path | None = None, k: int = K,
        progress: bool = True, console: Console | None = None,
        baseline_turns: int | None = None) -> dict[str, Any]:
    """Run the benchmark; print its tables, write ``json_out``; return the document."""
    data = Path(data) if data is not None else default_data()
    stream_data = Path(stream_data) if stream_data is not None else data
    for path, option in ((data, "--data"), (stream_data, "--stream-data")):
        if not path.is_file():
            raise FileNotFoundError(f"{option} {path} is not a file: give one LoCoMo conversation")
    if any(size < 0 for size in sizes) or len(set(sizes)) != len(sizes) or not sizes:
        raise ValueError(f"--sizes must be distinct non-negative trace counts, got {list(sizes)}")
    for value, option in ((turns, "--turns"), (baseline_turns, "--baseline-turns")):
        if value is not None and value < 1:
            raise ValueError(f"{option} must be at least 1, got {value}")
    conversation, streamed = _conversation(data), _conversation(stream_data)
    if not conversation.drafts:
        raise ValueError(f"{data} has no turns to replicate")
    questions = questions_of(streamed) or questions_of(conversation)
    if not questions:
        raise ValueError(f"neither {stream_data} nor {data} has LoCoMo questions of categories 1-4")
    if len(questions) < 2:
        questions = questions * 2
    stream_turns = len(streamed.drafts[:turns])
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="zeromem-stream-") as tmp:
        for size in sorted(sizes):
            rows[str(size)] = measure_size(size, data, stream_data, turns, questions, Path(tmp),
                                           cache_dir, k=k, progress=progress,
                                           baseline_turns=baseline_turns)
    options = {"data": str(data), "stream_data": str(stream_data), "sizes": sorted(sizes),
               "turns": turns, "baseline_turns": baseline_turns, "k": k,
               "cache_dir": str(cache_dir) if cache_dir else None,
               "user": USER}
    from zeromem.config import Config
    config = Config()
    document = {
        "benchmark": "stream", "k": k, "sizes": rows,
        "data": {"data": str(data), "conversation": conversation.name,
                 "conversation_turns": len(conversation.drafts),
                 "stream_data": str(stream_data), "stream_conversation": streamed.name,
                 "stream_turns": stream_turns, "questions": len(questions)},
        "config": {**options, "retrieval": dataclasses.asdict(config.retrieval),
                   "encoders": dataclasses.asdict(config.encoders)},
        "versions": report.versions(), "git": report.git_commit(), "machine": report.machine(),
        "argv": sys.argv, "notes": NOTES,
    }
    print_tables(document, console)
    if json_out is not None:
        report.write_json(document, json_out)
    return document
