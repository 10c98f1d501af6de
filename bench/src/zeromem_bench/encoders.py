"""``zeromem bench encoders``: what the encoders and indexes cost, measured on LoCoMo turns.

    zeromem bench encoders --data $DATA/locomo --json out/encoders.json

Reports ingest throughput (turns/s) per encoder — tokenizer, spaCy NER + deterministic
extractors, each embedding backend — with single-query encode latency, vector parity with torch
and dense recall@10 per backend; BM25 (bm25s) against SQLite FTS5 (recall@10, latency); index
size per 1k turns; search latency of the lexical, exact dense and ANN indexes at 1k / 10k / 100k
units synthesized from the real turns; and one whole conversation ingested through
``Memory.index()`` per backend. Wall-clock numbers depend on the machine and on what else runs:
the JSON records the CPU count and load average.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from zeromem.config import Config, EncoderConfig

from . import encoder_measure as m

DEFAULT_SIZES = (1000, 10000, 100000)
DEFAULT_BACKENDS = ("torch", "onnx", "onnx-fp32")
INGEST_BACKENDS = ("torch", "onnx")
QUERY_SAMPLE = 200  # questions timed one by one for latency


def run(data_paths: list[Path], out_json: Path | None = None, sizes: Sequence[int] = DEFAULT_SIZES,
        *, backends: Sequence[str] = DEFAULT_BACKENDS, max_turns: int | None = None,
        ingest: bool = True, ingest_backends: Sequence[str] = INGEST_BACKENDS,
        config: EncoderConfig | None = None, console: Any = None) -> dict:
    """Measure everything, print rich tables, write ``out_json`` if given, return the document.

    ``max_turns`` caps the turns used for throughput (recall always uses whole conversations);
    ``ingest_backends`` are the backends (among ``backends``) run through ``Memory.index()``.
    """
    from rich.console import Console

    console = console or Console()
    config = config or EncoderConfig()
    convs = m.load_conversations(data_paths)
    turns = [t for c in convs for t in c.turns][:max_turns]
    questions = [q for c in convs for q in c.questions]
    doc: dict[str, Any] = {"benchmark": "encoders", "data": [str(p) for p in data_paths],
                           "machine_before": m.machine(), "turns": len(turns),
                           "conversations": len(convs), "questions": len(questions),
                           "encoder_config": dataclasses.asdict(config)}
    with console.status("tokenizer"):
        doc["tokenize"], tokens = _tokenize(turns)
    with console.status("entities (spaCy NER + extractors)"):
        doc["entities"] = _entities(turns, config)
    vectors: dict[str, np.ndarray] = {}
    doc["embeddings"] = {}
    for backend in backends:
        with console.status(f"embeddings: {backend}"):
            doc["embeddings"][backend], vectors[backend] = _embeddings(
                backend, config, turns, convs, reference=vectors.get("torch"))
    with console.status("lexical: bm25s vs SQLite FTS5"):
        doc["lexical"] = _lexical(convs)
    if vectors:
        base = vectors.get("torch", next(iter(vectors.values())))
        qvecs = _question_vectors(backends[0], config, questions[:QUERY_SAMPLE])
        with console.status("index scaling"):
            doc["indexes"] = _scaling(tokens, base, questions[:QUERY_SAMPLE], qvecs, sizes)
    if ingest:
        doc["ingest"] = {}
        for backend in [b for b in backends if b in ingest_backends]:
            with console.status(f"Memory.index() of one conversation: {backend}"):
                doc["ingest"][backend] = _ingest(convs[0], dataclasses.replace(
                    config, embedding_backend=backend))
    doc["machine_after"] = m.machine()
    _print(doc, console)
    if out_json is not None:
        out_json.parent.mkdir(parents=True, exist_ok=True)
        out_json.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        console.print(f"wrote {out_json}")
    return doc


def cli_encoders(data: list[Path], json_out: Path | None, *, sizes: Sequence[int] = DEFAULT_SIZES,
                 backends: Sequence[str] = DEFAULT_BACKENDS, max_turns: int | None = None,
                 ingest: bool = True) -> dict:
    """The body of the ``zeromem bench encoders`` command."""
    return run(list(data), json_out, sizes, backends=backends, max_turns=max_turns, ingest=ingest)


# -- sections ---------------------------------------------------------------------------------

def _rate(n: int, seconds: float) -> dict[str, float]:
    return {"turns": n, "seconds": round(seconds, 3),
            "turns_per_s": round(n / seconds, 1) if seconds else 0.0,
            "ms_per_turn": round(1000 * seconds / n, 3) if n else 0.0}


def _tokenize(turns: list[str]) -> tuple[dict, list[list[str]]]:
    from zeromem.encoders.tokenize import tokenize, tokenize_many

    tokenize("warm up 北京")  # jieba's dictionary load is a one-time cost, not throughput
    tokens, seconds = m.timed(lambda: tokenize_many(turns))
    return _rate(len(turns), seconds), tokens


def _entities(turns: list[str], config: EncoderConfig) -> dict:
    from zeromem.encoders.entities import EntityExtractor

    out: dict[str, Any] = {}
    for name, noun_phrases in (("ner_extractors_noun_phrases", True), ("ner_extractors", False)):
        extractor, load = m.timed(partial(EntityExtractor, config.spacy_pipeline,
                                          batch_size=config.batch_size, noun_phrases=noun_phrases))
        extractor.extract(turns[:8])
        mentions, seconds = m.timed(partial(extractor.extract, turns))
        total = sum(len(x) for x in mentions)
        out[name] = {**_rate(len(turns), seconds), "load_s": round(load, 2),
                     "components": list(extractor.components),
                     "mentions_per_1k_turns": round(1000 * total / max(len(turns), 1), 1)}
    from zeromem.encoders import extractors

    _, seconds = m.timed(lambda: [extractors.extract_all(t) for t in turns])
    out["regex_extractors_only"] = _rate(len(turns), seconds)
    return out


def _load_embedder(backend: str, config: EncoderConfig):
    from zeromem.encoders.factory import load_embedder

    return load_embedder(dataclasses.replace(config, embedding_backend=backend))


def _embeddings(backend: str, config: EncoderConfig, turns: list[str], convs: list[m.Conversation],
                reference: np.ndarray | None) -> tuple[dict, np.ndarray]:
    from zeromem.indexes.dense import DenseIndex

    embedder, load = m.timed(lambda: _load_embedder(backend, config))
    embedder.encode(turns[:4])
    vectors, seconds = m.timed(lambda: embedder.encode(turns))
    questions = [q for c in convs for q in c.questions]
    out: dict[str, Any] = {**_rate(len(turns), seconds), "load_s": round(load, 2),
                           "dim": embedder.dim, "threads": config.torch_threads,
                           "query": m.latency_ms(embedder.encode_query, questions[:QUERY_SAMPLE])}
    if reference is not None and reference.shape == vectors.shape:
        cos = (reference * vectors).sum(axis=1)
        out["cosine_to_torch"] = {"mean": round(float(cos.mean()), 5), "min": round(float(cos.min()), 5)}
    ranked, gold, start = [], [], 0
    for conv in convs:
        conv_vectors = embedder.encode(conv.turns) if start + len(conv.turns) > len(vectors) \
            else vectors[start:start + len(conv.turns)]
        start += len(conv.turns)
        index = DenseIndex(conv_vectors)
        for qvec in embedder.encode(conv.questions):
            ranked.append(index.search(qvec, m.RECALL_K)[0].tolist())
        gold.extend(conv.gold)
    out["dense_recall_at_10"] = round(m.recall_at_k(ranked, gold), 4)
    return out, vectors


def _question_vectors(backend: str, config: EncoderConfig, questions: list[str]) -> np.ndarray:
    return _load_embedder(backend, config).encode(questions)


def _lexical(convs: list[m.Conversation]) -> dict:
    from zeromem.encoders.tokenize import tokenize

    ranked: list[list[int]] = []
    gold: list[Any] = []
    score_lat: list[dict[str, float]] = []
    search_lat: list[dict[str, float]] = []
    build = 0.0
    fts: dict[str, list] = {"fts5_our_tokens": [], "fts5_porter": []}
    fts_lat: dict[str, list] = {k: [] for k in fts}
    for conv in convs:
        index, seconds = m.timed(partial(_lexical_index, conv.turns))  # tokenizing counts, as before
        build += seconds
        qtokens = [tokenize(q) for q in conv.questions]
        ranked.extend(index.search(q, m.RECALL_K)[0].tolist() for q in qtokens)
        score_lat.append(m.latency_ms(index.scores, qtokens))
        search_lat.append(m.latency_ms(partial(index.search, k=m.RECALL_K), qtokens))
        gold.extend(conv.gold)
        for name, pre in (("fts5_our_tokens", True), ("fts5_porter", False)):
            rankings, lat, _ = m.fts5_rankings(conv.turns, conv.questions, pretokenized=pre)
            fts[name].extend(rankings)
            fts_lat[name].append(lat)

    def mean(lats: list[dict], key: str) -> float:
        return round(float(np.mean([x[key] for x in lats])), 3) if lats else 0.0

    out = {"bm25s": {"recall_at_10": round(m.recall_at_k(ranked, gold), 4),
                     "scores_all_units_p50_ms": mean(score_lat, "p50_ms"),
                     "search_top10_p50_ms": mean(search_lat, "p50_ms"),
                     "build_s": round(build, 3)}}
    for name in fts:
        out[name] = {"recall_at_10": round(m.recall_at_k(fts[name], gold), 4),
                     "search_top10_p50_ms": mean(fts_lat[name], "p50_ms")}
    return out


def _scaling(tokens: list[list[str]], base: np.ndarray, questions: list[str], qvecs: np.ndarray,
             sizes: Sequence[int]) -> dict:
    from zeromem.encoders.tokenize import tokenize
    from zeromem.indexes.dense import DenseIndex

    qtokens = [tokenize(q) for q in questions]
    out: dict[str, Any] = {}
    for n in sizes:
        row: dict[str, Any] = {}
        lex, build = m.timed(partial(_synth_lexical_index, tokens, n))  # synthesizing counts, as before
        row["lexical"] = {"build_s": round(build, 3), "scores": m.latency_ms(lex.scores, qtokens),
                          "search": m.latency_ms(partial(lex.search, k=10), qtokens),
                          "bytes_per_1k": int(1000 * m.lexical_bytes(lex) / n)}
        vectors = m.synth_vectors(base, n)
        exact = DenseIndex(vectors, ann_threshold=n + 1)
        row["dense_exact"] = {"scores": m.latency_ms(exact.scores, list(qvecs)),
                              "search": m.latency_ms(partial(exact.search, k=10), list(qvecs)),
                              "bytes_per_1k": int(1000 * vectors.nbytes / n)}
        ann = DenseIndex(vectors, ann_threshold=0)
        _, build = m.timed(ann.ann)
        truth = [exact.search(q, 10)[0].tolist() for q in qvecs]
        found = [ann.search(q, 10)[0].tolist() for q in qvecs]
        row["dense_ann"] = {"build_s": round(build, 2),
                            "search": m.latency_ms(partial(ann.search, k=10), list(qvecs)),
                            "recall_at_10_vs_exact": round(m.recall_at_k(found, truth), 4),
                            "bytes_per_1k": int(1000 * m.ann_bytes(ann) / n)}
        out[str(n)] = row
    return out


def _ingest(conv: m.Conversation, encoders: EncoderConfig) -> dict:
    from zeromem.memory import Memory

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        memory = Memory(path, config=Config(encoders=encoders))
        try:
            _, add = m.timed(lambda: memory.add_many(conv.drafts))
            report, seconds = m.timed(memory.index)
        finally:
            memory.close()
        size = sum(p.stat().st_size for p in Path(tmp).glob("bench.db*"))
    fields = dataclasses.asdict(report) if dataclasses.is_dataclass(report) and not isinstance(report, type) else {}
    return {"conversation": conv.name, "turns": len(conv.turns), "add_s": round(add, 3),
            "index_s": round(seconds, 2), "total_s": round(add + seconds, 2),
            "db_bytes_per_1k_turns": int(1000 * size / max(len(conv.turns), 1)),
            "models_preloaded": True, "report": fields}


# -- output -----------------------------------------------------------------------------------

def _print(doc: dict, console: Any) -> None:
    from rich.table import Table

    t = Table(title=f"encoder throughput ({doc['turns']} LoCoMo turns)")
    for col in ("encoder", "turns/s", "ms/turn", "query p50 ms", "query p95 ms", "cos→torch",
                "dense R@10"):
        t.add_column(col, justify="right" if col != "encoder" else "left")
    t.add_row("tokenize", str(doc["tokenize"]["turns_per_s"]), str(doc["tokenize"]["ms_per_turn"]),
              "", "", "", "")
    for name, row in doc["entities"].items():
        t.add_row(name, str(row["turns_per_s"]), str(row["ms_per_turn"]), "", "", "", "")
    for name, row in doc["embeddings"].items():
        cos = row.get("cosine_to_torch", {}).get("mean", "")
        t.add_row(f"embed:{name}", str(row["turns_per_s"]), str(row["ms_per_turn"]),
                  str(row["query"]["p50_ms"]), str(row["query"]["p95_ms"]), str(cos),
                  str(row["dense_recall_at_10"]))
    console.print(t)
    lex = Table(title="lexical index on LoCoMo (categories 1-4)")
    for col in ("index", "recall@10", "top-10 p50 ms", "all-unit scores p50 ms"):
        lex.add_column(col)
    for name, row in doc["lexical"].items():
        lex.add_row(name, str(row["recall_at_10"]), str(row["search_top10_p50_ms"]),
                    str(row.get("scores_all_units_p50_ms", "n/a")))
    console.print(lex)
    if "indexes" in doc:
        idx = Table(title="search latency by index size (synthesized from real turns)")
        for col in ("units", "index", "build s", "search p50 ms", "search p95 ms", "scores p50 ms",
                    "bytes/1k", "recall vs exact"):
            idx.add_column(col, justify="right")
        for n, row in doc["indexes"].items():
            for name, r in row.items():
                idx.add_row(n, name, str(r.get("build_s", "")), str(r["search"]["p50_ms"]),
                            str(r["search"]["p95_ms"]), str(r.get("scores", {}).get("p50_ms", "")),
                            str(r["bytes_per_1k"]), str(r.get("recall_at_10_vs_exact", "")))
        console.print(idx)
    if "ingest" in doc:
        ing = Table(title="one conversation through Memory.add_many + index()")
        for col in ("backend", "turns", "total s", "index s", "encoder s", "db bytes/1k turns"):
            ing.add_column(col, justify="right")
        for name, r in doc["ingest"].items():
            enc = r["report"].get("encoder_seconds", {})
            ing.add_row(name, str(r["turns"]), str(r["total_s"]), str(r["index_s"]),
                        ", ".join(f"{k} {v:.1f}" for k, v in sorted(enc.items())),
                        str(r["db_bytes_per_1k_turns"]))
        console.print(ing)


def _lexical_index(turns: Sequence[str]) -> Any:
    from zeromem.encoders.tokenize import tokenize_many
    from zeromem.indexes.lexical import LexicalIndex

    return LexicalIndex(tokenize_many(turns))


def _synth_lexical_index(tokens: Any, n: int) -> Any:
    from zeromem.indexes.lexical import LexicalIndex

    return LexicalIndex(m.synth_tokens(tokens, n))
