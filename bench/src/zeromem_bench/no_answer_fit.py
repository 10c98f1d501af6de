"""Fit the no-answer model (retrieval/calibrate.py) on benchmark dev data and measure it out of sample.

One row per question: the ``NoAnswerInputs`` of its search (``SearchResult.explain.no_answer_inputs``,
k = ``K``) and whether memory holds no answer — LoCoMo's adversarial questions against its
answerable ones; LongMemEval-S's abstention questions (ids ending ``_abs``) against every other
question of the file (one ~500-turn memory per question: the first run ingests for about an
hour on two cores, later runs reopen the stored memories). Labels come from here, the bench: the
product code never sees them.

The model is logistic: σ(bias + Σ weight · input), L2 ``L2`` on the weights, every row weighted
the same, solved by Newton's method from zero — the same rows give the same coefficients. (With
each benchmark's rows weighted to the same total, each of LongMemEval's then 32 rows counted as
much as 31 LoCoMo rows and the fit followed their noise: LoCoMo AUROC left out by conversation 83.8 →
79.6, docs/decisions/0057-no-answer-refit.md.) The threshold is the lowest cut at which ``PRECISION`` of the
rows scoring at least that much are unanswerable. Out of sample: leave one memory group out
(each LoCoMo conversation; each half of the LongMemEval questions, by position) and leave one
benchmark out, against the shipped constants scored on the same rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zeromem.config import Config
from zeromem.retrieval import calibrate
from zeromem.retrieval.calibrate import NoAnswerInputs

from .metrics import auroc
from .npz import load_arrays, save_arrays
from .records import Corpus

K = 10
L2 = 0.1
PRECISION = 0.9
INPUTS = tuple(f.name for f in dataclasses.fields(NoAnswerInputs))
# calibrate.py's constant for each input, in INPUTS order.
SHIPPED_NAMES = {"keyword_coverage": "NA_KEYWORD_COVERAGE", "term_coverage": "NA_TERM_COVERAGE",
                 "unseen_terms": "NA_UNSEEN_TERMS", "top_cosine": "NA_TOP_COSINE",
                 "names_missing": "NA_NAMES_MISSING", "off_subject": "NA_OFF_SUBJECT",
                 "subject_asks": "NA_SUBJECT_ASKS", "subject_addresses": "NA_SUBJECT_ADDRESSES",
                 "subject_unsaid": "NA_SUBJECT_UNSAID"}
NEWTON_STEPS = 100
NEWTON_TOLERANCE = 1e-10  # largest parameter change of the last step
DIGITS = 3  # the shipped constants are the fit rounded to this many decimals


@dataclass(slots=True)
class Rows:
    """Every question's inputs (``x``, columns ``INPUTS``), label (1: no answer in memory), its
    benchmark and its memory group (the unit left out together)."""

    x: np.ndarray
    label: np.ndarray
    benchmark: np.ndarray
    group: np.ndarray
    qid: np.ndarray

    def take(self, mask: np.ndarray) -> Rows:
        return Rows(*(getattr(self, f.name)[mask] for f in dataclasses.fields(self)))

    def save(self, path: Path) -> None:
        save_arrays(self, path, INPUTS)

    @classmethod
    def load(cls, path: Path) -> Rows:
        return load_arrays(cls, path, INPUTS, "written with other no-answer inputs; collect again (--fresh)")

    @classmethod
    def concat(cls, parts: Sequence[Rows]) -> Rows:
        return cls(*(np.concatenate([getattr(p, f.name) for p in parts]) for f in dataclasses.fields(cls)))


def locomo_questions(data: Path) -> list[tuple[Corpus, str, list[tuple[Any, bool]]]]:
    """(conversation, group, [(question, unanswerable)]): adversarial and answerable questions."""
    from .locomo import load_locomo

    out = []
    for corpus in load_locomo([data / "locomo"]).corpora:
        asked = [(q, q.category == "adversarial") for q in corpus.queries
                 if q.scored or q.category == "adversarial"]
        out.append((corpus, f"locomo:{corpus.name}", asked))
    return out


def longmemeval_questions(data: Path) -> list[tuple[Corpus, str, list[tuple[Any, bool]]]]:
    """(question's haystack, group, [(question, unanswerable)]): every question of the file, its
    abstention questions unanswerable; grouped by the question's half (position even / odd).
    (Each abstention question with only the next answerable one, 32 rows, left the answerable
    side too small to say what the score does on the file: docs/decisions/0058-subject-never-wrote.md.)"""
    from .longmemeval import load_longmemeval

    corpora = load_longmemeval(data / "longmemeval" / "longmemeval_s_dev.json.gz").corpora
    return [(corpus, f"longmemeval:{corpus.queries[0].extra['half']}",
             [(corpus.queries[0], bool(corpus.queries[0].extra["abstention"]))]) for corpus in corpora]


QUESTIONS: dict[str, Callable[[Path], list[tuple[Corpus, str, list[tuple[Any, bool]]]]]] = {
    "locomo": locomo_questions, "longmemeval": longmemeval_questions}


def collect(benchmark: str, data: Path, cache: Path, *, config: Config | None = None,
            progress: bool = True) -> Rows:
    """Search every question of ``benchmark`` once and keep its no-answer inputs (memories are
    stored under ``cache`` and reopened on a rerun)."""
    from tqdm import tqdm

    from .memories import stored_memory

    config = config or Config()
    plan = QUESTIONS[benchmark](data)
    stores = cache / "stores" / benchmark
    stores.mkdir(parents=True, exist_ok=True)
    x, label, group, qid = [], [], [], []
    with tqdm(total=sum(len(asked) for _, _, asked in plan), disable=not progress, unit="q",
              desc=benchmark) as bar:
        for corpus, name, asked in plan:
            mem, _ = stored_memory(stores, corpus, config)
            try:
                for query, unanswerable in asked:
                    result = mem.search_detailed(query.text, user=corpus.name, k=K, now=query.asked_at)
                    inputs = result.explain.no_answer_inputs
                    if inputs is None:
                        raise RuntimeError(f"{query.qid}: the search gave no no-answer inputs (empty memory?)")
                    x.append([getattr(inputs, f) for f in INPUTS])
                    label.append(unanswerable)
                    group.append(name)
                    qid.append(query.qid)
                    bar.update(1)
            finally:
                mem.close()
    return Rows(np.array(x, dtype=np.float64).reshape(-1, len(INPUTS)), np.array(label, dtype=np.int8),
                np.array([benchmark] * len(label)), np.array(group), np.array(qid))


def fit(rows: Rows, l2: float = L2) -> np.ndarray:
    """[bias, weight per input]: the logistic model of ``rows`` (module docstring), by Newton's
    method with step halving — seven parameters, so each step solves a 7 × 7 system; a
    general-purpose optimizer's stopping rules gave up at float precision instead."""
    x = np.hstack([np.ones((len(rows.label), 1)), rows.x])
    y = rows.label.astype(np.float64)
    penalty = np.full(x.shape[1], l2)
    penalty[0] = 0.0  # the bias is not shrunk

    def loss(p: np.ndarray) -> float:
        z = x @ p
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + np.sum(penalty * p * p))

    params = np.zeros(x.shape[1])
    current = loss(params)
    for _ in range(NEWTON_STEPS):
        s = _sigmoid(x @ params)
        gradient = x.T @ (s - y) + 2 * penalty * params
        hessian = (x * (s * (1 - s))[:, None]).T @ x + 2 * np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        if np.max(np.abs(step)) < NEWTON_TOLERANCE:
            return params
        scale = 1.0
        while loss(params - scale * step) > current and scale > 1e-6:
            scale /= 2
        params = params - scale * step
        current = loss(params)
    raise RuntimeError(f"the no-answer fit did not converge in {NEWTON_STEPS} Newton steps")


