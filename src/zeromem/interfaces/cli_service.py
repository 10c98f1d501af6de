"""``zeromem serve`` (the REST server and web inspector) and ``zeromem keys`` (its API keys)."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .. import tracing
from .._internals import store_of
from ..config import Config
from ..errors import InvalidInput
from ..store import validate
from ..store.base import scope_key
from ..types import Scope
from .cli_common import (
    AgentOption,
    ConfigFileOption,
    DbOption,
    JsonOption,
    SetOption,
    UserOption,
    app,
    friendly,
    load_config,
    open_memory,
    print_json,
)
from .extras import require

if TYPE_CHECKING:
    from .server.options import WorkerSpec

COMPAT_APIS = ("mem0",)  # --compat: other memory APIs the server can answer as well
keys_app = typer.Typer(help="API keys of `zeromem serve`: each key reads and writes one scope.",
                       no_args_is_help=True)
app.add_typer(keys_app, name="keys")


@app.command()
@friendly
def serve(
    db: DbOption = None,
    host: Annotated[str, typer.Option(help="address to bind; keep 127.0.0.1 and put a TLS proxy in front")]
        = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port")] = 8420,
    no_auth: Annotated[bool, typer.Option(
        "--no-auth", help="no API keys: every request uses --user/--agent (single local user only)")] = False,
    user: UserOption = None, agent: AgentOption = None,
    max_body_mb: Annotated[float, typer.Option("--max-body-mb", help="largest request body accepted")] = 16.0,
    reader_url: Annotated[str | None, typer.Option(
        "--reader-url", help="OpenAI-compatible API root for /v1/answer, e.g. http://localhost:8000/v1")] = None,
    reader_model: Annotated[str | None, typer.Option("--reader-model", help="model name for the reader")] = None,
    workers: Annotated[int, typer.Option(
        "--workers", min=1, help="server processes (each keeps its own in-memory indexes, "
        "kept fresh from the store; use up to one per core)")] = 1,
    threads: Annotated[int, typer.Option(
        "--threads", min=1, help="request threads per process")] = 4,
    preload: Annotated[bool, typer.Option(
        "--preload", help="build scopes' in-memory indexes at start, as many as --index-cache-mb holds "
        "(/readyz waits for it)")] = False,
    index_cache_mb: Annotated[float | None, typer.Option(
        "--index-cache-mb", show_default=False, help="memory per worker for the in-memory indexes of the "
        "scopes searched most recently (least recently used dropped beyond it) "
        f"(the Config field index_cache_mb, default {Config().index_cache_mb:g})")] = None,
    config_file: ConfigFileOption = None,
    settings: SetOption = None,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="another Host name the server answers to, e.g. memory.example.com "
        "behind a proxy (repeatable; '*': any). The bound address and loopback names always are")] = None,
    allow_origin: Annotated[list[str] | None, typer.Option(
        "--allow-origin", help="a web page origin that may call the API, e.g. http://localhost:3000 "
        "(repeatable; '*': any). Other pages are refused with 403")] = None,
    metrics: Annotated[bool, typer.Option(
        "--metrics", help="serve Prometheus metrics at /metrics, without an API key: requests and latencies "
        "per route, the index cache (needs the otel extra)")] = False,
    compat: Annotated[list[str] | None, typer.Option(
        "--compat", help="also answer another memory API's routes: mem0 (Mem0's hosted-client and "
        "self-hosted REST routes; the API keys still decide the scope)")] = None,
    log_level: Annotated[str, typer.Option("--log-level")] = "warning",
) -> None:
    """Serve the memory over HTTP: REST API at /v1 (OpenAPI docs at /docs), inspector at /.

    Every Config field can be set: by --set FIELD=VALUE (or its own flag, such as
    --index-cache-mb), by a ZEROMEM_<FIELD> environment variable (ZEROMEM_RETRIEVAL_PPR_DAMPING)
    or in --config FILE; a flag wins over a variable, a variable over the file.
    """
    require("server", "zeromem serve")
    if metrics:
        require("otel", "zeromem serve --metrics")
    tracing.enabled()  # ZEROMEM_OTEL=1 without the otel extra: one clear error here, not one per worker
    import uvicorn

    from .server.options import ServerOptions, WorkerSpec

    if no_auth and host not in ("127.0.0.1", "localhost", "::1"):
        raise InvalidInput("--no-auth serves anyone who can connect: only with --host 127.0.0.1")
    unknown = sorted(set(compat or ()) - set(COMPAT_APIS))
    if unknown:
        raise InvalidInput(f"--compat {unknown[0]}: zeromem speaks {', '.join(COMPAT_APIS)}")
    if not math.isfinite(max_body_mb) or int(max_body_mb * 1024 * 1024) < 1:
        raise InvalidInput(f"--max-body-mb {max_body_mb:g} would refuse every request body: pass a "
                           "size above 0 (the default is 16)")
    # Both checked before the store is opened: a refused start must not create an empty store.
    options = ServerOptions(
        db="", user=user, agent=agent, require_auth=not no_auth, max_body_bytes=int(max_body_mb * 1024 * 1024),
        reader_url=reader_url, reader_model=reader_model, threads=threads, preload=preload, host=host,
        allow_hosts=tuple(allow_host or ()), allow_origins=tuple(allow_origin or ()), metrics=metrics,
        compat=tuple(sorted(set(compat or ()))))
    config = load_config(config_file, settings, index_cache_mb=index_cache_mb)
    with open_memory(db, user, agent, create=True, config=config) as mem:  # creates/migrates the store once
        path = mem.path
        keys = len([k for k in store_of(mem).api_keys() if k.active])
    options = dataclasses.replace(options, db=str(db) if db is not None and "://" in str(db) else path)
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    auth = "no auth" if no_auth else f"{keys} active API key(s)"
    typer.echo(f"zeromem serve: {path} on http://{host}:{port} ({auth}, {workers} worker process(es)); "
               "docs at /docs", err=True)
    if not no_auth and keys == 0:
        typer.echo("  no API key yet: make one with `zeromem keys add --db ... --user U`", err=True)
    from .server.metrics import multiprocess_dir

    with worker_options(WorkerSpec(options, config)), multiprocess_dir(workers if metrics else 1):
        uvicorn.run("zeromem.interfaces.server.app:app_from_environment", factory=True, host=host,
                    port=port, workers=workers if workers > 1 else None, log_level=log_level,
                    access_log=False)


@contextmanager
def worker_options(spec: WorkerSpec) -> Iterator[Path]:
    """Hand the Config and the server options to the worker processes in a file only this
    user can read, named in ``$ZEROMEM_SERVE``: a PostgreSQL URL's password must not sit in the
    workers' environment (``ps e`` shows it), and a worker uvicorn restarts reads the file
    again. Removed at exit."""
    from .server.app import ENVIRONMENT

    _remove_orphaned_worker_files()
    handle, name = tempfile.mkstemp(prefix=f"zeromem-serve-{os.getpid()}-", suffix=".json")  # mode 0600
    path = Path(name)
    previous = os.environ.get(ENVIRONMENT)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(spec.to_json())
        os.environ[ENVIRONMENT] = str(path)
        yield path
    finally:
        path.unlink(missing_ok=True)
        if previous is None:
            os.environ.pop(ENVIRONMENT, None)
        else:
            os.environ[ENVIRONMENT] = previous


def _remove_orphaned_worker_files() -> None:
    """Remove the worker files of ``zeromem serve`` processes that no longer run.

    A server killed with SIGKILL (or a machine losing power) never reaches the ``finally``
    that removes its file, and the file holds the store's URL. Each name carries the pid of
    the server that wrote it; a file of this user whose server is gone is removed here.
    """
    for path in Path(tempfile.gettempdir()).glob("zeromem-serve-*-*.json"):
        pid = path.name.split("-")[2]
        try:
            if not pid.isdigit() or path.stat().st_uid != getattr(os, "getuid", lambda: -1)():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            path.unlink(missing_ok=True)
        except OSError:
            continue  # alive but another user's, or unreadable: not ours to remove


@keys_app.command("add")
@friendly
def keys_add(
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    label: Annotated[str | None, typer.Option(help="a note to tell keys apart")] = None,
    as_json: JsonOption = False,
) -> None:
    """Make a key for one scope (--user and/or --agent) and print it once; only its hash is kept."""
    if user is None and agent is None:
        raise InvalidInput("a key needs a scope: pass --user and/or --agent")
    # Checked before the store is opened: a refused key must not create an empty store.
    scope_key(Scope(user, agent))
    validate.clean_optional_str(label, "label")
    with open_memory(db, None, None, create=True) as mem:
        record, key = store_of(mem).create_api_key(Scope(user, agent), label)
    if as_json:
        print_json({"key_id": record.key_id, "key": key, "user": user, "agent": agent, "label": label})
        return
    typer.echo(key)
    typer.echo(f"key id {record.key_id} for user={user!r}, agent={agent!r}: store it now, "
               "it is not shown again", err=True)


@keys_app.command("list")
@friendly
def keys_list(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Every key: id, scope, label, created, revoked (never the key itself)."""
    with open_memory(db, None, None) as mem:
        records = store_of(mem).api_keys()
    if as_json:
        print_json([{"key_id": r.key_id, "user": r.scope.user, "agent": r.scope.agent, "label": r.label,
                     "created_at": r.created_at, "revoked_at": r.revoked_at} for r in records])
        return
    if not records:
        typer.echo("no API keys (make one with `zeromem keys add --user U`)")
    for r in records:
        state = f"revoked {r.revoked_at[:19]}" if r.revoked_at else "active"
        label = f"  {r.label}" if r.label else ""
        typer.echo(f"{r.key_id}  user={r.scope.user!r} agent={r.scope.agent!r}  "
                   f"created {r.created_at[:19]}  {state}{label}")


@keys_app.command("revoke")
@friendly
def keys_revoke(key_id: Annotated[str, typer.Argument(help="the key id `zeromem keys list` shows")],
                db: DbOption = None) -> None:
    """Revoke a key: it stops working within seconds (it stays listed)."""
    with open_memory(db, None, None) as mem:
        record = store_of(mem).revoke_api_key(key_id)
    typer.echo(f"revoked {record.key_id} (user={record.scope.user!r}, agent={record.scope.agent!r})")
