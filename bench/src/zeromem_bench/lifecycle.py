"""``zeromem bench lifecycle``: what active memory holds, keeps and costs (docs/decisions/0018-survival-score.md).

Sections (each LoCoMo conversation is one memory, questions of categories 1–4):

- **Evidence in active memory**: the share of gold evidence turns held in ``Memory.active`` at
  budgets 500 / 1 000 / 2 000, against a recency window and a seeded random selection of the
  same budget, at the end of the conversation and at every session end (``as_of``; a question
  counts at a prefix when all its evidence is in it). The active state is a pure function of the
  trace sequence (tested), so asking ``as_of`` a session end equals replaying up to it.
- **Retention under noise**: filler injected 1:1 and 3:1; the share of constraint/preference
  turns still active at 2 000 tokens — turns the rules flag, and a hand-labelled list
  (``fixtures/locomo_constraints.json``, by dia_id).
- **Update propagation**: synthetic correction chains (current state first), and LongMemEval-S
  knowledge-update questions (the newest answer-bearing turn ranks above the older ones).
- **Token accounting**: prompt tokens of a turn (active memory + evidence in one budget) against
  the whole history, at each session boundary (the next session's first turn as the message),
  and the lifecycle's cost per ingested turn.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zeromem._internals import lifecycle_of
from zeromem.encoders.token_count import count_budget_tokens
from zeromem.lifecycle.active import entry_line
from zeromem.memory import Memory
from zeromem.reader import base as reader_base

from . import report
from .lifecycle_updates import chains_report, knowledge_update_report
from .locomo import CATEGORIES, load_locomo

BUDGETS = (500, 1000, 2000)
POLICIES = ("zeromem", "recency", "random")
NOISE_RATIOS = (1, 3)
RETENTION_BUDGET = 2000
PROMPT_BUDGET = 2000
FIXTURE = Path(__file__).with_name("fixtures") / "locomo_constraints.json"


def run(locomo: Sequence[Path], longmemeval: Path | None, *, ku_limit: int | None, chains: int,
        progress: bool, split: int = 2) -> dict[str, Any]:
    """Every section; ``split``: the first ``split`` conversations (sorted by file) are the half
    the constants were tuned on, the rest the half they were not."""
    before = reader_base.usage()
    data = load_locomo(locomo)
    labelled = json.loads(FIXTURE.read_text(encoding="utf-8")) if FIXTURE.exists() else {}
    per_conv: dict[str, dict[str, Any]] = {}
    cost: dict[str, Any] = {"lifecycle_s": 0.0, "ingest_s": 0.0, "turns": 0, "active_ms": []}
    for corpus in _progress(data.corpora, progress, "LoCoMo conversations"):
        per_conv[corpus.name] = _conversation(corpus, labelled.get(corpus.name, {}), cost)
    names = [c.name for c in data.corpora]
    halves = {"tuned": names[:split], "held_out": names[split:]}
    document: dict[str, Any] = {
        "active_evidence_share": _merge_share([per_conv[n]["share"] for n in names]),
        "active_evidence_share_by_half": {h: _merge_share([per_conv[n]["share"] for n in ns])
                                          for h, ns in halves.items() if ns},
        "retention_under_noise": _merge_retention([per_conv[n]["retention"] for n in names]),
        "retention_under_noise_by_half": {h: _merge_retention([per_conv[n]["retention"] for n in ns])
                                          for h, ns in halves.items() if ns},
        "prompt_tokens_per_turn": _merge_prompts([per_conv[n]["prompts"] for n in names]),
        "lifecycle_ms_per_turn": round(1000 * cost["lifecycle_s"] / max(cost["turns"], 1), 3),
        "ingest_ms_per_turn": round(1000 * cost["ingest_s"] / max(cost["turns"], 1), 3),
        "active_ms_p50": round(statistics.median(cost["active_ms"]), 3) if cost["active_ms"] else None,
        "halves": halves,
    }
    document["correction_chains_current_first"], document["correction_chains"] = chains_report(chains, progress)
    if longmemeval is not None:
        document["knowledge_update_newest_first"], document["knowledge_update"] = (
            knowledge_update_report(longmemeval, ku_limit, progress))
    spent = reader_base.usage() - before
    document["llm_calls"], document["llm_tokens"] = spent.calls, spent.tokens
    reader_base.assert_no_llm_calls(spent, "bench lifecycle")
    return document


def _conversation(corpus: Any, labelled: dict[str, str], cost: dict[str, Any]) -> dict[str, Any]:
    drafts = [u.draft for u in corpus.units]
    with Memory(":memory:") as mem:
        started = time.perf_counter()
        ids = mem.add_many(drafts)
        cost["ingest_s"] += time.perf_counter() - started
        cost["lifecycle_s"] += lifecycle_of(mem).seconds
        cost["turns"] += len(ids)
        key_of = {tid: unit.key for tid, unit in zip(ids, corpus.units)}
        traces = mem.list()
        share = _evidence_share(mem, traces, key_of, corpus.queries, cost)
        prompts = _prompts(mem, traces)
    retention = {str(r): _retention(drafts, r, labelled) for r in NOISE_RATIOS}
    return {"share": share, "retention": retention, "prompts": prompts}


def _evidence_share(mem: Memory, traces: list[Any], key_of: dict[str, str], queries: Sequence[Any],
                    cost: dict[str, Any]) -> dict[str, Any]:
    """Gold turns held / gold turns, by budget, policy, checkpoint kind and category."""
    position = {key_of[t.id]: i for i, t in enumerate(traces)}
    checkpoints = _session_ends(traces)
    counts: dict[str, Any] = defaultdict(lambda: [0, 0])
    for end_index, as_of, final in checkpoints:
        prefix = traces[:end_index + 1]
        asked = [q for q in queries if q.scored and q.gold and all(position.get(g, 10**9) <= end_index for g in q.gold)]
        if not asked:
            continue
        for budget in BUDGETS:
            started = time.perf_counter()
            active = mem.active(budget, as_of=as_of)
            cost["active_ms"].append(1000 * (time.perf_counter() - started))
            if active.considered != len(prefix):
                continue  # session times out of order: this prefix is not a time cut
            held = {"zeromem": {key_of[e.trace_id] for e in active.entries},
                    "recency": _recency(prefix, budget, key_of),
                    "random": _random(prefix, budget, key_of, seed=end_index)}
            for policy, keys in held.items():
                for q in asked:
                    hit = sum(g in keys for g in q.gold)
                    for where in ("end" if final else "prefix", "all"):
                        for cat in (q.category, "overall"):
                            cell = counts[f"{budget}|{policy}|{where}|{cat}"]
                            cell[0] += hit
                            cell[1] += len(q.gold)
    return {key: list(value) for key, value in counts.items()}


def _session_ends(traces: list[Any]) -> list[tuple[int, str | None, bool]]:
    ends = []
    for i, t in enumerate(traces):
        if i + 1 == len(traces) or traces[i + 1].session != t.session:
            ends.append((i, t.event_time or t.session_time, i + 1 == len(traces)))
    return ends


def _cost(trace: Any) -> int:
    return count_budget_tokens(entry_line(trace.id, trace.speaker, trace.text))


def _recency(prefix: list[Any], budget: int, key_of: dict[str, str]) -> set[str]:
    held, used = set(), 0
    for t in reversed(prefix):
        if used + _cost(t) > budget:
            break
        held.add(key_of[t.id])
        used += _cost(t)
    return held


def _random(prefix: list[Any], budget: int, key_of: dict[str, str], seed: int) -> set[str]:
    order = list(prefix)
    random.Random(seed).shuffle(order)
    held, used = set(), 0
    for t in order:
        if used + _cost(t) <= budget:
            held.add(key_of[t.id])
            used += _cost(t)
    return held


def _retention(drafts: list[dict[str, Any]], ratio: int, labelled: dict[str, str]) -> dict[str, Any]:
    """Constraint/preference turns still active at the end, with ``ratio`` filler per turn."""
    from zeromem.lifecycle.rules import dialogue_signals

    from .lifecycle_data import with_noise

    noisy = with_noise(drafts, ratio)
    with Memory(":memory:") as mem:
        ids = mem.add_many(noisy)
        active = mem.active(RETENTION_BUDGET)
    kept = {e.trace_id for e in active.entries}
    by_source = {d.get("source_id"): tid for d, tid in zip(noisy, ids)}
    flagged = [tid for d, tid in zip(noisy, ids) if not str(d.get("source_id", "")).startswith("noise:")
               and {"constraint", "preference"} & dialogue_signals(d["text"])]
    hand = [by_source[k] for k in labelled if k in by_source]
    return {"rules": [sum(t in kept for t in flagged), len(flagged)],
            "labelled": [sum(t in kept for t in hand), len(hand)],
            "noise_in_active": [sum(str(d.get("source_id", "")).startswith("noise:")
                                    for d, tid in zip(noisy, ids) if tid in kept), len(kept)]}


def _prompts(mem: Memory, traces: list[Any]) -> dict[str, list[int]]:
    """At each session boundary, the next message's prompt: zeromem vs the whole history."""
    out: dict[str, list[int]] = {"zeromem": [], "full_history": []}
    for end_index, as_of, final in _session_ends(traces):
        if final:
            continue
        message = traces[end_index + 1].text
        rendered = mem.render_context(message, k=10, budget_tokens=PROMPT_BUDGET, as_of=as_of,
                                      include_active=True)
        history = "\n".join(entry_line(t.id, t.speaker, t.text) for t in traces[:end_index + 1])
        out["zeromem"].append(rendered.tokens + count_budget_tokens(message))
        out["full_history"].append(count_budget_tokens(history) + count_budget_tokens(message))
    return out


