"""open_store: paths and URLs → the right backend, or a clear error naming the accepted forms."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeromem import InvalidInput, Memory, StoreError
from zeromem.store import SQLiteStore, TraceStore, TraceStoreBase, open_store


def _opens_sqlite(target, expected_path: str) -> None:
    with open_store(target) as store:
        assert isinstance(store, SQLiteStore) and isinstance(store, TraceStoreBase)
        assert store.path == expected_path


def test_the_old_name_is_the_sqlite_backend():
    assert TraceStore is SQLiteStore


def test_plain_paths_and_memory_open_sqlite(tmp_path):
    _opens_sqlite(tmp_path / "a.db", str(tmp_path / "a.db"))
    _opens_sqlite(str(tmp_path / "b.db"), str(tmp_path / "b.db"))
    _opens_sqlite(":memory:", ":memory:")
    assert (tmp_path / "a.db").exists() and (tmp_path / "b.db").exists()


def test_sqlite_urls_open_the_same_file_as_the_path(tmp_path):
    path = (tmp_path / "dir with space" / "x.db").resolve()
    with open_store(path) as store:
        store.set_meta("k", "v")
    for url in ("sqlite://" + path.as_posix(),
                "sqlite://" + path.as_posix().replace(" ", "%20"),
                "SQLite:///" + path.as_posix()):  # four slashes, SQLAlchemy style
        with open_store(url) as store:
            assert Path(store.path) == path and store.get_meta("k") == "v"
    _opens_sqlite("sqlite:///:memory:", ":memory:")


def test_memory_accepts_a_url(tmp_path):
    url = "sqlite://" + (tmp_path / "m.db").resolve().as_posix()
    with Memory(url) as mem:
        tid = mem.add("hello")
        assert mem.path == str((tmp_path / "m.db").resolve())
    with Memory(tmp_path / "m.db") as mem:
        assert mem.get(tid).text == "hello"


@pytest.mark.parametrize("url", ["postgresql://zm:secret@127.0.0.1:1/zeromem",
                                 "postgres://zm:secret@127.0.0.1:1/zeromem"])
def test_postgres_urls_open_the_postgres_backend_and_errors_hide_the_password(url):
    # Port 1 on loopback refuses at once; the backend itself is tested in tests/conformance.
    with pytest.raises(StoreError, match="cannot connect to postgres") as info:
        open_store(url)
    assert "secret" not in str(info.value)


@pytest.mark.parametrize("target, words", [
    ("mysql://localhost/db", "unknown store URL scheme 'mysql'"),
    ("file:///tmp/x.db", "unknown store URL scheme 'file'"),
    ("sqlite://host/x.db", "no host"),
    ("sqlite:///tmp/x.db?mode=ro", "no '?'"),
    ("sqlite://", "needs a path"),
    ("sqlite:///%ff.db", "not UTF-8"),
    ("", "empty"),
    ("x\ud800.db", "surrogate"),
    (42, "got int"),
    (None, "got NoneType"),
])
def test_bad_targets_are_invalid_input_listing_the_supported_forms(target, words):
    with pytest.raises(InvalidInput) as info:
        open_store(target)
    assert words in str(info.value)


def test_an_unknown_scheme_lists_every_supported_form():
    with pytest.raises(InvalidInput) as info:
        open_store("redis://localhost")
    message = str(info.value)
    assert all(form in message for form in ("sqlite:///absolute/path.db", "sqlite:///:memory:",
                                            "':memory:'", "file path"))
