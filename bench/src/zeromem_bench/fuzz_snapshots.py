"""The ``snapshots`` surface of ``zeromem bench fuzz``: damaged and forged persisted indexes.

A template store holds two scopes, each large enough to be persisted (``snapshot_min_turns`` is
lowered), and the evidence every query gets from an index rebuilt from the traces. A case
damages scope ``a``'s snapshot rows on a copy of the template — bytes flipped in an array or in
the facts, an array cut short or resized, another format or version written in, the rows of
scope ``b`` copied over (with or without a recomputed checksum), one id or offset array rewritten
out of range with the checksum recomputed — and a child process (models loaded once) opens a
``Memory`` on the copy and searches. The case passes when the child answers (it dying by a
signal is a ``crash``), no exception escapes, the evidence equals the rebuild's (else ``wrong
answer``) and ``Memory.health().snapshots_discarded`` says what the damage calls for. Outcomes:
``rejected:discarded:<kind>`` (refused and rebuilt), ``accepted:stale:<kind>`` (another format:
rebuilt without a discard), ``accepted:unchanged:<kind>`` (the damage changed nothing).
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from zeromem.config import Config
from zeromem.memory import Memory
from zeromem.retrieval import persist
from zeromem.types import Scope

from .fuzz_surfaces import Failure, Surface

MIN_TURNS = 8
QUERIES = ("Where did Dana move the meeting?", "What is the launch budget?", "trip to Lisbon with Carla")
NAMES = ("Dana", "Bob", "Carla", "Eve")
PLACES = ("Paris", "Lisbon", "Berlin", "Oslo")
ID_ARRAYS = ("graph.base_indices", "graph.base_indptr", "graph.edge_ids", "graph.next_turn",
             "graph.owner_entries", "hier.next_turn", "hier.member_window", "hier.turns_of_window",
             "turn.tokens", "turn.tokens_ptr", "turn.rowids_ptr", "turn.session", "turn.lex.post_docs",
             "turn.lex.post_ptr", "session_turns", "mention_entity", "episode_of_session", "turn_dates_ptr")
KINDS = ("flip", "flip_facts", "truncate", "resize", "format_row", "format_fact", "version_fact",
         "other_scope", "other_scope_resealed", "forged_id")


def config() -> Config:
    cfg = Config()
    cfg.retrieval.snapshot_min_turns = MIN_TURNS
    return cfg


def _traces(tag: str, n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        who, other, place = NAMES[i % 4], NAMES[(i + 1) % 4], PLACES[i % 4]
        text = (f"{who} told {other} the {tag} meeting moves to {place} on May {i % 27 + 1}, 2023." if i % 3 == 0
                else f"{who}: the {tag} launch budget in {place} is {100 + i} euros." if i % 3 == 1
                else f"{who} booked a trip to {place} with {other}.")
        out.append({"text": text, "session": f"{tag}{i % 3}", "speaker": who})
    return out


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _reseal(conn: sqlite3.Connection, user: str) -> None:
    """Recompute scope ``user``'s checksum over its rows as they are: what a forger does."""
    key = json.dumps([user, ""], ensure_ascii=False, separators=(",", ":"))  # its scope_key (checks.scope_json)
    version, fmt, facts = conn.execute("SELECT version, format, blob FROM scope_snapshots WHERE scope_key = ?",
                                       (key,)).fetchone()
    parts = {name: bytes(blob) for name, blob in conn.execute(
        "SELECT name, blob FROM scope_snapshot_parts WHERE scope_key = ? AND name != ?", (key, persist.CHECKSUM_PART))}
    digest = persist.checksum(Scope(user, None), int(version), int(fmt), bytes(facts).decode("utf-8"), parts)
    conn.execute("UPDATE scope_snapshot_parts SET blob = ? WHERE scope_key = ? AND name = ?",
                 (digest, key, persist.CHECKSUM_PART))


