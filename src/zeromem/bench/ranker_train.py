"""Train the learned ranker (gradient-boosted trees, LightGBM) on candidate pools and measure it out of sample.

Training is deterministic: one thread, fixed seeds, LightGBM's ``deterministic`` mode, rows in
question order; the model is written as sorted-key JSON whose floats are Python's round-trip
repr, so the same pools give the same bytes (``zeromem bench train-ranker`` reproduces the
shipped file; its sha256 is retrieval/learned.py's ``SHIPPED_SHA256``).

Evaluation compares, on the same pools, the hand-tuned evidence order against the model's order
of the whole pool: 2-fold inside each benchmark (folds by memory or by the file's halves,
ranker_data.py) and leave-one-benchmark-out (train on three, test on the fourth).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..retrieval.learned import FORMAT, from_document
from ..retrieval.rank_features import FEATURES
from .ranker_data import Pools

# Chosen on LoCoMo 2-fold among six variants (docs/decisions.md#d-041): pointwise logistic
# loss on gold / not gold ranked as well as LambdaMART and XE-NDCG and was the only one above
# the hand-tuned order; small trees, many rows per leaf (a few hundred questions per fold).
PARAMS: dict[str, Any] = {
    "objective": "binary", "metric": "auc",
    "num_leaves": 7, "max_depth": 6, "learning_rate": 0.05, "min_data_in_leaf": 100,
    "feature_fraction": 1.0, "bagging_fraction": 1.0, "lambda_l2": 1.0,
    "num_threads": 1, "deterministic": True, "force_row_wise": True, "seed": 29,
    "verbose": -1,
}
ROUNDS = 100
# The trees refine the hand-tuned order rather than learn it again: each candidate starts from
# START_WEIGHT × (1 − hand_rank) (hand_rank: its place in the hand-tuned evidence / k, 1 when
# not returned), LightGBM's init_score, stored as the model's linear term.
START_WEIGHT = 2.0

# The numbers each benchmark headlines, read from a ranking: (name, kind, cut-off, category).
HEADLINES: dict[str, tuple[tuple[str, str, int, str | None], ...]] = {
    "locomo": (("R@10", "recall", 10, None), ("all@10", "all", 10, None),
               ("multi-hop R@10", "recall", 10, "multi-hop"),
               ("open-domain R@10", "recall", 10, "open-domain")),
    "hotpotqa": (("R@2", "recall", 2, None), ("all@2", "all", 2, None), ("R@10", "recall", 10, None)),
    "longmemeval": (("turn_all@10", "all", 10, None), ("turn_any@10", "hit", 10, None),
                    ("R@10", "recall", 10, None)),
    "memdaily": (("hit@1", "hit", 1, None), ("R@3", "recall", 3, None), ("all@5", "all", 5, None)),
}


def concat(pools: Sequence[Pools]) -> Pools:
    """Several benchmarks' pools as one (question indices renumbered)."""
    offsets = np.cumsum([0] + [len(p.qid) for p in pools[:-1]])
    return Pools(np.concatenate([p.features for p in pools]), np.concatenate([p.label for p in pools]),
                 np.concatenate([p.hand for p in pools]),
                 np.concatenate([p.query + off for p, off in zip(pools, offsets)]).astype(np.int32),
                 np.concatenate([p.qid for p in pools]), np.concatenate([p.category for p in pools]),
                 np.concatenate([p.fold for p in pools]), np.concatenate([p.n_gold for p in pools]))


def subset(pools: Pools, keep_questions: np.ndarray) -> Pools:
    """The pools of the questions where ``keep_questions`` is true."""
    renumber = np.cumsum(keep_questions) - 1
    rows = keep_questions[pools.query]
    return Pools(pools.features[rows], pools.label[rows], pools.hand[rows],
                 renumber[pools.query[rows]].astype(np.int32), pools.qid[keep_questions],
                 pools.category[keep_questions], pools.fold[keep_questions], pools.n_gold[keep_questions])


def train(pools: Pools, params: Mapping[str, Any] | None = None, rounds: int = ROUNDS,
          start_weight: float = START_WEIGHT) -> dict[str, Any]:
    """A boosted-trees model of ``pools`` as a JSON-ready document (learned.py's format).
    Questions without a gold turn in their pool teach nothing and are left out."""
    import lightgbm as lgb

    positive = np.bincount(pools.query, weights=pools.label, minlength=len(pools.qid)) > 0
    kept = subset(pools, positive)
    sizes = np.bincount(kept.query, minlength=len(kept.qid))
    # −w × hand_rank ranks as w × (1 − hand_rank) does: a constant shift changes no order
    linear = {"hand_rank": -start_weight} if start_weight else {}
    start = kept.features[:, FEATURES.index("hand_rank")] * -start_weight if start_weight else None
    dataset = lgb.Dataset(kept.features, label=kept.label.astype(np.float64), group=sizes,
                          init_score=start, feature_name=list(FEATURES), free_raw_data=False,
                          params={"verbose": -1, "max_bin": 255, "seed": 29})
    booster = lgb.train(dict(params or PARAMS), dataset, num_boost_round=rounds)
    return to_document(booster.dump_model(), {"rounds": rounds, "questions": len(kept.qid),
                                              "rows": len(kept.label)}, linear)


