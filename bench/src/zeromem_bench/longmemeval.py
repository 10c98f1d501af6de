"""The LongMemEval benchmark (official schema): one memory per question, every turn stored.

Each question comes with its own haystack (~50 sessions, ~500 turns): every turn, user and
assistant, becomes one trace (speaker = role, session = the haystack session id, session time
= its date, source id ``"<session id>:<turn index>"``). The question is asked after the
haystack. Long assistant replies are split into sentence spans by the indexer like any turn.

Metrics (``k`` = 10 unless asked otherwise):

- ``turn_any@10`` / ``turn_all@10``: some / every answer-bearing turn (``has_answer``) among
  the top 10 turns;
- ``session_any@5`` / ``session_any@10`` and ``session_ndcg@10``: sessions ranked by their first
  turn in the evidence (up to 20 turns), gold = ``answer_session_ids``;
- ``no_answer_auroc``: abstention questions (ids ending in ``_abs``) against the others, by the
  engine's no-answer score;
- ``ingest_s_per_question``, ``ingest_turns_per_s`` (turns stored and indexed per second of
  ingest), ``latency_ms_p50`` / ``_p95``.
By ``question_type`` in ``by_category``; by the parity of the question's index in the file in
``by_half`` / ``by_half_category`` (a subset taken with an odd stride keeps each question's
half). Abstention questions count only for the AUROC.

Padding (:class:`Padding`, ``--pad-sessions N``) grows each haystack towards LongMemEval-M
(~500 sessions) with N sessions of the other questions' haystacks in the same file: drawn with a
seed of their own per question (the same draw whatever ``--limit``), never an answer session of
any question nor a session holding an answer-bearing turn (it could contradict or answer another
question's facts), never a session id the haystack already has, never dated after the question.
They keep their own dates and are merged into the haystack by date. Only the target's own
turns are gold.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zeromem.store.validate import shows_nothing

from . import metrics, summary
from .baselines import format_turn, readable_time
from .records import CURVE_K, Corpus, Query, QuestionRun, SystemRun, Unit

KS = (5, 10)
HALVES = ("even", "odd")  # a question's index in the file: tune on one half, report the other


@dataclass(frozen=True, slots=True)
class Padding:
    """How many sessions of other questions' haystacks each haystack gains (0: none), and the
    seed of the draw."""

    sessions: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.sessions < 0:
            raise ValueError(f"pad sessions must be 0 or more, got {self.sessions}")


@dataclass(frozen=True, slots=True)
class Session:
    """One haystack session: its id, LongMemEval date (and the same as ISO 8601), and turns."""

    session_id: str
    date: str
    moment: str
    turns: list[dict[str, Any]]


@dataclass(slots=True)
class LongMemEvalData:
    corpora: list[Corpus]
    file: str
    turns: int = 0
    sessions: int = 0
    types: dict[str, int] = field(default_factory=dict)
    padding: Padding = field(default_factory=Padding)
    short: list[str] = field(default_factory=list)  # questions that got fewer pad sessions

    def report(self) -> dict[str, Any]:
        haystacks = max(len(self.corpora), 1)
        return {"files": [self.file], "questions": self.types, "turns": self.turns,
                "haystacks": len(self.corpora),
                "sessions_per_question": round(self.sessions / haystacks, 1),
                "turns_per_question": round(self.turns / haystacks, 1),
                "pad": {"sessions": self.padding.sessions, "seed": self.padding.seed,
                        "short": self.short}}


def read_items(path: str | Path) -> list[dict[str, Any]]:
    """The question list of a ``.json`` or ``.json.gz`` file."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        items = json.load(handle)
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a JSON list of LongMemEval questions")
    return items


def iso_date(date: str) -> str:
    """LongMemEval's "2023/05/20 (Sat) 02:21" as ISO 8601."""
    day, _, clock = str(date).partition(")")
    return dt.datetime.strptime(f"{day.split(' (')[0]} {clock.strip()}", "%Y/%m/%d %H:%M").isoformat()


