"""The scope-filter statement check: every statement over a per-scope table pins
scope_key. The conformance suite runs under the recorder (conftest._scope_filter_check); here
the checker itself is pinned, and every store method — the derived ones too — runs once under
the recorder."""

from __future__ import annotations

import numpy as np
import pytest

from pg_statements import Recorder, violation
from zeromem.store import DerivedUnit, TraceDraft, open_store
from zeromem.store.postgres import ALL_SCOPES
from zeromem.store.postgres_schema import GLOBAL_TABLES, SCOPED_TABLES
from zeromem.types import Scope


@pytest.mark.parametrize("sql", [
    "SELECT * FROM traces WHERE rowid_ = %s",
    "SELECT * FROM traces WHERE session = %s",
    "DELETE FROM units WHERE id = %s",
    "UPDATE traces SET text = %s WHERE rowid_ = %s",
    "INSERT INTO traces (rowid_, text) VALUES (%s, %s)",
    "COPY units (id, text) FROM STDIN",
    "SELECT m.entity FROM unit_mentions m JOIN units u ON u.id = m.unit_id WHERE u.scope_key = %s",
    "SELECT * FROM units u, units v WHERE u.scope_key = %s",
    "SELECT * FROM traces t WHERE t.scope_key = %s AND EXISTS (SELECT 1 FROM units WHERE id = 1)",
    "SELECT * FROM somewhere_new WHERE scope_key = %s",
    ALL_SCOPES + "DELETE FROM traces",
    # a reference-table write joined with a distributed read: Citus refuses it
    "UPDATE api_keys SET label = 'x' FROM traces t WHERE t.scope_key = %s",
    "INSERT INTO encoder_timings SELECT 'x', 1, count(*) FROM traces WHERE scope_key = %s",
])
def test_the_checker_flags_statements_that_do_not_pin_the_scope(sql):
    assert violation(sql) is not None


@pytest.mark.parametrize("sql", [
    "SELECT * FROM traces WHERE scope_key = %s AND rowid_ = %s",
    "DELETE FROM units WHERE scope_key = %s AND id = ANY(%s)",
    "INSERT INTO units (scope_key, id) VALUES (%s, %s) ON CONFLICT (scope_key, id) DO UPDATE SET id = 1",
    "COPY traces (scope_key, rowid_) FROM STDIN",
    ("SELECT m.entity FROM unit_mentions m JOIN units u ON u.scope_key = m.scope_key"
     " AND u.id = m.unit_id WHERE m.scope_key = %s"),
    "SELECT value FROM store_meta WHERE key = %s",
    ALL_SCOPES + "SELECT DISTINCT user_key, agent_key FROM traces",
    "CREATE TABLE x (a int)",
    "SELECT nodename, nodeport FROM pg_dist_node WHERE isactive",
    ("UPDATE store_meta SET value = v.version::text FROM scope_versions v"
     " WHERE store_meta.key = %s AND v.scope_key = %s"),
])
def test_the_checker_accepts_scoped_and_global_statements(sql):
    assert violation(sql) is None


def test_every_table_is_classified():
    assert not set(SCOPED_TABLES) & set(GLOBAL_TABLES)
    assert {"traces", "units", "unit_mentions", "session_changes"} <= set(SCOPED_TABLES)


def test_every_store_method_pins_its_scope(postgres_server):
    """One pass over the whole interface (derived rows included) under the recorder."""
    url = postgres_server.fresh_database()
    ana, ben = Scope("ana", "bot"), Scope("ben")
    vector = np.arange(4, dtype="<f4").tobytes()
    recorder = Recorder()
    with recorder.recording(), open_store(url) as store:
        ids = store.add_batches([([TraceDraft("Ana met Ben.", session="s1"),
                                   TraceDraft("Ben likes tea.", session="s1")], ana),
                                 ([TraceDraft("other")], ben)])[0]
        rowids = [store.ids.parse(i) for i in ids]
        store.update(ids[0], ana, text="Ana met Ben in Lisbon.", metadata={"k": 1})
        units = [DerivedUnit("turn", i, "x", f"h{i}", (r,), i, i, None, None, vector,
                             (("ben", "PERSON", "Ben", 1),)) for i, r in enumerate(rowids)]
        assert store.commit_session(ana, "s1", [(rowids[0], 2), (rowids[1], 1)], units, {"ben": vector})
        assert not store.commit_session(ana, "s1", [(rowids[0], 1)], units, {})
        store.dirty_sessions(ana)
        store.stored_encodings(ana, ["h0", "h1", "nope"])
        store.entities_with_vectors(ana, ["ben", "x"])
        store.trace_entities(ana, rowids[0])
        store.read_changes(ana, 0, set())
        store.read_changes(ana, 1, {"ben"})
        store.save_snapshot(ana, store.scope_version(ana), "{}", {"a": b"1"}, 3)
        store.load_snapshot(ana, 3)
        store.snapshot_version(ana, 3)
        store.add_encoder_timings({"embed": 0.5}, {"embed": 2})
        store.get(ids[0], ana), store.get_rowids(rowids), store.history(ids[0], ana)
        store.list(ana, session="s1", since="2020", metadata={"k": 1, "z": None, "s": "x"})
        store.sessions(ana), store.count(ana), store.scopes(), store.stats(), store.stats(ana)
        store.set_meta("k", "v"), store.setdefault_meta("k", "w"), store.get_meta("k")
        store.delete_meta("k")
        store.add_api_key("0123abcd", "f" * 64, ana, "laptop")
        store.api_key_by_hash("f" * 64), store.api_keys(), store.revoke_api_key("0123abcd")
        store.delete(ids[1], ana)
        store.reset_derived(ana)
        store.delete_scope(ana)
    postgres_server.drop(url)
    assert len(recorder.statements) > 50
    assert recorder.violations() == []
    crossing = {s for s in recorder.statements if s.startswith(ALL_SCOPES)}
    assert crossing and all(s[len(ALL_SCOPES):].startswith("SELECT") for s in crossing)
