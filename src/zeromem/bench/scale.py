"""Memory-operation latency as one scope grows: ``zeromem bench scale``.

One real LoCoMo conversation is stored, indexed and queried; then its traces are stored again
under new session ids (and marked source ids) until the scope holds each requested size.
Repeated text reuses the stored encodings, so the larger sizes cost database writes and index
builds, not hours of encoding — the query path is exactly the one users run. For each size it
reports the first-search load time (snapshot, indexes, graph) and the per-query latency of
``Memory.search`` with and without query encoding, over the conversation's questions.
"""

from __future__ import annotations

import json
import platform
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from ..ingest import load_file
from ..memory import Memory


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
        json_out: Path | None = None, progress: bool = True) -> dict[str, Any]:
    conversation = load_file(data)[0]
    questions = [q["question"] for q in conversation.qa if q.get("category") in (1, 2, 3, 4)][:queries]
    if not questions:
        raise ValueError(f"{data} has no LoCoMo questions of categories 1-4 to time")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "scale.db", user="scale") as mem:
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
                timings = mem.search_detailed(question, k=10).timings
                totals.append(timings["total_ms"])
                retrieval.append(timings["retrieve_ms"])
            rows.append({
                "traces": stored, "units": sum(mem.stats()["units"].values()),
                "write_s": round(write_s, 2), "index_s": round(index_s, 2),
                "encoded_texts": report.encoded_texts, "first_search_load_s": round(load_s, 2),
                "latency_ms_p50": round(float(np.percentile(totals, 50)), 2),
                "latency_ms_p95": round(float(np.percentile(totals, 95)), 2),
                "latency_ms_p50_no_encode": round(float(np.percentile(retrieval, 50)), 2),
                "latency_ms_p95_no_encode": round(float(np.percentile(retrieval, 95)), 2),
            })
    result = {"benchmark": "scale", "data": str(data), "queries": len(questions),
              "machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine()},
              "sizes": rows}
    table = Table(title=f"Memory-operation latency vs scope size ({len(questions)} queries, k=10)")
    columns = {"traces": "traces", "units": "units", "index_s": "index s",
               "first_search_load_s": "load s", "latency_ms_p50": "p50 ms",
               "latency_ms_p95": "p95 ms", "latency_ms_p50_no_encode": "p50 no-enc",
               "latency_ms_p95_no_encode": "p95 no-enc"}
    for header in columns.values():
        table.add_column(header, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(*(str(row[key]) for key in columns))
    Console().print(table)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result
