"""Retrieval and answer metrics of the benchmark harness: pure functions, no I/O.

Definitions (every number the harness reports is built from these):

- **Gold turns** are the dataset's evidence ids after :func:`repair_evidence_ids`: a field
  holding several ids ("D8:6; D9:17") is split, a malformed id ("D:11:26", "D 3:05") is
  rewritten to its canonical form ("D11:26", "D3:5"), and ids that do not exist in the
  conversation ("D", "D10:19" when session 10 has 18 turns) are dropped. Both counts are
  reported.
- **Ranked turns**: the evidence list a system returns is flattened to turn ids in rank order
  (an evidence item covering several turns — a window, a span's turn, a closure neighbour —
  contributes all of them, in its own order), duplicates removed, capped at k turns
  (:func:`flatten_turns`).
- **recall@k** = |gold ∩ top-k turns| / |gold|, averaged over questions that have gold turns.
- **all@k** = 100 · share of questions whose gold turns are all in the top k.
- **hit@k** = 100 · share of questions with at least one gold turn in the top k.
- **MRR** = mean of 1 / rank of the first gold turn (0 when none is within ``MRR_DEPTH``).
- **answer-in-context**: the gold answer and the rendered context are normalized as LoCoMo's
  evaluation does (:func:`normalize_answer`); a question counts when every answer token
  appears among the context tokens — an upper bound on what a reader can answer.
- **F1** (LoCoMo): token F1 between Porter-stemmed normalized tokens; category 1 (multi-hop)
  splits prediction and gold on ',' and averages, over gold parts, the best F1 of any
  predicted part; category 3 keeps the gold part before ';'.
- **BLEU-1**: clipped unigram precision of the normalized prediction tokens against the gold
  tokens, times the brevity penalty ``exp(1 - r / c)`` when the prediction is shorter.

Percentages are 0–100, ranks are 1-based.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import Stemmer

MRR_DEPTH = 20
_ID_PATTERN = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_ID_SEPARATORS = re.compile(r"[;,]|\s(?=D)")
# LoCoMo's normalizer drops "and" together with the articles.
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_porter = Stemmer.Stemmer("porter")


# -- gold evidence ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RepairedIds:
    """Gold ids after repair, with how many raw ids were rewritten or dropped."""

    ids: tuple[str, ...]
    repaired: int
    dropped: int


def repair_evidence_ids(raw_ids: Iterable[str], valid_ids: set[str] | frozenset[str]) -> RepairedIds:
    """Split, canonicalize and filter a question's evidence ids (order kept, duplicates removed).

    An id is *repaired* when its text changed (split out of a list or rewritten) and still
    names an existing turn; it is *dropped* when no existing turn matches it.
    """
    ids: list[str] = []
    repaired = dropped = 0
    for raw in raw_ids:
        raw = str(raw)
        parts = [p.strip() for p in _ID_SEPARATORS.split(raw) if p.strip()]
        was_split = len(parts) > 1
        for part in parts:
            match = _ID_PATTERN.fullmatch(part)
            canonical = f"D{int(match.group(1))}:{int(match.group(2))}" if match else part
            if canonical not in valid_ids:
                dropped += 1
                continue
            if was_split or canonical != raw:
                repaired += 1
            if canonical not in ids:
                ids.append(canonical)
    return RepairedIds(tuple(ids), repaired, dropped)


# -- ranked turns -------------------------------------------------------------------------
def flatten_turns(ranked_groups: Iterable[Sequence[str]], k: int) -> list[str]:
    """Turn ids of ranked evidence items, in rank order, deduplicated, at most ``k``."""
    seen: set[str] = set()
    turns: list[str] = []
    for group in ranked_groups:
        for turn in group:
            if turn is None or turn in seen:
                continue
            seen.add(turn)
            turns.append(turn)
            if len(turns) >= k:
                return turns
    return turns


def recall_at_k(gold: Sequence[str], ranked: Sequence[str], k: int) -> float:
    """Fraction (0–1) of gold turns among the first ``k`` ranked turns."""
    if not gold:
        raise ValueError("recall is undefined without gold turns; skip the question")
    top = set(ranked[:k])
    return sum(1 for g in set(gold) if g in top) / len(set(gold))


def all_at_k(gold: Sequence[str], ranked: Sequence[str], k: int) -> bool:
    """Whether every gold turn is among the first ``k`` ranked turns."""
    return recall_at_k(gold, ranked, k) == 1.0


def hit_at_k(gold: Sequence[str], ranked: Sequence[str], k: int) -> bool:
    """Whether at least one gold turn is among the first ``k`` ranked turns."""
    return recall_at_k(gold, ranked, k) > 0.0


def reciprocal_rank(gold: Sequence[str], ranked: Sequence[str], depth: int = MRR_DEPTH) -> float:
    """1 / rank of the first gold turn within ``depth``; 0 when there is none."""
    wanted = set(gold)
    for rank, turn in enumerate(ranked[:depth], start=1):
        if turn in wanted:
            return 1.0 / rank
    return 0.0


# -- answers ------------------------------------------------------------------------------
def normalize_answer(text: object) -> str:
    """LoCoMo's normalization: drop commas, lowercase, strip punctuation, articles and 'and',
    collapse whitespace. Integers (some gold answers are years) are read as text."""
    value = str(text).replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", value).split())


def answer_in_context(answer: object, context: str) -> bool:
    """Whether every normalized answer token occurs among the normalized context tokens."""
    needed = normalize_answer(answer).split()
    if not needed:
        return False
    available = set(normalize_answer(context).split())
    return all(token in available for token in needed)


def _stems(text: object) -> list[str]:
    return _porter.stemWords(normalize_answer(text).split())


def token_f1(prediction: object, gold: object) -> float:
    """Token F1 (0–1) of Porter-stemmed normalized tokens, as LoCoMo's ``f1_score``."""
    pred, ref = _stems(prediction), _stems(gold)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: object, gold: object) -> float:
    """LoCoMo's category-1 F1: mean over gold parts of the best F1 of any predicted part."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(token_f1(p, g) for p in preds) for g in golds) / len(golds)


def locomo_f1(prediction: object, gold: object, category: int) -> float:
    """F1 of one answer under LoCoMo's per-category rules (categories 1–4)."""
    if category == 1:
        return multi_answer_f1(prediction, gold)
    if category == 3:
        gold = str(gold).split(";")[0].strip()
    return token_f1(prediction, gold)


