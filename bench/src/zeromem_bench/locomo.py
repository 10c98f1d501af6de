"""The LoCoMo benchmark: one memory per conversation, questions scored by their gold turns.

Conversations are read by :func:`zeromem.ingest.load_file` (the same importer a user runs), so
each turn becomes one trace with its ``dia_id`` as source id. Questions of categories 1–4
(1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop) are scored for retrieval; category 5
(adversarial: the answer is not in the conversation) is reported apart, as how well the
engine's no-answer score tells those questions from the answerable ones. Gold evidence ids are
repaired as :func:`zeromem_bench.metrics.repair_evidence_ids` describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zeromem.ingest import load_file

from . import metrics, summary
from .baselines import format_turn, readable_time
from .runner import Corpus, Query, QuestionRun, SystemRun, Unit

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL = 5
KS = (1, 5, 10, 20)
HALVES = ("even", "odd")  # a question's position in its conversation


@dataclass(slots=True)
class LocomoData:
    """The conversations to run, and what loading them found."""

    corpora: list[Corpus]
    files: list[str]
    turns: int = 0
    questions: dict[str, int] = field(default_factory=dict)
    evidence_repaired: int = 0
    evidence_dropped: int = 0
    questions_without_gold: int = 0

    def report(self) -> dict[str, Any]:
        return {"files": self.files, "conversations": [c.name for c in self.corpora],
                "turns": self.turns, "questions": self.questions,
                "evidence_repaired": self.evidence_repaired,
                "evidence_dropped": self.evidence_dropped,
                "questions_without_gold": self.questions_without_gold}


def expand_paths(paths: Sequence[str | Path]) -> list[Path]:
    """Files as given, and every ``*.json`` of a given directory (sorted, for stable order)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(path.glob("*.json")))
        else:
            found.append(path)
    if not found:
        raise FileNotFoundError(f"no LoCoMo JSON files in {', '.join(map(str, paths))}")
    return found


def load_locomo(paths: Sequence[str | Path]) -> LocomoData:
    """Read LoCoMo files (per-conversation dicts or the original list of samples)."""
    files = expand_paths(paths)
    data = LocomoData([], [str(f) for f in files])
    names: set[str] = set()
    for file in files:
        for conv in load_file(file, format="locomo"):
            name = conv.name
            while name in names:  # two files may both hold a "conv-26": keep results apart
                name += "'"
            names.add(name)
            data.corpora.append(_corpus(name, conv.drafts, conv.qa or [], data))
    return data


def _corpus(name: str, drafts: list[dict[str, Any]], qa: list[dict[str, Any]],
            data: LocomoData) -> Corpus:
    units = [Unit(str(d.get("source_id") or f"#{i}"), d,
                  format_turn(d["text"], speaker=d.get("speaker"),
                              session_time=readable_time(d.get("session_time")),
                              attachments=d.get("attachments") or ()))
             for i, d in enumerate(drafts)]
    valid = frozenset(unit.key for unit in units)
    queries: list[Query] = []
    for index, item in enumerate(qa):
        category = item.get("category")
        if category not in CATEGORIES and category != ADVERSARIAL:
            continue
        label = CATEGORIES.get(category, "adversarial")
        data.questions[label] = data.questions.get(label, 0) + 1
        repaired = metrics.repair_evidence_ids(item.get("evidence") or [], valid)
        data.evidence_repaired += repaired.repaired
        data.evidence_dropped += repaired.dropped
        scored = category in CATEGORIES
        if scored and not repaired.ids:
            data.questions_without_gold += 1
        answer = item.get("answer", item.get("adversarial_answer"))
        queries.append(Query(f"{name}/{index}", str(item["question"]), label, repaired.ids,
                             answer, scored and bool(repaired.ids),
                             {"category": category, "half": HALVES[index % 2]}))
    data.turns += len(units)
    return Corpus(name, units, queries)


def _f1(run: QuestionRun) -> float:
    return metrics.locomo_f1(run.prediction, run.query.answer, run.query.extra["category"])


def system_report(result: SystemRun, k: int, reader_model: str | None = None) -> dict[str, Any]:
    """The JSON block of one system: overall, by category, adversarial, optional reader."""
    answerable = [r for r in result.runs if r.query.scored]
    ks = tuple(sorted({*KS, k}))
    overall = summary.retrieval_block(answerable, ks, k)
    overall.update(summary.cost_block(result))
    by_category = {label: summary.retrieval_block([r for r in answerable if r.query.category == label], ks, k)
                   for label in CATEGORIES.values()}
    adversarial = summary.no_answer_block(
        [r for r in result.runs if r.query.scored or r.query.category == "adversarial"],
        lambda r: r.query.category == "adversarial", result.no_answer_threshold)
    conversations = dict.fromkeys(r.query.qid.rsplit("/", 1)[0] for r in answerable)
    by_conversation = {name: summary.retrieval_block([r for r in answerable
                                                      if r.query.qid.rsplit("/", 1)[0] == name], ks, k)
                       for name in conversations}  # tune on some conversations, report the others
    block: dict[str, Any] = {"overall": overall, "by_category": by_category,
                             "by_half": _halves(answerable, ks, k), "by_conversation": by_conversation,
                             "adversarial": adversarial}
    if reader_model is not None:
        block["reader"] = _reader_report(result, reader_model)
    return block


def _halves(answerable: list[QuestionRun], ks: tuple[int, ...], k: int) -> dict[str, Any]:
    """Each half of the questions (even / odd position in its conversation), with multi-hop
    recall: tune on one half, report the other."""
    out = {}
    for half in HALVES:
        runs = [r for r in answerable if r.query.extra.get("half") == half]
        block = summary.retrieval_block(runs, ks, k)
        multi = summary.retrieval_block([r for r in runs if r.query.category == "multi-hop"], ks, k)
        block[f"multi-hop recall@{k}"] = multi.get(f"recall@{k}")
        out[half] = block
    return out


def _reader_report(result: SystemRun, model: str) -> dict[str, Any]:
    answerable = [r for r in result.runs if r.query.scored]
    report = summary.reader_block(answerable, result, _f1, model)
    report["by_category"] = {
        label: summary.reader_block([r for r in answerable if r.query.category == label],
                                    result, _f1, model)["f1"]
        for label in CATEGORIES.values()}
    adversarial = [r for r in result.runs if r.query.category == "adversarial"
                   and r.prediction is not None]
    report["adversarial_abstained"] = summary.percent([metrics.abstains(r.prediction)
                                                    for r in adversarial])
    return report
