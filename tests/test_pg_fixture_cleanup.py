"""A killed test run leaves no PostgreSQL server behind (issue "Hardening, round 3", item 6).

Before: when pytest was killed (SIGKILL, SIGTERM) the embedded server a fixture had started
kept running with its ~100 MB folder. Now a watchdog (tests/pg_server.py) stops it and removes
the folder when the process that started it dies, and ``sweep`` (run by ``make test`` and
before each start) removes what older killed runs left. Each test starts a real server in a
child process, kills the child and watches the server's postmaster and folder go.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import pg_server

TESTS = Path(__file__).resolve().parent
CHILD = f"""
import sys, time
sys.path.insert(0, {str(TESTS)!r})
from pathlib import Path
from pg_server import PgServer, Unavailable
try:
    server = PgServer.start(Path(sys.argv[1]))
except Unavailable as exc:
    print("UNAVAILABLE", exc, flush=True)
    sys.exit(0)
print("READY", flush=True)
time.sleep(600)
"""


def start_in_child(folder: Path) -> tuple[subprocess.Popen, int]:
    """A child process that starts a server in ``folder`` and then waits; the server's pid."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(folder)], stdout=subprocess.PIPE, text=True)
    line = child.stdout.readline() if child.stdout else ""
    if not line.startswith("READY"):
        child.kill()
        child.wait()
        pytest.skip(f"the embedded PostgreSQL cannot run here: {line.strip()}")
    postmaster = pg_server._postmaster(folder)
    assert postmaster is not None and pg_server._alive(postmaster)
    return child, postmaster


@pytest.fixture
def root():
    """A folder the server's own user can traverse (pytest's tmp_path is private to root, and
    as root the server runs as an unprivileged user); removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="zeromem-pgtest-"))
    folder.chmod(0o755)
    yield folder
    for left in folder.glob(pg_server.PREFIX + "*"):
        pg_server.kill_server(left)
    shutil.rmtree(folder, ignore_errors=True)


def gone_within(seconds: float, postmaster: int, folder: Path) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not pg_server._alive(postmaster) and not folder.exists():
            return True
        time.sleep(0.1)
    return False


def watchdogs_of(folder: Path) -> list[int]:
    """The pids of the watchdog processes of ``folder`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--watch" in args and str(folder).encode() in args:
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_the_server_stops_and_its_folder_goes_when_the_run_is_killed(root, sig):
    folder = root / f"{pg_server.PREFIX}killed"
    child, postmaster = start_in_child(folder)
    assert len(watchdogs_of(folder)) == 1 and (folder / pg_server.OWNER).read_text() == str(child.pid)
    child.send_signal(sig)
    child.wait()
    assert gone_within(15, postmaster, folder), "the server or its folder outlived the killed run"
    # the watchdog removes the folder, then exits: on a busy machine the exit can come a moment later
    deadline = time.monotonic() + 15
    while watchdogs_of(folder) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert watchdogs_of(folder) == []


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")
def test_sweep_stops_a_server_whose_run_and_watchdog_were_both_killed(root):
    folder = root / f"{pg_server.PREFIX}leftover"
    child, postmaster = start_in_child(folder)
    for watchdog in watchdogs_of(folder):
        os.kill(watchdog, signal.SIGKILL)
    child.kill()
    child.wait()
    time.sleep(0.5)
    assert pg_server._alive(postmaster) and folder.exists()  # what killed runs used to leave
    assert pg_server.sweep(root) == [folder]
    assert gone_within(5, postmaster, folder)


def test_sweep_keeps_folders_of_live_runs_and_recent_ones_without_an_owner(tmp_path):
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    dead, live, new = (tmp_path / f"{pg_server.PREFIX}{name}" for name in ("dead", "live", "new"))
    for folder, owner in ((dead, finished.pid), (live, os.getpid()), (new, None)):
        (folder / "data").mkdir(parents=True)
        if owner is not None:
            (folder / pg_server.OWNER).write_text(str(owner))
    (tmp_path / "zeromem-other").mkdir()  # not a server folder: never touched
    assert pg_server.sweep(tmp_path) == [dead]
    assert not dead.exists() and live.exists() and new.exists() and (tmp_path / "zeromem-other").exists()
    old = time.time() - pg_server.ORPHAN_AGE_S - 60
    os.utime(new, (old, old))
    assert pg_server.sweep(tmp_path) == [new]


CLUSTER_CHILD = f"""
import sys, time
sys.path.insert(0, {str(TESTS)!r})
from citus_cluster import CitusCluster
from pg_server import Unavailable
try:
    cluster = CitusCluster.start()
except Unavailable as exc:
    print("UNAVAILABLE", exc, flush=True)
    sys.exit(0)
print("READY", *(node.folder for node in cluster.nodes), flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_a_killed_run_leaves_no_citus_node_behind():
    """tests/citus_cluster.py: each node of a cluster (coordinator and workers) has its own
    watchdog, so killing the process that started the cluster stops all of them."""
    child = subprocess.Popen([sys.executable, "-c", CLUSTER_CHILD], stdout=subprocess.PIPE, text=True)
    line = child.stdout.readline() if child.stdout else ""
    if not line.startswith("READY"):
        child.kill()
        child.wait()
        pytest.skip(f"a Citus cluster cannot run here: {line.strip()}")
    folders = [Path(f) for f in line.split()[1:]]
    postmasters = [pg_server._postmaster(f) for f in folders]
    assert len(folders) == 3 and all(p is not None and pg_server._alive(p) for p in postmasters)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert all(gone_within(20, p, f) for p, f in zip(postmasters, folders, strict=True) if p is not None)