def haystack(item: dict[str, Any]) -> tuple[list[dict[str, Any]], set[str]]:
    """The question's turns as trace drafts, and the source ids of its answer-bearing turns."""
    drafts, gold = [], set()
    for session_id, date, turns in zip(item["haystack_session_ids"], item["haystack_dates"],
                                       item["haystack_sessions"]):
        for j, turn in enumerate(turns):
            source = f"{session_id}:{j}"
            if turn.get("has_answer"):
                gold.add(source)
            if shows_nothing(str(turn.get("content", ""))):  # the store refuses it (a lone U+200B)
                continue
            drafts.append({"text": turn["content"], "role": turn["role"], "speaker": turn["role"],
                           "session": str(session_id), "session_time": iso_date(date), "seq": j,
                           "source_id": source})
    return drafts, gold


def sessions_of(item: dict[str, Any]) -> list[Session]:
    """The question's haystack sessions in file order."""
    return [Session(str(session_id), str(date), iso_date(date), list(turns)) for session_id, date, turns
            in zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"])]


def pad_pool(items: Sequence[dict[str, Any]]) -> list[Session]:
    """Every session of the file that may pad a haystack, in file order, each id once (its
    first occurrence: a session shared by two haystacks may carry two dates)."""
    answers = {str(s) for item in items for s in item.get("answer_session_ids") or ()}
    pool: dict[str, Session] = {}
    for item in items:
        for session in sessions_of(item):
            if session.session_id in answers or session.session_id in pool:
                continue
            if any(turn.get("has_answer") for turn in session.turns):
                continue
            pool[session.session_id] = session
    return list(pool.values())


def pad_sessions(item: dict[str, Any], pool: Sequence[Session], padding: Padding) -> list[Session]:
    """The sessions drawn for ``item`` (sorted by date): ``padding.sessions`` of them, or all the
    pool allows (see the module docstring)."""
    if padding.sessions == 0:
        return []
    own = {str(s) for s in item["haystack_session_ids"]}
    asked = iso_date(item["question_date"]) if item.get("question_date") else None
    candidates = [s for s in pool if s.session_id not in own and (asked is None or s.moment <= asked)]
    # A string seed hashes the same in every process (unlike hash()): the draw is reproducible.
    rng = random.Random(f"{padding.seed}:{item.get('question_id')}")
    drawn = rng.sample(candidates, min(padding.sessions, len(candidates)))
    return sorted(drawn, key=lambda s: (s.moment, s.session_id))


def padded(item: dict[str, Any], pads: Sequence[Session]) -> dict[str, Any]:
    """``item`` with ``pads`` merged into its haystack by date.

    The haystack's own order is kept: LongMemEval-S orders sessions by day but not always by
    time within a day, so a pad goes before the first own session dated later than it.
    """
    if not pads:
        return item
    merged: list[Session] = []
    next_pad = 0
    for session in sessions_of(item):
        while next_pad < len(pads) and pads[next_pad].moment < session.moment:
            merged.append(pads[next_pad])
            next_pad += 1
        merged.append(session)
    merged.extend(pads[next_pad:])
    return {**item, "haystack_session_ids": [s.session_id for s in merged],
            "haystack_dates": [s.date for s in merged],
            "haystack_sessions": [s.turns for s in merged]}


def load_longmemeval(path: str | Path, limit: int | None = None,
                     padding: Padding | None = None) -> LongMemEvalData:
    """One corpus per question of the file (the first ``limit``), each haystack padded as
    ``padding`` says (from the whole file, whatever ``limit``)."""
    padding = padding or Padding()
    every = read_items(path)
    items = every[:limit] if limit else every
    pool = pad_pool(every) if padding.sessions else []
    data = LongMemEvalData([], str(path), padding=padding)
    for index, item in enumerate(items):
        pads = pad_sessions(item, pool, padding)
        if len(pads) < padding.sessions:
            data.short.append(str(item.get("question_id") or index))
        grown = padded(item, pads)
        data.sessions += len(grown["haystack_session_ids"])
        drafts, gold = haystack(grown)
        kind = str(item.get("question_type") or "all")
        qid = str(item.get("question_id") or index)
        abstain = qid.endswith("_abs")
        data.types[kind] = data.types.get(kind, 0) + 1
        units = [Unit(d["source_id"], d, format_turn(d["text"], speaker=d["speaker"],
                                                     session_time=readable_time(d["session_time"])))
                 for d in drafts]
        query = Query(qid, str(item["question"]), kind, tuple(sorted(gold)), item.get("answer"),
                      bool(gold) and not abstain,
                      {"sessions": tuple(map(str, item.get("answer_session_ids") or ())),
                       "abstention": abstain, "half": HALVES[index % 2]},
                      asked_at=iso_date(item["question_date"]) if item.get("question_date") else None)
        data.corpora.append(Corpus(qid, units, [query]))
        data.turns += len(units)
    return data


def ranked_sessions(run: QuestionRun) -> list[str]:
    """Sessions in the order their first turn appears in the evidence (up to CURVE_K turns)."""
    out: list[str] = []
    for turn in metrics.flatten_turns(run.curve.groups, CURVE_K):
        session = turn.rsplit(":", 1)[0]
        if session not in out:
            out.append(session)
    return out


def _ndcg(gold: Sequence[str], ranked: Sequence[str], k: int) -> float:
    gains = sum(1 / math.log2(i + 2) for i, s in enumerate(ranked[:k]) if s in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return gains / ideal if ideal else 0.0


def _block(runs: Sequence[QuestionRun], k: int) -> dict[str, Any]:
    scored = [r for r in runs if r.query.scored]
    block: dict[str, Any] = {"n": len(scored)}
    turns = {r.query.qid: summary.top_turns(r, k, k) for r in scored}
    block[f"turn_any@{k}"] = summary.percent([metrics.hit_at_k(r.query.gold, turns[r.query.qid], k) for r in scored])
    block[f"turn_all@{k}"] = summary.percent([metrics.all_at_k(r.query.gold, turns[r.query.qid], k) for r in scored])
    with_sessions = [r for r in scored if r.query.extra["sessions"]]
    for j in KS:
        block[f"session_any@{j}"] = summary.percent(
            [bool(set(ranked_sessions(r)[:j]) & set(r.query.extra["sessions"])) for r in with_sessions])
    block["session_ndcg@10"] = summary.percent(
        [_ndcg(r.query.extra["sessions"], ranked_sessions(r), 10) for r in with_sessions])
    block.update(summary.latency_block(scored))
    return block


def system_report(result: SystemRun, k: int, reader_model: str | None = None) -> dict[str, Any]:
    """Overall, by question type, and abstention (no-answer AUROC)."""
    overall = _block(result.runs, k)
    overall.update(summary.cost_block(result))
    questions = max(len(result.runs), 1)
    timed = result.ingest_ms and not result.reopened
    overall["ingest_s_per_question"] = round(result.ingest_ms / 1000 / questions, 3) if timed else None
    overall["ingest_turns_per_s"] = round(result.turns / (result.ingest_ms / 1000), 1) if timed else None
    abstention = summary.no_answer_block(
        [r for r in result.runs if r.query.scored or r.query.extra["abstention"]],
        lambda r: bool(r.query.extra["abstention"]), result.no_answer_threshold)
    overall["no_answer_auroc"] = abstention.get("no_answer_auroc")
    kinds = sorted({r.query.category for r in result.runs})
    by_category = {kind: _block([r for r in result.runs if r.query.category == kind], k) for kind in kinds}
    halves = {half: [r for r in result.runs if r.query.extra.get("half") == half] for half in HALVES}
    by_half = {half: _block(runs, k) for half, runs in halves.items() if runs}
    by_half_category = {half: {kind: _block([r for r in runs if r.query.category == kind], k)
                               for kind in kinds if any(r.query.category == kind for r in runs)}
                        for half, runs in halves.items() if runs}
    return {"overall": overall, "by_category": by_category, "by_half": by_half,
            "by_half_category": by_half_category, "abstention": abstention}
