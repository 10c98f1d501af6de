"""Update propagation for ``bench lifecycle``: correction chains and LongMemEval updates.

- Correction chains (``lifecycle_data.correction_chains``): the chain's question is searched;
  a chain counts when the first of its links in the evidence is its newest link (the current
  state), and the older links are marked superseded by it.
- LongMemEval-S knowledge-update questions (not the abstention ones): the haystack is stored
  (every turn, user and assistant, with its session date), the question is searched ``as_of``
  its date; a question counts when the newest answer-bearing turn (``has_answer``) is in the
  top 10 and ranks above every older answer-bearing turn there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zeromem.memory import Memory

from .lifecycle_data import correction_chains
from .longmemeval import haystack, iso_date, read_items

K = 10


def chains_report(n: int, progress: bool) -> tuple[float | None, dict[str, Any]]:
    from tqdm import tqdm

    memories = correction_chains(n)
    ok = 0
    by_length: dict[str, list[int]] = {}
    failures: list[dict[str, Any]] = []
    for drafts, chains in tqdm(memories, desc="correction chains", disable=not progress):
        with Memory(":memory:") as mem:
            ids = mem.add_many(drafts)
            tid_of = {d["source_id"]: tid for d, tid in zip(drafts, ids)}
            for chain in chains:
                links = [tid_of[s] for s in chain.source_ids]
                evidence = mem.search(chain.question, k=K)
                ranked = [ev.trace_id for ev in evidence if ev.trace_id in links]
                good = bool(ranked) and ranked[0] == links[-1]
                ok += good
                cell = by_length.setdefault(str(len(links)), [0, 0])
                cell[0] += good
                cell[1] += 1
                if not good and len(failures) < 10:
                    failures.append({"question": chain.question, "values": list(chain.values),
                                     "ranked_links": [links.index(t) for t in ranked]})
    total = sum(len(c) for _, c in memories)
    share = round(100 * ok / total, 2) if total else None
    return share, {"chains": total, "current_first": ok,
                   "by_length": {k: round(100 * a / b, 2) for k, (a, b) in sorted(by_length.items())},
                   "failures": failures}


def knowledge_update_report(path: Path, limit: int | None, progress: bool) -> tuple[float | None, dict[str, Any]]:
    from tqdm import tqdm

    items = read_items(path)
    questions = [q for q in items if q.get("question_type") == "knowledge-update"
                 and not str(q.get("question_id", "")).endswith("_abs")]
    if limit is not None:
        questions = questions[:limit]
    ok, both, rows = 0, 0, []
    for q in tqdm(questions, desc="LongMemEval knowledge-update", disable=not progress):
        drafts, gold = haystack(q)
        with Memory(":memory:") as mem:
            ids = mem.add_many(drafts)
            order = {tid: i for i, tid in enumerate(ids)}
            answer_ids = sorted((tid for d, tid in zip(drafts, ids) if d["source_id"] in gold),
                                key=lambda tid: order[tid])
            evidence = mem.search(q["question"], k=K, as_of=iso_date(q["question_date"]))
        ranked = [ev.trace_id for ev in evidence if ev.trace_id in answer_ids]
        newest = answer_ids[-1] if answer_ids else None
        good = bool(ranked) and ranked[0] == newest
        ok += good
        both += len(ranked) >= 2
        rows.append({"question_id": q["question_id"], "answer_turns": len(answer_ids),
                     "retrieved_answer_turns": len(ranked), "newest_first": good})
    share = round(100 * ok / len(questions), 2) if questions else None
    return share, {"questions": len(questions), "newest_first": ok,
                   "with_two_answer_turns_retrieved": both, "per_question": rows}
