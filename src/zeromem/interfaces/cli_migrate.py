"""``zeromem migrate``: copy a SQLite store into PostgreSQL (store/transfer.py), then reindex."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import InvalidInput
from .cli_common import JsonOption, app, friendly, print_json


@app.command("migrate")
@friendly
def migrate(
    source: Annotated[str, typer.Option("--from", metavar="PATH", help="the SQLite store to copy")],
    target: Annotated[str, typer.Option("--to", metavar="URL", help="an empty PostgreSQL database")],
    reindex: Annotated[bool, typer.Option(
        "--reindex/--no-reindex", help="derive every scope's units and vectors now (else at first search)")] = True,
    as_json: JsonOption = False,
) -> None:
    """Copy traces (ids kept), history and API keys into PostgreSQL, verify the counts, reindex."""
    from pathlib import Path

    from ..memory import Memory
    from ..store import open_store
    from ..store.transfer import copy_store

    if "://" not in source and not Path(source).expanduser().exists():
        raise InvalidInput(f"no zeromem store at {source}: --from names an existing SQLite file")
    if target.partition("://")[0].lower() not in ("postgresql", "postgres"):
        # Before anything is opened: a file path here would be created as an empty SQLite store.
        shown = f"a {target.partition('://')[0]}:// URL" if "://" in target else repr(target)
        raise InvalidInput(f"--to names an empty PostgreSQL database (postgresql://user@host:port/db), "
                           f"not {shown}")
    with open_store(source) as src, open_store(target) as dest:
        report = copy_store(src, dest)
        scopes = src.scopes()
    if reindex:
        with Memory(target) as mem:
            for scope in scopes:
                mem.reindex(user=scope.user, agent=scope.agent)
    report["reindexed"] = reindex
    if as_json:
        print_json(report)
        return
    typer.echo(f"copied {report['traces']} traces, {report['history_events']} history events and "
               f"{report['api_keys']} API keys in {len(scopes)} scope(s) into {dest.path}"
               + ("; every scope reindexed" if reindex else "; scopes are derived at their first search"))
