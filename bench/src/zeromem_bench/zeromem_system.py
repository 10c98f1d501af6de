"""zeromem as a benchmarked system, driven through its public API only.

Exactly what a user does: one ``Memory`` file per corpus, ``add_many`` of the corpus's traces,
``index`` (ingest time covers both), then one ``render_context`` (or ``search``) per query.
Ablations are ``RetrievalConfig`` switches, named after the Zero-Mem paper's ablation rows
(graph only, hierarchy only, no closure, no calibration). With ``memories`` (a folder), each
corpus's memory is kept there and a rerun reopens it instead of ingesting again (bench/memories.py):
searches are measured, ingest is not (``reopened`` counts those corpora).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from zeromem.config import Config, RetrievalConfig
from zeromem.retrieval.calibrate import NO_ANSWER_THRESHOLD

from .records import Corpus, QueryResult, Unit, elapsed_ms

ABLATIONS: dict[str, dict[str, Any]] = {
    "zeromem": {},
    "zeromem-graph-only": {"use_hierarchy": False},
    "zeromem-hierarchy-only": {"use_graph": False},
    "zeromem-no-closure": {"use_closure": False},
    "zeromem-no-calibration": {"use_calibration": False},
}


def retrieval_config(base: RetrievalConfig, variant: str) -> RetrievalConfig:
    """``base`` with the switches of ablation ``variant`` (see :data:`ABLATIONS`) applied."""
    if variant not in ABLATIONS:
        raise ValueError(f"unknown zeromem variant {variant!r}; known: {', '.join(ABLATIONS)}")
    return replace(base, **ABLATIONS[variant])


class ZeromemSystem:
    """One memory file per corpus, in a private temporary folder removed by ``close``, or kept
    in ``memories`` for later runs."""

    def __init__(self, name: str = "zeromem", config: Config | None = None, *,
                 progress: bool = False, memories: Path | None = None) -> None:
        base = config or Config()
        self.name = name
        # Traces are stored first and derived by one index() call: the same work as deriving
        # on write, but index() can show a progress bar (a 5,000-turn haystack takes minutes).
        self.config = replace(base, retrieval=retrieval_config(base.retrieval, name),
                              index_on_write=False)
        self.progress = progress
        self._folder = tempfile.TemporaryDirectory(prefix="zeromem-bench-")
        self._memories: dict[str, Any] = {}
        self._created = 0
        self.model_load_ms = 0.0
        self.memories = memories
        self.reopened = 0  # corpora whose memory an earlier run kept (their ingest is not timed)

    def ingest(self, corpus: str, units: Sequence[Unit]) -> float:
        from zeromem.memory import Memory  # the facade pulls in every layer: load it only when used

        if self.memories is not None:
            from .memories import stored_memory

            kept, ingest_ms = stored_memory(self.memories, Corpus(corpus, list(units), []), self.config,
                                            progress=self.progress, warm=self._warm)
            self._memories[corpus] = kept
            if ingest_ms is None:
                self._warm(kept)  # as a new memory is: the first search does not load the models
                self.reopened += 1
                return 0.0
            return ingest_ms
        self._created += 1
        mem = Memory(Path(self._folder.name) / f"{self._created}.db", user=corpus,
                     config=self.config)
        self._memories[corpus] = mem
        self._warm(mem)
        start = time.perf_counter()
        mem.add_many([unit.draft for unit in units], user=corpus)
        mem.index(user=corpus, progress=self.progress)
        return elapsed_ms(start)

    def _warm(self, mem: Any) -> None:
        """Load the encoder models before ingest is timed: loading happens once per process
        (models are cached), so it is setup cost, reported apart as ``model_load_ms``."""
        encoders = getattr(mem, "encoders", None)
        start = time.perf_counter()
        for name in ("embedder", "extractor"):
            if encoders is not None and hasattr(type(encoders), name):
                getattr(encoders, name)
        self.model_load_ms += elapsed_ms(start)

    def query(self, corpus: str, question: str, k: int, asked_at: str | None = None) -> QueryResult:
        mem = self._memories[corpus]
        start = time.perf_counter()
        # "Last week" in the question counts from when it is asked. Not as_of: a data set may
        # date sessions later on the day of the question (LongMemEval does).
        result = mem.search_detailed(question, user=corpus, k=k, now=asked_at)
        # Score what search returned; the rendered block may show fewer items when they
        # exceed its token budget, and that is measured by the context metrics instead.
        evidence = list(result.evidence)
        context = mem.render(evidence, user=corpus).text
        total_ms = float(result.explain.timings.get("total_ms", elapsed_ms(start)))
        encode_ms = float(result.explain.timings["encode_ms"]) if "encode_ms" in result.explain.timings else None
        score = result.no_answer_score
        groups = [[item.provenance.source_id or item.trace_id] for item in evidence]
        return QueryResult(groups, [item.text for item in evidence], context, total_ms, encode_ms,
                           None if score is None else float(score))

    def no_answer_threshold(self) -> float:
        """The engine's own cut-off for 'no answer in memory' (``calibrate.NO_ANSWER_THRESHOLD``)."""
        return NO_ANSWER_THRESHOLD

    def release(self, corpus: str) -> None:
        mem = self._memories.pop(corpus, None)
        if mem is not None:
            mem.close()

    def close(self) -> None:
        for corpus in list(self._memories):
            self.release(corpus)
        self._folder.cleanup()
