"""A store in a read-only file or folder opens for reading; its writes raise StoreError
"this store is read-only" and change nothing.

chmod only restricts users other than root (root ignores file modes), so the chmod test runs
where the tests run unprivileged; as root it skips. Where a private mount namespace is allowed
(``unshare -m``, root in a container) a real read-only bind mount is tested instead — the case
where SQLite cannot create the -shm and only ``immutable=1`` opens the file. The same paths are
also exercised by opening with ``read_only=True`` and by a folder reported not writable.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import zeromem.store.sqlite as sqlite_store
from internals import store_of
from zeromem import Memory, StoreError
from zeromem.config import Config
from zeromem.store import open_store
from zeromem.store.schema import SCHEMA_VERSION
from zeromem.types import Scope

READ_ONLY = r"this store is read-only: .*nothing was changed"


@pytest.fixture
def built(tmp_path) -> tuple[Path, list[str]]:
    """A closed store with derived rows (so a read-only search needs no write)."""
    path = tmp_path / "ro" / "memory.db"
    with Memory(path, user="ana") as mem:
        ids = mem.add_many([{"text": "I moved to Denver last week.", "session": "s1", "speaker": "Ana"},
                            {"text": "Denver is sunny in May.", "session": "s1", "speaker": "Ben"}])
        mem.search("Where did Ana move?")
    return path, ids


def files(path: Path) -> tuple[bytes, int]:
    """The database file's bytes and the size of its -wal: what a write would change. (A
    mode=ro connection may leave an empty -wal and a -shm behind where the folder allows.)"""
    wal = path.parent / (path.name + "-wal")
    return path.read_bytes(), wal.stat().st_size if wal.exists() else 0


def check_reads_work_and_writes_refused(mem: Memory, ids: list[str]) -> None:
    assert [t.id for t in mem.list()] == ids
    assert mem.get(ids[0]).text == "I moved to Denver last week."
    assert [e.event for e in mem.history(ids[0])] == ["add"]
    assert mem.stats().traces == 2
    assert ids[0] in {ev.trace_id for ev in mem.search("Where did Ana move?", k=3)}
    for write in (lambda: mem.add("new"), lambda: mem.update(ids[0], text="x"),
                  lambda: mem.delete(ids[0]), lambda: mem.delete_session("s1"),
                  lambda: mem.delete_scope(), lambda: mem.reindex()):
        with pytest.raises(StoreError, match=READ_ONLY):
            write()
    assert [t.text for t in mem.list()] == ["I moved to Denver last week.", "Denver is sunny in May."]


def test_read_only_true_opens_for_reading_and_refuses_writes(built):
    path, ids = built
    before = files(path)
    with open_store(path, read_only=True) as store:
        assert store.read_only == "opened with read_only=True"
        assert [t.id for t in store.list(Scope("ana"))] == ids
        with pytest.raises(StoreError, match=READ_ONLY):
            store.delete(ids[0], Scope("ana"))
        with pytest.raises(StoreError, match=READ_ONLY):
            store.set_meta("k", "v")
    assert files(path) == before


def not_writable(monkeypatch, folder: Path) -> None:
    """Make the store see ``folder`` as a read-only folder (or mount), without needing one."""
    folder = folder.resolve()
    real_access = os.access

    def access(target, mode, **kwargs):
        if Path(target).resolve() == folder and mode & os.W_OK:
            return False
        return real_access(target, mode, **kwargs)

    monkeypatch.setattr(sqlite_store.os, "access", access)


def test_a_folder_that_is_not_writable_opens_read_only(built, monkeypatch):
    path, ids = built
    not_writable(monkeypatch, path.parent)
    before = files(path)
    with Memory(path, user="ana") as mem:
        assert "folder is not writable" in store_of(mem).read_only
        check_reads_work_and_writes_refused(mem, ids)
    assert files(path) == before  # close persisted nothing either


def test_immutable_is_the_fallback_when_mode_ro_cannot_open(built, monkeypatch):
    """A WAL database in a read-only folder without its -shm cannot be opened with mode=ro
    (SQLite must create the -shm); the store then reads it as immutable."""
    path, ids = built
    real_connect = sqlite3.connect
    tried: list[str] = []

    def connect(target, *args, **kwargs):
        tried.append(str(target))
        if "mode=ro" in str(target):
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(sqlite_store.sqlite3, "connect", connect)
    Memory(path, user="ana", config=Config()).close()  # writable: mode=ro is never tried
    assert not any("mode=ro" in t for t in tried)
    with open_store(path, read_only=True) as store:
        assert [t.id for t in store.list(Scope("ana"))] == ids
    assert [t.split("?")[1] for t in tried if "?" in t] == ["mode=ro", "immutable=1"]


def test_read_only_open_of_a_missing_file_creates_nothing(tmp_path):
    path = tmp_path / "missing" / "memory.db"
    with pytest.raises(StoreError, match="a read-only open cannot create one"):
        open_store(path, read_only=True)
    assert not path.parent.exists()


def test_a_read_only_store_of_an_older_schema_says_it_cannot_be_upgraded(built, tmp_path):
    path, _ = built
    old = tmp_path / "old.db"
    shutil.copy(path, old)
    conn = sqlite3.connect(old)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.close()
    with pytest.raises(StoreError, match="cannot be upgraded: open it once with write access"):
        open_store(old, read_only=True)
    other = tmp_path / "not-zeromem.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(StoreError, match="is not a zeromem store"):
        open_store(other, read_only=True)


def test_a_read_only_store_with_sessions_not_yet_derived_says_how_to_fix_it(tmp_path, monkeypatch):
    path = tmp_path / "lazy" / "memory.db"
    with Memory(path, config=Config(index_on_write=False)) as mem:
        tid = mem.add("I moved to Denver last week.", session="s1")
    not_writable(monkeypatch, path.parent)
    with Memory(path) as mem:
        assert mem.get(tid).text == "I moved to Denver last week."
        with pytest.raises(StoreError, match=r"session 's1' is not derived yet; run `zeromem index` once"):
            mem.search("Denver")
    monkeypatch.undo()
    with Memory(path) as mem:  # writable again: the search derives it, as always
        assert mem.search("Denver")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file modes: chmod cannot make a "
                    "read-only store for root (the tests above cover the same paths)")
def test_chmod_read_only_file_and_folder(built):
    path, ids = built
    folder = path.parent
    modes = {p: p.stat().st_mode for p in (folder, *folder.iterdir())}
    try:
        for file in folder.iterdir():
            file.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
        before = files(path)
        with Memory(path, user="ana") as mem:
            assert store_of(mem).read_only is not None
            check_reads_work_and_writes_refused(mem, ids)
        assert files(path) == before
    finally:
        for target, mode in modes.items():
            target.chmod(mode)


_READ_ONLY_SCRIPT = """
import json, sys
from zeromem import Memory, StoreError
from zeromem._internals import store_of
out = {}
with Memory(sys.argv[1], user="ana") as mem:
    out["read_only"] = store_of(mem).read_only
    out["list"] = [t.id for t in mem.list()]
    out["search"] = sorted({ev.trace_id for ev in mem.search("Where did Ana move?", k=3)})
    try:
        mem.add("new")
    except StoreError as exc:
        out["add"] = str(exc)
print(json.dumps(out))
"""


def _in_read_only_mount(folder: Path, command: list[str]) -> subprocess.CompletedProcess:
    """Run ``command`` in a private mount namespace where ``folder`` is a read-only bind mount."""
    quoted = shlex.quote(str(folder))
    script = (f"mount --bind {quoted} {quoted} && mount -o remount,bind,ro {quoted} && "
              + " ".join(shlex.quote(part) for part in command))
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_a_store_on_a_read_only_mount_opens_for_reading(built):
    path, ids = built
    folder = path.parent
    probe = _in_read_only_mount(folder, ["sh", "-c", f"! touch {shlex.quote(str(folder / 'probe'))}"])
    if shutil.which("unshare") is None or probe.returncode != 0:
        pytest.skip(f"no private read-only mount here (unshare -m): {probe.stderr.strip()[:200]}")
    assert sorted(p.name for p in folder.iterdir()) == ["memory.db"]  # closed: no -wal, no -shm
    before = files(path)
    done = _in_read_only_mount(folder, [sys.executable, "-c", _READ_ONLY_SCRIPT, str(path)])
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["read_only"] is not None and out["list"] == ids and ids[0] in out["search"]
    assert out["add"].startswith(f"this store is read-only: {path}")
    assert files(path) == before
