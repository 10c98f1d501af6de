"""The SQL of derived rows, for both SQL stores: units, vectors, mentions, entity vectors, the
session-change log and persisted indexes (``SQLStore`` exposes them as the ``DerivedStore``,
``ChangeLog`` and ``SnapshotStore`` methods). Every statement filters by ``scope_key`` and every
join is on it (docs/postgres.md); what a backend spells differently is its ``Dialect``.

Versions: a write starts with ``Dialect.lock_scope`` — the scope's version row bumped (and, on
PostgreSQL, locked until commit) — so the writes of one scope are serialized and every
``session_changes`` row of the write is stamped with the version the write ends at (what a
reader at an older version must read again).

Purging inside the write that makes them stale: an update or delete removes, in its own
transaction, every unit that covers the trace (its turn and spans, and the windows and episode
around it) with their vectors and mentions, and the vectors of entities nobody mentions any
more; the session is re-derived at the next refresh, and the untouched turns of the session
keep their stored encodings.

That alone does not erase: the trace's text also sits in its history events, and a persisted
index holds the words its vocabulary learned. An erasing delete therefore also empties the
history events, drops the scope's persisted index (``drop_snapshot``) and marks a wipe, and
``save_snapshot`` refuses an index older than the wipe (tests/test_erasure.py greps the files).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from .dialect import Dialect, Run
from .roles import DerivedUnit, HeldRows, Replacing
from .rows import merge_unit_rows, parse_rowids, split_by_ids, split_units, unit_key

# Tables of a scope's derived rows that `reset_derived` empties (mentions go with their units).
DERIVED_TABLES = ("units", "entity_vectors", "session_changes", "scope_snapshots", "scope_snapshot_parts")
_LEVEL_ORDER = ("CASE u.level WHEN 'turn' THEN 0 WHEN 'span' THEN 1 WHEN 'window' THEN 2"
                " ELSE 3 END")


def _by_id(d: Dialect, column: str, alias: str = "") -> str:
    """Rows of one scope by their ids (the scope's value, then the ids' array): the scope's
    column kept off its indexes, so that SQLite reaches the rows by id, not by walking the
    scope (tests/test_signals_on_write.py checks the plans)."""
    return f"{d.unindexed(alias + 'scope_key')} = ? AND {d.any_of(alias + column)}"


class Stale(Exception):
    """commit_session found the session changed since it was planned: roll back."""


# -- the change log ---------------------------------------------------------------------
def note_session_change(run: Run, key: str, session: str, version: int) -> None:
    """Record, inside a write ending at ``version``, that ``session``'s derived rows change."""
    run("INSERT INTO session_changes (scope_key, session, version) VALUES (?, ?, ?)"
        " ON CONFLICT (scope_key, session) DO UPDATE SET version = excluded.version", (key, session, version))


def mark_dirty(run: Run, key: str, sessions: Sequence[str]) -> None:
    run.many("INSERT INTO dirty_sessions (scope_key, session) VALUES (?, ?) ON CONFLICT DO NOTHING",
             [(key, session) for session in sessions])


def snapshot_predates_wipe(run: Run, key: str, version: int, *, lock: str = "") -> bool:
    """Whether an index at ``version`` is older than the scope's last wipe (see save_snapshot);
    a scope without a version row was deleted (``forget_scope``), so any index of it is.
    ``lock``: a locking clause for the read (PostgreSQL's FOR UPDATE)."""
    row = run(f"SELECT reset_version FROM scope_versions WHERE scope_key = ?{lock}", (key,)).fetchone()
    return version > 0 if row is None else int(row[0]) > version


# -- purging ----------------------------------------------------------------------------
def purge_units_of_trace(run: Run, d: Dialect, key: str, session: str, rowid: int, version: int) -> Counter[str]:
    """Remove every unit covering the trace (see the module docstring); rows removed per table."""
    units = [int(r[0]) for r in run(
        f"SELECT u.id FROM units u WHERE u.scope_key = ? AND u.session = ? AND {d.covers('u')}",
        (key, session, rowid))]
    if not units:
        return Counter()
    note_session_change(run, key, session, version)
    return drop_units(run, d, key, units)


