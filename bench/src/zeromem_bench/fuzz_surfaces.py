"""The four surfaces of ``zeromem bench fuzz`` (bench/fuzz.py): how one case runs and is judged,
and what they share: ``Failure``, the store ``snapshot`` and the ``StoreFixture``.

Each surface owns a ``StoreFixture`` — a seeded template and the live copy its cases use — and
puts the template back after any case that changed the store, so every case starts from the
same state.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import shutil
import sqlite3
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from zeromem._internals import store_of
from zeromem.config import Config
from zeromem.errors import NotFound, ZeromemError
from zeromem.memory import Memory

from . import fuzz_requests as fr
from . import fuzz_strategies as fs


class Failure(Exception):
    """A case broke a property: ``kind`` says which, ``detail`` how (a traceback, a diff)."""

    def __init__(self, kind: str, detail: str, where: str = "") -> None:
        super().__init__(f"{kind}: {detail.strip().splitlines()[-1] if detail.strip() else ''}")
        self.kind = kind
        self.detail = detail
        self.where = where  # the source line that raised, to tell apart failures of one kind

    @property
    def signature(self) -> str:
        return f"{self.kind} at {self.where}" if self.where else self.kind


def unexpected(exc: BaseException) -> Failure:
    """A Failure for an exception that is none of zeromem's errors, with its traceback."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return Failure(f"unexpected {type(exc).__name__}", text, where)


