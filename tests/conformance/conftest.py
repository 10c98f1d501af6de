"""The backend conformance suite: behaviour every storage backend must show.

Every test here runs once per entry of BACKENDS, through a URL given to ``Memory(...)`` /
``open_store(...)``. A new backend is one entry: a function from pytest's ``tmp_path`` to a
fresh, empty store URL (skip there when the backend's server is not reachable).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from zeromem import Memory
from zeromem.store import open_store


def _sqlite_url(tmp_path: Path) -> str:
    return "sqlite://" + (tmp_path / "x.db").resolve().as_posix()  # sqlite:///abs/x.db


BACKENDS: dict[str, Callable[[Path], str]] = {
    "sqlite": _sqlite_url,
}


@pytest.fixture(params=sorted(BACKENDS))
def store_url(request, tmp_path) -> str:
    """A URL naming a fresh, empty store of each backend in turn."""
    return BACKENDS[request.param](tmp_path)


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
    stats = mem.stats(all_scopes=True)
    stats.pop("path")
    scopes = scopes or ((mem.scope.user, mem.scope.agent),)
    return stats, [mem.list(user=u, agent=a) for u, a in scopes]


@pytest.fixture(scope="session")
def observed():
    """observed(memory, *scopes): a backend-independent snapshot to compare around a call."""
    return observe