def purge_units_of_session(run: Run, d: Dialect, key: str, session: str) -> Counter[str]:
    """Remove every unit of a session (all its traces are going); rows removed per table."""
    units = [int(r[0]) for r in run("SELECT id FROM units WHERE scope_key = ? AND session = ?", (key, session))]
    return drop_units(run, d, key, units) if units else Counter()


def drop_units(run: Run, d: Dialect, key: str, unit_ids: Sequence[int]) -> Counter[str]:
    """Delete units (cascading to their vectors and mentions) and the vectors of entities the
    scope no longer mentions; rows removed per table."""
    ids = d.array(unit_ids)
    counts: Counter[str] = Counter()
    if d.vec_join:  # vectors in a table of their own (SQLite): counted before the cascade
        counts["unit_vectors"] = int(run(
            f"SELECT COUNT(*) FROM unit_vectors WHERE {d.any_of('unit_id')}", (ids,)).fetchone()[0])
    counts["unit_mentions"] = int(run(
        f"SELECT COUNT(*) FROM unit_mentions WHERE {_by_id(d, 'unit_id')}", (key, ids)).fetchone()[0])
    entities = [r[0] for r in run(
        f"SELECT DISTINCT entity FROM unit_mentions WHERE {_by_id(d, 'unit_id')}", (key, ids))]
    counts["units"] = run(f"DELETE FROM units WHERE {_by_id(d, 'id')}", (key, ids)).rowcount
    if entities:
        counts["entity_vectors"] = run(
            f"DELETE FROM entity_vectors AS e WHERE e.scope_key = ? AND {d.any_of('e.entity')}"
            " AND NOT EXISTS (SELECT 1 FROM unit_mentions m WHERE m.scope_key = e.scope_key"
            " AND m.scope_key = ? AND m.entity = e.entity)", (key, d.array(entities), key)).rowcount
    return counts


def drop_snapshot(run: Run, key: str) -> Counter[str]:
    """Remove the scope's persisted index: it may hold words of a trace being erased (its
    vocabulary never forgets a word); rows removed per table."""
    return Counter({table: run(f"DELETE FROM {table} WHERE scope_key = ?", (key,)).rowcount
                    for table in ("scope_snapshots", "scope_snapshot_parts")})


def forget_session(run: Run, key: str, session: str) -> Counter[str]:
    """Remove a deleted session's dirty mark and change-log row (its name). Only after a wipe:
    a reader at an older version then rebuilds whole instead of reading the change log."""
    return Counter({table: run(f"DELETE FROM {table} WHERE scope_key = ? AND session = ?", (key, session)).rowcount
                    for table in ("dirty_sessions", "session_changes")})


# -- reads ------------------------------------------------------------------------------
def read_changes(run: Run, d: Dialect, key: str, since: int, known_entities: set[str],
                 trace_columns: str, held: HeldRows | None = None) -> dict[str, Any]:
    """Everything an in-memory index at version ``since`` needs to reach the current version,
    read by the caller inside ONE read transaction (so it is one consistent version).

    Returns ``version``, ``full`` (the scope was wiped or never read: rebuild from scratch),
    ``sessions`` (the changed sessions' names), ``traces`` / ``units`` / ``mentions`` rows of
    those sessions, and ``entities`` (vectors of mentioned entities not in ``known_entities``).
    """
    row = run("SELECT version, reset_version FROM scope_versions WHERE scope_key = ?", (key,)).fetchone()
    version, reset = (int(row[0]), int(row[1])) if row else (0, 0)
    full = since <= 0 or reset > since or row is None  # no row: the scope was deleted
    if full:
        sessions = [r[0] for r in run(
            "SELECT DISTINCT session FROM traces WHERE scope_key = ? ORDER BY session", (key,))]
    else:
        sessions = [r[0] for r in run(
            "SELECT session FROM session_changes WHERE scope_key = ? AND version > ? ORDER BY session", (key, since))]
    out: dict[str, Any] = {"version": version, "full": full, "sessions": sessions, "traces": [], "units": [],
                           "mentions": [], "entities": {}}
    if not sessions:
        return out
    if held is not None and not full:
        _read_unheld(run, d, key, sessions, trace_columns, held, out)
    else:
        _read_all(run, d, key, None if full else sessions, trace_columns, out)
    wanted = sorted({r[1] for r in out["mentions"]} - known_entities)
    if wanted:
        out["entities"] = {entity: d.load_vec(value) for entity, value in run.binary(
            f"SELECT entity, vec FROM entity_vectors WHERE scope_key = ? AND {d.any_of('entity')}",
            (key, d.array(wanted)))}
    return out


