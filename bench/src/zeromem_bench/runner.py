"""The benchmark loop shared by LoCoMo and HotpotQA (the types it passes around: records.py).

A *system* ingests one corpus (a LoCoMo conversation, the pooled HotpotQA paragraphs) and then
answers queries with a ranked list of evidence items, each covering one or more *turns* named
by their source id ("D3:5", a Wikipedia title).

Each question is asked twice per system: once with the curve budget (``CURVE_K`` = 20 turns)
for recall@1/5/20 and MRR, and once with the requested ``k`` for the headline numbers
(recall@k, all@k, hit@k), the rendered context (its tokens, answer-in-context, the reader) and
latency. The engine spends its budget differently for each k, so cutting the 20-turn list at k
would not measure what a user asking for k gets. When k is 20 the two calls are one.

Every LLM call in the process is counted by :mod:`zeromem.reader.base`; the loop snapshots the
counter around each system's ingest and queries and raises ``LLMForbidden`` if it moved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from zeromem.reader import base as reader_base

from .records import (
    CURVE_K,
    Corpus,
    Query,
    QueryResult,
    QuestionRun,
    System,
    SystemRun,
    Unit,
    elapsed_ms,
)

__all__ = ["CURVE_K", "Corpus", "Query", "QueryResult", "QuestionRun", "System", "SystemRun", "Unit",
           "elapsed_ms", "execute", "make_systems", "run_benchmark", "run_reader"]


def make_systems(names: Sequence[str], config: Any = None, *, progress: bool = False,
                 memories: Path | None = None) -> list[System]:
    """Instantiate systems by name: zeromem variants and the baselines (one shared index set);
    ``progress``: zeromem shows a bar while it indexes a corpus; ``memories``: the folder where
    zeromem keeps each corpus's memory for later runs (bench/memories.py)."""
    from zeromem.config import Config

    from .baselines import BASELINES, TurnIndexes
    from .zeromem_system import ABLATIONS, ZeromemSystem

    config = config or Config()
    shared: TurnIndexes | None = None
    systems: list[System] = []
    for name in names:
        if name in ABLATIONS:
            systems.append(ZeromemSystem(name, config, progress=progress, memories=memories))
        elif name in BASELINES:
            shared = shared or TurnIndexes(config.encoders)
            systems.append(BASELINES[name](shared))
        else:
            raise ValueError(f"unknown system {name!r}; known: "
                             f"{', '.join([*ABLATIONS, *BASELINES])}")
    return systems


def run_benchmark(corpora: Sequence[Corpus], systems: Sequence[System], k: int, *,
                  count_tokens: Callable[[str], int], progress: bool = True) -> list[SystemRun]:
    """Ingest every corpus into every system and ask every query (see the module docstring)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    results = [SystemRun(system.name) for system in systems]
    for result, system in zip(results, systems):
        threshold = getattr(system, "no_answer_threshold", None)
        result.no_answer_threshold = threshold() if callable(threshold) else None
    total = sum(len(c.queries) for c in corpora) * len(systems)
    from tqdm import tqdm  # here: `zeromem --help` imports this module to list `bench`

    bar = tqdm(total=total, disable=not progress, unit="q", dynamic_ncols=True)
    try:
        for corpus in corpora:
            for result, system in zip(results, systems):
                bar.set_description(f"{system.name} · {corpus.name}")
                before = reader_base.usage()
                result.ingest_ms += system.ingest(corpus.name, corpus.units)
                result.turns += len(corpus.units)
                for query in corpus.queries:
                    result.runs.append(_ask(system, corpus.name, query, k, count_tokens))
                    bar.update(1)
                spent = reader_base.usage() - before
                reader_base.assert_no_llm_calls(spent, f"{system.name} ingest+search on {corpus.name}")
                result.llm = result.llm + spent
            for system in systems:
                system.release(corpus.name)
    finally:
        bar.close()
        for result, system in zip(results, systems):
            result.model_load_ms = getattr(system, "model_load_ms", None)
            result.reopened = getattr(system, "reopened", 0)
            system.close()
    return results


def _ask(system: System, corpus: str, query: Query, k: int,
         count_tokens: Callable[[str], int]) -> QuestionRun:
    headline = system.query(corpus, query.text, k, query.asked_at)
    curve = headline if k == CURVE_K else system.query(corpus, query.text, CURVE_K, query.asked_at)
    return QuestionRun(query, curve, headline, count_tokens(headline.context))


def run_reader(results: Sequence[SystemRun], reader: Any, *, progress: bool = True) -> None:
    """Ask the reader every question over each system's headline context (one call each);
    the predictions are stored on the runs. Runs after all memory operations are done."""
    total = sum(len(r.runs) for r in results)
    from tqdm import tqdm

    with tqdm(total=total, disable=not progress, unit="q", desc="reader") as bar:
        for result in results:
            before = reader_base.usage()
            for run in result.runs:
                run.prediction = reader.answer(run.query.text, run.headline.context).text
                bar.update(1)
            result.reader_llm = reader_base.usage() - before


def execute(benchmark: str, corpora: Sequence[Corpus], system_names: Sequence[str], k: int, *,
            report_system: Callable[[SystemRun, int, str | None], dict[str, Any]],
            data: dict[str, Any], options: dict[str, Any], config: Any = None,
            reader: Any = None, progress: bool = True, memories: Path | None = None) -> dict[str, Any]:
    """Run a whole benchmark and return its JSON document (see :mod:`zeromem_bench.report`);
    ``memories``: keep zeromem's memories there and reopen them on a rerun."""
    from zeromem.encoders.token_count import load_token_counter

    from . import report

    tokenizer, count_tokens = load_token_counter()
    systems = make_systems(system_names, config, progress=progress, memories=memories)
    results = run_benchmark(corpora, systems, k, count_tokens=count_tokens, progress=progress)
    model = getattr(reader, "model", None) if reader is not None else None
    if reader is not None:
        run_reader(results, reader, progress=progress)
    blocks = {result.name: report_system(result, k, model) for result in results}
    notes = [
        f"each question is asked twice per system: with k={CURVE_K} for recall@j (j != k) and "
        f"MRR, and with k={k} for recall@{k}, all@{k}, hit@{k}, the context and latency",
        "returned evidence is flattened to the turns it covers, deduplicated, capped at k turns",
        "latency is the headline call; no_encode subtracts the query-encoding time",
        "zeromem's context is Memory.render_context with its default token budget; its "
        "retrieval metrics use the evidence Memory.search returned for that call",
        "mrr is 0-1; every other rate is a percentage 0-100; times are milliseconds",
    ]
    reopened = {result.name: result.reopened for result in results if result.reopened}
    if reopened:
        notes.append(f"memories kept in {memories} by an earlier run were reopened "
                     f"({', '.join(f'{name}: {n}' for name, n in reopened.items())}): "
                     "their ingest was not measured")
    return report.build_document(benchmark, k, blocks, data=data, options=options,
                                 tokenizer=tokenizer, notes=notes)
