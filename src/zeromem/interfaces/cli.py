"""The ``zeromem`` command line: a thin layer over ``Memory``.

Every command opens the store given by ``--db`` in the scope given by ``--user``/``--agent``,
calls one ``Memory`` method and prints the result as text or, with ``--json``, as JSON.
Errors zeromem raises on purpose become ``error: <message>`` on stderr and exit code 2, with
no traceback. A new command is one decorated function here (``@app.command()`` over
``@friendly``), or one ``app.add_typer(...)`` line for a group; the app, the common options and
the output helpers are in cli_common.py (the ``cli_*`` command modules import them from there).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import __version__
from .._internals import store_of
from ..errors import InvalidInput
from ..ingest import FORMATS, check_conversations, load_file, skip_stored, summarize
from ..store import open_store
from ..store.base import DeleteReceipt, TraceDraft, scope_key
from ..types import Scope
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

__all__ = ["AgentOption", "DbOption", "JsonOption", "UserOption", "app", "fail", "friendly", "main",
           "open_memory", "print_json", "safe"]

def _scope_label(user: str | None, agent: str | None) -> str:
    return safe(f"user={user!r}, agent={agent!r}")


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
    allow_duplicates: Annotated[bool, typer.Option(
        "--allow-duplicates",
        help="store every message even if its scope already holds it (by default a message "
             "already stored — same session, source id, speaker, text and times — is skipped, "
             "so importing a file twice stores it once)")] = False,
    as_json: JsonOption = False,
) -> None:
    """Import conversation files verbatim and print what was stored.

    Every file is read and every message checked before anything is written: a bad file
    stores nothing. Each conversation is stored in one transaction. Messages their scope
    already holds are skipped (and counted), unless --allow-duplicates.
    """
    if user_per_conversation and user is not None:
        raise InvalidInput("use either --user or --user-per-conversation, not both")
    conversations = [conv for path in files for conv in load_file(path, format=format)]
    # Every message and the scope are checked before the store is opened: a refused import
    # must not even create an empty store at a new --db path.
    with open_store(":memory:") as checker:
        check_conversations(conversations, checker, names_as_scopes=user_per_conversation)
    scope_key(Scope(user, agent))
    reports = []
    with open_memory(db, user, agent, create=True) as mem:
        batches = [([TraceDraft(**item) for item in conv.drafts],
                     Scope(conv.name if user_per_conversation else user, agent))
                   for conv in conversations]
        skipped = [0] * len(batches)
        if not allow_duplicates:  # planned before any write: the file's repeats count too
            batches, skipped = skip_stored(store_of(mem), batches)
        total = sum(len(drafts) for drafts, _ in batches)
        from tqdm import tqdm  # only `zeromem ingest` draws a bar

        with tqdm(total=total, unit="trace", desc="ingest", file=sys.stderr,
                  disable=None, leave=False) as bar:  # disable=None: no bar when not a TTY
            for conv, (drafts, scope), skip in zip(conversations, batches, skipped):
                ids = mem.add_many(drafts, user=scope.user, agent=scope.agent)
                bar.update(len(ids))
                report = summarize(conv)
                report.update(traces=len(ids), skipped=skip, user=scope.user, agent=agent,
                              first_id=ids[0] if ids else None, last_id=ids[-1] if ids else None)
                reports.append(report)
        path = mem.path
    skipped_total = sum(skipped)
    if as_json:
        print_json({"db": path, "traces": total, "skipped": skipped_total, "conversations": reports})
        return
    for report in reports:
        _print_ingest_report(report)
    again = f" ({skipped_total} already stored, skipped)" if skipped_total else ""
    typer.echo(f"total: {total} traces from {len(reports)} conversation(s) in {safe(path)}{again}")


def _print_ingest_report(report: dict[str, Any]) -> None:
    speakers = ", ".join(f"{safe(name) or '(none)'} ({count})"
                         for name, count in report["speakers"].items())
    span = (f"{report['first_time']} -> {report['last_time']}" if report["first_time"]
            else "no timestamps")
    # Ids are opaque (store/ids.py): the first and the last, not a range.
    ids = (f"first id {report['first_id']}, last id {report['last_id']}" if report["first_id"]
           else "no new ids")
    again = (f", skipped {report['skipped']} already stored" if report["skipped"] else "")
    typer.echo(f"{safe(report['name'])} ({report['format']}, {safe(report['source'])}): stored "
               f"{report['traces']} traces, {ids}{again}, "
               f"scope {_scope_label(report['user'], report['agent'])}")
    typer.echo(f"  sessions:  {report['sessions']}")
    typer.echo(f"  speakers:  {speakers}")
    typer.echo(f"  time span: {span}")
    if report["questions"]:
        typer.echo(f"  questions: {report['questions']} in the file (kept for benchmarks, not stored)")


@app.command("list")
@friendly
def list_traces(
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    session: Annotated[str | None, typer.Option("--session", help="only this session id")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", help="only traces at or after this time (ISO 8601 or '8 May 2023')")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", help="only traces at or before this time")] = None,
    filters: Annotated[list[str] | None, typer.Option(
        "--filter", metavar="KEY=VALUE", help="only traces whose metadata KEY equals VALUE "
        "(repeatable; VALUE is read as JSON when it parses, else as text)")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=0, help="at most this many")] = None,
    offset: Annotated[int, typer.Option("--offset", min=0, help="skip this many first")] = 0,
    full: Annotated[bool, typer.Option("--full", help="print whole texts, not one line each")] = False,
    as_json: JsonOption = False,
) -> None:
    """List the traces of one scope in conversation order (session time, session, seq)."""
    with open_memory(db, user, agent) as mem:
        traces = mem.list(session=session, since=since, until=until,
                          filters=parse_key_values(filters, "--filter") or None, limit=limit, offset=offset)
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
        typer.echo(f"{trace.id}\t{safe(trace.session or '-')}#{trace.seq}\t{when}\t"
                   f"{safe(trace.speaker or trace.role)}: {safe(text)}{extra}")


@app.command()
@friendly
def get(
    trace_id: Annotated[str, typer.Argument(metavar="ID", help="trace id, e.g. t4k2x9q7m")],
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
        typer.echo(f"{field.name + ':':14}{'-' if value is None else safe(value)}")


LockTimeoutOption = Annotated[float | None, typer.Option(
    "--lock-timeout", metavar="SECONDS", show_default=False,
    help="how long to wait for another process's write lock before failing [default: 5]")]


@app.command()
@friendly
def delete(
    trace_id: Annotated[str | None, typer.Argument(
        metavar="[ID]", help="trace id to delete (omit it with --session or --scope)")] = None,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    session: Annotated[str | None, typer.Option(
        "--session", metavar="NAME", help="delete every trace of this session of the scope; "
        "needs --yes")] = None,
    scope: Annotated[bool, typer.Option(
        "--scope", help="delete EVERYTHING in the scope given by --user/--agent "
        "(and nothing outside it); needs --yes")] = False,
    keep_history: Annotated[bool, typer.Option(
        "--keep-history", help="keep the old text and metadata in the history of a deleted "
        "trace (default: erase them; the history keeps a tombstone: event and time)")] = False,
    yes: Annotated[bool, typer.Option(
        "--yes", help="confirm --session or --scope; no question is asked")] = False,
    compact: Annotated[bool, typer.Option(
        "--compact", help="then rewrite the store's files without the freed space (PostgreSQL: "
        "VACUUM FULL, so deleted row versions leave the table files; see `zeromem compact`)")] = False,
    lock_timeout: LockTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete and erase one trace by id, a session with --session NAME --yes, or a whole scope
    with --scope --yes; prints the receipt: what was removed from which table, and whether
    the bytes left the files."""
    label = _scope_label(user, agent)
    if (trace_id is not None) + (session is not None) + scope != 1:
        raise InvalidInput("give either a trace ID or --scope (to delete a whole scope) or "
                           "--session NAME (to delete one session): exactly one of them")
    if scope and keep_history:
        raise InvalidInput("--keep-history applies to a trace or a session: --scope removes "
                           "the scope's history too")
    if not yes and trace_id is None:
        what = f"--session {session!r}" if session is not None else "--scope"
        raise InvalidInput(f"{what} deletes every trace it names in scope ({label}): add --yes to confirm")
    with open_memory(db, user, agent, lock_timeout_s=lock_timeout) as mem:
        if trace_id is not None:
            receipt = mem.delete(trace_id, keep_history=keep_history)
            result: dict[str, Any] = {"deleted": trace_id}
            message = f"deleted {trace_id}"
        elif session is not None:
            receipt = mem.delete_session(session, keep_history=keep_history)
            result = {"deleted": receipt.traces, "session": session}
            message = f"deleted session {session!r}: {receipt.traces} trace(s) from scope ({label})"
        else:
            receipt = mem.delete_scope()
            result = {"deleted": receipt.traces}
            message = f"deleted {receipt.traces} trace(s) from scope ({label})"
        compacted = mem.compact().as_dict() if compact else None
    result.update(user=user, agent=agent, receipt=receipt.as_dict())
    if compacted is not None:
        result["compact"] = compacted
    if as_json:
        print_json(result)
        return
    typer.echo(message)
    for line in _receipt_lines(receipt):
        typer.echo(f"  {line}")
    if compacted is not None:
        typer.echo(f"  compacted: {_compact_line(compacted)}")


