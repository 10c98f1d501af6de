"""``zeromem export``, ``zeromem import`` and ``zeromem backup``: a store's traces out as JSON lines
and back in with their ids (store/portable.py), and a whole SQLite store copied while it runs."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import InvalidInput, ZeromemError
from ..store.portable import end_counts, file_lines, write_export
from .cli_common import AgentOption, DbOption, JsonOption, UserOption, app, friendly, open_memory, print_json, safe

OutputOption = Annotated[str | None, typer.Option(
    "--output", "-o", metavar="FILE", show_default=False,
    help="write the export to FILE (owner-only permissions; replaced whole or not at all) "
         "[default: standard output]")]


@app.command("export")
@friendly
def export(
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    all_scopes: Annotated[bool, typer.Option(
        "--all", help="export every scope of the store (not with --user/--agent)")] = False,
    history: Annotated[bool, typer.Option(
        "--history", help="add every trace's history events, and deleted traces' history (tombstones)")] = False,
    no_id_key: Annotated[bool, typer.Option(
        "--no-id-key", help="leave the store's secret id key out: the traces then import only with "
                            "--new-ids (new ids)")] = False,
    output: OutputOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write one scope's traces (or every scope's, --all) as JSON lines: ids, text, provenance,
    metadata, attachments, versions; the same store gives the same bytes. The header holds the
    store's secret id key, so keep an export as private as the store."""
    if all_scopes and (user is not None or agent is not None):
        raise InvalidInput("--all exports every scope: leave --user and --agent out")
    with open_memory(db, user, agent) as mem:
        lines = mem.export(all_scopes=all_scopes, history=history, include_id_key=not no_id_key)
        try:
            if output is None or output == "-":
                counts = _to_stdout(lines)
                where = "standard output"
            else:
                counts = write_export(lines, output)
                where = output
        finally:
            close = getattr(lines, "close", None)
            if close is not None:
                close()  # ends the store's read at once, whatever happened
    report: dict[str, Any] = {"output": where, "all_scopes": all_scopes, "user": None if all_scopes else user,
                              "agent": None if all_scopes else agent, "history": history, **counts}
    if as_json and where != "standard output":
        print_json(report)
        return
    if as_json:  # standard output holds the export: the report goes beside it
        typer.echo(json.dumps(report, ensure_ascii=False, sort_keys=True), err=True)
        return
    scope = "every scope" if all_scopes else f"scope user={user!r}, agent={agent!r}"
    extra = f", {counts.get('deleted', 0)} deleted trace(s) and {counts.get('events', 0)} history event(s)" \
        if history else ""
    # Beside an export on standard output, the summary goes to standard error.
    typer.echo(safe(f"exported {counts.get('traces', 0)} trace(s){extra} of {scope} to {where}"),
               err=where == "standard output")


def _to_stdout(lines: Any) -> dict[str, Any]:
    """Stream the lines to standard output as UTF-8 (whatever the terminal's encoding)."""
    out = getattr(sys.stdout, "buffer", None)
    last = ""
    for line in lines:
        if out is not None:
            out.write(line.encode("utf-8"))
        else:
            sys.stdout.write(line)
        last = line
    (out or sys.stdout).flush()
    return end_counts(last)


@app.command("import")
@friendly
def import_(
    file: Annotated[str, typer.Argument(
        metavar="FILE", help="an export written by `zeromem export` ('-' reads standard input)")],
    db: DbOption = None,
    new_ids: Annotated[bool, typer.Option(
        "--new-ids", help="give every trace a new id (for a store that holds other traces, or an "
                          "export without the id key)")] = False,
    reindex: Annotated[bool, typer.Option(
        "--reindex/--no-reindex", help="derive the imported scopes' units and vectors now "
                                       "(else at their first search)")] = True,
    as_json: JsonOption = False,
) -> None:
    """Restore an export into the store given by --db, in the export's own scopes, in one
    transaction: each trace keeps its id, version, times and history (into an empty store, or
    one with the same id key), or gets a new id with --new-ids. A bad line stores nothing."""
    target = Path(file)
    if file != "-" and not target.is_file():
        raise InvalidInput(f"no export at {file}: name a file written by `zeromem export` (or '-' for "
                           "standard input)")
    created = _new_store_path(db)
    try:
        with open_memory(db, None, None, create=True) as mem:
            source = file_lines(sys.stdin.buffer, "standard input") if file == "-" else target
            report = mem.import_export(source, new_ids=new_ids, index=reindex)
            path = mem.path
    except ZeromemError:
        if created is not None:  # a refused import leaves no empty store behind
            for name in (created, Path(f"{created}-wal"), Path(f"{created}-shm")):
                with contextlib.suppress(FileNotFoundError):
                    name.unlink()
        raise
    result = {**report.as_dict(), "db": path, "reindexed": reindex}
    if file == "-":
        result["source"] = "standard input"
    if as_json:
        print_json(result)
        return
    ids = "ids kept" if report.ids_kept else "new ids"
    extra = f", {report.deleted} deleted trace(s)" if report.deleted else ""
    typer.echo(safe(f"imported {report.traces} trace(s){extra} and {report.events} history event(s) in "
                    f"{len(report.scopes)} scope(s) into {path} ({ids})")
               + ("; every imported scope derived" if reindex else "; scopes are derived at their first search"))


def _new_store_path(db: str | None) -> Path | None:
    """The SQLite file this command would create (it does not exist yet), else None."""
    from ..config import default_db_path

    path = str(db) if db is not None else str(default_db_path())
    if "://" in path or path == ":memory:":
        return None
    local = Path(path).expanduser()
    return None if local.exists() else local


@app.command("backup")
@friendly
def backup(
    dest: Annotated[Path, typer.Argument(metavar="DEST", help="the new file to write (must not exist)")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Copy the whole SQLite store (every scope, derived rows, API keys) into a new file while
    other processes keep writing: SQLite's online backup, one consistent version. PostgreSQL
    stores are backed up with pg_dump (the message says how)."""
    with open_memory(db, None, None) as mem:
        done = mem.backup(dest)
    if as_json:
        print_json(done)
        return
    typer.echo(safe(f"backed up {done.store} ({done.traces} traces, {done.bytes:,} bytes) into {done.backup}"))
