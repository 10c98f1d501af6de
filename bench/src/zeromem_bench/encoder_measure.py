"""Measurement helpers for ``zeromem bench encoders``: data, timing, recall, synthesis.

Nothing here is timed inside a unit test; these functions only measure and return numbers.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CATEGORIES = (1, 2, 3, 4)  # LoCoMo question categories with gold evidence turns
RECALL_K = 10


@dataclass
class Conversation:
    """One LoCoMo conversation: turn texts, their dia_ids, scored questions, raw drafts."""

    name: str
    turns: list[str]
    ids: list[str]
    drafts: list[dict[str, Any]]
    questions: list[str] = field(default_factory=list)
    gold: list[tuple[int, ...]] = field(default_factory=list)  # turn indices per question


def load_conversations(paths: Sequence[Path]) -> list[Conversation]:
    """Read LoCoMo files with the project's importer; keep questions of categories 1–4 that
    have at least one gold turn."""
    from zeromem.ingest import load_file

    from .locomo import expand_paths
    from .metrics import repair_evidence_ids

    conversations = []
    for path in expand_paths(paths):
        for conv in load_file(path, format="locomo"):
            ids = [str(d.get("source_id") or f"#{i}") for i, d in enumerate(conv.drafts)]
            position = {dia: i for i, dia in enumerate(ids)}
            item = Conversation(conv.name, [d["text"] for d in conv.drafts], ids, conv.drafts)
            for qa in conv.qa or []:
                if qa.get("category") not in CATEGORIES:
                    continue
                gold = repair_evidence_ids(qa.get("evidence") or [], frozenset(position)).ids
                if gold:
                    item.questions.append(str(qa["question"]))
                    item.gold.append(tuple(position[g] for g in gold))
            conversations.append(item)
    return conversations


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def latency_ms(fn: Callable[[Any], Any], inputs: Sequence[Any], repeats: int = 1) -> dict[str, float]:
    """p50 / p95 / mean milliseconds of ``fn(x)`` over the inputs (after one warm-up call)."""
    if not inputs:
        return {"p50_ms": 0.0, "p95_ms": 0.0, "mean_ms": 0.0, "n": 0}
    fn(inputs[0])
    samples = []
    for _ in range(repeats):
        for x in inputs:
            start = time.perf_counter()
            fn(x)
            samples.append((time.perf_counter() - start) * 1000)
    arr = np.asarray(samples)
    return {"p50_ms": round(float(np.percentile(arr, 50)), 3),
            "p95_ms": round(float(np.percentile(arr, 95)), 3),
            "mean_ms": round(float(arr.mean()), 3), "n": len(samples)}


def recall_at_k(ranked: Sequence[Sequence[int]], gold: Sequence[Sequence[int]], k: int = RECALL_K) -> float:
    """Mean fraction of each question's gold turns found in its top-k."""
    if not gold:
        return 0.0
    return float(np.mean([len(set(r[:k]) & set(g)) / len(g) for r, g in zip(ranked, gold)]))


def machine() -> dict[str, Any]:
    """What the numbers were measured on (load average shows how busy the machine was)."""
    import platform

    return {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(), "load_average": [round(x, 2) for x in os.getloadavg()]}


# -- lexical: bm25s vs SQLite FTS5 ------------------------------------------------------------

def fts5_rankings(turns: Sequence[str], queries: Sequence[str], *, pretokenized: bool,
                  k: int = RECALL_K) -> tuple[list[list[int]], dict[str, float], float]:
    """Top-k turn indices per query from SQLite FTS5 (its own bm25(), k1=1.2, b=0.75).

    ``pretokenized`` feeds FTS5 our tokens (isolates the index); otherwise FTS5 tokenizes
    with its built-in ``porter unicode61`` (what a user gets natively). Returns rankings,
    per-query latency and build seconds.
    """
    from zeromem.encoders.tokenize import tokenize

    db = sqlite3.connect(":memory:")
    tokenizer = "unicode61" if pretokenized else "porter unicode61"
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='{tokenizer}')")
    rows = [(i + 1, " ".join(tokenize(x)) if pretokenized else x) for i, x in enumerate(turns)]
    def fill() -> None:
        db.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", rows)
        db.commit()

    _, build = timed(fill)

    def terms(query: str) -> list[str]:
        if pretokenized:
            return tokenize(query)
        import re

        return [w for w in re.findall(r"\w+", query.lower()) if len(w) > 1]

    def rank(query: str) -> list[int]:
        words = terms(query)
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        cur = db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid LIMIT ?",
                         (match, k))
        return [r[0] - 1 for r in cur]

    rankings = [rank(q) for q in queries]
    return rankings, latency_ms(rank, list(queries)), build


# -- synthesis --------------------------------------------------------------------------------

def synth_vectors(real: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """``n`` unit vectors: the real ones first, then mixtures of two random real vectors
    (weights 0.5–1) with small noise — distinct points spread like real turns, not tiled
    duplicates (which make any ANN look worse and exact search look the same)."""
    rng = np.random.default_rng(seed)
    if n <= len(real):
        out = real[:n].copy()
    else:
        m = n - len(real)
        i, j = rng.integers(0, len(real), m), rng.integers(0, len(real), m)
        a = rng.uniform(0.5, 1.0, (m, 1)).astype(np.float32)
        mixed = a * real[i] + (1 - a) * real[j]
        mixed += rng.normal(0, 0.01, mixed.shape).astype(np.float32)
        out = np.concatenate([real, mixed])
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return np.ascontiguousarray(out, dtype=np.float32)


def synth_tokens(real: Sequence[Sequence[str]], n: int) -> list[list[str]]:
    """``n`` token lists by cycling the real turns (BM25 latency depends on postings length)."""
    return [list(real[i % len(real)]) for i in range(n)]


def lexical_bytes(index: Any) -> int:
    """Bytes held by a LexicalIndex's sparse score matrix (vocabulary strings excluded)."""
    bm25 = getattr(index, "_bm25", None)
    if bm25 is None:
        return 0
    return int(sum(np.asarray(bm25.scores[key]).nbytes for key in ("data", "indices", "indptr")))


def ann_bytes(index: Any) -> int:
    """Serialized bytes of the HNSW graph of a DenseIndex, vectors included (0 before it is
    built). Its in-memory arena is preallocated in large blocks and says little per vector."""
    ann = getattr(index, "_ann", None)
    return len(ann.save()) if ann is not None else 0
