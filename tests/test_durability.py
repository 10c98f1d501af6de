"""SIGKILL in the middle of a big add_many leaves the whole batch or none of it.

The child process installs a SQLite trace hook that fires inside the open transaction, after
thousands of INSERTs (enough pages to spill uncommitted frames into the WAL file). The hook
tells the parent "inside" and then blocks, so the parent's SIGKILL lands mid-transaction every
time, with no sleeps or timing guesses.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from internals import store_of
from zeromem import Memory

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

BATCH = 6000
KILL_AFTER_INSERTS = 5000

CHILD = textwrap.dedent("""
    import sys, time
    from zeromem import Memory
    from zeromem._internals import store_of

    mem = Memory(sys.argv[1])
    inserts = 0

    def hook(statement):
        global inserts
        if statement.startswith("INSERT INTO traces"):
            inserts += 1
            if inserts == int(sys.argv[2]):
                print("inside", flush=True)
                time.sleep(600)  # the parent kills us here, mid-transaction

    store_of(mem).conn.set_trace_callback(hook)
    text = "filler " * 150
    mem.add_many([{"text": f"{n} {text}", "session": "big"} for n in range(int(sys.argv[3]))])
    print("committed", flush=True)
""")


def _kill_mid_batch(db_path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db_path), str(KILL_AFTER_INSERTS),
                              str(BATCH)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "inside"
        wal = db_path.with_name(db_path.name + "-wal")
        # Uncommitted pages really reached the disk: recovery has something to undo.
        assert wal.exists() and wal.stat().st_size > 0
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()  # harmless after the kill above; otherwise no sleeper is left behind
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL


def test_sigkill_mid_batch_leaves_none_of_it_and_the_file_reopens_cleanly(db_path):
    with Memory(db_path) as mem:
        before = mem.add_many([{"text": f"committed {n}", "session": "small"} for n in range(10)])
    _kill_mid_batch(db_path)
    with Memory(db_path) as mem:
        assert [t.id for t in mem.list()] == before
        assert mem.stats().traces == 10
        assert store_of(mem).read("PRAGMA integrity_check") == [("ok",)]
        after = mem.add("still writable")
        assert mem.get(after).text == "still writable"
        assert len(mem.history(before[0])) == 1


def test_sigkill_leaves_no_orphan_history_or_half_sessions(db_path):
    Memory(db_path).close()
    _kill_mid_batch(db_path)
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("SELECT COUNT(*) FROM traces").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM trace_history").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM dirty_sessions").fetchone()[0] == 0
    finally:
        conn.close()


def test_a_batch_that_completes_is_all_there_after_a_later_kill(db_path):
    with Memory(db_path) as mem:
        ids = mem.add_many([{"text": f"n{n}"} for n in range(300)])
    _kill_mid_batch(db_path)
    with Memory(db_path) as mem:
        assert [t.id for t in mem.list()] == ids
