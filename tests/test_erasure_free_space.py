"""Erasure reaches the unused space of live pages, not only the rows (issue "Hardening, round 3").

Many scopes share the pages of every table and index: their traces are written in interleaved
rounds and grown by updates, so SQLite rebalances b-tree pages, and a rebuilt page keeps old
copies of the rows it held in its unallocated space (secure_delete does not reach there).
Before the fix, deleting a scope left copies of its text and its user id in pages that still
hold other scopes' rows while the receipt said nothing was retained.

Every file byte is scanned (the db, -wal, -shm) for the erased strings in UTF-8 and in UTF-16
(both byte orders: SQLite can store text as UTF-16 when a database is created so, zeromem's
are UTF-8, which a test checks too), case-insensitively, so that lower-cased derived forms
(entity keys, vocabulary) count as well.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import pytest

import sqlite_pages as sqlite_scrub
from zeromem import Config, Memory

USERS = 12
ROUNDS = 3
PER_ROUND = 4


def user(n: int) -> str:
    return f"user{n:02d}zz"


def secret(n: int) -> str:
    """The word every text of user ``n`` holds."""
    return f"Qsecret{n:02d}x"


def trace_text(n: int, rnd: int, item: int) -> str:
    return f"{secret(n)} round {rnd} item {item}: we talked about the garden"


def forms(value: str) -> list[bytes]:
    """``value`` lower-cased, as the bytes of every encoding SQLite could store it in."""
    low = value.lower()
    return [low.encode("utf-8"), low.encode("utf-16-le"), low.encode("utf-16-be")]


def occurrences(db: Path, values: list[str]) -> dict[str, int]:
    """How often any of ``values`` appears in each file of the store (every byte)."""
    found: dict[str, int] = {}
    for file in sorted(db.parent.glob(db.name + "*")):
        data = file.read_bytes().lower()
        found[file.name] = sum(data.count(form) for value in values for form in forms(value))
    return found


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, dict[int, list[str]]]:
    """A store where 12 scopes share pages: interleaved writes, then updates that grow rows
    (rebalancing pages); closed, so each test works on a copy. Returns its path and the
    trace ids per user."""
    db = tmp_path_factory.mktemp("shared-pages") / "memory.db"
    rng = random.Random(0)
    ids: dict[int, list[str]] = {}
    with Memory(db) as mem:
        for rnd in range(ROUNDS):
            for n in range(USERS):
                ids.setdefault(n, []).extend(mem.add_many(
                    [{"text": trace_text(n, rnd, item), "session": f"s{rnd}"} for item in range(PER_ROUND)],
                    user=user(n)))
        for _ in range(3):
            for n in range(USERS):
                for tid in rng.sample(ids[n], 4):
                    old = mem.get(tid, user=user(n)).text
                    mem.update(tid, text=old + " and then" + " more" * rng.randint(5, 40), user=user(n))
    assert sqlite_scrub.unused_space(db).bytes > 0  # the rebalancing left old bytes in pages
    return db, ids


def copy_of(template: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for file in template.parent.glob(template.name + "*"):
        shutil.copy(file, folder / file.name)
    return folder / template.name


def test_the_store_is_utf8(template):
    db, _ = template
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA encoding").fetchone()[0] == "UTF-8"


def test_deleting_any_scope_leaves_no_byte_of_its_text_or_user_in_shared_pages(template, tmp_path):
    """Every one of the 12 scopes deleted in turn (each from a fresh copy): before the fix,
    several of them left copies of their text and user id in pages of other scopes."""
    db, ids = template
    leaks = {}
    for n in range(USERS):
        path = copy_of(db, tmp_path / f"victim{n}")
        assert sum(occurrences(path, [secret(n), user(n)]).values()) > 0  # there before
        with Memory(path) as mem:
            receipt = mem.delete_scope(user=user(n))
            assert receipt.traces == len(ids[n])
            assert receipt.retained == () and receipt.checkpointed
            found = occurrences(path, [secret(n), user(n)])  # still open
            others = [len(mem.list(user=user(m))) for m in range(USERS) if m != n]
        assert others == [ROUNDS * PER_ROUND] * (USERS - 1)  # every other scope is whole
        found_closed = occurrences(path, [secret(n), user(n)])
        if sum(found.values()) or sum(found_closed.values()):
            leaks[user(n)] = (found, found_closed)
    assert not leaks, f"the receipt said nothing was retained, yet the files hold: {leaks}"


def test_deleting_traces_and_sessions_leaves_no_byte_of_them_in_shared_pages(template, tmp_path):
    """Every trace of session s2 one by one, then sessions s0 and s1 whole, of every scope,
    from one store: no erased text is in any byte of the files afterwards, and the receipts
    say nothing remains but the tombstones (no text)."""
    db, _ = template
    path = copy_of(db, tmp_path / "traces")
    erased: list[str] = []
    with Memory(path) as mem:
        for n in range(USERS):
            for victim in mem.list(user=user(n), session="s2"):
                receipt = mem.delete(victim.id, user=user(n))
                assert receipt.checkpointed and len(receipt.retained) == 1  # the tombstones, no text
                erased.append(victim.text.split(":")[0])  # "Qsecret05x round 2 item 0"
        for n in range(USERS):
            for name in ("s0", "s1"):
                session = mem.list(user=user(n), session=name)
                receipt = mem.delete_session(name, user=user(n))
                assert receipt.traces == len(session) and len(receipt.retained) == 1
                erased += [trace.text.split(":")[0] for trace in session]
            assert mem.list(user=user(n)) == []
        # every trace is gone, so no byte of any of their texts may remain: the scope's word
        # (which every text holds) is searched, not only whole texts (copies can be partial)
        erased += [secret(n) for n in range(USERS)]
        found = occurrences(path, erased)
    assert sum(found.values()) == 0, found
    assert sum(occurrences(path, erased).values()) == 0  # and after close


def test_a_file_too_large_to_rewrite_gets_a_receipt_that_says_what_may_remain(template, tmp_path):
    """Above Config.erase_rewrite_mb the file is not rewritten on every erasure: the receipt
    says what may remain and the fix, and `compact` clears it."""
    db, _ = template
    path = copy_of(db, tmp_path / "large")
    with Memory(path, config=Config(erase_rewrite_mb=0)) as mem:
        receipt = mem.delete_scope(user=user(3))
        assert not receipt.compacted
        assert len(receipt.retained) == 1
        note = receipt.retained[0]
        assert "may keep fragments of the erased rows" in note and "zeromem compact" in note
        assert "Config.erase_rewrite_mb" in note
        mem.compact()  # (VACUUM itself may leave copies of live rows in unused space)
        assert sum(occurrences(path, [secret(3), user(3)]).values()) == 0


@pytest.mark.parametrize("bad", [-1, float("inf"), float("nan"), True, "16"])
def test_erase_rewrite_mb_must_be_a_size(tmp_path, bad):
    from zeromem import InvalidInput

    with pytest.raises(InvalidInput, match="erase_rewrite_mb"):
        Memory(tmp_path / "m.db", config=Config(erase_rewrite_mb=bad))


def test_a_small_file_is_rewritten_by_every_erasure_and_says_so(tmp_path):
    """A file within Config.erase_rewrite_mb is rewritten (VACUUM) by each erasing delete, an
    update that keeps no history too; a delete that keeps the history is not an erasure."""
    with Memory(tmp_path / "memory.db") as mem:
        first, second, third = mem.add_many([{"text": f"Zorblatt{n} lives in Lisbon."} for n in range(3)],
                                            user="solo")
        receipt = mem.delete(first, user="solo")
        assert receipt.compacted and receipt.as_dict()["compacted"] is True and receipt.retained != ()
        assert not mem.delete(second, user="solo", keep_history=True).compacted
        mem.update(third, text="Someone lives in Lisbon.", keep_history=False, user="solo")
        assert sum(occurrences(tmp_path / "memory.db", ["zorblatt0", "zorblatt2"]).values()) == 0


def test_the_scan_finds_old_row_copies_that_secure_delete_leaves(tmp_path):
    """The mechanism in plain SQLite: rows grown in the middle of a table make SQLite rebuild
    pages; a deleted row's text stays in a rebuilt page's unallocated space even with
    secure_delete on, the scan reports non-zero unused bytes there, and VACUUM clears them."""
    path = tmp_path / "plain.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, owner TEXT, body TEXT)")
    rng = random.Random(1)
    for i in range(200):
        for owner in range(10):
            conn.execute("INSERT INTO t (owner, body) VALUES (?, ?)",
                         (f"owner{owner}", f"plainsecret{owner}q {i} " + "y" * rng.randint(10, 300)))
    for step in range(0, 100, 3):
        conn.execute("UPDATE t SET body = body || ? WHERE id % 7 = ?", ("z" * 200, step % 7))
    conn.execute("DELETE FROM t WHERE owner = 'owner5'")
    assert path.read_bytes().count(b"plainsecret5q") > 0  # the old copies secure_delete missed
    found = sqlite_scrub.unused_space(path)
    assert found.bytes > 0 and 0 < found.pages < found.pages_read
    conn.execute("VACUUM")
    conn.close()
    assert path.read_bytes().count(b"plainsecret5q") == 0
    assert sqlite_scrub.unused_space(path).bytes < found.bytes


def test_a_file_that_never_saw_a_delete_or_a_rebalance_scans_clean(tmp_path):
    path = tmp_path / "fresh.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO t (body) VALUES (?)", [(f"row {i}",) for i in range(50)])
    conn.close()
    found = sqlite_scrub.unused_space(path)
    assert found.clean and found.pages_read == path.stat().st_size // 4096


def test_the_scan_reads_a_file_that_is_not_sqlite_as_clean(tmp_path):
    other = tmp_path / "not.db"
    other.write_bytes(b"hello" * 100)
    assert sqlite_scrub.unused_space(other) == sqlite_scrub.UnusedSpace(0, 0, 0)
