"""``zeromem bench ablate``: each rule family of the engine switched off in turn, on the dev sets.

Every family registered in ``zeromem.retrieval.rules`` is switched off alone
(``RetrievalConfig.disabled_rules``) and every scored question of every data set is searched
again; stored memories do not depend on the retrieval rules, so with ``--memories`` a corpus is
ingested once and reopened for every variant.

Each data set is searched at one evidence budget and read at its headline cut-offs (the
benchmark commands' metrics, from that one search): LoCoMo and REALTALK (LoCoMo's layout) and
LongMemEval-S R@10 / all@10 from a k = 10 search (LongMemEval: turn_any / turn_all over turns);
HotpotQA R@2 / all@5 and MemDaily R@3 / all@5 from a k = 20 search.

Δ is all-on minus the family off, in points: positive means the family pays. **Noise** for a Δ
is the larger of one question's worth (100 / n) and two standard errors of the paired
per-question differences (``2 · sd(d) / √n``, in points): what a coin-flip question or a
resampling of the questions would move. A family **pays** on a data set when either metric's Δ
exceeds its noise and neither falls below −noise, and **costs** when either falls below −noise.
The verdict follows the rule of the rule register: *keep* a family that pays on at least two
data sets and costs on none; otherwise it is a *candidate* to retire or rewrite (the reason
says which half of the rule it fails). A variant ``a+b`` switches the families ``a`` and ``b`` off
together: what retiring them all would do, interactions included.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zeromem.config import Config

from . import metrics
from .records import Corpus, Query

ALL_ON = "all-on"
JOINED = "+"  # "coverage_gain+burst_closure": a variant with those families off together


@dataclass(frozen=True, slots=True)
class Kind:
    """How a data set is read: its loader, the search's budget and the two cut-offs."""

    load: Callable[[Path, int | None], list[Corpus]]
    search_k: int
    recall_at: int
    all_at: int


def _locomo(path: Path, limit: int | None) -> list[Corpus]:
    from .locomo import load_locomo
    return _first(load_locomo([path]).corpora, limit)


def _hotpotqa(path: Path, limit: int | None) -> list[Corpus]:
    from .hotpotqa import load_hotpotqa
    corpus = load_hotpotqa([path]).corpus
    # The pool stays whole (its memory is the same); only the first questions are asked.
    queries = list(corpus.queries)[:limit] if limit else list(corpus.queries)
    return [dataclasses.replace(corpus, queries=queries)]


def _longmemeval(path: Path, limit: int | None) -> list[Corpus]:
    from .longmemeval import load_longmemeval
    return list(load_longmemeval(path, limit).corpora)


def _memdaily(path: Path, limit: int | None) -> list[Corpus]:
    from .memdaily import load_memdaily
    return list(load_memdaily([path], limit).corpora)


def _first(corpora: Sequence[Corpus], limit: int | None) -> list[Corpus]:
    """The first ``limit`` corpora (conversations), all when None."""
    return list(corpora)[:limit] if limit else list(corpora)


KINDS: dict[str, Kind] = {
    "locomo": Kind(_locomo, 10, 10, 10),
    "realtalk": Kind(_locomo, 10, 10, 10),  # LoCoMo's layout
    "hotpotqa": Kind(_hotpotqa, 20, 2, 5),
    "longmemeval": Kind(_longmemeval, 10, 10, 10),
    "memdaily": Kind(_memdaily, 20, 3, 5),
}


@dataclass(slots=True)
class DataSet:
    """One data set to measure: ``name`` (a key of ``KINDS``), its path, a limit (conversations
    for LoCoMo / REALTALK, questions for HotpotQA and LongMemEval, trajectories per file for
    MemDaily) and the folder its memories are kept in."""

    name: str
    path: Path
    limit: int | None = None
    memories: Path | None = None


@dataclass(slots=True)
class _Scores:
    """Per scored question (in data order): recall at the first cut-off, all gold at the
    second, and the evidence ids it returned."""

    recall: list[float] = field(default_factory=list)
    all_gold: list[float] = field(default_factory=list)
    ranked: list[tuple[str, ...]] = field(default_factory=list)


def _config(base: Config, family: str) -> Config:
    rules = () if family == ALL_ON else tuple(family.split(JOINED))
    return dataclasses.replace(base, retrieval=dataclasses.replace(base.retrieval, disabled_rules=rules),
                               index_on_write=False)


def _search(mem: Any, corpus: Corpus, queries: Sequence[Query], kind: Kind, out: _Scores) -> None:
    for query in queries:
        result = mem.search_detailed(query.text, user=corpus.name, k=kind.search_k, now=query.asked_at)
        groups = [[item.provenance.source_id or item.trace_id] for item in result.evidence]
        ranked = metrics.flatten_turns(groups, kind.search_k)
        out.recall.append(metrics.recall_at_k(query.gold, ranked, kind.recall_at))
        out.all_gold.append(float(metrics.all_at_k(query.gold, ranked, kind.all_at)))
        out.ranked.append(tuple(ranked))