# -- the store: snapshots and a template to go back to ---------------------------------------------
def snapshot(path: str | Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the SQLite store at ``path``, in a stable order.

    Read through its own read-only connection, so it sees exactly what is committed and works
    whoever has the store open (a ``Memory`` in this process, the CLI, the server).
    """
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        tables = {}
        for name in names:
            columns = len(conn.execute(f'SELECT * FROM "{name}" LIMIT 0').description)
            order = ", ".join(str(i) for i in range(1, columns + 1))
            tables[name] = conn.execute(f'SELECT * FROM "{name}" ORDER BY {order}').fetchall()
        return tables
    finally:
        conn.close()


def changed_tables(before: dict[str, list[tuple[Any, ...]]],
                   after: dict[str, list[tuple[Any, ...]]]) -> list[str]:
    """The tables whose rows differ (added or dropped tables included)."""
    return sorted(name for name in set(before) | set(after) if before.get(name) != after.get(name))


def describe_change(before: dict[str, list[tuple[Any, ...]]], after: dict[str, list[tuple[Any, ...]]]) -> str:
    lines = []
    for name in changed_tables(before, after):
        old, new = before.get(name, []), after.get(name, [])
        gone = [row for row in old if row not in new][:2]
        added = [row for row in new if row not in old][:2]
        lines.append(f"{name}: {len(old)} -> {len(new)} rows; removed {_rows(gone)}; added {_rows(added)}")
    return "\n".join(lines)


def _rows(rows: list[tuple[Any, ...]]) -> str:
    short = fs.short
    return short([tuple(short(v, 60) for v in row) for row in rows], 400)


class StoreFixture:
    """A seeded template store and a live copy of it that cases run against.

    ``seed(path)`` builds the template once (with whatever Memory and config the surface
    uses); ``reset()`` copies it over the live store; ``check()`` compares the live store with
    the template.
    """

    def __init__(self, folder: Path, seed: Callable[[Path], Any]) -> None:
        self.folder = folder
        self.template = folder / "template.db"
        self.live = folder / "live.db"
        self.info = seed(self.template)
        self.reset()
        self.expected = snapshot(self.live)

    def reset(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.live}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(self.template, self.live)

    def diff(self, *, read: bool = False) -> str | None:
        """None when the live store equals the template, else which tables differ and how.

        ``read``: the call was a read (accepted, or refused after its search, as ``answer``
        refuses a reader's malformed reply), which may record the scope's embedder fingerprint
        on first use (store/fingerprint.py: "the first check of a scope records the
        fingerprint", a search included); that row alone is not a change. The store is still
        reset after it (it differs from the template).
        """
        now = snapshot(self.live)
        return None if now == self.expected else difference(self.expected, now, read=read)


Tables = dict[str, list[tuple[Any, ...]]]


def difference(before: Tables, after: Tables, *, read: bool = False) -> str | None:
    """None when the tables are equal; else how they differ ("" when ``read`` and only the
    embedder fingerprint a first search records was added: see ``StoreFixture.diff``)."""
    if before == after:
        return None
    if read and _without_fingerprints(before) == _without_fingerprints(after):
        return ""
    return describe_change(before, after) or "changed"


def _without_fingerprints(tables: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    meta = [row for row in tables.get("store_meta", []) if not str(row[0]).startswith("embedder:")]
    return {**tables, "store_meta": meta}



class Surface:
    """One input surface: a strategy of cases and a check of one case.

    ``check(case)`` returns ``("accepted" | "rejected", label)`` or raises ``Failure``;
    ``close()`` releases what ``open()`` made.
    """

    name = ""

    def open(self, folder: Path, seed: int) -> None:
        raise NotImplementedError

    def strategy(self) -> Any:
        raise NotImplementedError

    def check(self, case: Any) -> tuple[str, str]:
        raise NotImplementedError

    def close(self) -> None:
        pass


MAIN_USER = "alice"
ESC = "\x1b"
SEED_TRACES: list[dict[str, Any]] = [
    {"text": "I moved to Denver last week with my sister Ana.", "session": "s1", "speaker": "Priya",
     "session_time": "2023-05-08T13:56:00", "metadata": {"topic": "home"}, "source_id": "D1:1"},
    {"text": "Ana loves hiking in the Rockies on weekends.", "session": "s1", "speaker": "Priya"},
    {"text": "Remember that I am allergic to peanuts.", "session": "s1", "speaker": "Priya",
     "metadata": {"importance": 0.9}},
    {"text": "Actually, I live in Boulder now, not Denver.", "session": "s2", "speaker": "Priya",
     "session_time": "1:56 pm on 8 June, 2023"},
    {"text": "Sure, I'll remind you about the dentist on Friday.", "session": "s2",
     "speaker": "assistant", "role": "assistant", "event_time": "2023-06-09T09:00:00+02:00"},
    {"text": "我明天去北京开会。", "session": "s3", "speaker": "Li", "session_time": "2023-07-01"},
    {"text": "Photo of the new flat", "session": "s3", "speaker": "Priya",
     "attachments": ["a bright living room with a red sofa"], "metadata": {"pinned": True}},
    {"text": "The gym pass expires soon.", "session": "s3", "speaker": "Priya",
     "metadata": {"expires_at": "2023-07-02T00:00:00Z"}},
    # Terminal escapes everywhere a CLI prints stored text (they must be shown, never obeyed).
    {"text": f"I love {ESC}[31mred{ESC}[0m peppers {ESC}]0;pwned\x07 and\r \x9b31m\u202egnp.exe",
     "session": f"s{ESC}[1m", "speaker": f"Eve{ESC}[31m", "source_id": f"D{ESC}1",
     "metadata": {"m": f"{ESC}[5m"}, "attachments": [f"photo {ESC}[8m"]},
]
# What terminal output must never hold raw (interfaces/cli.py escapes them): C0 controls but
# tab and newline, DEL, C1, and the bidirectional overrides.
UNSAFE_OUTPUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def seed_store(path: Path, config: Config | None = None) -> fs.Seeded:
    """The store every case starts from: traces in three sessions of alice's scope (one
    edited, one deleted, one full of terminal escapes), two in bob's, and API keys."""
    from zeromem.types import Scope

    with Memory(path, user=MAIN_USER, config=config) as mem:
        ids = mem.add_many(SEED_TRACES)
        mem.update(ids[1], text="Ana loves hiking and climbing in the Rockies on weekends.")
        gone = mem.add("This one is deleted.", session="s2", speaker="Priya")
        mem.delete(gone)
        other = mem.add_many([{"text": "Bob's cat is called Miso.", "session": "b1"},
                              {"text": "Bob moved to Lisbon in May 2023.", "session": "b1"}], user="bob")
        keys: dict[str, str] = {}
        for role, scope in (("alice", Scope(MAIN_USER, None)), ("bob", Scope("bob", None)),
                            ("revoked", Scope(MAIN_USER, None))):
            record, key = store_of(mem).create_api_key(scope, role)
            keys[role], keys[f"{role}_id"] = key, record.key_id
        store_of(mem).revoke_api_key(keys["revoked_id"])
        sessions = tuple(dict.fromkeys(str(t["session"]) for t in SEED_TRACES))
        mem.search("where does Priya live?")  # everything derived before the template is copied
    return fs.Seeded(ids=tuple(ids), deleted_ids=(gone,), other_ids=tuple(other),
                     sessions=sessions, keys=keys)


def check_message(exc: BaseException) -> None:
    """A library error must say what was wrong: a non-empty message that can be printed."""
    try:
        message = str(exc)
    except Exception as error:  # noqa: BLE001 - reported as the failure it is
        raise Failure("error message cannot be shown", repr(error)) from None
    if not message.strip():
        raise Failure("empty error message", f"{type(exc).__name__} with no message")


# -- surface 1: the Python API ---------------------------------------------------------------------
class ApiSurface(Surface):
    """Every ``Memory`` method on the seeded store, with the real models (index_on_write)."""

    name = "api"

    def open(self, folder: Path, seed: int) -> None:
        self.fixture = StoreFixture(folder, seed_store)
        self.seeded: fs.Seeded = self.fixture.info
        self.memory = Memory(self.fixture.live, user=MAIN_USER)
        (folder / "folder").mkdir(exist_ok=True)
        self.garbage = folder / "garbage.db"
        self.garbage.write_bytes(b"this is not a database\x00\xff" * 40)
        (folder / "conv.jsonl").write_text('{"text": "I adopted a cat named Miso.", "session": "f1"}\n'
                                           '{"text": "Miso likes tuna.", "session": "f1"}\n', encoding="utf-8")
        self.paths = {fs.DB: str(self.fixture.live), fs.DB_URL: "sqlite:///" + str(self.fixture.live),
                      fs.MISSING: str(folder / "missing.db"), fs.FOLDER: str(folder / "folder"),
                      fs.GARBAGE: str(self.garbage), fs.FILE: str(folder / "conv.jsonl"),
                      fs.NOFILE: str(folder / "nope.json")}

    def close(self) -> None:
        self.memory.close()

    def reopen(self) -> None:
        with contextlib.suppress(Exception):
            self.memory.close()
        self.fixture.reset()
        self.memory = Memory(self.fixture.live, user=MAIN_USER)

    def strategy(self) -> Any:
        return fs.api_calls(self.seeded)

    def resolve(self, value: Any) -> Any:
        """A placeholder (``@LAST``, a path: ``@DB``, ``@DIR/x``...) as what it stands for."""
        if value == fs.LAST:
            return self.last_id or self.seeded.ids[0]
        if isinstance(value, str) and value.startswith(("@", "sqlite:///@")):
            for key, path in self.paths.items():
                if value == key or value.startswith(key + "/"):
                    return path + value[len(key):]
        return value

    def call(self, call: fs.Call) -> Any:
        args, kwargs = call.arguments()
        args = tuple(self.resolve(a) for a in args)
        if call.op != "Memory":
            return getattr(self.memory, call.op)(*args, **kwargs)
        config = kwargs.pop("config", None)
        opened = Memory(*args, config=Config() if config == "default" else config, **kwargs)
        opened.close()
        return opened

    def check(self, case: fs.Steps | fs.Call) -> tuple[str, str]:
        calls = case.calls if isinstance(case, fs.Steps) else (case,)
        self.last_id: str | None = None
        before = self.fixture.expected
        outcomes = []
        try:
            for call in calls:
                outcome, before = self.step(call, before)
                outcomes.append(outcome)
        except Failure:
            self.reopen()
            raise
        if before != self.fixture.expected:
            self.reopen()
        return next((o for o in outcomes if o[0] == "rejected"), outcomes[-1])

    def step(self, call: fs.Call, before: Tables) -> tuple[tuple[str, str], Tables]:
        """Run one call on a store whose tables are ``before``; returns its outcome and the
        tables after it."""
        args, kwargs = call.arguments()
        try:
            result = self.call(call)
        except ZeromemError as exc:
            check_message(exc)
            outcome = ("rejected", f"rejected:{type(exc).__name__}")
        except Exception as exc:  # noqa: BLE001 - the failure this fuzzer looks for
            raise unexpected(exc) from None
        else:
            outcome = ("accepted", f"accepted:{call.op}")
            self.postconditions(call.op, args, kwargs, result)
            if call.op in ("add", "add_many") and result:
                self.last_id = result if isinstance(result, str) else result[-1]
        after = snapshot(self.fixture.live)
        read = call.op in fs.READ_OPS  # rejected too: answer refuses a bad reply after its search
        if outcome[0] == "rejected" or read:
            diff = difference(before, after, read=read)
            if diff:
                raise Failure(f"store changed by a {outcome[0]} {call.op}", diff)
        if Path(self.paths[fs.MISSING]).exists():
            Path(self.paths[fs.MISSING]).unlink()
            if outcome[0] == "rejected":
                raise Failure(f"a rejected {call.op} created a store", repr(call))
        if self.garbage.read_bytes() != b"this is not a database\x00\xff" * 40:
            self.garbage.write_bytes(b"this is not a database\x00\xff" * 40)
            raise Failure(f"a {outcome[0]} {call.op} wrote into a file that is not a store", repr(call))
        return outcome, after

    def postconditions(self, op: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        scope = {k: kwargs[k] for k in ("user", "agent") if k in kwargs}
        if op == "add":
            expected = _as_text(args[0])
            got = self.memory.get(result, **scope).text
            if got != expected:
                raise Failure("add did not store the text verbatim", f"stored {got!r}, given {expected!r}")
        elif op == "update":
            if kwargs.get("text") is not None and result.text != _as_text(kwargs["text"]):
                raise Failure("update did not store the text verbatim", f"{result.text!r}")
            if kwargs.get("metadata") is not None:  # what update stores, add must accept too
                try:
                    self.memory.add("probe", metadata=kwargs["metadata"], **scope)
                except ZeromemError as exc:
                    raise Failure("update accepted metadata that add refuses", str(exc)) from None
        elif op == "delete":
            try:
                self.memory.get(args[0], **scope)
            except NotFound:
                pass
            else:
                raise Failure("a deleted trace can still be read", repr(args[0]))
        elif op in ("search", "search_detailed", "render_context", "answer"):
            k = kwargs.get("k", 10)
            if op == "answer":
                op, result = "render_context", result.context
            evidence = result if op == "search" else result.evidence
            if len(evidence) > k:
                raise Failure(f"{op} returned more than k items", f"{len(evidence)} > {k}")
            if op != "search" and result.degraded:
                raise Failure(f"{op} answered degraded with every model installed", repr(result.degraded))
            budget = kwargs.get("budget_tokens", 2000)
            if op == "render_context" and budget is not None and result.tokens > budget:
                raise Failure("render_context went over its budget", f"{result.tokens} > {budget}")
        elif op == "active" and result.used_tokens > result.budget_tokens:
            raise Failure("active memory went over its budget", f"{result.used_tokens} > {result.budget_tokens}")
        elif op in ("list", "cards") and kwargs.get("limit") is not None and len(result) > kwargs["limit"]:
            raise Failure(f"{op} returned more than limit items", f"{len(result)} > {kwargs['limit']}")
        if op not in fs.READ_OPS or op.startswith(("search", "render")):
            degraded = self.memory.health().degraded
            if degraded:
                raise Failure(f"an encoder failed during {op}", repr(degraded))


def _as_text(value: Any) -> str:
    return bytes(value).decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)


# -- surface 2: importer files ---------------------------------------------------------------------
class ImporterSurface(Surface):
    """Generated files through ``load_file`` + ``summarize`` and ``Memory.import_file``; an
    accepted import is imported again and must store nothing (imports are idempotent)."""

    name = "importers"

    def open(self, folder: Path, seed: int) -> None:
        self.config = Config(index_on_write=False)  # importing is the surface, not indexing
        self.fixture = StoreFixture(folder, lambda path: seed_store(path, self.config))
        self.files = folder / "files"
        self.files.mkdir(exist_ok=True)
        self.memory = Memory(self.fixture.live, user=MAIN_USER, config=self.config)

    def close(self) -> None:
        self.memory.close()

    def reopen(self) -> None:
        with contextlib.suppress(Exception):
            self.memory.close()
        self.fixture.reset()
        self.memory = Memory(self.fixture.live, user=MAIN_USER, config=self.config)

    def strategy(self) -> Any:
        return fs.import_files()

    def check(self, case: fs.FileCase) -> tuple[str, str]:
        from zeromem.ingest import load_file, summarize

        path = self.files / (case.name or "upload")
        path.write_bytes(case.data)
        try:
            try:
                conversations = load_file(path, format=case.format)
                for conv in conversations:
                    summarize(conv)
            except ZeromemError as exc:
                check_message(exc)
                conversations = None
            except Exception as exc:  # noqa: BLE001
                raise unexpected(exc) from None
            try:
                result = self.memory.import_file(path, format=case.format,
                                                 allow_duplicates=case.allow_duplicates)
            except ZeromemError as exc:
                check_message(exc)
                diff = self.fixture.diff()
                if diff is not None:
                    self.reopen()
                    raise Failure("store changed by a rejected import", diff) from None
                return "rejected", f"rejected:{type(exc).__name__}"
            except Exception as exc:  # noqa: BLE001
                self.reopen()
                raise unexpected(exc) from None
            try:
                self.accepted(path, case, conversations, result)
            finally:
                self.reopen()
            return "accepted", "accepted:import"
        finally:
            path.unlink(missing_ok=True)

    def accepted(self, path: Path, case: fs.FileCase, conversations: Any, result: Any) -> None:
        if conversations is None:
            raise Failure("import_file accepted a file load_file refused", repr(result))
        drafts = sum(len(conv.drafts) for conv in conversations)
        if result.stored_count + result.skipped_count != drafts:
            raise Failure("import lost traces", f"{result.stored_count} stored + {result.skipped_count} "
                                                f"skipped != {drafts} in the file")
        texts = {_as_text(d["text"]) for conv in conversations for d in conv.drafts}
        for ids in result.values():
            for tid in ids:
                text = self.memory.get(tid).text
                if text not in texts:
                    raise Failure("an imported trace is not verbatim", f"{tid}: {text[:300]!r}")
        before = snapshot(self.fixture.live)
        try:
            again = self.memory.import_file(path, format=case.format)
        except Exception as exc:  # noqa: BLE001 - the first import of this file succeeded
            raise Failure("importing an accepted file again failed", _trace(exc)) from None
        if again.stored_count or snapshot(self.fixture.live) != before:
            raise Failure("importing the same file twice stored it twice",
                          f"second import stored {again.stored_count} trace(s)")


def _trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


# -- surface 3: the command line -------------------------------------------------------------------
READ_COMMANDS = frozenset({"list", "get", "history", "stats", "search", "active", "cards", "--version",
                           "--help"})


class CliSurface(Surface):
    """Argument lists through the typer app in-process (typer.testing.CliRunner)."""

    name = "cli"

    def open(self, folder: Path, seed: int) -> None:
        from typer.main import get_command
        from typer.testing import CliRunner

        from zeromem.interfaces.cli import app

        self.app = app
        # The click command typer builds from the app, built once (see _prebuilt).
        self.command = get_command(app)
        self.folder = folder
        self.fixture = StoreFixture(folder, seed_store)
        self.seeded: fs.Seeded = self.fixture.info
        self.garbage = folder / "garbage.db"
        self.garbage.write_bytes(b"this is not a database\x00\xff" * 40)
        self.paths = {fs.DB: str(self.fixture.live), fs.MISSING: str(folder / "missing.db"),
                      fs.FOLDER: str(folder / "folder"), fs.GARBAGE: str(self.garbage),
                      fs.FILE: str(folder / "input.json"), fs.NOFILE: str(folder / "nope.json"),
                      fs.DB_URL: "sqlite:///" + str(self.fixture.live)}
        (folder / "folder").mkdir(exist_ok=True)
        self.runner = CliRunner()
        self.env = {"ZEROMEM_DB": str(self.fixture.live), "COLUMNS": "120", "NO_COLOR": "1"}

    def strategy(self) -> Any:
        return fr.cli_cases(self.seeded)

    def check(self, case: fr.CliCase, *, process: bool = False) -> tuple[str, str]:
        """Run ``case`` in-process (or, with ``process``, as a real ``zeromem`` process: argv
        reaches it as bytes, the way an OS passes them) and judge the outcome."""
        file_path = None
        argv = [self.paths.get(arg, arg) for arg in case.argv]
        if case.file is not None:
            suffix = Path(case.file.name).suffix or ".json"
            file_path = self.folder / f"input{suffix}"
            file_path.write_bytes(case.file.data)
            argv = [str(file_path) if arg == fs.FILE else arg for arg in case.argv]
            argv = [self.paths.get(arg, arg) for arg in argv]
        if process:
            result = self.run_process(argv)
        else:
            with _cwd(self.folder), _prebuilt(self.command):
                result = self.runner.invoke(self.app, argv, env=self.env, prog_name="zeromem")
        try:
            return self.judge(case, result)
        finally:
            if file_path is not None:
                file_path.unlink(missing_ok=True)
            Path(self.paths[fs.MISSING]).unlink(missing_ok=True)

    def run_process(self, argv: list[str]) -> Any:
        """``python -m zeromem.interfaces.cli *argv`` in a real process, as a result object
        with the fields ``judge`` reads."""
        import subprocess
        import sys
        from types import SimpleNamespace

        env = {**os.environ, **self.env, "HF_HUB_OFFLINE": "1"}
        proc = subprocess.run([os.fsencode(sys.executable), b"-m", b"zeromem.interfaces.cli",
                               *(os.fsencode(arg) for arg in argv)], capture_output=True, env=env,
                              cwd=self.folder, timeout=300, check=False)
        return SimpleNamespace(exception=None, exc_info=None, exit_code=proc.returncode,
                               stdout=proc.stdout.decode("utf-8", "replace"),
                               stderr=proc.stderr.decode("utf-8", "replace"))

    def judge(self, case: fr.CliCase, result: Any) -> tuple[str, str]:
        exc = result.exception
        if exc is not None and not isinstance(exc, SystemExit):
            self.fixture.reset()
            raise Failure(f"unexpected {type(exc).__name__}", "".join(traceback.format_exception(*result.exc_info)))
        out, err, code = result.stdout, result.stderr, result.exit_code
        command = case.argv[0] if case.argv else ""
        if "Traceback" in out + err:
            self.fixture.reset()
            raise Failure("traceback printed", err[-3000:] or out[-3000:])
        if code == 0:
            outcome = ("accepted", f"accepted:{command}")
            bad = UNSAFE_OUTPUT.search(out)
            if bad:
                self.fixture.reset()
                around = out[max(0, bad.start() - 80):bad.start() + 40]
                raise Failure("raw control character in the output",
                              f"U+{ord(bad.group()):04X} at {bad.start()}: {around!r}")
            if "--json" in case.argv and "--help" not in case.argv and _asks_for_json(case.argv):
                try:
                    json.loads(out)
                except ValueError:
                    self.fixture.reset()
                    raise Failure("--json printed something that is not JSON", out[:1000]) from None
        elif code == 2 and err.startswith("error: ") and err.count("\n") == 1 and err.endswith("\n"):
            if UNSAFE_OUTPUT.search(err):
                raise Failure("raw control character in the error line", repr(err[:500]))
            outcome = ("rejected", "rejected:error")
        elif code == 2 and "Usage:" in out + err:
            outcome = ("rejected", "rejected:usage")  # click's own parser (unknown option, bad int)
        else:
            self.fixture.reset()
            raise Failure(f"exit code {code}", f"stdout: {out[-2000:]!r}\nstderr: {err[-2000:]!r}")
        if Path(self.paths[fs.MISSING]).exists() and (outcome[0] == "rejected" or command in READ_COMMANDS):
            raise Failure(f"a {outcome[0]} {command} created the store --db named", repr(case))
        if self.garbage.read_bytes() != b"this is not a database\x00\xff" * 40:
            self.garbage.write_bytes(b"this is not a database\x00\xff" * 40)
            raise Failure(f"a {outcome[0]} {command} wrote into a file that is not a store", repr(case))
        diff = self.fixture.diff(read=command in READ_COMMANDS)
        if diff is not None:
            self.fixture.reset()
            if diff and (outcome[0] == "rejected" or command in READ_COMMANDS):
                raise Failure(f"store changed by a {outcome[0]} {command}", diff)
        return outcome


@contextlib.contextmanager
def _prebuilt(command: Any) -> Iterator[None]:
    """typer's test runner rebuilds the click command from the app on every call (about 60 ms,
    most of a case's cost): hand it the one built once. Without that hook (another typer
    version) the runner builds it as usual."""
    from typer import testing

    original = getattr(testing, "_get_command", None)
    if original is None:
        yield
        return
    def prebuilt(typer_instance: Any) -> Any:
        return command

    testing._get_command = prebuilt
    try:
        yield
    finally:
        testing._get_command = original


@contextlib.contextmanager
def _cwd(folder: Path) -> Iterator[None]:
    """Run in ``folder``: a relative --db or file name a case makes lands there."""
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


# -- surface 4: the REST API -----------------------------------------------------------------------
class _Captured(logging.Handler):
    """Keeps the last server-side traceback (the app logs every unexpected error)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.last = self.format(record) + ("\n" + "".join(traceback.format_exception(*record.exc_info))
                                           if record.exc_info else "")


@functools.lru_cache(maxsize=1)
def _cli_command() -> Any:
    import typer

    from zeromem.interfaces.cli import app

    return typer.main.get_command(app)


def _asks_for_json(argv: Sequence[str]) -> bool:
    """Whether the command line sets ``--json`` as the flag, parsed as the CLI parses it:
    ``--label --json`` gives the label the text "--json" and asks for no JSON."""
    command = _cli_command()
    ctx = command.make_context("zeromem", list(argv), resilient_parsing=True)
    while hasattr(command, "resolve_command"):  # a group (typer's own click, not the package's)
        rest = [*ctx._protected_args, *ctx.args]
        name, sub, rest = command.resolve_command(ctx, rest) if rest else (None, None, [])
        if sub is None or name is None:
            return False
        ctx = sub.make_context(name, rest, parent=ctx, resilient_parsing=True)
        command = sub
    return bool(ctx.params.get("as_json"))


REST_MAX_BODY_BYTES = 1024 * 1024  # the fuzzed server's body limit (chunked bodies go around it)


class RestSurface(Surface):
    """Requests through FastAPI's TestClient against ``create_app`` with real API keys."""

    name = "rest"

    def open(self, folder: Path, seed: int) -> None:
        self.fixture = StoreFixture(folder, seed_store)
        self.seeded: fs.Seeded = self.fixture.info
        self.captured = _Captured()
        logging.getLogger("zeromem.server").addHandler(self.captured)
        self.memory: Memory | None = None
        self.start()

    def start(self) -> None:
        from fastapi.testclient import TestClient

        from zeromem.interfaces.server import ServerSettings, create_app

        self.memory = Memory(self.fixture.live, config=Config())
        app = create_app(self.memory, ServerSettings(warm_up=False, reader=fs.EchoReader(),
                                                     max_body_bytes=REST_MAX_BODY_BYTES))
        self.client = TestClient(app, raise_server_exceptions=False, follow_redirects=False,
                                 base_url="http://127.0.0.1")

    def reopen(self) -> None:
        with contextlib.suppress(Exception):
            assert self.memory is not None
            self.memory.close()
        self.fixture.reset()
        self.start()

    def close(self) -> None:
        logging.getLogger("zeromem.server").removeHandler(self.captured)
        if self.memory is not None:
            self.memory.close()

    def strategy(self) -> Any:
        return fr.rest_requests(self.seeded)

    def headers(self, request: fr.Request) -> dict[str, str]:
        keys = self.seeded.keys
        page = {name: value for name, value in (("Origin", request.origin), ("Host", request.host))
                if value is not None}
        if request.auth is None:
            return page
        if request.auth in ("alice", "bob", "revoked"):
            return {**page, "Authorization": f"Bearer {keys[request.auth]}"}
        return {**page, "Authorization": request.auth.replace("{alice}", keys["alice"])}

    def check(self, request: fr.Request) -> tuple[str, str]:
        from urllib.parse import urlencode

        url = request.path
        if request.params:
            url += "?" + urlencode([(k, v.encode("utf-8", "surrogatepass")) for k, v in request.params])
        headers = self.headers(request)
        options: dict[str, Any] = {}
        if request.json is not fs.UNSET:
            options["content"] = json.dumps(request.json, ensure_ascii=True).encode()
            headers["Content-Type"] = "application/json"
        elif request.body is not None:
            body = request.body
            # a generator: httpx sends it chunked, without a Content-Length
            options["content"] = (body[i:i + 65536] for i in range(0, len(body), 65536)) if request.chunked else body
            if request.content_type:
                headers["Content-Type"] = request.content_type
        elif request.file is not None:
            options["files"] = {"file": (request.file.name, request.file.data, "application/octet-stream")}
            options["data"] = dict(request.form)
        self.captured.last = ""
        try:
            response = self.client.request(request.method, url, headers=headers, **options)
        except Exception as exc:  # noqa: BLE001 - the app itself raised past its handlers
            self.reopen()
            raise unexpected(exc) from None
        return self.judge(request, response)

    def expected_status(self, request: fr.Request) -> int | None:
        """The one status the request must get whatever the route does: a web page's Host or
        Origin is refused (421 / 403), a chunked body over the limit is 413."""
        refused = fr.foreign(request)
        if refused is not None:
            return refused
        if request.chunked and request.body is not None and len(request.body) > REST_MAX_BODY_BYTES:
            return 413
        return None

    def postconditions(self, request: fr.Request, body: Any) -> None:
        """What an accepted answer promises: at most k items within the budget, a stored trace
        that reads back as it was sent, and a session that takes the next trace after one
        stored with an explicit seq (a seq at the top used to wedge it)."""
        sent = request.json if isinstance(request.json, dict) else {}
        if request.path in ("/v1/search", "/v1/context"):
            evidence = body["evidence"]
            if len(evidence) > sent.get("k", 10):
                raise Failure(f"{request.path} returned more than k items", f"{len(evidence)} > {sent.get('k', 10)}")
        if request.path == "/v1/context":
            budget = sent.get("budget_tokens", 2000)
            if budget is not None and body["tokens"] > budget:
                raise Failure("/v1/context went over its budget", f"{body['tokens']} > {budget}")
        if request.method == "POST" and request.path == "/v1/traces" and "text" in sent:
            got = self.client.get(f"/v1/traces/{body['ids'][0]}", headers=self.headers(request)).json()
            if got.get("text") != sent["text"]:
                raise Failure("a stored trace does not read back verbatim", f"{got.get('text')!r} != {sent['text']!r}")
            if "seq" in sent and isinstance(sent.get("session"), str):
                after = self.client.post("/v1/traces", headers=self.headers(request),
                                         json={"text": "the next one", "session": sent["session"]})
                if after.status_code != 201:
                    raise Failure("a session takes no trace after one with an explicit seq",
                                  f"seq {sent['seq']}: {after.status_code} {after.text[:300]}")

    def judge(self, request: fr.Request, response: Any) -> tuple[str, str]:
        status = response.status_code
        if status >= 500:
            detail = self.captured.last or response.text[-2000:]
            self.reopen()
            raise Failure(f"HTTP {status}", detail)
        expected = self.expected_status(request)
        if expected is not None and status != expected:
            self.reopen()
            raise Failure(f"HTTP {status} where {expected} was due (Origin, Host or chunked size)",
                          response.text[:500])
        if status < 400:
            outcome = ("accepted", f"accepted:{status}")
            if request.method != "HEAD" and response.headers.get("content-type", "").startswith("application/json"):
                try:
                    body = response.json()
                except ValueError:
                    self.reopen()
                    raise Failure("a 2xx answer that is not JSON", response.text[:500]) from None
                try:
                    self.postconditions(request, body)
                except Failure:
                    self.reopen()
                    raise
        else:
            try:
                error = response.json()["error"]
                ok = isinstance(error["type"], str) and isinstance(error["message"], str) and error["message"]
            except (ValueError, KeyError, TypeError):
                ok = False
            if not ok and request.method != "HEAD":
                self.reopen()
                raise Failure(f"HTTP {status} without an error body", response.text[:500])
            outcome = ("rejected", f"rejected:{status}")
        read = request.method in fr.READ_REQUESTS or request.path in fr.READ_POSTS
        diff = self.fixture.diff(read=read)
        if diff is not None:
            self.reopen()
            if diff and (outcome[0] == "rejected" or read):
                raise Failure(f"store changed by a {outcome[0]} {request.method} {request.path}", diff)
        return outcome
