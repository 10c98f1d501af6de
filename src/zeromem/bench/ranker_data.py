"""Training data for the learned ranker: each benchmark's candidate pools, labelled with gold.

For every scored question the engine runs once (budget ``K`` turns) with
``RetrievalConfig.export_candidates`` on; its pool (retrieval/rank_features.py) becomes rows of
features, a 0/1 label (the candidate's source id is a gold turn), the candidate's place in the
hand-tuned evidence (-1: not returned) and the question it belongs to. Labels come from here,
the bench: the product code never sees gold.

Memories are stored under ``<cache>/stores/<benchmark>/`` and reopened on a rerun, so ingest is
paid once; the pools go to ``<cache>/<benchmark>.npz``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..retrieval.rank_features import FEATURES
from .memories import stored_memory
from .npz import load_arrays, save_arrays
from .records import Corpus

K = 10  # one search per question; every headline cut-off (1, 2, 5, 10) is read from its order
BENCHMARKS = ("locomo", "hotpotqa", "longmemeval", "memdaily")
# LongMemEval ingests ~12 s per question (one ~500-turn memory each): a fixed subset, both
# halves, of the dev file's questions: index i with i % LME_STRIDE in LME_KEEP.
LME_STRIDE = 30
LME_KEEP = (0, 1)
# MemDaily: one small memory per trajectory (~0.7 s each on a busy machine): the first
# MEMDAILY_PER_FILE trajectories of each of its 26 files.
MEMDAILY_PER_FILE = 2


@dataclass(slots=True)
class Pools:
    """Every question's pool of one benchmark, as flat rows plus per-question arrays."""

    features: np.ndarray  # (rows, len(FEATURES)) float64
    label: np.ndarray  # (rows,) int8
    hand: np.ndarray  # (rows,) int16: place in the hand-tuned evidence, -1 when not returned
    query: np.ndarray  # (rows,) int32: index into the per-question arrays
    qid: np.ndarray  # (questions,) str
    category: np.ndarray  # (questions,) str
    fold: np.ndarray  # (questions,) int8: 0 or 1, questions grouped by memory or file half
    n_gold: np.ndarray  # (questions,) int32: gold turns, found in the pool or not

    def save(self, path: Path) -> None:
        save_arrays(self, path, FEATURES)

    @classmethod
    def load(cls, path: Path) -> Pools:
        return load_arrays(cls, path, FEATURES, "written with other features; run export-ranker-data again")


def corpora_of(benchmark: str, data: Path) -> tuple[list[Corpus], list[int]]:
    """(the benchmark's corpora, each corpus's fold) from the shared data folder ``data``."""
    if benchmark == "locomo":
        from .locomo import load_locomo
        corpora = load_locomo([data / "locomo"]).corpora
        return corpora, [i % 2 for i in range(len(corpora))]
    if benchmark == "hotpotqa":
        from .hotpotqa import load_hotpotqa
        pooled = load_hotpotqa([data / "hotpotqa" / "hotpot_dev_distractor_first50.json",
                                data / "hotpotqa" / "hotpot_dev_distractor_more.json"]).corpus
        # one memory, questions folded by their half (even / odd position in the pool)
        return [pooled], [-1]
    if benchmark == "longmemeval":
        from .longmemeval import load_longmemeval
        every = load_longmemeval(data / "longmemeval" / "longmemeval_s_dev.json.gz").corpora
        kept = [(i, c) for i, c in enumerate(every) if i % LME_STRIDE in LME_KEEP]
        return [c for _, c in kept], [i % 2 for i, _ in kept]
    if benchmark == "memdaily":
        from .memdaily import load_memdaily
        corpora = load_memdaily([data / "memdaily"], limit=MEMDAILY_PER_FILE).corpora
        return corpora, [-1] * len(corpora)  # folded by the trajectory's half (A / B)
    raise ValueError(f"unknown benchmark {benchmark!r}; known: {', '.join(BENCHMARKS)}")


def _fold(query_extra: dict[str, Any], corpus_fold: int) -> int:
    if corpus_fold >= 0:
        return corpus_fold
    return 0 if query_extra.get("half") in ("even", "A") else 1


def export(benchmark: str, data: Path, cache: Path, *, config: Config | None = None,
           progress: bool = True) -> Pools:
    """Run the benchmark's questions and collect their labelled pools (module docstring)."""
    from tqdm import tqdm

    base = config or Config()
    config = dataclasses.replace(base, retrieval=dataclasses.replace(
        base.retrieval, export_candidates=True, learned_ranker=False))
    corpora, folds = corpora_of(benchmark, data)
    stores = cache / "stores" / benchmark
    stores.mkdir(parents=True, exist_ok=True)
    rows: list[np.ndarray] = []
    labels: list[np.ndarray] = []
    hands: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    qids: list[str] = []
    categories: list[str] = []
    fold_of: list[int] = []
    n_gold: list[int] = []
    total = sum(sum(q.scored for q in c.queries) for c in corpora)
    with tqdm(total=total, disable=not progress, unit="q", desc=benchmark) as bar:
        for corpus, corpus_fold in zip(corpora, folds):
            mem, _ = stored_memory(stores, corpus, config)
            try:
                for query in corpus.queries:
                    if not query.scored:
                        continue
                    result = mem.search_detailed(query.text, user=corpus.name, k=K, now=query.asked_at)
                    pool = result.candidates
                    if pool is None:
                        raise RuntimeError("the engine returned no candidate pool")
                    gold = set(query.gold)
                    owners.append(np.full(len(pool.nodes), len(qids), dtype=np.int32))
                    rows.append(pool.features)
                    labels.append(np.array([s in gold for s in pool.source_ids], dtype=np.int8))
                    hand = np.full(len(pool.nodes), -1, dtype=np.int16)
                    hand[list(pool.hand_order)] = np.arange(len(pool.hand_order))
                    hands.append(hand)
                    qids.append(query.qid)
                    categories.append(query.category)
                    fold_of.append(_fold(query.extra, corpus_fold))
                    n_gold.append(len(gold))
                    bar.update(1)
            finally:
                mem.close()
    width = len(FEATURES)
    return Pools(np.concatenate(rows) if rows else np.zeros((0, width)),
                 np.concatenate(labels) if labels else np.zeros(0, np.int8),
                 np.concatenate(hands) if hands else np.zeros(0, np.int16),
                 np.concatenate(owners) if owners else np.zeros(0, np.int32),
                 np.array(qids), np.array(categories), np.array(fold_of, dtype=np.int8),
                 np.array(n_gold, dtype=np.int32))


def pools_path(cache: Path, benchmark: str) -> Path:
    return cache / f"{benchmark}.npz"


def load_or_export(benchmarks: Sequence[str], data: Path, cache: Path, *,
                   progress: bool = True) -> dict[str, Pools]:
    """Each benchmark's pools, from ``cache`` when exported before."""
    out = {}
    for benchmark in benchmarks:
        path = pools_path(cache, benchmark)
        if not path.exists():
            export(benchmark, data, cache, progress=progress).save(path)
        out[benchmark] = Pools.load(path)
    return out