def apply_damage(db: Path, case: dict[str, Any]) -> int:
    """Damage scope ``a``'s snapshot in ``db`` as ``case`` says; returns the discards it calls for."""
    kind = case["kind"]
    with sqlite3.connect(db) as conn:
        parts = dict(conn.execute("SELECT name, blob FROM scope_snapshot_parts"
                                  " WHERE scope_key = '[\"a\",\"\"]' AND name != ?",
                                  (persist.CHECKSUM_PART,)))
        names = sorted(parts)
        name = case["name"] if kind == "forged_id" else names[case["part"] % len(names)]
        blob = bytes(parts[name])
        where = case["where"]

        def put(data: bytes) -> None:
            conn.execute("UPDATE scope_snapshot_parts SET blob = ?"
                         " WHERE scope_key = '[\"a\",\"\"]' AND name = ?", (data, name))

        def facts(change: Any) -> None:
            text = bytes(conn.execute("SELECT blob FROM scope_snapshots"
                                      " WHERE scope_key = '[\"a\",\"\"]'").fetchone()[0])
            conn.execute("UPDATE scope_snapshots SET blob = ? WHERE scope_key = '[\"a\",\"\"]'", (change(text),))

        if kind == "flip":
            raw = bytearray(blob)
            raw[int(where * (len(raw) - 1))] ^= case["byte"]
            put(bytes(raw))
        elif kind == "flip_facts":
            def flip(text: bytes) -> bytes:
                raw = bytearray(text)
                raw[int(where * (len(raw) - 1))] ^= case["byte"]
                return bytes(raw)
            facts(flip)
        elif kind == "truncate":
            put(blob[:int(where * (len(blob) - 1))])
        elif kind == "resize":
            array = persist._view(blob)
            if not len(array):
                return 0
            put(_npy(array[:-1] if case["byte"] % 2 else np.concatenate([array, array[:1]])))
        elif kind == "format_row":
            conn.execute("UPDATE scope_snapshots SET format = format - 1 WHERE scope_key = '[\"a\",\"\"]'")
            return 0
        elif kind in ("format_fact", "version_fact"):
            key = "format" if kind == "format_fact" else "version"

            def bump(text: bytes) -> bytes:
                loaded = json.loads(text)
                loaded[key] += 1
                return json.dumps(loaded).encode("utf-8")
            facts(bump)
        elif kind in ("other_scope", "other_scope_resealed"):
            conn.execute("DELETE FROM scope_snapshot_parts WHERE scope_key = '[\"a\",\"\"]'")
            conn.execute("INSERT INTO scope_snapshot_parts SELECT '[\"a\",\"\"]', name, blob"
                         " FROM scope_snapshot_parts WHERE scope_key = '[\"b\",\"\"]'")
            conn.execute("UPDATE scope_snapshots SET (version, blob) = (SELECT version, blob FROM scope_snapshots"
                         " WHERE scope_key = '[\"b\",\"\"]') WHERE scope_key = '[\"a\",\"\"]'")
            if kind == "other_scope_resealed":
                _reseal(conn, "a")
        else:  # forged_id
            array = persist._view(blob).copy()
            if not len(array):
                return 0
            array[int(where * (len(array) - 1))] = case["value"]
            put(_npy(array))
            _reseal(conn, "a")
    return 1


class SnapshotSurface(Surface):
    """Damaged persisted indexes, searched in a child process (see the module docstring)."""

    name = "snapshots"

    def open(self, folder: Path, seed: int) -> None:
        self.folder = folder / "snapshots"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.template = self.folder / "template.db"
        for user, n in (("a", 30), ("b", 20)):
            with Memory(self.template, user=user, config=config()) as mem:
                mem.add_many(_traces(user, n))
                mem.index()
        fresh = self.folder / "fresh.db"
        shutil.copy(self.template, fresh)
        with sqlite3.connect(fresh) as conn:
            conn.execute("DELETE FROM scope_snapshot_parts")
            conn.execute("DELETE FROM scope_snapshots")
        with Memory(fresh, user="a", config=config()) as mem:
            self.expected = [[e.trace_id for e in mem.search(q, k=6)] for q in QUERIES]
        self.child: subprocess.Popen | None = None

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        return st.fixed_dictionaries({
            "kind": st.sampled_from(KINDS), "name": st.sampled_from(ID_ARRAYS),
            "part": st.integers(0, 1 << 16), "where": st.floats(0, 1), "byte": st.integers(1, 255),
            "value": st.sampled_from((-2, -(1 << 20), 1 << 20, (1 << 31) - 1))})

    def _ask(self, db: Path) -> dict[str, Any]:
        if self.child is None or self.child.poll() is not None:
            self.child = subprocess.Popen([sys.executable, "-m", "zeromem_bench.fuzz_snapshots"],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(json.dumps({"db": str(db)}) + "\n")
        self.child.stdin.flush()
        line = self.child.stdout.readline()
        if not line:
            code = self.child.wait()
            self.child = None
            raise Failure("crash", f"the searching process died (exit code {code})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def check(self, case: Any) -> tuple[str, str]:
        db = self.folder / "case.db"
        for leftover in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            leftover.unlink(missing_ok=True)
        shutil.copy(self.template, db)
        wanted = apply_damage(db, case)
        answer = self._ask(db)
        if "error" in answer:
            raise Failure(f"unexpected {answer['type']}", answer["error"])
        if answer["ids"] != self.expected:
            raise Failure("wrong answer", f"evidence {answer['ids']} where a rebuild gives {self.expected}")
        if answer["discarded"] != wanted:
            raise Failure("discard not counted", f"{answer['discarded']} discarded, {wanted} expected")
        if wanted:
            return "rejected", f"discarded:{case['kind']}"
        return "accepted", f"{'stale' if case['kind'] == 'format_row' else 'unchanged'}:{case['kind']}"

    def close(self) -> None:
        if self.child is not None and self.child.poll() is None:
            assert self.child.stdin is not None
            self.child.stdin.close()
            self.child.wait(timeout=30)
        self.child = None


def _serve() -> None:
    """The child: per line {"db"}, search scope ``a`` on a new Memory and answer one line."""
    out, sys.stdout = sys.stdout, sys.stderr  # the answers are the only lines on stdout
    for line in sys.stdin:
        request = json.loads(line)
        try:
            with Memory(request["db"], user="a", config=config()) as mem:
                ids = [[e.trace_id for e in mem.search(q, k=6)] for q in QUERIES]
                answer: dict[str, Any] = {"ids": ids, "discarded": mem.health().snapshots_discarded}
        except Exception as exc:  # noqa: BLE001 - reported to the parent as the case's failure
            answer = {"type": type(exc).__name__, "error": traceback.format_exc()}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    import logging

    logging.disable(logging.WARNING)  # each discard warns; the parent counts them instead
    _serve()