# -- merging and tables ------------------------------------------------------------------------
def _merge_share(parts: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for part in parts:
        for key, (hit, gold) in part.items():
            total[key][0] += hit
            total[key][1] += gold
    out: dict[str, Any] = {}
    for key, (hit, gold) in sorted(total.items()):
        budget, policy, where, cat = key.split("|")
        node = out.setdefault(budget, {}).setdefault(policy, {}) if where == "all" and cat == "overall" else None
        pct = round(100 * hit / gold, 2) if gold else None
        if node is not None:
            out[budget][policy] = {"overall": pct, "gold_turns": gold}
    for key, (hit, gold) in sorted(total.items()):
        budget, policy, where, cat = key.split("|")
        pct = round(100 * hit / gold, 2) if gold else None
        if where == "all" and cat != "overall":
            out[budget][policy].setdefault("by_category", {})[cat] = pct
        elif cat == "overall" and where in ("end", "prefix"):
            out[budget][policy][where] = pct
    for budget in out.values():
        base = budget.get("recency", {}).get("overall")
        if base:
            budget["zeromem"]["vs_recency"] = round(budget["zeromem"]["overall"] / base, 3)
    return out


def _merge_retention(parts: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ratio in map(str, NOISE_RATIOS):
        rules = [sum(p[ratio]["rules"][i] for p in parts) for i in (0, 1)]
        hand = [sum(p[ratio]["labelled"][i] for p in parts) for i in (0, 1)]
        out[f"{ratio}:1"] = {
            "rules": round(100 * rules[0] / rules[1], 2) if rules[1] else None, "rules_turns": rules[1],
            "labelled": round(100 * hand[0] / hand[1], 2) if hand[1] else None, "labelled_turns": hand[1],
            "budget_tokens": RETENTION_BUDGET}
    return out


def _merge_prompts(parts: list[dict[str, list[int]]]) -> dict[str, Any]:
    ours = [x for p in parts for x in p["zeromem"]]
    full = [x for p in parts for x in p["full_history"]]
    if not ours:
        return {}
    return {"zeromem": round(statistics.mean(ours), 1), "full_history": round(statistics.mean(full), 1),
            "saving_x": round(sum(full) / max(sum(ours), 1), 2), "turns": len(ours),
            "budget_tokens": PROMPT_BUDGET}


def print_tables(document: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title="Gold evidence held in active memory (% of gold turns)")
    for col in ("budget", "policy", "all", "at end", "at prefixes", *CATEGORIES.values()):
        table.add_column(col)
    for budget, policies in document["active_evidence_share"].items():
        for policy in POLICIES:
            row = policies.get(policy, {})
            table.add_row(budget, policy, *(str(row.get(k)) for k in ("overall", "end", "prefix")),
                          *(str(row.get("by_category", {}).get(c)) for c in CATEGORIES.values()))
    console.print(table)
    for half, shares in document.get("active_evidence_share_by_half", {}).items():
        console.print(f"  {half} half @1000: " + ", ".join(
            f"{p} {shares.get('1000', {}).get(p, {}).get('overall')}" for p in POLICIES))
    for ratio, row in document["retention_under_noise"].items():
        console.print(f"retention under {ratio} noise @{row['budget_tokens']}: rules {row['rules']} % "
                      f"of {row['rules_turns']}, hand-labelled {row['labelled']} % of {row['labelled_turns']}")
    console.print(f"correction chains current-first: {document['correction_chains_current_first']} %")
    if "knowledge_update_newest_first" in document:
        console.print(f"LongMemEval knowledge-update newest-first: {document['knowledge_update_newest_first']} %")
    prompts = document["prompt_tokens_per_turn"]
    if prompts:
        console.print(f"prompt tokens per turn: zeromem {prompts['zeromem']} vs whole history "
                      f"{prompts['full_history']} ({prompts['saving_x']}x fewer)")
    console.print(f"lifecycle ms per ingested turn: {document['lifecycle_ms_per_turn']} "
                  f"(ingest {document['ingest_ms_per_turn']} ms/turn); active() p50 "
                  f"{document['active_ms_p50']} ms; LLM calls {document['llm_calls']}")


def plot(document: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shares = document["active_evidence_share"]
    budgets = sorted(shares, key=int)
    fig, ax = plt.subplots(figsize=(6, 4))
    for policy in POLICIES:
        ax.plot([int(b) for b in budgets], [shares[b].get(policy, {}).get("overall") or 0 for b in budgets],
                marker="o", label=policy)
    ax.set_xlabel("budget (tokens)")
    ax.set_ylabel("gold evidence turns held (%)")
    ax.set_title("LoCoMo dev: evidence in active memory")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(document: dict[str, Any], path: Path, argv: Sequence[str]) -> None:
    full = {"benchmark": "lifecycle", **document, "versions": report.versions(), "git": report.git_commit(),
            "machine": report.machine(), "argv": list(argv)}
    report.write_json(full, path)


def _progress(items: Sequence[Any], enabled: bool, desc: str) -> Any:
    from tqdm import tqdm

    return tqdm(items, desc=desc, disable=not enabled)
