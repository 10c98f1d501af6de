"""``zeromem search``, ``reindex`` and ``demo``: the retrieval side of the command line."""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer

from ..ingest import load_file
from ..ingest.locomo import LocomoQuestion, locomo_questions
from ..memory import Memory
from ..reader.base import usage
from ..results import SearchResult
from ..retrieval.calibrate import NO_ANSWER_THRESHOLD
from .cli_common import (
    AgentOption,
    DbOption,
    JsonOption,
    UserOption,
    app,
    friendly,
    open_memory,
    print_json,
    safe,
)

# Shipped inside the package (package data), so `zeromem demo` works from an installed wheel;
# examples/locomo_moving_city.json in the repository is the same file.
EXAMPLE = "locomo_moving_city.json"
NO_ANSWER_NOTE = (
    "no_answer_score (0 to 1) says how likely the memory holds no answer: a logistic model of how "
    "much of the question the best turns cover, how close in meaning they are, whether they contain "
    "the names it asks about and whether they were said by the person it asks about "
    f"(zeromem.retrieval.calibrate). At or above {NO_ANSWER_THRESHOLD} the memory probably "
    "holds no answer, as for an adversarial question; it is a signal, not a verdict.")


@contextlib.contextmanager
def example_path() -> Iterator[Path]:
    """The packaged example conversation as a file path (extracted if the package is zipped)."""
    with resources.as_file(resources.files("zeromem") / "examples" / EXAMPLE) as path:
        yield path


def _when(time: str | None) -> str:
    """A provenance time for a one-line listing: minutes, plus the offset when it has one."""
    if not time:
        return "undated"
    text = time.replace("T", " ")
    return text[:16] + (f" {text[19:]}" if len(text) > 19 else "")


def _print_evidence(result: SearchResult, *, show_why: bool = False) -> None:
    for rank, ev in enumerate(result.evidence, 1):
        p = ev.provenance
        source = f" {safe(p.source_id)}" if p.source_id else ""
        typer.echo(f"{rank:>2}. [{ev.trace_id}{source} | {safe(p.session)} | {_when(p.time)} | "
                   f"{safe(p.speaker)}] {safe(ev.text)}")
        for note in ev.annotations:
            typer.echo(f"      ↳ {safe(note)}")
        if ev.superseded_by:
            typer.echo(f"      ↳ superseded by {ev.superseded_by}")
        if show_why:
            # Reasons name trace ids ("reply to t4k2x9q7m"), never the index's internal slots.
            parts = ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={safe(v)}"
                              for k, v in ev.why.items())
            typer.echo(f"      why: {parts}")


