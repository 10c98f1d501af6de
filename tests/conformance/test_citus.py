"""What only a Citus cluster has to show (tests/citus_cluster.py: a coordinator and two
workers): zeromem distributes its schema itself — on the first open, after every later
migration, and for a store made before Citus (``zeromem migrate --citus``) — says where its
data lives (``health().placement``, ``zeromem stats``), refuses a misconfigured cluster with a
clear error, and searches return the same evidence as on plain PostgreSQL."""

from __future__ import annotations

import json

import psycopg
import pytest
from typer.testing import CliRunner

from zeromem import Memory, StoreError
from zeromem.store import open_store, postgres_schema
from zeromem.store.postgres_schema import CITUS_LOCAL, CITUS_REFERENCE, SCOPED_TABLES

PEOPLE = {"ana": ["I moved to Denver in May.", "My sister Eva lives in Boston.", "I adopted a cat named Miso."],
          "ben": ["I work as a nurse in Chicago.", "My favourite band is Low.", "I run every Sunday."],
          "cy": ["I am learning Japanese.", "We visited Kyoto last spring.", "My dog is called Rex."],
          "dee": ["I play the cello.", "My brother moved to Oslo.", "I bake bread on Fridays."]}


@pytest.fixture
def citus_url(citus_cluster):
    return citus_cluster.fresh_database()


def _placement_rows(url: str) -> dict[str, tuple[str, int]]:
    with psycopg.connect(url) as conn:
        return {str(t): (m, int(c)) for t, m, c in conn.execute(
            "SELECT logicalrelid::regclass::text, partmethod, colocationid FROM pg_dist_partition")}


def _fill(url: str) -> None:
    for user, texts in PEOPLE.items():
        with Memory(url, user=user) as mem:
            mem.add_many([{"text": t, "session": "s1", "speaker": user} for t in texts])


