"""``zeromem mcp``: serve one scope's memory to an agent over the Model Context Protocol.

stdio (the default) is what a local MCP host launches as a subprocess; ``--transport http``
serves streamable HTTP at ``http://HOST:PORT/mcp``. The scope comes from ``--user`` /
``--agent`` and cannot be changed by the model (see ``mcp_server``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import sys
import threading
from collections.abc import Iterator
from enum import StrEnum
from types import FrameType
from typing import Annotated

import typer

from .cli_common import (
    AgentOption,
    ConfigFileOption,
    DbOption,
    SetOption,
    UserOption,
    app,
    friendly,
    load_config,
    open_memory,
)
from .extras import require


class Transport(StrEnum):
    """How the MCP client reaches the server."""

    stdio = "stdio"
    http = "http"


@app.command("mcp")
@friendly
def mcp(
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    transport: Annotated[Transport, typer.Option(
        "--transport", help="stdio (launched by the MCP host) or http (streamable HTTP at /mcp)")
    ] = Transport.stdio,
    host: Annotated[str, typer.Option(
        "--host", help="address to listen on with --transport http (no authentication: keep it "
                       "on loopback unless the network in between is trusted)")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535,
                                      help="port to listen on with --transport http")] = 8765,
    config_file: ConfigFileOption = None,
    settings: SetOption = None,
) -> None:
    """Serve the scope's memory to an agent over MCP (zero LLM calls).

    Tools: remember, recall, context, forget, history. Resources: zeromem://sessions,
    zeromem://sessions/{session}, zeromem://traces/{trace_id}. The store is created if
    missing. In stdio mode stdout carries only the protocol; logs go to stderr. Config fields
    are set as for `zeromem serve`: --set FIELD=VALUE over ZEROMEM_<FIELD> over --config FILE.
    """
    require("mcp", "zeromem mcp")
    from .mcp_server import build_server  # the MCP SDK: imported by this command only

    stdio = transport is Transport.stdio
    config = load_config(config_file, settings)  # a bad setting stops the start, before the store opens
    # In stdio mode stdout is the protocol channel; a stray print while the models and the
    # store load would corrupt the client's first read. The SDK guards stdout itself once it
    # serves, so the guard must be lifted before it starts.
    with _stdout_to_stderr() if stdio else contextlib.nullcontext():
        memory = open_memory(db, user, agent, create=True, config=config)
        try:
            server = build_server(memory, user=user, agent=agent)
        except BaseException:
            memory.close()
            raise
    interrupted = False
    with memory, _stop_signals_interrupt():
        if not stdio:
            if not _is_loopback(host):
                typer.echo(f"warning: serving on {host} without authentication: anyone who can "
                           "reach it can read and change this memory", err=True)
            typer.echo(f"zeromem mcp: streamable HTTP at http://{_url_host(host)}:{port}/mcp "
                       f"(user={user!r}, agent={agent!r}, store {memory.path}); Ctrl-C stops it",
                       err=True)
        try:
            if stdio:
                server.run("stdio")
            else:
                server.run("streamable-http", host=host, port=port)
        except KeyboardInterrupt:
            interrupted = True  # Ctrl-C or SIGTERM is how a server is meant to stop: not an error
    if stdio and interrupted:
        # The Memory is closed. The SDK reads stdin on a worker thread that stays blocked in
        # read() until the client closes the pipe, and the interpreter would wait for it at exit.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at stderr for the duration (Python and native writes alike)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def _stop_signals_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM (how MCP hosts and service managers stop a server) raise
    KeyboardInterrupt at once, so that the Memory is closed and the process exits.

    Left alone, SIGTERM would kill the process without closing the Memory, and asyncio's own
    SIGINT handling would wait for the stdin reader, which nothing can interrupt. (uvicorn
    installs its own handlers while it serves and re-raises the signal after its shutdown.)
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set signal handlers
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
