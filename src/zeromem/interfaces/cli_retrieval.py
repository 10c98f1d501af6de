"""``zeromem search``, ``reindex`` and ``demo``: the retrieval side of the command line."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from ..ingest import load_file
from ..memory import Memory
from ..reader.base import usage
from .cli import (
    AgentOption,
    DbOption,
    JsonOption,
    UserOption,
    app,
    friendly,
    open_memory,
    print_json,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "locomo_moving_city.json"


def _print_evidence(result, *, show_why: bool = False) -> None:
    for rank, ev in enumerate(result.evidence, 1):
        p = ev.provenance[0]
        when = (p.time or "undated").replace("T", " ")[:16]
        source = f" {p.source_id}" if p.source_id else ""
        typer.echo(f"{rank:>2}. [{ev.trace_ids[0]}{source} | {p.session} | {when} | {p.speaker}] "
                   f"{ev.text}")
        for note in ev.annotations:
            typer.echo(f"      ↳ {note}")
        if ev.superseded_by:
            typer.echo(f"      ↳ superseded by {ev.superseded_by}")
        if show_why:
            parts = ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in ev.why.items())
            typer.echo(f"      why: {parts}")


@app.command()
@friendly
def search(
    query: Annotated[str, typer.Argument(help="the question or cue to find evidence for")],
    k: Annotated[int, typer.Option("--k", help="at most this many turns of evidence")] = 10,
    session: Annotated[str | None, typer.Option(help="only this session")] = None,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ignore traces after this time")] = None,
    why: Annotated[bool, typer.Option("--why", help="show the score breakdown of each item")] = False,
    context: Annotated[bool, typer.Option("--context", help="print the rendered prompt block")] = False,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Retrieve evidence for QUERY (zero LLM calls): verbatim turns with provenance."""
    with open_memory(db, user, agent) as mem:
        result = mem.search_detailed(query, k=k, session=session, as_of=as_of)
        rendered = mem.retriever.render(mem.scope, result.evidence, None) if context else None
    if as_json:
        print_json({"query": query, "route": result.route.primary,
                    "no_answer_score": result.no_answer_score, "timings_ms": result.timings,
                    "evidence": result.evidence})
        return
    typer.echo(f"route={result.route.primary}  no_answer_score={result.no_answer_score:.2f}  "
               f"time={result.timings['total_ms']:.1f} ms "
               f"(query encoding {result.timings['encode_ms']:.1f} ms)")
    _print_evidence(result, show_why=why)
    if rendered is not None:
        typer.echo("\n" + rendered.text)


@app.command()
@friendly
def reindex(db: DbOption = None, user: UserOption = None, agent: AgentOption = None) -> None:
    """Rebuild every derived index of the scope from the stored traces."""
    with open_memory(db, user, agent) as mem:
        report = mem.reindex(progress=True)
    enc = ", ".join(f"{k} {v:.2f}s" for k, v in sorted(report.encoder_seconds.items()))
    typer.echo(f"reindexed {report.sessions} sessions into {report.units} units in "
               f"{report.seconds:.2f}s (encoders: {enc or 'none'})")


@app.command()
@friendly
def demo(
    file: Annotated[Path | None, typer.Argument(help="a LoCoMo-format conversation")] = None,
    k: Annotated[int, typer.Option("--k", help="turns of evidence per question")] = 5,
) -> None:
    """The main job end to end: ingest a conversation, index it, answer its questions with evidence."""
    path = file or EXAMPLE
    conversation = load_file(path)[0]
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "demo.db", user=conversation.name) as mem:
        ids = mem.add_many(conversation.drafts)
        typer.echo(f"stored {len(ids)} traces of '{conversation.name}' verbatim")
        report = mem.index(progress=True)
        typer.echo(f"indexed {report.units} units (turn/span/window/episode) in {report.seconds:.2f}s")
        before = usage()
        for qa in conversation.qa:
            result = mem.search_detailed(qa["question"], k=k)
            gold = qa.get("answer", qa.get("adversarial_answer", ""))
            typer.echo(f"\nQ: {qa['question']}   (gold: {gold}; evidence {', '.join(qa.get('evidence', []))})")
            typer.echo(f"   no_answer_score={result.no_answer_score:.2f}  "
                       f"{result.timings['total_ms']:.1f} ms")
            _print_evidence(result)
        spent = usage() - before
        typer.echo(f"\nLLM calls in memory operations: {spent.calls}, LLM tokens: {spent.tokens}")