def test_the_first_open_distributes_every_scoped_table_colocated(citus_url):
    _fill(citus_url)
    rows = _placement_rows(citus_url)
    assert {t for t, (m, _) in rows.items() if m == "h"} == set(SCOPED_TABLES)
    assert len({c for m, c in rows.values() if m == "h"}) == 1  # one colocation group
    assert {t for t, (m, _) in rows.items() if m == "n"} == set(CITUS_REFERENCE)
    assert not set(CITUS_LOCAL) & set(rows)  # store_meta stays on the coordinator
    with Memory(citus_url, user="ana") as mem:
        placement = mem.health().placement
    assert placement is not None and placement["distributed"] == sorted(SCOPED_TABLES)
    workers = [n for n in placement["nodes"] if n["role"] == "worker"]
    assert len(workers) == 2 and all(n["shards"] > 0 for n in workers)
    assert sum(n["scopes"] for n in placement["nodes"]) == len(PEOPLE)
    assert sum(n["shards"] for n in placement["nodes"]) == placement["shard_groups"]

    from zeromem.interfaces.cli import app

    shown = CliRunner().invoke(app, ["stats", "--db", citus_url, "--all-scopes", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["placement"]["shard_groups"] == placement["shard_groups"]
    text = CliRunner().invoke(app, ["stats", "--db", citus_url, "--all-scopes"]).output
    assert "citus:" in text and text.count("node:") == 2


def test_plain_postgres_reports_no_placement(plain_postgres_server):
    url = plain_postgres_server.fresh_database()
    with Memory(url, user="ana") as mem:
        assert mem.health().placement is None
    plain_postgres_server.drop(url)


def test_a_later_migration_distributes_the_table_it_creates(citus_url, monkeypatch):
    """A cluster made by a zeromem of schema v1 (no trace_signals yet) gets its v2 table
    distributed and colocated when a newer zeromem opens it."""
    with monkeypatch.context() as patch:
        patch.setattr(postgres_schema, "MIGRATIONS", postgres_schema.MIGRATIONS[:1])
        patch.setattr(postgres_schema, "SCHEMA_VERSION", 1)
        with psycopg.connect(citus_url, autocommit=True) as conn:
            postgres_schema.migrate(conn)
        assert "trace_signals" not in _placement_rows(citus_url)
    _fill(citus_url)
    rows = _placement_rows(citus_url)
    assert rows["trace_signals"] == ("h", rows["traces"][1])
    with Memory(citus_url, user="ana") as mem:
        assert all(store_signals for store_signals in
                   mem._store.trace_signals(mem.scope).values())  # type: ignore[attr-defined]


def test_migrate_citus_distributes_a_store_made_before_citus(citus_url, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(postgres_schema, "citus_installed", lambda conn: False)
        _fill(citus_url)
        with Memory(citus_url, user="ana") as mem:
            before = [t.text for t in mem.list()]
    assert _placement_rows(citus_url) == {}
    from zeromem.interfaces.cli import app

    done = CliRunner().invoke(app, ["migrate", "--citus", citus_url, "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert not report["already_distributed"] and report["placement"]["distributed"] == sorted(SCOPED_TABLES)
    assert sum(n["scopes"] for n in report["placement"]["nodes"]) == len(PEOPLE)
    with Memory(citus_url, user="ana") as mem:
        assert [t.text for t in mem.list()] == before
        assert mem.search("where does my sister live", k=1)[0].text == "My sister Eva lives in Boston."
    with psycopg.connect(citus_url) as conn:  # the coordinator's own copies were emptied
        assert conn.execute("SELECT pg_relation_size('traces') + pg_relation_size('units')").fetchone()[0] == 0
    again = CliRunner().invoke(app, ["migrate", "--citus", citus_url])
    assert again.exit_code == 0 and "already distributed" in again.output
    wrong = CliRunner().invoke(app, ["migrate", "--citus", citus_url, "--to", citus_url])
    assert wrong.exit_code != 0 and "alone" in wrong.output


def test_a_worker_that_is_down_is_a_clear_error(citus_cluster):
    url = citus_cluster.fresh_database()
    worker = citus_cluster.add_worker()
    worker._run("pg_ctl", "-D", str(worker.folder / "data"), "-m", "immediate", "-w", "stop")
    try:
        with pytest.raises(StoreError, match=f"worker 127.0.0.1:{worker.port} cannot be reached"):
            open_store(url)
    finally:
        citus_cluster.remove_worker(worker)
    open_store(url).close()  # with the node removed, the database opens (and is distributed)
    assert "traces" in _placement_rows(url)


def test_search_returns_the_same_evidence_as_plain_postgres(citus_cluster, plain_postgres_server):
    urls = [citus_cluster.fresh_database(), plain_postgres_server.fresh_database()]
    questions = ["Where does Eva live?", "What is my cat called?", "When did I move?", "What pet do I have?",
                 "Which city do I work in?", "What do I do on Fridays?", "Where did we travel?"]
    seen = []
    for url in urls:
        _fill(url)
        answers = []
        for user in PEOPLE:
            with Memory(url, user=user) as mem:
                answers += [[(e.text, round(e.score, 6)) for e in mem.search(q, k=3)] for q in questions]
        seen.append(answers)
    plain_postgres_server.drop(urls[1])
    assert seen[0] == seen[1]


def test_an_export_of_the_cluster_restores_into_plain_postgres_and_back(citus_cluster, plain_postgres_server):
    """The logical backup of docs/postgres.md: ``zeromem export --all --history`` through the
    coordinator, restored into plain PostgreSQL (and from there into an emptied cluster) gives
    the same bytes and the same ids."""
    cluster_url, plain_url = citus_cluster.fresh_database(), plain_postgres_server.fresh_database()
    _fill(cluster_url)
    with Memory(cluster_url, user="ana") as mem:
        mem.update(mem.list()[0].id, text="I moved to Denver in June.")
        exported = list(mem.export(all_scopes=True, history=True))
    with Memory(plain_url) as mem:
        mem.import_export(exported, index=False)
        assert list(mem.export(all_scopes=True, history=True)) == exported
    cluster_url = citus_cluster.fresh_database()
    with Memory(cluster_url) as mem:
        mem.import_export(exported, index=False)
        assert list(mem.export(all_scopes=True, history=True)) == exported
    plain_postgres_server.drop(plain_url)


@pytest.mark.slow
def test_bench_tenants_adds_a_node_and_rebalances_while_serving(citus_cluster, tmp_path, example_path):
    """``zeromem bench tenants --citus-add-node``: a third worker joins at a quarter of the run
    and the shard groups move while the servers answer; no error, no cross-scope result, every
    acknowledged write stored, the new node holds shards and scopes afterwards."""
    from zeromem_bench.tenants import failed, run

    url = citus_cluster.fresh_database()
    spare = citus_cluster.spare_node()
    node = f"127.0.0.1:{spare.port}"
    try:
        document = run(example_path, scopes=6, traces=240, small=(20, 40), large=80, seconds=16.0,
                       clients=3, workers=1, threads=2, index_cache_mb=64, db=url, k=5, sample_s=1.0,
                       progress=False, citus_add_node=node, rebalance_at=0.15)
        citus = document["citus"]
        assert not failed(document), (document["error_samples"], citus)
        assert citus["state"] == "finished" and node not in citus["before"]
        assert citus["after"][node]["shards"] > 0
        assert sum(n["scopes"] for n in citus["after"].values()) == 6
        assert all(citus["phases"][p]["requests"] > 0 for p in ("before", "during"))  # served while moving
        assert document["acknowledged_missing"] == 0 and document["cross_scope_results"] == 0
    finally:
        citus_cluster.fresh_database()  # no shard left on the spare node
        citus_cluster.remove_worker(spare)


OLD_RECIPE = [*(f"SELECT create_distributed_table('{t}', 'scope_key'"
                + (")" if t == "traces" else ", colocate_with => 'traces')")
                for t in SCOPED_TABLES if t != "trace_signals"),
              *(f"SELECT create_reference_table('{t}')"
                for t in ("store_meta", "api_keys", "encoder_timings", "zeromem_schema"))]


def test_migrate_citus_repairs_a_cluster_set_up_by_the_old_recipe(citus_url, monkeypatch):
    """The recipe docs/postgres.md gave before: trace_signals left on the coordinator, store_meta
    and zeromem_schema reference tables (a scope's deletion then failed)."""
    with monkeypatch.context() as patch:
        patch.setattr(postgres_schema, "citus_installed", lambda conn: False)
        open_store(citus_url).close()
    with psycopg.connect(citus_url, autocommit=True) as conn:
        for statement in OLD_RECIPE:
            conn.execute(statement)
    from zeromem.interfaces.cli import app

    done = CliRunner().invoke(app, ["migrate", "--citus", citus_url, "--json"])
    assert done.exit_code == 0, done.output
    steps = json.loads(done.output)["steps"]
    assert "distributed trace_signals by scope_key" in steps and any("store_meta back" in s for s in steps)
    rows = _placement_rows(citus_url)
    assert {t for t, (m, _) in rows.items() if m == "h"} == set(SCOPED_TABLES)
    assert {t for t, (m, _) in rows.items() if m == "n"} == set(CITUS_REFERENCE)
    _fill(citus_url)
    with Memory(citus_url, user="ana") as mem:
        assert len(mem.delete_scope().trace_ids) == 3  # failed with store_meta a reference table
