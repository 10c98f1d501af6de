"""Memory-operation latency as one scope grows: ``zeromem bench scale``.

One real LoCoMo conversation is stored, indexed and queried; then its traces are stored again
under new session ids (and marked source ids) until the scope holds each requested size.
Repeated text reuses the stored encodings, so the larger sizes cost database writes and index
builds, not hours of encoding — the query path is exactly the one users run. For each size it
reports the first-search load time (snapshot, indexes, graph) and the per-query latency of
``Memory.search`` with and without query encoding, over the conversation's questions, the
agent-loop step (``add`` a turn, then search), the cold open (a new ``Memory`` on the same
store: open + first search) and the storage size. ``--db`` runs it on any store URL, e.g. a
PostgreSQL database, beside the default temporary SQLite file.
"""

from __future__ import annotations

import json
import platform
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from zeromem._internals import store_of
from zeromem.ingest import load_file
from zeromem.memory import Memory
from zeromem.store.factory import redact_url


def _replica(drafts: list[dict[str, Any]], copy: int) -> list[dict[str, Any]]:
    out = []
    for draft in drafts:
        item = dict(draft)
        item["session"] = f"{draft.get('session') or 'session'}#copy{copy}"
        if draft.get("source_id"):
            item["source_id"] = f"{draft['source_id']}#copy{copy}"
        out.append(item)
    return out


def run(data: Path, sizes: Sequence[int] = (1000, 10000, 100000), queries: int = 200,
        json_out: Path | None = None, progress: bool = True, db: str | None = None,
        adds: int = 20) -> dict[str, Any]:
    conversation = load_file(data)[0]
    questions = [q["question"] for q in conversation.qa or [] if q.get("category") in (1, 2, 3, 4)][:queries]
    if not questions:
        raise ValueError(f"{data} has no LoCoMo questions of categories 1-4 to time")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        target = db or str(Path(tmp) / "scale.db")
        rows = _measure(target, conversation, questions, sorted(sizes), adds, progress)
    result = {"benchmark": "scale", "data": str(data), "queries": len(questions),
              "store": "sqlite (temporary file)" if db is None else redact_url(db),
              "machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine()},
              "sizes": rows}
    _print(result, rows, len(questions))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def _measure(target: str, conversation: Any, questions: list[str], sizes: list[int], adds: int,
             progress: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with Memory(target, user="scale") as mem:
        mem.delete_scope()  # a rerun on the same --db starts from an empty scope
        stored = 0
        copy = 0
        for size in sorted(sizes):
            t0 = time.perf_counter()
            while stored < size:
                batch = _replica(conversation.drafts, copy)[: size - stored]
                mem.add_many(batch)
                stored += len(batch)
                copy += 1
            write_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            report = mem.index()
            index_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            mem.search(questions[0])
            load_s = time.perf_counter() - t0
            totals, retrieval = [], []
            for question in tqdm(questions, desc=f"{size} traces", disable=not progress):
                timings = mem.search_detailed(question, k=10).explain.timings
                totals.append(timings["total_ms"])
                retrieval.append(timings["retrieve_ms"])
            added, after_add = _agent_loop(mem, conversation.drafts, questions, adds, size)
            size_mb = store_of(mem).size_bytes() / 1e6
            cold_s = _cold_open(target, questions[0])
            rows.append({
                "traces": stored, "units": sum(mem.stats().units.values()),
                "write_s": round(write_s, 2), "index_s": round(index_s, 2),
                "encoded_texts": report.encoded_texts, "first_search_load_s": round(load_s, 2),
                "latency_ms_p50": round(float(np.percentile(totals, 50)), 2),
                "latency_ms_p95": round(float(np.percentile(totals, 95)), 2),
                "latency_ms_p50_no_encode": round(float(np.percentile(retrieval, 50)), 2),
                "latency_ms_p95_no_encode": round(float(np.percentile(retrieval, 95)), 2),
                "add_ms_p50": _p(added, 50), "search_after_add_ms_p50": _p(after_add, 50),
                "search_after_add_ms_p95": _p(after_add, 95),
                "cold_open_first_search_s": round(cold_s, 2), "storage_mb": round(size_mb, 1),
            })
            stored += len(added)
        mem.delete_scope()
    return rows


def _agent_loop(mem: Memory, drafts: list[dict[str, Any]], questions: list[str], adds: int,
                size: int) -> tuple[list[float], list[float]]:
    """``adds`` times: add one turn (a new session of its own), then search; ms of each."""
    added, after = [], []
    for i in range(adds):
        draft = dict(drafts[i % len(drafts)])
        draft.update(session=f"loop-{size}", seq=None, source_id=None)
        t0 = time.perf_counter()
        mem.add(**{k: v for k, v in draft.items() if v is not None})
        added.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        mem.search(questions[i % len(questions)], k=10)
        after.append((time.perf_counter() - t0) * 1000)
    return added, after


def _cold_open(target: str, question: str) -> float:
    """Seconds for a new Memory on the same store to open and answer its first search."""
    t0 = time.perf_counter()
    with Memory(target, user="scale") as fresh:
        fresh.search(question, k=10)
    return time.perf_counter() - t0


def _p(values: list[float], q: int) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def _print(result: dict[str, Any], rows: list[dict[str, Any]], queries: int) -> None:
    table = Table(title=f"Memory-operation latency vs scope size ({queries} queries, k=10; "
                        f"{result['store']})")
    columns = {"traces": "traces", "units": "units", "index_s": "index s",
               "first_search_load_s": "load s", "latency_ms_p50": "p50 ms",
               "latency_ms_p95": "p95 ms", "latency_ms_p50_no_encode": "p50 no-enc",
               "latency_ms_p95_no_encode": "p95 no-enc", "add_ms_p50": "add ms",
               "search_after_add_ms_p50": "after-add ms", "cold_open_first_search_s": "cold s",
               "storage_mb": "MB"}
    for header in columns.values():
        table.add_column(header, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(*(str(row[key]) for key in columns))
    Console().print(table)
