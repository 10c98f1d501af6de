"""``zeromem migrate``: copy a SQLite store into PostgreSQL (store/transfer.py), then reindex."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import InvalidInput
from .cli_common import JsonOption, app, friendly, print_json


@app.command("migrate")
@friendly
def migrate(
    source: Annotated[str | None, typer.Option("--from", metavar="PATH", help="the SQLite store to copy")] = None,
    target: Annotated[str | None, typer.Option("--to", metavar="URL", help="an empty PostgreSQL database")] = None,
    citus: Annotated[str | None, typer.Option(
        "--citus", metavar="URL", help="distribute an existing zeromem database on its Citus coordinator "
        "(made before Citus was installed); alone, without --from/--to")] = None,
    reindex: Annotated[bool, typer.Option(
        "--reindex/--no-reindex", help="derive every scope's units and vectors now (else at first search)")] = True,
    as_json: JsonOption = False,
) -> None:
    """Copy traces (ids kept), history and API keys into PostgreSQL, verify the counts, reindex;
    or (--citus URL) distribute an existing PostgreSQL store over its Citus cluster."""
    from pathlib import Path

    from ..memory import Memory
    from ..store import open_store
    from ..store.transfer import copy_store

    if citus is not None:
        if source is not None or target is not None:
            raise InvalidInput("--citus URL distributes an existing database: give it alone, without --from/--to")
        _distribute(citus, as_json)
        return
    if source is None or target is None:
        raise InvalidInput("give --from PATH and --to URL (copy a SQLite store), or --citus URL")

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


def _distribute(url: str, as_json: bool) -> None:
    """``zeromem migrate --citus URL``: bring the schema up to date, then place every table
    as postgres_schema.CITUS_* says, moving the rows to the shards (one transaction)."""
    import psycopg

    from ..errors import StoreError
    from ..store import open_store
    from ..store.postgres_schema import check_workers, citus_installed, distribute
    from ..store.urls import redact_url

    if url.partition("://")[0].lower() not in ("postgresql", "postgres"):
        raise InvalidInput("--citus names the Citus coordinator's database (postgresql://user@host:port/db)")
    open_store(url).close()  # the schema at its current version (and the URL checked)
    with open_store(url) as store:
        before = store.placement()
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            if not citus_installed(conn):
                raise StoreError(f"{redact_url(url)} has no citus extension: run CREATE EXTENSION citus there "
                                 "(with shared_preload_libraries = 'citus') and add the workers first")
            check_workers(conn)
            with conn.transaction():
                conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
                steps = distribute(conn, move_local_rows=True)
    except psycopg.Error as exc:
        raise StoreError(f"distributing {redact_url(url)} failed: {str(exc).strip().splitlines()[0]}") from None
    with open_store(url) as store:
        after = store.placement()
    report = {"store": redact_url(url), "already_distributed": before is not None, "steps": steps,
              "placement": after}
    if as_json:
        print_json(report)
        return
    typer.echo(f"{redact_url(url)}: " + ("; ".join(steps) if steps else "already distributed, nothing to do"))
    if after is not None:
        for node in after["nodes"]:
            typer.echo(f"  {node['node']} ({node['role']}): {node['shards']} shards, {node['scopes']} scopes")