def scores(params: np.ndarray, rows: Rows) -> np.ndarray:
    return np.asarray(_sigmoid(params[0] + rows.x @ params[1:]))


def threshold(score: np.ndarray, label: np.ndarray, precision: float = PRECISION) -> float:
    """The lowest cut at which at least ``precision`` of the rows scoring ≥ it are positives."""
    best = 1.0
    for cut in np.unique(score):
        flagged = score >= cut
        if label[flagged].mean() >= precision:
            best = min(best, float(cut))
    return best


def shipped_params() -> np.ndarray:
    """calibrate.py's constants as [bias, weight per input]."""
    return np.array([calibrate.NA_BIAS, *(getattr(calibrate, SHIPPED_NAMES[f]) for f in INPUTS)])


def evaluate(rows: Rows, l2: float = L2) -> dict[str, Any]:
    """Out-of-sample AUROC (percent) of a refit against the shipped constants, and the fit on
    every row with its threshold and whether it reproduces the shipped constants."""
    benchmarks = sorted(set(rows.benchmark.tolist()))
    report: dict[str, Any] = {"rows": {b: {"questions": int(np.sum(rows.benchmark == b)),
                                           "unanswerable": int(np.sum(rows.label[rows.benchmark == b]))}
                                       for b in benchmarks}, "l2": l2}
    # Leave one group out: every row is scored by a model fitted without its memory group.
    held = np.zeros(len(rows.label))
    for name in sorted(set(rows.group.tolist())):
        out = rows.group == name
        held[out] = scores(fit(rows.take(~out), l2), rows.take(out))
    shipped = scores(shipped_params(), rows)
    blocks: dict[str, Any] = {}
    for b in benchmarks:
        mine = rows.benchmark == b
        groups = {}
        for name in sorted(set(rows.group[mine].tolist())):
            at = rows.group == name
            groups[name] = {"shipped": _auroc(shipped[at], rows.label[at]),
                            "left_out": _auroc(held[at], rows.label[at])}
        block: dict[str, Any] = {"shipped": _auroc(shipped[mine], rows.label[mine]),
                                 "leave_one_group_out": _auroc(held[mine], rows.label[mine]), "groups": groups}
        if len(benchmarks) > 1:
            other = rows.take(~mine)
            block["leave_one_benchmark_out"] = _auroc(scores(fit(other, l2), rows.take(mine)), rows.label[mine])
        blocks[b] = block
    report["auroc"] = blocks
    params = fit(rows, l2)
    rounded = np.round(params, DIGITS)
    fitted = scores(rounded, rows)
    cut = round(threshold(fitted, rows.label), DIGITS)
    report["model"] = {"NA_BIAS": float(rounded[0]),
                       **{SHIPPED_NAMES[f]: float(v) for f, v in zip(INPUTS, rounded[1:])},
                       "NO_ANSWER_THRESHOLD": cut}
    report["reproduces_shipped"] = bool(np.array_equal(rounded, shipped_params())
                                        and cut == calibrate.NO_ANSWER_THRESHOLD)
    flagged = fitted >= cut
    report["at_threshold"] = {"flagged": int(flagged.sum()),
                              "precision": _percent(rows.label[flagged].mean()) if flagged.any() else None,
                              "recall": _percent(flagged[rows.label == 1].mean()) if rows.label.any() else None}
    return report


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)))  # σ without overflow


def _auroc(score: np.ndarray, label: np.ndarray) -> float | None:
    area = auroc(score.tolist(), [bool(v) for v in label])
    return None if area is None else round(100 * area, 1)


def _percent(value: float) -> float:
    return round(100 * float(value), 1)
