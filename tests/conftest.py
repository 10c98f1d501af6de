"""Shared fixtures. Real models are loaded once per session here (append new ones below)."""

from __future__ import annotations

import dataclasses
import json
import socket
from pathlib import Path

import pytest

from internals import store_of
from zeromem import Memory

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "locomo_moving_city.json"
# Benchmark data lives beside the repo; tests that read it skip where it is absent.
SHARED_LOCOMO = REPO.parent / "shared" / "data" / "locomo"


@pytest.fixture(autouse=True)
def _isolated_default_db(tmp_path_factory, monkeypatch):
    """No test may touch ~/.zeromem: the default store path points into a temp folder."""
    monkeypatch.setenv("ZEROMEM_DB", str(tmp_path_factory.mktemp("home") / "memory.db"))


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def mem(db_path):
    """A Memory on a fresh file, closed after the test."""
    memory = Memory(db_path)
    yield memory
    memory.close()


@pytest.fixture(scope="session")
def example_path() -> Path:
    return EXAMPLE


@pytest.fixture(scope="session")
def example_data() -> dict:
    return json.loads(EXAMPLE.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def shared_locomo_files() -> list[Path]:
    files = sorted(SHARED_LOCOMO.glob("*.json"))
    if not files:
        pytest.skip(f"LoCoMo data not found in {SHARED_LOCOMO}")
    return files


def _snapshot(memory: Memory) -> tuple:
    stats = dataclasses.asdict(memory.stats(all_scopes=True))
    stats.pop("path")
    rows = store_of(memory).read("SELECT * FROM traces ORDER BY rowid_")
    history = store_of(memory).read("SELECT * FROM trace_history ORDER BY id")
    versions = store_of(memory).read("SELECT * FROM scope_versions ORDER BY 1, 2")
    return stats, rows, history, versions


@pytest.fixture(scope="session")
def snapshot():
    """snapshot(memory): everything observable in a store, to compare around a failed call."""
    return _snapshot


@pytest.fixture(scope="session")
def embedder():
    """The default embedder (real model, loaded once; shared with Memory via the factory cache)."""
    from zeromem.config import EncoderConfig
    from zeromem.encoders.factory import load_embedder

    return load_embedder(EncoderConfig())


@pytest.fixture(scope="session")
def extractor():
    """The default entity extractor (real spaCy pipeline, loaded once)."""
    from zeromem.config import EncoderConfig
    from zeromem.encoders.factory import load_extractor

    return load_extractor(EncoderConfig())


@pytest.fixture
def no_network(monkeypatch):
    """No network: any TCP/UDP connection attempt fails the test (AF_UNIX pairs, which event
    loops use internally, are left alone). For code that drives a framework which could phone
    home (telemetry, tracing exporters, token files)."""
    real_connect = socket.socket.connect

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            raise AssertionError(f"network access attempted: {address!r}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "create_connection",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError(f"network access: {a!r}")))
