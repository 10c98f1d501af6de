"""The one place that knows the storage backends: a path or URL → an opened store.

Accepted targets:

* a plain path (``str`` or ``Path``, ``~`` expanded) or ``":memory:"`` → SQLite;
* ``sqlite:///abs/path.db`` (three slashes, then the absolute path; ``%20`` and friends are
  decoded; SQLAlchemy's four-slash ``sqlite:////abs/path.db`` is the same file) or
  ``sqlite:///:memory:`` → SQLite;
* ``postgresql://user@host:port/db`` / ``postgres://...`` (libpq URL: password, ``?sslmode=``
  and other libpq parameters as PostgreSQL documents them) → PostgreSQL + pgvector
  (``store.postgres``, docs/postgres.md);
* any other ``scheme://`` → InvalidInput listing these forms.

Options every backend takes: ``max_text_chars``; ``timeout_s`` (how long to wait for a
connection: PostgreSQL); ``lock_timeout_s`` (how long a write waits for another writer's lock
before it fails with StoreError: SQLite's busy timeout, PostgreSQL's ``lock_timeout``);
``read_only`` (SQLite: open the file for reading only; a file or folder that is not writable
is opened so anyway).

A new backend is one module implementing ``StoreBase`` plus one entry in ``_BACKENDS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..config import mib_bytes
from ..errors import InvalidInput, StoreError
from . import validate
from .base import DEFAULT_LOCK_TIMEOUT_S, StoreBase, check_flag, check_lock_timeout
from .checks import DEFAULT_ERASE_REWRITE_MB
from .sqlite import SQLiteStore
from .urls import redact_url

__all__ = ["open_store", "redact_url"]

_URL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
SUPPORTED_FORMS = ("a file path such as ~/.zeromem/memory.db", "':memory:'",
                   "sqlite:///absolute/path.db", "sqlite:///:memory:", "postgresql://user@host:port/db")


@dataclass(frozen=True, slots=True)
class _Options:
    """What every opener gets besides the target (see the module docstring)."""

    max_text_chars: int
    timeout_s: float
    lock_timeout_s: float
    read_only: bool
    erase_rewrite_bytes: int


def open_store(target: str | Path, *, max_text_chars: int = validate.DEFAULT_MAX_TEXT_CHARS,
               timeout_s: float = 30.0, lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
               read_only: bool = False, erase_rewrite_mb: float = DEFAULT_ERASE_REWRITE_MB) -> StoreBase:
    """Open the store ``target`` names (see the module docstring for the accepted forms).

    Raises InvalidInput for a target of the wrong type, an unknown URL scheme or a bad
    option, and StoreError when the backend cannot open it (unreadable file, newer schema,
    backend not available).
    """
    options = _Options(max_text_chars, timeout_s, check_lock_timeout(lock_timeout_s),
                       check_flag(read_only, "read_only"), mib_bytes(erase_rewrite_mb, "erase_rewrite_mb"))
    if isinstance(target, Path):
        return _sqlite(target, options)
    if not isinstance(target, str):
        raise InvalidInput(f"a store is named by a path or a URL string, got "
                           f"{type(target).__name__}; use one of: {', '.join(SUPPORTED_FORMS)}")
    if not target.strip():
        raise InvalidInput(f"the store path is empty; use one of: {', '.join(SUPPORTED_FORMS)}")
    validate.check_unicode(target, "the store path")
    match = _URL_RE.match(target)
    if match is None:
        return _sqlite(target, options)
    scheme = match.group(1).lower()
    opener = _BACKENDS.get(scheme)
    if opener is None:
        raise InvalidInput(f"unknown store URL scheme {scheme!r}: use one of: "
                           f"{', '.join(SUPPORTED_FORMS)}")
    return opener(target, options)


def _sqlite(path: str | Path, options: _Options) -> StoreBase:
    if "\x00" in str(path):  # also from a sqlite URL's %00; SQLite itself raises ValueError
        raise InvalidInput("the store path contains a NUL character: no file can be named so")
    return SQLiteStore(path, max_text_chars=options.max_text_chars,
                       lock_timeout_s=options.lock_timeout_s, read_only=options.read_only,
                       erase_rewrite_bytes=options.erase_rewrite_bytes)


def _open_sqlite(url: str, options: _Options) -> StoreBase:
    parts = urlsplit(url)
    if parts.netloc:
        raise InvalidInput(f"a sqlite URL has no host: write sqlite:///absolute/path.db (three "
                           f"slashes), not {redact_url(url)}")
    if parts.query or parts.fragment:
        raise InvalidInput("a sqlite URL takes no '?' or '#' part: percent-encode those "
                           "characters in the path (%3F, %23)")
    try:
        path = unquote(parts.path, errors="strict")
    except UnicodeDecodeError:
        raise InvalidInput("the path in this sqlite URL has a %-escape that is not UTF-8") from None
    if path in ("", "/"):
        raise InvalidInput("a sqlite URL needs a path: sqlite:///absolute/path.db or sqlite:///:memory:")
    if path.startswith("//"):
        path = "/" + path.lstrip("/")  # sqlite:////abs/path.db, as SQLAlchemy writes it
    if path == "/:memory:":
        path = ":memory:"
    return _sqlite(path, options)


def _open_postgres(url: str, options: _Options) -> StoreBase:
    if options.read_only:
        raise InvalidInput("read_only opens a SQLite file for reading; for PostgreSQL connect as "
                           "a role that may only SELECT")
    try:
        from .postgres import PostgresStore
    except ImportError as exc:  # psycopg / psycopg_pool missing from this environment
        raise StoreError(f"the PostgreSQL backend needs psycopg 3 and psycopg_pool ({exc}): "
                         "pip install 'zeromem[postgres]'") from None
    return PostgresStore(url, max_text_chars=options.max_text_chars, timeout_s=options.timeout_s,
                         lock_timeout_s=options.lock_timeout_s)


# scheme → opener. A new backend is one entry here (and its module).
_BACKENDS: dict[str, Callable[[str, _Options], StoreBase]] = {
    "sqlite": _open_sqlite,
    "postgresql": _open_postgres,
    "postgres": _open_postgres,
}