@app.command("compact")
@friendly
def compact_store(db: DbOption = None, lock_timeout: LockTimeoutOption = None,
                  as_json: JsonOption = False) -> None:
    """Rewrite the store's files without the space erasures freed (every scope). SQLite: VACUUM
    (erased bytes are zeros already); PostgreSQL: VACUUM FULL + ANALYZE + CHECKPOINT, which
    drops deleted row versions from the table files (the write-ahead log keeps its copies)."""
    with open_memory(db, None, None, lock_timeout_s=lock_timeout) as mem:
        done = mem.compact().as_dict()
    if as_json:
        print_json(done)
        return
    typer.echo(f"compacted {done['store']}: {_compact_line(done)}")
    for note in done.get("retained", []):
        typer.echo(f"  still holding erased text: {note}")


def _compact_line(done: dict[str, Any]) -> str:
    return f"{done['bytes_before']:,} -> {done['bytes_after']:,} bytes"


def _receipt_lines(receipt: DeleteReceipt) -> list[str]:
    """A delete receipt for people: what left which table, and what may still hold the text."""
    removed = ", ".join(f"{table}={n}" for table, n in receipt.rows if n) or "nothing else"
    if receipt.kind == "scope":
        history = "history: removed"
    elif receipt.history_text_purged:
        history = "history: tombstones (event and time), no text or metadata"
    else:
        history = "history: keeps the old text and metadata (--keep-history)"
    files = [f"secure_delete {'on' if receipt.secure_delete else 'off'}",
             "write-ahead log checkpointed" if receipt.checkpointed else "write-ahead log not checkpointed"]
    if receipt.compacted:
        files.append("file rewritten (VACUUM) to clear old copies of rows in its pages' unused space")
    return ([f"removed: {removed}", history, f"files: {'; '.join(files)}"]
            + [f"still holding it: {note}" for note in receipt.retained])


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
        placement = getattr(store_of(mem), "placement", lambda: None)()
    if as_json:
        print_json(result if placement is None else {**dataclasses.asdict(result), "placement": placement})
        return
    if not all_scopes:
        typer.echo(f"{'scope:':16}{_scope_label(user, agent)}")
    for key, value in dataclasses.asdict(result).items():
        if isinstance(value, dict):
            value = ", ".join(f"{k or '(none)'}={v}" for k, v in value.items()) or "-"
        typer.echo(f"{key + ':':16}{'-' if value is None else safe(value)}")
    if placement is not None:  # a Citus cluster: where the data lives
        typer.echo(f"{'citus:':16}{placement['citus']}, {placement['shard_groups']} shard groups, "
                   f"{len(placement['distributed'])} distributed tables")
        for node in placement["nodes"]:
            scopes = "?" if node["scopes"] is None else node["scopes"]
            typer.echo(f"{'node:':16}{safe(node['node'])} ({node['role']}): {node['shards']} shards, "
                       f"{scopes} scopes" + (f" (error: {safe(node['error'])})" if "error" in node else ""))