def abstains(prediction: object) -> bool:
    """LoCoMo's category-5 rule: the reader said it has no information."""
    text = str(prediction).lower()
    return "no information available" in text or "not mentioned" in text


def bleu1(prediction: object, gold: object) -> float:
    """BLEU-1 (0–1): clipped unigram precision times the brevity penalty."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return 0.0
    clipped = sum((Counter(pred) & Counter(ref)).values())
    precision = clipped / len(pred)
    penalty = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return precision * penalty


# -- aggregation --------------------------------------------------------------------------
def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, or None for an empty sequence (reported as n/a, never as 0)."""
    return sum(values) / len(values) if values else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0–100) with linear interpolation between closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Area under the ROC curve: the probability that a positive outranks a negative (ties
    count half). None when either class is empty."""
    positives = [s for s, y in zip(scores, labels) if y]
    negatives = [s for s, y in zip(scores, labels) if not y]
    if not positives or not negatives:
        return None
    # Rank-sum (Mann-Whitney U) with average ranks for ties: O(n log n).
    pairs = sorted(zip(scores, labels), key=lambda pair: pair[0])
    rank_sum = 0.0
    index = 0
    while index < len(pairs):
        end = index
        while end + 1 < len(pairs) and pairs[end + 1][0] == pairs[index][0]:
            end += 1
        average_rank = (index + end) / 2 + 1
        rank_sum += average_rank * sum(1 for _, y in pairs[index:end + 1] if y)
        index = end + 1
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
