"""What a write reads of the lifecycle's tables does not grow with the scope: the signals
refresh after a write asks only for the traces it stored, a put checks only its own rows for
a concurrent delete, and the traces that carry an expiry are found through a partial index
(real encoders, SQLite)."""

from __future__ import annotations

import sqlite3

from internals import store_of
from zeromem import Memory
from zeromem.types import Scope

SCOPE = Scope("u", None)


def _rowid(mem: Memory, tid: str) -> int:
    return int(store_of(mem).ids.parse(tid))


def test_a_write_computes_the_signals_of_its_own_traces_and_reads_no_other(tmp_path):
    with Memory(tmp_path / "m.db", user="u") as mem:
        first = mem.add_many([{"text": "I adopted a grey cat named Biscuit.", "session": "s1"},
                              {"text": "We moved to Denver in June.", "session": "s1"}])
        store = store_of(mem)
        assert all(store.trace_signals(SCOPE).values())
        # a trace left without signals (e.g. NER was down when it was written)
        store.conn.execute("DELETE FROM trace_signals WHERE trace_rowid = ?", (_rowid(mem, first[0]),))
        asked = []
        real = store.trace_signals
        store.trace_signals = lambda scope, **kw: asked.append(kw.get("rowids")) or real(scope, **kw)
        try:
            new = mem.add("My sister plays the cello.", session="s1")
            updated = mem.update(first[1], text="We moved to Boulder in June.")
            mem.delete(new)
        finally:
            del store.trace_signals
        assert asked == [[_rowid(mem, new)], [_rowid(mem, updated.id)]]  # the delete asks for nothing
        signals = store.trace_signals(SCOPE)
        assert signals[_rowid(mem, first[0])] is None  # not this write's trace: left for later
        assert signals[_rowid(mem, first[1])] is not None  # recomputed for the new version
        mem.index()  # a full refresh computes what any write left
        assert all(store.trace_signals(SCOPE).values())


def test_signals_of_a_trace_deleted_meanwhile_are_not_kept(tmp_path):
    with Memory(tmp_path / "m.db", user="u") as mem:
        kept, gone = mem.add_many([{"text": "The bakery sells rye bread.", "session": "s"},
                                   {"text": "Lisbon is on my list.", "session": "s"}])
        store = store_of(mem)
        before = store.trace_signals(SCOPE)
        mem.delete(gone)
        # signals computed before the delete arrive after it
        store.put_signals(SCOPE, [(_rowid(mem, gone), 1, '{"late": true}'),
                                  (_rowid(mem, kept), 1, before[_rowid(mem, kept)])])
        rows = store.conn.execute("SELECT trace_rowid FROM trace_signals").fetchall()
        assert rows == [(_rowid(mem, kept),)]


def test_traces_with_an_expiry_are_found_through_an_index(tmp_path):
    path = tmp_path / "m.db"
    with Memory(path, user="u") as mem:
        mem.add("Parking code is 4412.", session="s", metadata={"expires_at": "2031-01-01"})
        mem.add("No expiry here.", session="s", metadata={"note": "expires_at is only a word"})
        assert list(store_of(mem).expiring(SCOPE).values()) == ["2031-01-01"]
    conn = sqlite3.connect(path)
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT rowid_, json_extract(metadata, '$.expires_at') FROM traces"
        " WHERE scope_key=? AND metadata LIKE '%\"expires_at\"%'", ('["u",""]',)).fetchall()
    conn.close()
    assert any("traces_expiring" in str(row) for row in plan)


_SCOPE_WIDE = ("(user_key=? AND agent_key=?)", "(scope_key=?)")
_PER_TRACE_TABLES = ("traces", "trace_signals", "trace_history", "units", "unit_vectors", "unit_mentions")


def _walks_the_scope(conn: sqlite3.Connection, sql: str) -> list[str]:
    """Plan steps of ``sql`` that read a per-trace table by scope alone (or scan it whole)."""
    try:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()]
    except sqlite3.Error:  # a statement EXPLAIN cannot take (BEGIN, PRAGMA, ...)
        return []
    return [step for step in plan
            if any(f" {table} " in f" {step} " for table in _PER_TRACE_TABLES)
            and "traces_expiring" not in step  # a partial index: only the traces with an expiry
            and (step.startswith("SCAN") or any(step.endswith(wide) for wide in _SCOPE_WIDE))]


def test_an_add_and_the_search_after_it_read_no_table_by_scope_alone(tmp_path):
    """Every statement of a write and of the search that follows it reaches per-trace rows by
    trace, session, text or unit, never by walking the scope: their cost does not grow with
    the scope (the plans SQLite picks here, without statistics, are those of a 100k scope)."""
    path = tmp_path / "m.db"
    with Memory(path, user="u") as mem:
        for s in range(3):
            mem.add_many([{"text": f"Session {s}: I adopted a grey cat named Biscuit.", "session": f"s{s}"},
                          {"text": f"We moved to Denver in June, year {2020 + s}.", "session": f"s{s}"}])
        mem.search("Where did we move?")
        conn = store_of(mem).conn
        executed: list[str] = []
        conn.set_trace_callback(executed.append)
        try:
            mem.add("My sister plays the cello in Lisbon.", session="s1", speaker="Ana",
                    metadata={"expires_at": "2031-01-01"})
            mem.search("Who plays the cello?")
        finally:
            conn.set_trace_callback(None)
    assert len(executed) > 20  # the statements were seen (expanded, with their values)
    check = sqlite3.connect(path)
    walks = {sql: _walks_the_scope(check, sql) for sql in executed}
    check.close()
    assert {sql: steps for sql, steps in walks.items() if steps} == {}
