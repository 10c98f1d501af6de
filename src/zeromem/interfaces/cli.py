"""The ``zeromem`` command line: a thin layer over ``Memory``.

Every command opens the store given by ``--db`` in the scope given by ``--user``/``--agent``,
calls one ``Memory`` method and prints the result as text or, with ``--json``, as JSON.
Errors zeromem raises on purpose become ``error: <message>`` on stderr and exit code 2, with
no traceback. A new command is one decorated function here (``@app.command()`` over
``@friendly``), or one ``app.add_typer(...)`` line for a group.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from tqdm import tqdm

from .. import __version__
from ..bench.cli import bench_app
from ..config import default_db_path
from ..errors import InvalidInput, NotFound, ZeromemError
from ..ingest import FORMATS, check_conversations, load_file, summarize
from ..memory import Memory

app = typer.Typer(
    name="zeromem",
    help="zeromem: agent memory where every memory operation is deterministic code "
         "(zero LLM calls). Traces are stored verbatim in one SQLite file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Command groups that live in their own modules plug in here, one line each:
app.add_typer(bench_app, name="bench")

DbOption = Annotated[str | None, typer.Option(
    "--db", metavar="PATH", show_default=False,
    help="store file or URL [default: $ZEROMEM_DB or ~/.zeromem/memory.db]")]
UserOption = Annotated[str | None, typer.Option(
    "--user", help="user id of the scope (namespace) to use; scopes never see each other")]
AgentOption = Annotated[str | None, typer.Option(
    "--agent", help="agent id of the scope (namespace) to use, alone or with --user")]
JsonOption = Annotated[bool, typer.Option("--json", help="print JSON instead of text")]

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str) -> NoReturn:
    """Print ``error: message`` to stderr and exit with code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def friendly(func: F) -> F:
    """Turn a ZeromemError raised by a command into ``error: ...`` and exit code 2."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ZeromemError as exc:
            fail(str(exc))
    return wrapper  # type: ignore[return-value]


def open_memory(db: str | Path | None, user: str | None, agent: str | None, *,
                create: bool = False) -> Memory:
    """The Memory a command works on: ``--db`` (or the default path) in one scope.

    Only writing commands pass ``create=True``: a mistyped --db on a read must not leave an
    empty store behind.
    """
    path = db if db is not None else default_db_path()
    local = str(path)  # a URL (sqlite:///…) is checked by the store itself
    if "://" not in local and not create and local != ":memory:" and not Path(local).expanduser().exists():
        raise NotFound(f"no zeromem store at {path}: check --db / $ZEROMEM_DB, "
                       "or create one with `zeromem ingest FILE`")
    return Memory(path, user=user, agent=agent)


def print_json(value: Any) -> None:
    """Print dataclasses, tuples and dicts as indented UTF-8 JSON."""
    def convert(item: Any) -> Any:
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return dataclasses.asdict(item)
        raise TypeError(f"cannot print {type(item).__name__} as JSON")
    typer.echo(json.dumps(value, default=convert, ensure_ascii=False, indent=2))


def _scope_label(user: str | None, agent: str | None) -> str:
    return f"user={user!r}, agent={agent!r}"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"zeromem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="print the version and exit")] = False
          ) -> None:
    """zeromem: agent memory with zero LLM calls in every memory operation."""


@app.command()
@friendly
def ingest(
    files: Annotated[list[Path], typer.Argument(
        show_default=False, metavar="FILE...",
        help="LoCoMo .json, OpenAI-style chat .json, or .jsonl (one trace per line)")],
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    format: Annotated[str, typer.Option(
        "--format", help=f"input format: auto or one of {', '.join(FORMATS)}")] = "auto",
    user_per_conversation: Annotated[bool, typer.Option(
        "--user-per-conversation",
        help="store each conversation under user=<its name> (e.g. the LoCoMo sample id), so "
             "that conversations never share a scope")] = False,
    as_json: JsonOption = False,
) -> None:
    """Import conversation files verbatim and print what was stored.

    Every file is read and every message checked before anything is written: a bad file
    stores nothing. Each conversation is stored in one transaction.
    """
    if user_per_conversation and user is not None:
        raise InvalidInput("use either --user or --user-per-conversation, not both")
    conversations = [conv for path in files for conv in load_file(path, format=format)]
    reports = []
    with open_memory(db, user, agent, create=True) as mem:
        total = check_conversations(conversations, mem.store)
        with tqdm(total=total, unit="trace", desc="ingest", file=sys.stderr,
                  disable=None, leave=False) as bar:  # disable=None: no bar when not a TTY
            for conv in conversations:
                scope_user = conv.name if user_per_conversation else user
                ids = mem.add_many(conv.drafts, user=scope_user, agent=agent)
                bar.update(len(ids))
                report = summarize(conv)
                report.update(user=scope_user, agent=agent,
                              first_id=ids[0] if ids else None, last_id=ids[-1] if ids else None)
                reports.append(report)
        path = mem.path
    if as_json:
        print_json({"db": path, "traces": total, "conversations": reports})
        return
    for report in reports:
        _print_ingest_report(report)
    typer.echo(f"total: {total} traces from {len(reports)} conversation(s) in {path}")


def _print_ingest_report(report: dict[str, Any]) -> None:
    speakers = ", ".join(f"{name or '(none)'} ({count})" for name, count in report["speakers"].items())
    span = (f"{report['first_time']} -> {report['last_time']}" if report["first_time"]
            else "no timestamps")
    typer.echo(f"{report['name']} ({report['format']}, {report['source']}): stored "
               f"{report['traces']} traces, ids {report['first_id']}..{report['last_id']}, "
               f"scope {_scope_label(report['user'], report['agent'])}")
    typer.echo(f"  sessions:  {report['sessions']}")
    typer.echo(f"  speakers:  {speakers}")
    typer.echo(f"  time span: {span}")
    if report["questions"]:
        typer.echo(f"  questions: {report['questions']} in the file (kept for benchmarks, not stored)")


def _parse_meta(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--meta takes KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(raw)  # so that n=3 and flag=true match numbers and booleans
        except json.JSONDecodeError:
            out[key] = raw
    return out


@app.command("list")
@friendly
def list_traces(
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    session: Annotated[str | None, typer.Option("--session", help="only this session id")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="only traces at or after this time (ISO 8601 or '8 May 2023')")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="only traces at or before this time")] = None,
    meta: Annotated[list[str] | None, typer.Option(
        "--meta", metavar="KEY=VALUE", help="only traces whose metadata KEY equals VALUE "
        "(repeatable; VALUE is read as JSON when it parses, else as text)")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=0, help="at most this many")] = None,
    offset: Annotated[int, typer.Option("--offset", min=0, help="skip this many first")] = 0,
    full: Annotated[bool, typer.Option("--full", help="print whole texts, not one line each")] = False,
    as_json: JsonOption = False,
) -> None:
    """List the traces of one scope in conversation order (session time, session, seq)."""
    with open_memory(db, user, agent) as mem:
        traces = mem.list(session=session, since=since, until=until,
                          metadata=_parse_meta(meta or []) or None, limit=limit, offset=offset)
    if as_json:
        print_json(traces)
        return
    if not traces:
        typer.echo(f"no traces in scope ({_scope_label(user, agent)}) matching the filters", err=True)
    for trace in traces:
        text = trace.text if full else " ".join(trace.text.split())
        if not full and len(text) > 100:
            text = text[:99] + "…"
        extra = f"  [+{len(trace.attachments)} attachment(s)]" if trace.attachments else ""
        when = trace.event_time or trace.session_time or "-"
        typer.echo(f"{trace.id}\t{trace.session or '-'}#{trace.seq}\t{when}\t"
                   f"{trace.speaker or trace.role}: {text}{extra}")


@app.command()
@friendly
def get(
    trace_id: Annotated[str, typer.Argument(metavar="ID", help="trace id, e.g. t42")],
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one trace with all its provenance (text kept verbatim)."""
    with open_memory(db, user, agent) as mem:
        trace = mem.get(trace_id)
    if as_json:
        print_json(trace)
        return
    for field in dataclasses.fields(trace):
        value = getattr(trace, field.name)
        if field.name == "metadata":
            value = json.dumps(value, ensure_ascii=False, sort_keys=True)
        elif field.name == "attachments":
            value = "; ".join(value) if value else "-"
        typer.echo(f"{field.name + ':':14}{'-' if value is None else value}")