def measure(data: DataSet, families: Sequence[str], base: Config, *,
            progress: bool = False) -> dict[str, _Scores]:
    """Family (or ``ALL_ON``) → the scores of every scored question of ``data``."""
    import tempfile

    from zeromem.memory import Memory

    from .memories import memory_path, stored_memory

    kind = KINDS[data.name]
    corpora = kind.load(data.path, data.limit)
    variants = [ALL_ON, *families]
    scores = {variant: _Scores() for variant in variants}
    with tempfile.TemporaryDirectory(prefix="zeromem-ablate-") as scratch:
        folder = data.memories or Path(scratch)
        for number, corpus in enumerate(corpora, 1):
            queries = [q for q in corpus.queries if q.scored and q.gold]
            if not queries:
                continue
            if progress:
                print(f"{data.name}: {corpus.name} ({number}/{len(corpora)}, {len(queries)} questions)",
                      flush=True)
            stored = Corpus(corpus.name, list(corpus.units), [])
            # Ingested once (or reopened from an earlier run), searched all-on, then reopened
            # with each family off: a memory's rows do not depend on the retrieval rules.
            mem, _ = stored_memory(folder, stored, _config(base, ALL_ON))
            with mem:
                _search(mem, corpus, queries, kind, scores[ALL_ON])
            for variant in families:
                with Memory(memory_path(folder, stored), user=corpus.name,
                            config=_config(base, variant)) as mem:
                    _search(mem, corpus, queries, kind, scores[variant])
    return scores


def _effect(on: list[float], off: list[float]) -> tuple[float, float]:
    """(Δ in points, its noise in points) for paired per-question values in [0, 1]."""
    n = len(on)
    if not n:
        return 0.0, 0.0
    diffs = [a - b for a, b in zip(on, off)]
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    return 100 * mean, max(100 / n, 2 * 100 * sd / math.sqrt(n))


def compare(scores: dict[str, _Scores]) -> dict[str, dict[str, Any]]:
    """Family → its effect on one data set: the metrics all-on and off, each Δ and its noise,
    how many questions' evidence changed, and whether it pays or costs there."""
    on = scores[ALL_ON]
    rows: dict[str, dict[str, Any]] = {}
    for family, off in scores.items():
        if family == ALL_ON:
            continue
        d_recall, n_recall = _effect(on.recall, off.recall)
        d_all, n_all = _effect(on.all_gold, off.all_gold)
        costs = d_recall < -n_recall or d_all < -n_all
        pays = not costs and (d_recall > n_recall or d_all > n_all)
        rows[family] = {
            "n": len(on.recall), "changed": sum(a != b for a, b in zip(on.ranked, off.ranked)),
            "recall_off": _pct(off.recall), "all_off": _pct(off.all_gold),
            "d_recall": round(d_recall, 2), "noise_recall": round(n_recall, 2),
            "d_all": round(d_all, 2), "noise_all": round(n_all, 2), "pays": pays, "costs": costs}
    return rows


def verdict(effects: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """(keep | candidate, why) for one family from its effect on each data set."""
    pays = [name for name, row in effects.items() if row["pays"]]
    costs = [name for name, row in effects.items() if row["costs"]]
    if costs:
        return "candidate", f"costs more than noise on {', '.join(costs)}"
    if len(pays) >= 2:
        return "keep", f"pays on {', '.join(pays)}"
    if not any(row["changed"] for row in effects.values()):
        return "candidate", "changes no evidence on these data sets"
    return "candidate", f"pays on {len(pays)} data set{'s' if len(pays) != 1 else ''}" + (
        f" ({pays[0]})" if pays else "")


def _pct(values: list[float]) -> float:
    return round(100 * sum(values) / len(values), 2) if values else 0.0


def run(datasets: Sequence[DataSet], families: Sequence[str], base: Config | None = None, *,
        progress: bool = False) -> dict[str, Any]:
    """The ablation document: per data set its all-on metrics and each family's effect, and per
    family its verdict."""
    from zeromem.retrieval.rules import RULE_FAMILIES

    base = base or Config()
    origin = {family.name: family.origin for family in RULE_FAMILIES}
    origin.update({variant: "; ".join(origin[name] for name in variant.split(JOINED))
                   for variant in families if JOINED in variant})
    document: dict[str, Any] = {"benchmark": "ablate", "families": list(families), "datasets": {},
                                "notes": [__doc__.split("\n\n", 1)[1].strip()]}
    for data in datasets:
        kind = KINDS[data.name]
        scores = measure(data, families, base, progress=progress)
        on = scores[ALL_ON]
        document["datasets"][data.name] = {
            "path": str(data.path), "limit": data.limit, "n": len(on.recall),
            "metrics": [f"R@{kind.recall_at}", f"all@{kind.all_at}"], "search_k": kind.search_k,
            "recall": _pct(on.recall), "all": _pct(on.all_gold), "effects": compare(scores)}
    document["verdicts"] = {}
    for family in families:
        effects = {name: block["effects"][family] for name, block in document["datasets"].items()}
        decision, why = verdict(effects)
        document["verdicts"][family] = {"verdict": decision, "why": why, "origin": origin.get(family, "")}
    return document


def table(document: dict[str, Any]) -> str:
    """The document as a Markdown table: family × data set, Δ R / Δ all (changed questions),
    the verdict last."""
    names = list(document["datasets"])
    head = ["family", *(f"{name} ({block['metrics'][0]} / {block['metrics'][1]}, n={block['n']})"
                        for name, block in document["datasets"].items()), "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
             "| all on | " + " | ".join(f"{document['datasets'][n]['recall']:.1f} / "
                                        f"{document['datasets'][n]['all']:.1f}" for n in names) + " | |"]
    for family in document["families"]:
        cells = []
        for name in names:
            row = document["datasets"][name]["effects"][family]
            mark = " ✓" if row["pays"] else " ✗" if row["costs"] else ""
            cells.append(f"{row['d_recall']:+.1f} / {row['d_all']:+.1f} "
                         f"(±{row['noise_recall']:.1f} / ±{row['noise_all']:.1f}; {row['changed']} ch){mark}")
        v = document["verdicts"][family]
        lines.append(f"| `{family}` | " + " | ".join(cells) + f" | {v['verdict']}: {v['why']} |")
    return "\n".join(lines)


def write(document: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
