"""Turning a system's question runs into the reported metric dictionaries.

Keys follow the issue's JSON shape: ``n``, ``recall@j`` / ``all@j`` / ``hit@j`` for every j of
the curve, ``mrr`` (0–1), ``answer_in_context``, ``context_tokens`` (mean per query),
``latency_ms_p50/p95`` (with query encoding) and ``…_no_encode`` (without), plus the ingest
and LLM cost of the system. Percentages are 0–100, times milliseconds. Which call a metric
comes from is decided by :func:`top_turns` (see :mod:`zeromem_bench.runner`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import metrics
from .runner import CURVE_K, QueryResult, QuestionRun, SystemRun


def top_turns(run: QuestionRun, j: int, k: int) -> list[str]:
    """The flattened top-``j`` turns: the headline call's when ``j == k``, else the curve call
    cut at ``j``."""
    source = run.headline if j == k else run.curve
    return metrics.flatten_turns(source.groups, j)


def top_texts(run: QuestionRun, j: int, k: int) -> list[str]:
    """Texts of the evidence items that contribute turns to :func:`top_turns`."""
    source = run.headline if j == k else run.curve
    return _texts_within(source, j)


def _texts_within(result: QueryResult, j: int) -> list[str]:
    seen: set[str] = set()
    texts = []
    for group, text in zip(result.groups, result.texts):
        if len(seen) >= j:
            break
        new = [turn for turn in group if turn not in seen]
        if new:
            texts.append(text)
            seen.update(new[: j - len(seen)])
    return texts


def percent(values: Sequence[float]) -> float | None:
    """Mean of 0–1 values (or booleans) as a percentage; None when there are none."""
    value = metrics.mean(values)
    return None if value is None else 100.0 * value


def retrieval_block(runs: Sequence[QuestionRun], ks: Sequence[int], k: int,
                    extra: Callable[[Sequence[QuestionRun]], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Retrieval, context and latency metrics over ``runs`` (only ``scored`` questions)."""
    scored = [run for run in runs if run.query.scored and run.query.gold]
    block: dict[str, Any] = {"n": len(scored)}
    for j in ks:
        block[f"recall@{j}"] = percent([metrics.recall_at_k(r.query.gold, top_turns(r, j, k), j)
                                     for r in scored])
    for j in ks:
        block[f"all@{j}"] = percent([metrics.all_at_k(r.query.gold, top_turns(r, j, k), j)
                                  for r in scored])
        block[f"hit@{j}"] = percent([metrics.hit_at_k(r.query.gold, top_turns(r, j, k), j)
                                  for r in scored])
    block["mrr"] = metrics.mean([metrics.reciprocal_rank(
        r.query.gold, metrics.flatten_turns(r.curve.groups, CURVE_K)) for r in scored])
    with_answer = [r for r in scored if r.query.answer not in (None, "")]
    block["answer_in_context"] = percent([metrics.answer_in_context(r.query.answer, r.headline.context)
                                       for r in with_answer])
    block["context_tokens"] = metrics.mean([r.context_tokens for r in scored])
    block.update(latency_block(scored))
    if extra is not None:
        block.update(extra(scored))
    return block


def latency_block(runs: Sequence[QuestionRun]) -> dict[str, Any]:
    """p50/p95 of the headline call, with and without query encoding (None when unknown)."""
    totals = [r.headline.total_ms for r in runs]
    bare = [r.headline.total_ms - r.headline.encode_ms for r in runs
            if r.headline.encode_ms is not None]
    complete = len(bare) == len(runs)
    return {
        "latency_ms_p50": metrics.percentile(totals, 50),
        "latency_ms_p95": metrics.percentile(totals, 95),
        "latency_ms_p50_no_encode": metrics.percentile(bare, 50) if complete else None,
        "latency_ms_p95_no_encode": metrics.percentile(bare, 95) if complete else None,
    }


def cost_block(result: SystemRun) -> dict[str, Any]:
    """Ingest time per turn (model loading excluded, reported apart; None when a memory was
    reopened from an earlier run, ``reopened_memories``) and the memory operations' LLM usage
    (zero, or the run failed)."""
    return {
        "ingest_ms_per_turn": result.ingest_ms / result.turns if result.turns and not result.reopened else None,
        "reopened_memories": result.reopened,
        "model_load_ms": result.model_load_ms,
        "llm_calls": result.llm.calls,
        "llm_tokens": result.llm.tokens,
    }


def no_answer_block(runs: Sequence[QuestionRun], negatives: Callable[[QuestionRun], bool],
                    threshold: float | None) -> dict[str, Any]:
    """How well the engine's no-answer score separates unanswerable questions.

    AUROC of the score with unanswerable questions as positives; accuracy (percent, over all
    questions) of "score ≥ threshold means no answer" at the engine's declared threshold, or
    0.5 when it declares none, and that flag's precision (share of flagged questions that are
    unanswerable) and recall (share of unanswerable ones flagged); None where nothing is
    flagged / nothing is unanswerable. "n/a" when the system exposes no score.
    """
    positives = [r for r in runs if negatives(r)]
    block: dict[str, Any] = {"n": len(positives)}
    scores = [score for r in runs if (score := r.headline.no_answer_score) is not None]
    if not runs or len(scores) < len(runs):
        block.update(no_answer_auroc="n/a", no_answer_accuracy="n/a")
        return block
    labels = [negatives(r) for r in runs]
    area = metrics.auroc(scores, labels)
    cut = 0.5 if threshold is None else threshold
    flagged = [score >= cut for score in scores]
    correct = [flag == label for flag, label in zip(flagged, labels)]
    block.update(no_answer_auroc=None if area is None else 100.0 * area,
                 no_answer_accuracy=percent(correct), no_answer_threshold=cut,
                 no_answer_precision=percent([label for flag, label in zip(flagged, labels) if flag]),
                 no_answer_recall=percent([flag for flag, label in zip(flagged, labels) if label]))
    return block


def reader_block(runs: Sequence[QuestionRun], result: SystemRun,
                 f1: Callable[[QuestionRun], float], model: str) -> dict[str, Any]:
    """Reader quality (F1, BLEU-1, 0–100) over answered questions, and the reader's own cost."""
    answered = [r for r in runs if r.prediction is not None and r.query.answer not in (None, "")]
    usage = result.reader_llm
    return {
        "model": model,
        "n": len(answered),
        "f1": percent([f1(r) for r in answered]),
        "bleu1": percent([metrics.bleu1(r.prediction, r.query.answer) for r in answered]),
        "calls": usage.calls if usage else 0,
        "prompt_tokens": usage.prompt_tokens if usage else 0,
        "completion_tokens": usage.completion_tokens if usage else 0,
        "calls_without_usage": usage.calls_without_usage if usage else 0,
    }