@app.command()
@friendly
def delete(
    trace_id: Annotated[str | None, typer.Argument(
        metavar="[ID]", help="trace id to delete (omit it with --scope)")] = None,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    scope: Annotated[bool, typer.Option(
        "--scope", help="delete EVERYTHING in the scope given by --user/--agent "
        "(and nothing outside it); needs --yes")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="confirm --scope; no question is asked")] = False,
    as_json: JsonOption = False,
) -> None:
    """Delete one trace by id, or a whole scope with --scope --yes."""
    label = _scope_label(user, agent)
    if scope == (trace_id is not None):
        raise InvalidInput("give either a trace ID or --scope (to delete a whole scope)")
    with open_memory(db, user, agent) as mem:
        if scope:
            if not yes:
                raise InvalidInput(f"--scope deletes every trace in scope ({label}): "
                                   "add --yes to confirm")
            count = mem.delete_scope()
            result: dict[str, Any] = {"deleted": count, "user": user, "agent": agent}
            message = f"deleted {count} trace(s) from scope ({label})"
        else:
            mem.delete(trace_id)
            result = {"deleted": trace_id, "user": user, "agent": agent}
            message = f"deleted {trace_id} (its history keeps a 'delete' event)"
    if as_json:
        print_json(result)
    else:
        typer.echo(message)


