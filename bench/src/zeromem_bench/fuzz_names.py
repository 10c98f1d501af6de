"""The ``names`` surface of ``zeromem bench fuzz``: one name, one scope, on every surface.

A case takes a plain name ("alice", "s1") and spoils it with one character that shows nothing
or changes what follows (default-ignorable code points, bidi controls, tag characters, Hangul
fillers, U+2800; ``store.validate.INVISIBLE_IN_NAMES``) or writes it in a compatibility form
that NFKC maps back to it ("ａｌｉｃｅ"), and passes it where a name goes: a user or agent, a
session (invisible characters only: session names need not be NFKC), or a whole text made only
of such characters. The call goes through the library (``Memory``), the command line (``zeromem
keys add`` / ``list``), the REST API (``POST /v1/traces``, no auth: the scope is the server's,
so user names there come through the key store that checks every key's scope) or MCP (the
``remember`` tool of ``build_server``). The case passes when the call is refused with a clear
error (InvalidInput, exit code 2 and ``error:``, a 4xx, an MCP tool error) and the store is
unchanged; anything stored is a ``accepted a name that reads as another`` failure.
Outcomes: ``rejected:<surface>:<field>``.
"""

from __future__ import annotations

import contextlib
import io
import json
import unicodedata
from pathlib import Path
from typing import Any

from zeromem.errors import InvalidInput
from zeromem.memory import Memory
from zeromem.store import validate
from zeromem.types import Scope

from .fuzz_surfaces import Failure, Surface

BASES = {"user": ("alice", "bob", "priya"), "agent": ("planner", "bot"), "session": ("s1", "trip-2023")}
WHERE = ("library", "cli", "rest", "mcp")
FIELDS = ("user", "agent", "session", "text")
# NFKC maps each of these to a plain letter: a name written with them reads as the plain name.
COMPATIBILITY = {"a": "ａ", "b": "ｂ", "i": "ｉ", "s": "ｓ", "1": "１", "o": "ｏ", "t": "ｔ"}


def spoiled(base: str, char: str, position: int, compatibility: bool) -> str:
    """``base`` with ``char`` put in at ``position`` (wrapped), or written in compatibility
    characters where ``compatibility``."""
    if compatibility:
        changed = "".join(COMPATIBILITY.get(c, c) for c in base)
        if changed != base:
            return changed
    where = position % (len(base) + 1)
    return base[:where] + char + base[where:]


class NamesSurface(Surface):
    """Invisible and non-NFKC names through the library, the CLI, the REST API and MCP."""

    name = "names"

    def open(self, folder: Path, seed: int) -> None:
        from fastapi.testclient import TestClient

        from zeromem.interfaces.mcp_server import build_server
        from zeromem.interfaces.server import ServerSettings, create_app

        self.db = folder / "names.db"
        self.memory = Memory(self.db, user="alice")
        self.memory.add("Alice moved to Denver.", session="s1")
        self.client = TestClient(create_app(self.memory, ServerSettings(warm_up=False, require_auth=False)),
                                 raise_server_exceptions=False, base_url="http://127.0.0.1")
        self.mcp = build_server(self.memory, user="alice", agent=None)
        self.chars = sorted(validate.INVISIBLE_IN_NAMES)

    def close(self) -> None:
        self.memory.close()

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        return st.tuples(st.sampled_from(WHERE), st.sampled_from(FIELDS), st.integers(0, 10_000),
                         st.sampled_from(self.chars), st.integers(0, 20), st.booleans())

    def _count(self) -> int:
        return self.memory.stats(all_scopes=True).traces

    def check(self, case: tuple[str, str, int, str, int, bool]) -> tuple[str, str]:
        where, field, pick, char, position, compatibility = case
        if field == "text":
            value = "".join(char for _ in range(position % 4 + 1)) + (" " if position % 2 else "")
        else:
            bases = BASES[field]
            value = spoiled(bases[pick % len(bases)], char, position, compatibility and field != "session")
            if unicodedata.normalize("NFKC", value) == value and validate.invisible_char(value) is None:
                return "accepted", "skipped:plain"
        before = self._count()
        refused, detail = getattr(self, f"_{where}")(field, value)
        if not refused:
            raise Failure("accepted a name that reads as another", f"{where} {field}={value!r}: {detail}")
        if self._count() != before:
            raise Failure("refused but stored", f"{where} {field}={value!r}")
        return "rejected", f"rejected:{where}:{field}"

    def _call(self, field: str, value: str) -> dict[str, Any]:
        """The keyword arguments of ``Memory.add`` that put ``value`` in ``field``."""
        if field == "text":
            return {"text": value}
        return {"text": "Alice moved to Denver.", field: value}

    def _library(self, field: str, value: str) -> tuple[bool, str]:
        call = self._call(field, value)
        try:
            if field in ("user", "agent"):
                Memory(":memory:", user=value if field == "user" else None,
                       agent=value if field == "agent" else None).close()
                return False, "Memory() took it"
            self.memory.add(**call)
        except InvalidInput as exc:
            return True, str(exc)
        return False, "stored"

    def _cli(self, field: str, value: str) -> tuple[bool, str]:
        from typer.testing import CliRunner

        from zeromem.interfaces.cli import app

        if field not in ("user", "agent"):
            return self._library(field, value)  # the CLI writes sessions and texts only by ingesting files
        argv = ["keys", "add", "--db", str(self.db), f"--{field}", value]
        result = CliRunner().invoke(app, argv)
        return result.exit_code == 2 and "error:" in result.output, f"exit {result.exit_code}: {result.output[-300:]}"

    def _rest(self, field: str, value: str) -> tuple[bool, str]:
        if field in ("user", "agent"):
            from zeromem._internals import store_of

            try:
                store_of(self.memory).create_api_key(Scope(**{field: value}), None)
            except InvalidInput as exc:
                return True, str(exc)
            return False, "an API key was made for it"
        body = json.dumps(self._call(field, value), ensure_ascii=True)
        response = self.client.post("/v1/traces", content=body, headers={"Content-Type": "application/json"})
        return 400 <= response.status_code < 500, f"{response.status_code} {response.text[-300:]}"

    def _mcp(self, field: str, value: str) -> tuple[bool, str]:
        import anyio

        from zeromem.interfaces.mcp_server import build_server

        server = self.mcp
        call = self._call(field, value)
        if field in ("user", "agent"):
            server = build_server(self.memory, user=value if field == "user" else "alice",
                                  agent=value if field == "agent" else None)
            call = {"text": "Alice moved to Denver."}
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                result = anyio.run(server.call_tool, "remember", call)
        except Exception as exc:  # noqa: BLE001 - the SDK raises ToolError for a refused call
            return True, str(exc)
        return bool(getattr(result, "is_error", False)), str(result)[-300:]