def _unit_rows(run: Run, d: Dialect, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Rows whose last column is a unit's vector (or NULL), that vector as bytes."""
    load = d.load_vec
    return [(*row[:-1], None if row[-1] is None else load(row[-1])) for row in run.binary(sql, params)]


def _read_all(run: Run, d: Dialect, key: str, sessions: list[str] | None, trace_columns: str,
              out: dict[str, Any]) -> None:
    """Every trace, unit and mention of ``sessions`` (None: of the whole scope)."""
    only = "" if sessions is None else f" AND {d.any_of('session')}"
    args: tuple[Any, ...] = (key,) if sessions is None else (key, d.array(sessions))
    out["traces"] = run(f"SELECT {trace_columns} FROM traces WHERE scope_key = ?{only}"
                        " ORDER BY session, seq, rowid_", args).fetchall()
    uonly = only.replace("session", "u.session")
    out["units"] = _unit_rows(run, d, (
        f"SELECT u.id, u.session, u.level, u.position, u.text, u.text_hash, {d.rowids_text}, {d.vec_column}"
        f" FROM units u{d.vec_join} WHERE u.scope_key = ?{uonly} ORDER BY u.session, {_LEVEL_ORDER}, u.position"),
        args)
    out["mentions"] = run(
        "SELECT m.unit_id, m.entity, m.label, m.surface, m.count FROM unit_mentions m"
        " JOIN units u ON u.scope_key = m.scope_key AND u.id = m.unit_id"
        f" WHERE m.scope_key = ?{uonly} ORDER BY m.unit_id, m.entity", args).fetchall()


def _read_unheld(run: Run, d: Dialect, key: str, sessions: list[str], trace_columns: str, held: HeldRows,
                 out: dict[str, Any]) -> None:
    """``read_changes`` for an index that holds most of the changed sessions: the traces it
    lacks, then, for a session whose unit ids it knows, the rows of the ids it does not hold;
    for the others the keys of every unit first and the contents it lacks (a write changes a
    few units of its session)."""
    names = d.array(sessions)
    stale = [int(rowid) for rowid, version in run(
        f"SELECT rowid_, version FROM traces WHERE scope_key = ? AND {d.any_of('session')}", (key, names))
        if not held.has_trace(rowid, version)]
    if stale:
        out["traces"] = run(f"SELECT {trace_columns} FROM traces WHERE {_by_id(d, 'rowid_')}"
                            " ORDER BY session, seq, rowid_", (key, d.array(stale))).fetchall()
    current: dict[str, list[int]] = {name: [] for name in sessions}
    for uid, session in run(f"SELECT id, session FROM units WHERE scope_key = ? AND {d.any_of('session')}",
                            (key, names)):
        current[session].append(int(uid))
    by_keys, wanted = split_by_ids(sessions, current, held, out)
    keys: list[tuple[Any, ...]] = []
    if by_keys:
        keys = [(int(uid), session, level, position, text_hash, parse_rowids(rowids))
                for uid, session, level, position, text_hash, rowids in run(
                    f"SELECT u.id, u.session, u.level, u.position, u.text_hash, {d.rowids_text} FROM units u"
                    f" WHERE u.scope_key = ? AND {d.any_of('u.session')}"
                    f" ORDER BY u.session, {_LEVEL_ORDER}, u.position", (key, d.array(by_keys)))]
        wanted += [row[0] for row in keys if not held.has_unit(*row[1:])]
    content: dict[int, tuple[Any, ...]] = {}
    if wanted:
        ids = d.array(wanted)
        content = {int(row[0]): tuple(row[1:]) for row in _unit_rows(run, d, (
            f"SELECT u.id, u.session, u.level, u.position, u.text, u.text_hash, {d.rowids_text}, {d.vec_column}"
            f" FROM units u{d.vec_join} WHERE {_by_id(d, 'id', 'u.')}"
            f" ORDER BY u.session, {_LEVEL_ORDER}, u.position"), (key, ids))}
        out["mentions"] = run(
            "SELECT unit_id, entity, label, surface, count FROM unit_mentions"
            f" WHERE {_by_id(d, 'unit_id')} ORDER BY unit_id, entity", (key, ids)).fetchall()
    out["units"] = merge_unit_rows(keys, content)


def dirty_sessions(run: Run, key: str) -> list[str]:
    return [r[0] for r in run("SELECT session FROM dirty_sessions WHERE scope_key = ? ORDER BY session", (key,))]


def stored_encodings(run: Run, d: Dialect, key: str, text_hashes: Sequence[str], sessions: Sequence[str] = ()
                     ) -> tuple[dict[str, bytes], dict[str, list[tuple[Any, ...]]]]:
    """Vectors (turn/span units) and mentions (turn units) already stored for these texts.

    A text the ``sessions``' own units have is answered from them, in one read of those
    sessions (a write re-derives its session: most of its texts are its own stored units); any
    other text from the oldest unit of the scope that has it (``Dialect.first_units``) — a text
    repeated a thousand times in the scope costs one vector read, not a thousand. (A text's
    vector and mentions are functions of the text — up to float rounding with an embedder that
    batches texts — so which unit answers does not matter.)
    """
    wanted = set(text_hashes)
    if not wanted:
        return {}, {}
    vectors: dict[str, bytes] = {}
    first_turn: dict[str, int] = {}
    if sessions:
        for uid, level, text_hash, vec in run.binary(
                f"SELECT u.id, u.level, u.text_hash, {d.vec_column} FROM units u{d.vec_join}"
                f" WHERE u.scope_key = ? AND {d.any_of('u.session')} AND u.level IN ('turn', 'span')"
                " ORDER BY u.id", (key, d.array(sessions))):
            if text_hash not in wanted:
                continue
            if vec is not None and text_hash not in vectors:
                vectors[text_hash] = d.load_vec(vec)
            if level == "turn":
                first_turn.setdefault(text_hash, int(uid))
    rest = sorted(h for h in wanted if h not in vectors and h not in first_turn)
    if rest:
        more_vectors, more_turns = d.first_units(run, key, rest)
        vectors.update(more_vectors)
        first_turn.update(more_turns)
    by_unit: dict[int, list[tuple[Any, ...]]] = {uid: [] for uid in first_turn.values()}
    if by_unit:
        for uid, entity, label, surface, count in run(
                "SELECT unit_id, entity, label, surface, count FROM unit_mentions"
                f" WHERE {_by_id(d, 'unit_id')} ORDER BY unit_id, entity",
                (key, d.array(sorted(by_unit)))):
            by_unit[int(uid)].append((entity, label, surface, count))
    return vectors, {h: by_unit[uid] for h, uid in first_turn.items()}


def entities_with_vectors(run: Run, d: Dialect, key: str, names: Sequence[str]) -> set[str]:
    if not names:
        return set()
    return {r[0] for r in run(f"SELECT entity FROM entity_vectors WHERE scope_key = ? AND {d.any_of('entity')}",
                              (key, d.array(names)))}


def turn_vectors(run: Run, d: Dialect, key: str, session: str) -> dict[int, bytes]:
    """The vector of each turn unit of the session, by its trace's row number."""
    return {parse_rowids(rowids)[0]: d.load_vec(vec) for rowids, vec in run.binary(
        f"SELECT {d.rowids_text}, {d.vec_column} FROM units u{d.vec_join}"
        f" WHERE u.scope_key = ? AND u.session = ? AND u.level = 'turn' AND {d.vec_column} IS NOT NULL",
        (key, session))}


def trace_entities(run: Run, d: Dialect, key: str, rowid: int, limit: int
                   ) -> tuple[list[tuple[str, str, str, int, int]], list[tuple[int, list[str]]]]:
    """See ``DerivedStore.trace_entities``; the caller runs it in one read transaction."""
    its_turn, rowids = d.rowids_equal("u", [rowid])
    mentions = run(
        "SELECT m.entity, m.label, m.surface, m.count FROM units u"
        " JOIN unit_mentions m ON m.scope_key = u.scope_key AND m.unit_id = u.id"
        f" WHERE u.scope_key = ? AND u.level = 'turn' AND {its_turn} ORDER BY m.entity", (key, rowids)).fetchall()
    if not mentions:
        return [], []
    names = [m[0] for m in mentions]
    shared: dict[int, list[str]] = {}
    df: dict[str, int] = dict.fromkeys(names, 0)
    for rowids, entity in run(
            f"SELECT {d.rowids_text}, m.entity FROM unit_mentions m"
            " JOIN units u ON u.scope_key = m.scope_key AND u.id = m.unit_id"
            f" WHERE m.scope_key = ? AND u.level = 'turn' AND {d.any_of('m.entity')}", (key, d.array(names))):
        df[entity] += 1
        other = parse_rowids(rowids)[0]
        if other != rowid:
            shared.setdefault(other, []).append(entity)
    ranked = sorted(shared.items(), key=lambda item: (-len(item[1]), item[0]))[:max(0, limit)]
    return ([(e, label, surface, int(count), df[e]) for e, label, surface, count in mentions],
            [(other, sorted(entities)) for other, entities in ranked])


def trace_signals(run: Run, d: Dialect, key: str, *, missing_only: bool = False,
                  rowids: Sequence[int] | None = None) -> dict[int, str | None]:
    """Every trace of the scope (or of ``rowids`` among them) → its stored lifecycle signals
    (JSON) for its current version, or None when they are missing or were computed for an
    older version; ``missing_only``: just the None ones (what a refresh after a write
    computes, for the traces it wrote: a cost that does not grow with the scope)."""
    # With ``rowids``, SQLite looks the rows up by primary key instead of walking the scope's
    # index (17 ms at 100k traces): the scope's column is kept off its index.
    scoped = ("t.scope_key = ?" if rowids is None
              else f"{d.unindexed('t.scope_key')} = ? AND {d.any_of('t.rowid_')}")
    rows = run(
        "SELECT t.rowid_, s.signals FROM traces t LEFT JOIN trace_signals s"
        " ON s.scope_key = t.scope_key AND s.trace_rowid = t.rowid_ AND s.version = t.version WHERE " + scoped
        + (" AND s.signals IS NULL" if missing_only else "") + " ORDER BY t.rowid_",
        (key,) + (() if rowids is None else (d.array([int(r) for r in rowids]),))).fetchall()
    return {int(rowid): blob for rowid, blob in rows}


# -- writes -----------------------------------------------------------------------------
def reset_derived(run: Run, d: Dialect, key: str) -> None:
    """Drop every derived row of a scope and mark all its sessions dirty (a full rebuild)."""
    d.lock_scope(run, key, reset=True)
    for table in DERIVED_TABLES:
        run(f"DELETE FROM {table} WHERE scope_key = ?", (key,))
    run("INSERT INTO dirty_sessions (scope_key, session) SELECT DISTINCT scope_key, session FROM traces"
        " WHERE scope_key = ? ON CONFLICT DO NOTHING", (key,))


def commit_session(run: Run, d: Dialect, key: str, session: str, expected: Sequence[tuple[int, int]],
                   units: Sequence[DerivedUnit], entity_vectors: dict[str, bytes],
                   replacing: Replacing | None = None) -> int:
    """Replace a session's derived rows if its traces are still ``expected`` (and, with
    ``replacing``, its change version still ``replacing.since``); returns the new change
    version. Raises Stale (the caller rolls back, nothing changed) when they are not."""
    version = d.lock_scope(run, key)
    current = run("SELECT rowid_, version FROM traces WHERE scope_key = ? AND session = ? ORDER BY seq, rowid_",
                  (key, session)).fetchall()
    if [(int(a), int(b)) for a, b in current] != [(int(a), int(b)) for a, b in expected]:
        raise Stale
    if replacing is not None:
        row = run("SELECT version FROM session_changes WHERE scope_key = ? AND session = ?", (key, session)).fetchone()
        if row is None or int(row[0]) != replacing.since:
            raise Stale  # another writer derived the session since: the caller derives it whole
        run.many("DELETE FROM units WHERE scope_key = ? AND session = ? AND level = ? AND position = ?",
                 [(key, session, level, position) for level, position in replacing.units])
        fresh = list(units)
    else:
        fresh = _replace_changed(run, d, key, session, units)
    ids = d.insert_units(run, key, session, fresh)
    mention_rows = [(key, uid, *m) for uid, unit in zip(ids, fresh) for m in unit.mentions]
    if mention_rows:
        run.many("INSERT INTO unit_mentions (scope_key, unit_id, entity, label, surface, count)"
                 " VALUES (?, ?, ?, ?, ?, ?)", mention_rows)
    # Vectors the indexer made (entities the scope had none for) go in for every unit's
    # mentions, kept or new, in the same transaction: a reader never sees a mention whose
    # entity vector is still missing. (Vectors of entities nobody mentions any more are
    # removed by the update/delete that dropped them.)
    mentioned = sorted({m[0] for unit in units for m in unit.mentions})
    vector_rows = [(key, e, "dense", d.dump_vec(entity_vectors[e])) for e in mentioned if e in entity_vectors]
    if vector_rows:
        run.many("INSERT INTO entity_vectors (scope_key, entity, model, vec) VALUES (?, ?, ?, ?)"
                 " ON CONFLICT DO NOTHING", vector_rows)
    run("DELETE FROM dirty_sessions WHERE scope_key = ? AND session = ?", (key, session))
    note_session_change(run, key, session, version)
    return version


def _replace_changed(run: Run, d: Dialect, key: str, session: str, units: Sequence[DerivedUnit]
                     ) -> list[DerivedUnit]:
    """Delete the session's unit rows that no unit of ``units`` equals (rows.split_units):
    rewriting every unit and vector per appended turn made writes O(session). Returns the
    units to insert."""
    fresh, stale = split_units(
        ((int(uid), unit_key(level, position, text_hash, parse_rowids(rowids), first, last, speaker, time,
                             bool(has_vector)))
         for uid, level, position, text_hash, rowids, first, last, speaker, time, has_vector in run(
            f"SELECT u.id, u.level, u.position, u.text_hash, {d.rowids_text}, u.first_seq, u.last_seq,"
            f" u.speaker, u.time, {d.vec_column} IS NOT NULL FROM units u{d.vec_join}"
            " WHERE u.scope_key = ? AND u.session = ? ORDER BY u.id", (key, session))),
        units)
    if stale:  # their vectors and mentions go with them (ON DELETE CASCADE)
        run(f"DELETE FROM units WHERE {_by_id(d, 'id')}", (key, d.array(stale)))
    return fresh


def add_encoder_timings(run: Run, seconds: dict[str, float], items: dict[str, int]) -> None:
    for encoder, spent in seconds.items():
        run("INSERT INTO encoder_timings (encoder, seconds, items) VALUES (?, ?, ?)"
            " ON CONFLICT (encoder) DO UPDATE SET seconds = encoder_timings.seconds + excluded.seconds,"
            " items = encoder_timings.items + excluded.items", (encoder, float(spent), int(items.get(encoder, 0))))


def put_signals(run: Run, d: Dialect, key: str, rows: Sequence[tuple[int, int, str]]) -> None:
    """Store (trace rowid, version, signals JSON) rows, except those of traces deleted since
    they were computed (a delete removes a trace's signals with it: only these rows can be
    left without a trace, so only they are checked, not the whole scope)."""
    run.many("INSERT INTO trace_signals (scope_key, trace_rowid, version, signals) VALUES (?, ?, ?, ?)"
             " ON CONFLICT (scope_key, trace_rowid) DO UPDATE SET version = excluded.version,"
             " signals = excluded.signals", [(key, rowid, version, blob) for rowid, version, blob in rows])
    put = d.array(sorted({int(rowid) for rowid, _, _ in rows}))
    run(f"DELETE FROM trace_signals AS s WHERE s.scope_key = ? AND {d.any_of('s.trace_rowid')} AND NOT EXISTS"
        f" (SELECT 1 FROM traces t WHERE {d.unindexed('t.scope_key')} = s.scope_key AND t.rowid_ = s.trace_rowid)",
        (key, put))