@app.command()
@friendly
def search(
    query: Annotated[str, typer.Argument(help="the question or cue to find evidence for")],
    k: Annotated[int, typer.Option("--k", help="at most this many turns of evidence")] = 10,
    session: Annotated[str | None, typer.Option(help="only this session")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ignore traces after this time")] = None,
    now: Annotated[str | None, typer.Option("--now", help="when the question is asked (default: --as-of); "
                                                          "'last week' counts from it")] = None,
    why: Annotated[bool, typer.Option("--why", help="show the score breakdown of each item")] = False,
    context: Annotated[bool, typer.Option("--context", help="print the rendered prompt block")] = False,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Retrieve evidence for QUERY (zero LLM calls): verbatim turns with provenance."""
    with open_memory(db, user, agent) as mem:
        result = mem.search_detailed(query, k=k, session=session, as_of=as_of, now=now)
        rendered = mem.render(result.evidence, budget_tokens=None) if context else None
    if as_json:
        print_json({"query": query, "route": result.explain.route,
                    "no_answer_score": result.no_answer_score, "no_answer": result.no_answer,
                    "timings_ms": result.explain.timings,
                    "evidence": result.evidence})
        return
    typer.echo(f"route={result.explain.route}  no_answer_score={result.no_answer_score:.2f}  "
               f"time={result.explain.timings['total_ms']:.1f} ms "
               f"(query encoding {result.explain.timings['encode_ms']:.1f} ms)")
    _print_evidence(result, show_why=why)
    if rendered is not None:
        typer.echo("\n" + safe(rendered.text))


@app.command()
@friendly
def reindex(db: DbOption = None, user: UserOption = None, agent: AgentOption = None) -> None:
    """Rebuild every derived index of the scope from the stored traces."""
    with open_memory(db, user, agent) as mem:
        report = mem.reindex(progress=True)
    enc = ", ".join(f"{k} {v:.2f}s" for k, v in sorted(report.encoder_seconds.items()))
    typer.echo(f"reindexed {report.sessions} sessions into {report.units} units in "
               f"{report.seconds:.2f}s (encoders: {enc or 'none'})")


def _evidence_verdict(question: LocomoQuestion, result: SearchResult) -> tuple[str, int]:
    """("found D1:5, missed D2:3 (partial)", 0 miss / 1 partial / 2 hit) for one question."""
    if not question.evidence:
        return "no expected evidence listed", -1
    shown = {ev.provenance.source_id for ev in result.evidence if ev.provenance.source_id}
    found = [e for e in question.evidence if e in shown]
    missed = [e for e in question.evidence if e not in shown]
    level = 2 if not missed else 1 if found else 0
    parts = ([f"found {', '.join(found)}"] if found else []) + (
        [f"missed {', '.join(missed)}"] if missed else [])
    return f"{'; '.join(safe(p) for p in parts)} ({('miss', 'partial', 'hit')[level]})", level


@app.command()
@friendly
def demo(
    file: Annotated[Path | None, typer.Argument(
        help="a LoCoMo-format conversation with questions [default: the shipped example]")] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="turns of evidence per question")] = 5,
) -> None:
    """The main job end to end: ingest a conversation, index it, and retrieve evidence for its
    questions, saying for each whether the turns that answer it were found."""
    with contextlib.ExitStack() as stack:
        path = file if file is not None else stack.enter_context(example_path())
        conversation = load_file(path)[0]
        questions = locomo_questions(conversation)
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        mem = stack.enter_context(Memory(Path(tmp) / "demo.db", user="demo"))
        started = time.perf_counter()
        ids = mem.add_many(conversation.drafts)  # indexed as it is stored (index_on_write)
        mem.index(progress=True)  # whatever the write left to derive
        units = sum(mem.stats().units.values())
        typer.echo(f"stored {len(ids)} traces of '{safe(conversation.name)}' verbatim and indexed "
                   f"them into {units} units (turn/span/window/episode) in "
                   f"{time.perf_counter() - started:.2f}s")
        typer.echo(f"\n{NO_ANSWER_NOTE}")
        before = usage()
        levels = []
        for number, question in enumerate(questions, 1):
            result = mem.search_detailed(question.text, k=k)
            verdict, level = _evidence_verdict(question, result)
            typer.echo(f"\nQ{number}: {safe(question.text)}")
            if question.answer is not None:
                levels.append(level)
                typer.echo(f"   answer in the file: {safe(question.answer)}")
                typer.echo(f"   expected evidence: {verdict}")
            else:
                tempting = f" (a tempting wrong answer: {safe(question.tempting)})" if question.tempting else ""
                typer.echo(f"   adversarial: the conversation does not answer this{tempting}; "
                           "a good result has a high no_answer_score")
                typer.echo(f"   turns it is built on: {verdict}")
            typer.echo(f"   no_answer_score={result.no_answer_score:.2f}  "
                       f"{result.explain.timings['total_ms']:.1f} ms")
            _print_evidence(result)
        spent = usage() - before
        scored = [level for level in levels if level >= 0]
        typer.echo(f"\nexpected evidence in the top {k}: all of it for "
                   f"{sum(level == 2 for level in scored)} of {len(scored)} answerable questions, "
                   f"part of it for {sum(level == 1 for level in scored)} "
                   f"({len(questions) - len(levels)} adversarial question(s) not counted)")
        typer.echo(f"LLM calls in memory operations: {spent.calls}, LLM tokens: {spent.tokens}")