@app.command()
@friendly
def stats(
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    all_scopes: Annotated[bool, typer.Option(
        "--all-scopes", help="count the whole file instead of one scope")] = False,
    as_json: JsonOption = False,
) -> None:
    """Counts: traces, sessions, characters, speakers, history events, derived units."""
    with open_memory(db, user, agent) as mem:
        result = mem.stats(all_scopes=all_scopes)
    if as_json:
        print_json(result)
        return
    if not all_scopes:
        typer.echo(f"{'scope:':16}{_scope_label(user, agent)}")
    for key, value in result.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k or '(none)'}={v}" for k, v in value.items()) or "-"
        typer.echo(f"{key + ':':16}{'-' if value is None else value}")


@app.command()
@friendly
def history(
    trace_id: Annotated[str, typer.Argument(metavar="ID", help="trace id, e.g. t42")],
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show every add / update / delete of one trace, oldest first."""
    with open_memory(db, user, agent) as mem:
        events = mem.history(trace_id)
    if as_json:
        print_json(events)
        return
    for event in events:
        typer.echo(f"{event.at}  {event.event}")
        if event.event == "update" and event.old_text != event.new_text:
            typer.echo(f"  - {event.old_text}")
            typer.echo(f"  + {event.new_text}")
        elif event.event == "update":
            typer.echo(f"  metadata: {event.old_metadata} -> {event.new_metadata}")
        else:
            typer.echo(f"  {event.new_text if event.event == 'add' else event.old_text}")


def main() -> None:
    """Console entry point (``zeromem``)."""
    app()


# Register more commands on ``app``; imported last because they import ``app``:
# search, reindex, demo (cli_retrieval); serve, keys (cli_service); mcp (cli_mcp); migrate (cli_migrate).
from . import cli_mcp, cli_migrate, cli_retrieval, cli_service  # noqa: F401

if __name__ == "__main__":
    # Run as a script, this file is the module __main__, while the command modules above
    # register on zeromem.interfaces.cli's ``app``: call that one's main.
    from zeromem.interfaces.cli import main as _main
    _main()
