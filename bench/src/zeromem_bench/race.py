"""Two processes on one file and one scope: ``zeromem bench race``.

One LoCoMo conversation is stored and indexed in a fresh file. Then, for ``seconds``, process A
searches the scope in a loop with the conversation's questions while process B changes the same
scope with a seeded random mix of ``add``, ``add_many``, ``update``, ``delete`` and
``reindex`` on real turn texts. Both processes load their models and open the file first and
start together.

Counted: searches, writes, and the exceptions each process raised (the first few tracebacks
are kept). Checked afterwards: every evidence a search returned names a trace that existed in
the scope with exactly that text at some point — its ``Memory.history`` holds an add or
update event with that text (a search must never see a half-applied write or invent text).
A search result is inconsistent when any of its evidence fails that check.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import random
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from . import report

USER = "race"
K = 10
MAX_TRACEBACKS = 3
# Operation mix of the writer: adds about balance deletes, so the scope stays near its size.
WRITE_MIX = {"add": 20, "add_many": 10, "update": 20, "delete": 50, "reindex": 1}
WRITE_PAUSE_MS = 5.0  # between writes, so searches interleave with them
SETUP_TIMEOUT_S = 600.0
NOTES = [
    ("process A searches (questions of categories 1-4, cycling); process B writes the same "
     "scope with a seeded mix (write_mix weights), pausing write_pause_ms after each write"),
    ("an evidence is consistent when Memory.history of its trace holds an add or update event "
     "with exactly its text; a search result is inconsistent when any of its evidence is not"),
]


def _conversation(path: Path) -> Any:
    from .stream import _conversation as load

    return load(path)


def _write(path: str, result: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(result), encoding="utf-8")


def _start(ready: Any, go: Any) -> float:
    ready.set()
    if not go.wait(SETUP_TIMEOUT_S):
        raise TimeoutError("the other process never got ready")
    return time.monotonic()


def reader_process(path: str, questions: list[str], k: int, seconds: float, out: str,
                   ready: Any, go: Any) -> None:
    """Search in a loop; record the (trace id, text) of every evidence returned."""
    from zeromem.memory import Memory

    result: dict[str, Any] = {"searches": 0, "exceptions": 0, "tracebacks": [], "pairs": [],
                              "results": [], "search_ms": [], "setup_error": None}
    try:
        mem = Memory(path, user=USER)
        mem.search(questions[0], k=k)  # model loading and the first snapshot: setup
    except Exception:  # noqa: BLE001 - reported, the run fails
        result["setup_error"] = traceback.format_exc()
        ready.set()
        _write(out, result)
        return
    pairs: dict[tuple[str, str | None], int] = {}
    deadline = _start(ready, go) + seconds
    n = 0
    while time.monotonic() < deadline:
        question = questions[n % len(questions)]
        n += 1
        start = time.perf_counter()
        try:
            evidence = mem.search(question, k=k)
        except Exception:  # noqa: BLE001 - counting them is the point
            result["exceptions"] += 1
            if len(result["tracebacks"]) < MAX_TRACEBACKS:
                result["tracebacks"].append(traceback.format_exc())
            continue
        result["searches"] += 1
        result["search_ms"].append((time.perf_counter() - start) * 1000.0)
        seen = []
        for item in evidence:
            # one trace, its text verbatim: that version must have existed
            seen.append(pairs.setdefault((item.trace_id, item.text), len(pairs)))
        result["results"].append(seen)
    mem.close()
    result["pairs"] = [list(pair) for pair in pairs]
    _write(out, result)


def writer_process(path: str, turns: list[dict[str, Any]], seed: int, seconds: float,
                   pause_ms: float, out: str, ready: Any, go: Any) -> None:
    """Change the scope with a seeded random mix of writes until the deadline."""
    from zeromem.memory import Memory

    result: dict[str, Any] = {"writes": 0, "by_op": dict.fromkeys(WRITE_MIX, 0), "exceptions": 0,
                              "ms_by_op": {op: 0.0 for op in WRITE_MIX}, "tracebacks": [],
                              "setup_error": None}
    try:
        mem = Memory(path, user=USER)
        live = [trace.id for trace in mem.list()]
    except Exception:  # noqa: BLE001 - reported, the run fails
        result["setup_error"] = traceback.format_exc()
        ready.set()
        _write(out, result)
        return
    rng = random.Random(seed)
    target = max(len(live), 20)
    ops, weights = list(WRITE_MIX), list(WRITE_MIX.values())
    added = 0

    def draft() -> dict[str, Any]:
        nonlocal added
        turn = rng.choice(turns)
        added += 1
        return {"text": turn["text"], "speaker": turn.get("speaker"),
                "session_time": turn.get("session_time"), "session": f"race_{added // 25}",
                "source_id": f"race:{added}"}

    deadline = _start(ready, go) + seconds
    while time.monotonic() < deadline:
        op = rng.choices(ops, weights)[0]
        if op == "delete" and len(live) <= target // 2:
            op = "add_many"
        elif op in ("add", "add_many") and len(live) >= 2 * target:
            op = "delete"
        start = time.perf_counter()
        try:
            if op == "add":
                item = draft()
                live.append(mem.add(item.pop("text"), **item))
            elif op == "add_many":
                live.extend(mem.add_many([draft() for _ in range(rng.randint(2, 5))]))
            elif op == "update":
                mem.update(rng.choice(live), text=rng.choice(turns)["text"])
            elif op == "delete":
                index = rng.randrange(len(live))
                live[index], live[-1] = live[-1], live[index]
                # The consistency check verifies every returned text against the trace's
                # history, so the writer keeps it (a default delete erases the text).
                mem.delete(live.pop(), keep_history=True)
            else:
                mem.reindex()
            result["writes"] += 1
            result["by_op"][op] += 1
            result["ms_by_op"][op] += (time.perf_counter() - start) * 1000.0
        except Exception:  # noqa: BLE001 - counting them is the point
            result["exceptions"] += 1
            if len(result["tracebacks"]) < MAX_TRACEBACKS:
                result["tracebacks"].append(traceback.format_exc())
        if pause_ms > 0:
            time.sleep(pause_ms / 1000.0)
    mem.close()
    _write(out, result)


def check_consistency(path: str | Path, pairs: Sequence[Sequence[Any]],
                      results: Sequence[Sequence[int]]) -> dict[str, Any]:
    """Which returned (trace id, text) pairs match no committed version of that trace, and
    how many search results hold at least one of them."""
    from zeromem.errors import NotFound
    from zeromem.memory import Memory

    bad: dict[int, str] = {}
    with Memory(path, user=USER) as mem:
        versions: dict[str, set[str] | None] = {}
        for index, (tid, text) in enumerate(pairs):
            if tid not in versions:
                try:
                    events = mem.history(tid)
                except NotFound:
                    versions[tid] = None
                else:
                    versions[tid] = {e.new_text for e in events if e.new_text is not None}
            known = versions[tid]
            if known is None:
                bad[index] = f"{tid}: no such trace was ever stored in the scope"
            elif text is not None and text not in known:
                bad[index] = f"{tid}: returned text {text[:60]!r} matches none of its versions"
    inconsistent = sum(1 for seen in results if any(i in bad for i in seen))
    return {"inconsistent_results": inconsistent, "inconsistent_evidence": len(bad),
            "inconsistent_examples": list(bad.values())[:5]}


def run(data: Path, seconds: float = 60.0, seed: int = 0, k: int = K,
        json_out: Path | None = None, console: Console | None = None,
        workdir: Path | None = None, pause_ms: float = WRITE_PAUSE_MS) -> dict[str, Any]:
    """Run the race; print its table (and the first tracebacks); return the document."""
    from zeromem.memory import Memory

    from .stream import questions_of

    data = Path(data)
    if not data.is_file():
        raise FileNotFoundError(f"--data {data} is not a file: give one LoCoMo conversation")
    if seconds <= 0:
        raise ValueError(f"--seconds must be positive, got {seconds}")
    conversation = _conversation(data)
    questions = questions_of(conversation)
    if not questions or not conversation.drafts:
        raise ValueError(f"{data} needs turns and questions of categories 1-4 for a race")
    turns = [{key: d.get(key) for key in ("text", "speaker", "session_time")}
             for d in conversation.drafts]
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="zeromem-race-", dir=workdir) as tmp:
        path = str(Path(tmp) / "race.db")
        with Memory(path, user=USER) as mem:
            mem.add_many(conversation.drafts)
            mem.index()
        outs = {"reader": str(Path(tmp) / "reader.json"), "writer": str(Path(tmp) / "writer.json")}
        ready = {"reader": ctx.Event(), "writer": ctx.Event()}
        go = ctx.Event()
        procs = {
            "reader": ctx.Process(target=reader_process, args=(
                path, questions, k, seconds, outs["reader"], ready["reader"], go)),
            "writer": ctx.Process(target=writer_process, args=(
                path, turns, seed, seconds, pause_ms, outs["writer"], ready["writer"], go)),
        }
        for proc in procs.values():
            proc.start()
        try:
            for name, event in ready.items():
                if not event.wait(SETUP_TIMEOUT_S):
                    raise RuntimeError(f"the {name} process did not get ready in "
                                       f"{SETUP_TIMEOUT_S:.0f} s")
            go.set()
            for name, proc in procs.items():
                proc.join(seconds + SETUP_TIMEOUT_S)
                if proc.is_alive():
                    raise RuntimeError(f"the {name} process did not stop after {seconds} s")
        finally:
            for proc in procs.values():
                if proc.is_alive():
                    proc.terminate()
                    proc.join(10)
        results: dict[str, dict[str, Any]] = {}
        for name, proc in procs.items():
            if proc.exitcode != 0 or not Path(outs[name]).exists():
                raise RuntimeError(f"the {name} process exited with code {proc.exitcode} "
                                   "and no result")
            results[name] = json.loads(Path(outs[name]).read_text(encoding="utf-8"))
            if results[name]["setup_error"]:
                raise RuntimeError(f"the {name} process failed to start:\n"
                                   f"{results[name]['setup_error']}")
        reader, writer = results["reader"], results["writer"]
        consistency = check_consistency(path, reader["pairs"], reader["results"])
        with Memory(path, user=USER) as mem:
            final_traces = mem.stats().traces
    document = {
        "benchmark": "race", "k": k, "seconds": seconds, "seed": seed,
        "searches": reader["searches"], "writes": writer["writes"],
        "writes_by_op": writer["by_op"],
        "exceptions_reader": reader["exceptions"], "exceptions_writer": writer["exceptions"],
        **consistency,
        "searches_per_s": round(reader["searches"] / seconds, 1),
        **_latency(reader["search_ms"]),
        "write_ms_mean_by_op": {op: round(total / writer["by_op"][op], 2) if writer["by_op"][op]
                                else None for op, total in writer["ms_by_op"].items()},
        "writes_per_s": round(writer["writes"] / seconds, 1),
        "evidence_checked": len(reader["pairs"]), "traces_at_start": len(conversation.drafts),
        "traces_at_end": final_traces,
        "tracebacks_reader": reader["tracebacks"], "tracebacks_writer": writer["tracebacks"],
        "data": {"data": str(data), "conversation": conversation.name,
                 "turns": len(conversation.drafts), "questions": len(questions)},
        "config": {"data": str(data), "seconds": seconds, "seed": seed, "k": k, "user": USER,
                   "write_mix": WRITE_MIX, "write_pause_ms": pause_ms},
        "versions": report.versions(), "git": report.git_commit(), "machine": report.machine(),
        "argv": sys.argv,
        "notes": NOTES}
    print_table(document, console)
    if json_out is not None:
        report.write_json(document, json_out)
    return document


def _latency(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"search_ms_p50": None, "search_ms_max": None}
    ordered = sorted(values)
    return {"search_ms_p50": round(ordered[len(ordered) // 2], 2),
            "search_ms_max": round(ordered[-1], 2)}


def failed(document: dict[str, Any]) -> bool:
    """Any exception in either process, or any inconsistent search result."""
    return bool(document["exceptions_reader"] or document["exceptions_writer"]
                or document["inconsistent_results"])


def print_table(document: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console(width=None if sys.stdout.isatty() else 120)
    table = Table(title=f"bench race: 1 searching + 1 writing process, one scope, "
                        f"{document['seconds']:g} s (seed {document['seed']})")
    for header in ("searches", "writes", "reader exceptions", "writer exceptions",
                   "inconsistent results", "evidence checked", "traces start→end"):
        table.add_column(header, justify="right")
    table.add_row(str(document["searches"]), str(document["writes"]),
                  str(document["exceptions_reader"]), str(document["exceptions_writer"]),
                  str(document["inconsistent_results"]), str(document["evidence_checked"]),
                  f"{document['traces_at_start']}→{document['traces_at_end']}")
    console.print(table)
    console.print(f"search ms p50 {document['search_ms_p50']}, max {document['search_ms_max']}; "
                  "writes by operation (count, mean ms): " + ", ".join(
                      f"{op} {count} ({document['write_ms_mean_by_op'][op]})"
                      for op, count in document["writes_by_op"].items()))
    for role in ("reader", "writer"):
        for tb in document[f"tracebacks_{role}"]:
            console.print(f"[bold red]{role} exception:[/bold red]")
            console.print(tb, markup=False, highlight=False)
    for example in document["inconsistent_examples"]:
        console.print(f"inconsistent: {example}", markup=False)
