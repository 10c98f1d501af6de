"""The ``Memory`` methods the other command modules do not cover, one command each: ``add``,
``update``, ``pin`` / ``unpin`` / ``archive`` / ``unarchive``, ``sessions``, ``neighbourhood``,
``context`` (``render_context``), ``answer``, ``index`` and ``health``. So the command line
offers what the Python facade offers (tests/test_cli_memory.py compares the two)."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from ..types import Trace
from .cli_common import (
    AgentOption,
    DbOption,
    JsonOption,
    UserOption,
    app,
    fail,
    friendly,
    open_memory,
    parse_key_values,
    print_json,
    safe,
)
from .extras import require

IdArgument = Annotated[str, typer.Argument(metavar="ID", help="trace id, e.g. t4k2x9q7m")]
MetadataOption = Annotated[list[str] | None, typer.Option(
    "--metadata", metavar="KEY=VALUE", show_default=False,
    help="a metadata field (repeatable; VALUE is read as JSON when it parses, else as text)")]
AsOfOption = Annotated[str | None, typer.Option("--as-of", help="hide traces after this time")]
NowOption = Annotated[str | None, typer.Option(
    "--now", help="when the question is asked: 'last week' in the query counts from it")]


def _print_trace(trace: Trace, as_json: bool) -> None:
    if as_json:
        print_json(trace)
        return
    flags = ", ".join(name for name in ("pinned", "archived") if trace.metadata.get(name)) or "-"
    typer.echo(f"{trace.id}  version {trace.version}  flags: {flags}  {safe(' '.join(trace.text.split()))}")


@app.command()
@friendly
def add(
    text: Annotated[str, typer.Argument(help="the text, stored verbatim")],
    session: Annotated[str | None, typer.Option("--session", help="the session (conversation) it belongs to")] = None,
    speaker: Annotated[str | None, typer.Option("--speaker", help="who said it")] = None,
    role: Annotated[str | None, typer.Option("--role", help="user, assistant, tool or system")] = None,
    session_time: Annotated[str | None, typer.Option("--session-time", help="when the session took place")] = None,
    event_time: Annotated[str | None, typer.Option("--event-time", help="when it was said")] = None,
    source_id: Annotated[str | None, typer.Option("--source-id", help="your own id of the message")] = None,
    metadata: MetadataOption = None,
    attachment: Annotated[list[str] | None, typer.Option(
        "--attachment", help="an attachment's reference, e.g. a URL (repeatable)")] = None,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Store one trace verbatim and print its id."""
    fields = parse_key_values(metadata, "--metadata") or None
    with open_memory(db, user, agent, create=True) as mem:
        tid = mem.add(text, session=session, speaker=speaker, role=role, session_time=session_time,
                      event_time=event_time, source_id=source_id, metadata=fields, attachments=attachment)
    if as_json:
        print_json({"trace_id": tid})
    else:
        typer.echo(tid)