@app.command()
@friendly
def history(
    trace_id: Annotated[str, typer.Argument(metavar="ID", help="trace id, e.g. t4k2x9q7m")],
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
            typer.echo(f"  - {safe(event.old_text)}")
            typer.echo(f"  + {safe(event.new_text)}")
        elif event.event == "update":
            typer.echo(f"  metadata: {safe(event.old_metadata)} -> {safe(event.new_metadata)}")
        else:
            typer.echo(f"  {safe(event.new_text if event.event == 'add' else event.old_text)}")


def main() -> None:
    """Run the memory commands (the ``zeromem`` program, ``zeromem.main``, adds ``bench``)."""
    app()


# Importing the command modules registers their commands on ``app`` after the ones above (the
# order `zeromem --help` lists them in): search, reindex, demo (cli_retrieval); serve, keys
# (cli_service); mcp (cli_mcp); migrate (cli_migrate); active, cards (cli_lifecycle); export,
# import, backup (cli_export); add, update, pin, unpin, archive, unarchive, sessions,
# neighbourhood, context, answer, index, health (cli_memory).
from . import (  # noqa: E402, F401
    cli_export,
    cli_lifecycle,
    cli_mcp,
    cli_memory,
    cli_migrate,
    cli_names,
    cli_retrieval,
    cli_service,
)

if __name__ == "__main__":
    # Run as a script (python -m zeromem.interfaces.cli): ``app`` lives in cli_common, so this
    # module's commands and the command modules' are on the one app already.
    main()