def to_document(dump: Mapping[str, Any], about: Mapping[str, Any],
                linear: Mapping[str, float] | None = None) -> dict[str, Any]:
    """LightGBM's ``dump_model()`` as flat node arrays per tree (learned.py's format)."""
    names = list(dump["feature_names"])
    if tuple(names) != FEATURES:
        raise ValueError("the model's features are not rank_features.FEATURES")
    trees = []
    depth = 0
    for info in dump["tree_info"]:
        tree: dict[str, list[Any]] = {"feature": [], "threshold": [], "left": [], "right": [], "value": []}
        depth = max(depth, _flatten(info["tree_structure"], tree, 0))
        trees.append(tree)
    return {"format": FORMAT, "features": names, "depth": depth, "trees": trees, "about": dict(about),
            "linear": dict(linear or {})}


def _flatten(node: Mapping[str, Any], tree: dict[str, list[Any]], level: int) -> int:
    """Append ``node`` and its subtree to ``tree`` (pre-order); return the subtree's depth."""
    index = len(tree["feature"])
    for key in tree:
        tree[key].append(0)
    if "leaf_value" in node:
        tree["feature"][index] = -1
        tree["value"][index] = float(node["leaf_value"])
        return level
    if node.get("decision_type") != "<=":
        raise ValueError(f"unsupported split {node.get('decision_type')!r}")
    tree["feature"][index] = int(node["split_feature"])
    tree["threshold"][index] = float(node["threshold"])
    tree["left"][index] = len(tree["feature"])
    deepest = _flatten(node["left_child"], tree, level + 1)
    tree["right"][index] = len(tree["feature"])
    return max(deepest, _flatten(node["right_child"], tree, level + 1))


def model_bytes(document: Mapping[str, Any]) -> bytes:
    """The model file's exact bytes: sorted keys, no spaces, round-trip floats, newline-terminated."""
    return (json.dumps(document, sort_keys=True, separators=(",", ":")) + "\n").encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def score(document: Mapping[str, Any], pools: Pools) -> np.ndarray:
    """The model's score of every row (with the product's numpy scorer)."""
    return from_document(dict(document)).score(pools.features)


def rankings(pools: Pools, row_score: np.ndarray | None) -> list[np.ndarray]:
    """Per question, its rows' labels in ranked order: by ``row_score`` (ties by pool order),
    or, when None, the hand-tuned evidence order."""
    out = []
    starts = np.searchsorted(pools.query, np.arange(len(pools.qid) + 1))
    for q in range(len(pools.qid)):
        rows = np.arange(starts[q], starts[q + 1])
        if row_score is None:
            picked = rows[pools.hand[rows] >= 0]
            order = picked[np.argsort(pools.hand[picked], kind="stable")]
        else:
            order = rows[np.argsort(-row_score[rows], kind="stable")]
        out.append(pools.label[order])
    return out


def metrics(pools: Pools, ranked: list[np.ndarray], benchmark: str) -> dict[str, float]:
    """The benchmark's headline numbers (percentages) from ``rankings``."""
    kinds: dict[str, Callable[[np.ndarray, int, int], float]] = {
        "recall": lambda labels, j, gold: labels[:j].sum() / gold,
        "all": lambda labels, j, gold: float(labels[:j].sum() >= gold),
        "hit": lambda labels, j, gold: float(labels[:j].sum() > 0),
    }
    out = {}
    for name, kind, cut, category in HEADLINES[benchmark]:
        values = [kinds[kind](labels, cut, int(gold))
                  for labels, gold, cat in zip(ranked, pools.n_gold, pools.category)
                  if gold > 0 and (category is None or cat == category)]
        out[name] = round(100 * float(np.mean(values)), 1) if values else float("nan")
    return out


def evaluate(by_benchmark: Mapping[str, Pools], *, params: Mapping[str, Any] | None = None,
             rounds: int = ROUNDS, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Hand-tuned vs learned: 2-fold inside each benchmark and leave-one-benchmark-out."""
    report: dict[str, Any] = {}
    for benchmark, pools in by_benchmark.items():
        hand = metrics(pools, rankings(pools, None), benchmark)
        oof = np.zeros(len(pools.label))
        for fold in (0, 1):
            train_on = subset(pools, pools.fold != fold)
            model = train(train_on, params, rounds)
            rows = pools.fold[pools.query] == fold
            test = subset(pools, pools.fold == fold)
            oof[rows] = score(model, test)
        two_fold = metrics(pools, rankings(pools, oof), benchmark)
        by_fold = {}
        for fold in (0, 1):
            part = subset(pools, pools.fold == fold)
            by_fold[str(fold)] = {"hand_tuned": metrics(part, rankings(part, None), benchmark),
                                  "learned": metrics(part, rankings(part, oof[pools.fold[pools.query] == fold]),
                                                     benchmark)}
        others = [p for name, p in by_benchmark.items() if name != benchmark]
        lobo = metrics(pools, rankings(pools, score(train(concat(others), params, rounds), pools)),
                       benchmark) if others else {}
        report[benchmark] = {"questions": len(pools.qid), "hand_tuned": hand,
                             "two_fold": two_fold, "leave_one_benchmark_out": lobo, "by_fold": by_fold}
        log(f"{benchmark}: hand {hand} | 2-fold {two_fold} | LOBO {lobo}")
    return report