@app.command()
@friendly
def update(
    trace_id: IdArgument,
    text: Annotated[str | None, typer.Option("--text", help="the new text")] = None,
    metadata: MetadataOption = None,
    erase_history: Annotated[bool, typer.Option(
        "--erase-history", help="erase the earlier versions' text and metadata (the events stay)")] = False,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replace a trace's text and/or metadata (--metadata replaces the whole metadata); the
    old version stays in its history unless --erase-history."""
    if text is None and not metadata:
        fail("update needs --text and/or --metadata")
    fields = parse_key_values(metadata, "--metadata") if metadata else None
    with open_memory(db, user, agent) as mem:
        trace = mem.update(trace_id, text=text, metadata=fields, keep_history=not erase_history)
    _print_trace(trace, as_json)


def _flag_command(name: str, summary: str) -> None:
    """``zeromem pin ID`` and its kin: one Memory method that sets or drops a lifecycle flag."""
    @app.command(name, help=summary)
    @friendly
    def command(trace_id: IdArgument, db: DbOption = None, user: UserOption = None,
                agent: AgentOption = None, as_json: JsonOption = False) -> None:
        with open_memory(db, user, agent) as mem:
            trace = getattr(mem, name)(trace_id)
        _print_trace(trace, as_json)


_flag_command("pin", "Keep a trace in active memory whatever its score (an archived one comes back).")
_flag_command("unpin", "Drop a trace's pin: it stays in active memory only while its score keeps it there.")
_flag_command("archive", "Take a trace out of active memory (it stays stored and searchable).")
_flag_command("unarchive", "Drop a trace's archived flag: active memory may hold it again.")


@app.command()
@friendly
def sessions(db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
             as_json: JsonOption = False) -> None:
    """The scope's sessions in conversation order: name, traces, first and last time."""
    with open_memory(db, user, agent) as mem:
        found = mem.sessions()
    if as_json:
        print_json(found)
        return
    for info in found:
        typer.echo(f"{safe(info.session or '-')}\t{info.traces} trace(s)\t{info.first_time or '-'}"
                   f" .. {info.last_time or '-'}")


@app.command()
@friendly
def neighbourhood(
    trace_id: IdArgument,
    limit: Annotated[int, typer.Option("--limit", min=0, help="at most this many neighbours")] = 20,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """A trace's entities and the traces sharing one with it, most shared first."""
    with open_memory(db, user, agent) as mem:
        found = mem.neighbourhood(trace_id, limit=limit)
    if as_json:
        print_json(found)
        return
    typer.echo(f"{found.trace.id}: {safe(' '.join(found.trace.text.split()))}")
    for entity in found.entities:
        typer.echo(f"  entity {safe(entity.surface)} ({entity.label}, in {entity.turns} turn(s))")
    for neighbour in found.neighbours:
        typer.echo(f"  {neighbour.trace.id} shares {safe(', '.join(neighbour.shared))}: "
                   f"{safe(' '.join(neighbour.trace.text.split()))}")


@app.command()
@friendly
def context(
    query: Annotated[str, typer.Argument(help="the question")],
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="evidence turns searched")] = 10,
    budget: Annotated[int, typer.Option("--budget", min=1, help="token budget of the block")] = 2000,
    session: Annotated[str | None, typer.Option("--session", help="only this session")] = None,
    as_of: AsOfOption = None, now: NowOption = None,
    include_active: Annotated[bool, typer.Option(
        "--active", help="active memory first (at most --active-share of the budget), then the evidence")] = False,
    active_share: Annotated[float, typer.Option("--active-share", min=0.0, max=1.0)] = 0.5,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the prompt block for QUERY: chronological evidence within --budget tokens (zero LLM calls)."""
    with open_memory(db, user, agent) as mem:
        rendered = mem.render_context(query, k=k, budget_tokens=budget, session=session, as_of=as_of,
                                      include_active=include_active, active_share=active_share, now=now)
    if as_json:
        print_json(rendered)
        return
    typer.echo(safe(rendered.text))
    for line in rendered.degraded:
        typer.echo(f"degraded: {safe(line)}", err=True)


@app.command()
@friendly
def answer(
    query: Annotated[str, typer.Argument(help="the question")],
    reader_url: Annotated[str, typer.Option(
        "--reader-url", help="OpenAI-compatible API root, e.g. http://localhost:8000/v1 (key: $OPENAI_API_KEY)")],
    reader_model: Annotated[str, typer.Option("--reader-model", help="the model that reads the evidence")],
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="evidence turns searched")] = 10,
    budget: Annotated[int, typer.Option("--budget", min=1, help="token budget of the evidence")] = 2000,
    no_calibrate: Annotated[bool, typer.Option(
        "--no-calibrate", help="print the reader's own words (no grounding check)")] = False,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answer QUERY from memory: the one LLM call (the reader), on the rendered evidence, then
    the deterministic grounding check."""
    require("reader", "zeromem answer")
    from ..reader.openai_compat import OpenAICompatReader

    reader = OpenAICompatReader(reader_url, reader_model)
    with open_memory(db, user, agent) as mem:
        found = mem.answer(query, reader, k=k, budget_tokens=budget, calibrate=not no_calibrate)
    calibration = found.calibration
    if as_json:
        print_json({"text": found.text, "grounded": None if calibration is None else calibration.grounded,
                    "supporting": [] if calibration is None else list(calibration.support),
                    "context": found.context.text})
        return
    typer.echo(safe(found.text))
    if calibration is not None:
        typer.echo(f"grounded: {calibration.grounded}  supporting: {', '.join(calibration.support) or '-'}",
                   err=True)


@app.command()
@friendly
def index(db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
          as_json: JsonOption = False) -> None:
    """Bring the scope's derived indexes up to date with its traces (what changed only)."""
    with open_memory(db, user, agent) as mem:
        report = mem.index(progress=not as_json)
    if as_json:
        print_json(dataclasses.asdict(report))
        return
    typer.echo(f"indexed {report.sessions} session(s) into {report.units} units in {report.seconds:.2f}s")


@app.command()
@friendly
def health(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Whether the store answers and which models work (exit code 1 when it is not ready)."""
    with open_memory(db, None, None) as mem:
        report = mem.health()
    if as_json:
        print_json(report)
    else:
        typer.echo(f"ready: {report.ready}\nstore: {safe(report.store)}\nembedder: {safe(report.embedder)}\n"
                   f"ner: {safe(report.ner)}")
        for line in report.degraded:
            typer.echo(f"degraded: {safe(line)}")
    if not report.ready:
        raise typer.Exit(1)
