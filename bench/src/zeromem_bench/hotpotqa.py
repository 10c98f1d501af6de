"""The HotpotQA benchmark: every paragraph of every question pooled into one memory.

Each distinct paragraph (identical title + text stored once) becomes one trace: its text is
``"Title: sentence sentence …"`` (the title is part of what a reader of Wikipedia sees, and
bridge questions name it), its title is the trace's title (``metadata["title"]``, the one way
the engine learns titles), its source id is the title, its session an opaque
``"paragraph N"`` (a paragraph is its own episode, so no window or adjacency edge joins
unrelated articles, and a session name tells the engine nothing), and its sentence list is
kept in metadata. Gold turns are the supporting titles. Several files pool into one memory
(the 486-question dev pool is two files); each question records the half it falls in (even
or odd position in the pool) so a change can be tuned on one half and reported on the other.

Metrics: supporting-passage recall@2/5/10/20, all@k, hit@k, MRR (as for LoCoMo, with passages
as turns) and **supporting-sentence recall@k**: the share of supporting sentences whose text
(whitespace-normalized) occurs inside the text of an evidence item among the top-k turns. A
passage-level system therefore retrieves every sentence of a retrieved passage, while a
span-level answer gets credit only for the sentences it actually returns. Both the Hugging
Face layout (``context: {title: [...], sentences: [[...]]}``) and the original one
(``context: [[title, [sentences]]]``) are read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import metrics, summary
from .runner import Corpus, Query, QuestionRun, SystemRun, Unit

CORPUS = "hotpotqa"
KS = (2, 5, 10, 20)
HALVES = ("even", "odd")


@dataclass(slots=True)
class HotpotData:
    """The pooled corpus and what loading it found."""

    corpus: Corpus
    files: list[str]
    paragraphs_seen: int = 0
    supporting_facts_dropped: int = 0
    types: dict[str, int] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        return {"files": self.files, "paragraphs": len(self.corpus.units),
                "paragraphs_before_dedupe": self.paragraphs_seen,
                "questions": self.types,
                "supporting_facts_dropped": self.supporting_facts_dropped}


def _paragraphs(item: dict[str, Any]) -> list[tuple[str, list[str]]]:
    context = item.get("context")
    if isinstance(context, dict):
        return [(str(t), list(s)) for t, s in zip(context["title"], context["sentences"])]
    if isinstance(context, list):
        return [(str(t), list(s)) for t, s in context]
    raise ValueError("a HotpotQA question needs 'context' ({title, sentences} or [[title, sentences]])")


def _facts(item: dict[str, Any]) -> list[tuple[str, int]]:
    facts = item.get("supporting_facts") or []
    if isinstance(facts, dict):
        return [(str(t), int(i)) for t, i in zip(facts["title"], facts["sent_id"])]
    return [(str(t), int(i)) for t, i in facts]


def paragraph_text(title: str, sentences: Sequence[str]) -> str:
    """The stored form of a paragraph: its title, a colon, then its sentences verbatim."""
    return f"{title}: {''.join(sentences).strip()}"


def _squash(text: str) -> str:
    return " ".join(text.split())


def _read(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        items = json.load(handle)
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a JSON list of HotpotQA questions")
    return items


def load_hotpotqa(paths: str | Path | Sequence[str | Path]) -> HotpotData:
    """Read one or more HotpotQA JSON lists and pool their paragraphs (see the module docstring)."""
    files = [paths] if isinstance(paths, (str, Path)) else list(paths)
    items = [(path, item) for path in files for item in _read(path)]
    units: list[Unit] = []
    seen: set[tuple[str, str]] = set()
    queries: list[Query] = []
    data = HotpotData(Corpus(CORPUS, units, queries), [str(p) for p in files])
    for index, (path, item) in enumerate(items):
        paragraphs = _paragraphs(item)
        data.paragraphs_seen += len(paragraphs)
        for title, sentences in paragraphs:
            text = paragraph_text(title, sentences)
            if (title, text) in seen:
                continue
            seen.add((title, text))
            draft = {"text": text, "session": f"paragraph {len(units) + 1}", "seq": 0,
                     "source_id": title, "role": "user",
                     "metadata": {"title": title, "sentences": sentences}}
            units.append(Unit(title, draft, text))
        by_title = dict(paragraphs)
        sentences_needed: list[str] = []
        gold: list[str] = []
        for title, sent_id in _facts(item):
            if title not in by_title or not 0 <= sent_id < len(by_title[title]):
                data.supporting_facts_dropped += 1  # known dataset noise: fact points past the text
                continue
            sentences_needed.append(_squash(by_title[title][sent_id]))
            if title not in gold:
                gold.append(title)
        kind = str(item.get("type") or "all")
        data.types[kind] = data.types.get(kind, 0) + 1
        queries.append(Query(str(item.get("_id") or item.get("id") or index), str(item["question"]),
                             kind, tuple(gold), item.get("answer"), bool(gold),
                             {"sentences": tuple(sentences_needed), "half": HALVES[index % 2],
                              "file": Path(path).name}))
    return data


def sentence_recall(run: QuestionRun, j: int, k: int) -> float | None:
    """Share of the question's supporting sentences found in its top-``j`` evidence texts."""
    needed = run.query.extra.get("sentences") or ()
    if not needed:
        return None
    returned = "\n".join(_squash(text) for text in summary.top_texts(run, j, k))
    return sum(1 for sentence in needed if sentence in returned) / len(needed)


def system_report(result: SystemRun, k: int, reader_model: str | None = None) -> dict[str, Any]:
    """The JSON block of one system: overall and by question type (bridge, comparison)."""
    ks = tuple(sorted({*KS, k}))

    def sentences(runs: Sequence[QuestionRun]) -> dict[str, Any]:
        block = {}
        for j in ks:
            values = [v for v in (sentence_recall(r, j, k) for r in runs) if v is not None]
            block[f"sentence_recall@{j}"] = summary.percent(values)
        return block

    scored = [r for r in result.runs if r.query.scored]
    overall = summary.retrieval_block(scored, ks, k, sentences)
    overall.update(summary.cost_block(result))
    kinds = sorted({r.query.category for r in scored})
    by_category = {kind: summary.retrieval_block([r for r in scored if r.query.category == kind],
                                                 ks, k, sentences) for kind in kinds}
    halves = {half: summary.retrieval_block([r for r in scored if r.query.extra.get("half") == half],
                                            ks, k, sentences) for half in HALVES}
    block: dict[str, Any] = {"overall": overall, "by_category": by_category, "by_half": halves}
    if reader_model is not None:
        block["reader"] = summary.reader_block(
            scored, result, lambda r: metrics.token_f1(r.prediction, r.query.answer), reader_model)
    return block
