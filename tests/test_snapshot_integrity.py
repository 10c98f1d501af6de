"""A damaged or forged persisted index (retrieval/persist.py) is discarded, never trusted.

Every test works on a copy of one store file holding two snapshotted scopes. It damages the
copy's ``scope_snapshots`` / ``scope_snapshot_parts`` rows the way a disk, a bad restore or a
hand-edit would, opens a new ``Memory`` on it and searches: nothing may crash (a segfault is
looked for in a child process), no error may escape, the evidence must be exactly that of an
index rebuilt from the traces, and ``Memory.health()`` must count the discarded snapshot.

The regression tests at the top are the defects measured on the unhardened code: an
out-of-range neighbour id in the graph's CSR arrays segfaulted the first search, a truncated
array raised a raw ``ValueError`` on every search, a version row moved forward hid a live trace.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from internals import store_of
from zeromem import Config, Memory
from zeromem.retrieval import persist
from zeromem.types import Scope

MIN_TURNS = 8
QUERIES = ("Where did Dana move the meeting?", "What does Bob think about the budget?",
           "Lisbon trip with Carla", "When is the launch?")
NAMES = ("Dana", "Bob", "Carla", "Eve")
PLACES = ("Paris", "Lisbon", "Berlin", "Oslo", "Madrid")


def config() -> Config:
    cfg = Config()
    cfg.retrieval.snapshot_min_turns = MIN_TURNS
    return cfg


def _traces(tag: str, n: int) -> list[dict]:
    out = []
    for i in range(n):
        speaker = NAMES[i % len(NAMES)]
        other = NAMES[(i + 1) % len(NAMES)]
        place = PLACES[i % len(PLACES)]
        text = (f"{speaker} told {other} that the {tag} meeting moves to {place} on May {i % 27 + 1}, 2023."
                if i % 3 == 0 else
                f"{speaker}: the budget for the {tag} launch in {place} is {100 + i} euros, ask {other}?"
                if i % 3 == 1 else
                f"{speaker} booked a trip to {place} with {other} for the {tag} team offsite.")
        out.append({"text": text, "session": f"{tag}-s{i % 4}", "speaker": speaker,
                    "session_time": f"2023-05-{i % 4 + 1:02d}T10:00:00"})
    return out


def _ids(mem: Memory, query: str) -> list[str]:
    return [e.trace_id for e in mem.search(query, k=6)]


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> dict:
    """A store with scopes (a, None) and (b, None), both persisted, and every query's evidence
    as an index rebuilt from the traces finds it."""
    root = tmp_path_factory.mktemp("golden")
    db = root / "golden.db"
    for user, n in (("a", 40), ("b", 28)):
        with Memory(db, user=user, config=config()) as mem:
            mem.add_many(_traces(user, n))
            mem.index()
    fresh = root / "fresh.db"
    shutil.copy(db, fresh)
    with sqlite3.connect(fresh) as conn:
        conn.execute("DELETE FROM scope_snapshot_parts")
        conn.execute("DELETE FROM scope_snapshots")
    expected = {}
    for user in ("a", "b"):
        with Memory(fresh, user=user, config=config()) as mem:
            expected[user] = {q: _ids(mem, q) for q in QUERIES}
            assert all(expected[user].values())
    with sqlite3.connect(db) as conn:
        counts = dict(conn.execute("SELECT json_extract(scope_key, '$[0]'), COUNT(*) FROM scope_snapshot_parts"
                                   " GROUP BY scope_key"))
    assert counts.get("a") and counts.get("b")
    return {"db": db, "expected": expected}


@pytest.fixture
def damaged(golden, tmp_path) -> Path:
    path = tmp_path / "damaged.db"
    shutil.copy(golden["db"], path)
    return path


def _key(user: str) -> str:
    """The ``scope_key`` of user ``user``'s scope (no agent)."""
    return json.dumps([user, ""], separators=(",", ":"))


def _parts(db: Path, user: str = "a") -> dict[str, bytes]:
    with sqlite3.connect(db) as conn:
        return {name: bytes(blob) for name, blob in conn.execute(
            "SELECT name, blob FROM scope_snapshot_parts WHERE scope_key = ?", (_key(user),))}


def _head(db: Path, user: str = "a") -> tuple[int, int, str]:
    with sqlite3.connect(db) as conn:
        version, fmt, blob = conn.execute(
            "SELECT version, format, blob FROM scope_snapshots WHERE scope_key = ?", (_key(user),)).fetchone()
    return int(version), int(fmt), bytes(blob).decode("utf-8")


def _put_part(db: Path, name: str, blob: bytes, user: str = "a") -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE scope_snapshot_parts SET blob = ?"
                     " WHERE scope_key = ? AND name = ?", (blob, _key(user), name))


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _reseal(db: Path, user: str = "a") -> None:
    """Recompute the snapshot's checksum over its rows as they are now: what a forger does."""
    if not hasattr(persist, "checksum"):  # (the unhardened format had no checksum)
        return
    version, fmt, facts = _head(db, user)
    parts = _parts(db, user)
    parts.pop(persist.CHECKSUM_PART, None)
    digest = persist.checksum(Scope(user, None), version, fmt, facts, parts)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT OR REPLACE INTO scope_snapshot_parts (scope_key, name, blob) VALUES (?, ?, ?)",
                     (_key(user), persist.CHECKSUM_PART, digest))


def _searches_match(db: Path, golden: dict, user: str = "a") -> int:
    """Search every query on a new Memory; returns the snapshots it discarded."""
    with Memory(db, user=user, config=config()) as mem:
        for query in QUERIES:
            assert _ids(mem, query) == golden["expected"][user][query], query
        return mem.health().snapshots_discarded


# -- the measured defects ------------------------------------------------------------------
def test_an_intact_snapshot_loads_and_answers_as_a_rebuild(golden, damaged):
    assert _searches_match(damaged, golden) == 0


def test_an_out_of_range_neighbour_id_cannot_crash_the_search_process(golden, damaged):
    """Defect 1: a graph CSR offset past the arrays segfaulted the first search of the scope
    (SIGSEGV in scipy's C++ on the unhardened code, in every worker that searched it).
    The forger recomputes the checksum too, so only the bounds check stands in the way."""
    indptr = persist._view(_parts(damaged)["graph.base_indptr"]).copy()
    indptr[len(indptr) // 2] = 1 << 24  # a row's neighbours said to start far past the arrays
    _put_part(damaged, "graph.base_indptr", _npy(indptr))
    _reseal(damaged)
    script = ("import json, sys; from zeromem import Config, Memory; c = Config(); "
              f"c.retrieval.snapshot_min_turns = {MIN_TURNS}; m = Memory(sys.argv[1], user='a', config=c); "
              f"print(json.dumps([[e.trace_id for e in m.search(q, k=6)] for q in {list(QUERIES)!r}])); "
              "print(m.health().snapshots_discarded)")
    run = subprocess.run([sys.executable, "-c", script, str(damaged)], capture_output=True, text=True,
                         timeout=240, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    found, discarded = run.stdout.strip().splitlines()[-2:]
    assert json.loads(found) == [golden["expected"]["a"][q] for q in QUERIES]
    assert discarded == "1"


def test_a_truncated_array_is_discarded_not_raised(golden, damaged):
    """Defect 2: a cut-off array raised a raw ValueError on every search of the scope."""
    blob = _parts(damaged)["turn.tokens"]
    _put_part(damaged, "turn.tokens", blob[:len(blob) - 7])
    assert _searches_match(damaged, golden) == 1


def test_a_flipped_byte_in_a_vector_is_discarded_not_trusted(golden, damaged):
    """Defect 2: a flipped byte inside an array changed results silently."""
    blob = bytearray(_parts(damaged)["turn.dense.rows"])
    blob[len(blob) // 2] ^= 0x55
    _put_part(damaged, "turn.dense.rows", bytes(blob))
    assert _searches_match(damaged, golden) == 1


def _hidden_trace_setup(damaged: Path) -> str:
    """A trace added after the snapshot was written (in a session of its own), then the
    version row moved forward so that the catch-up skips it."""
    with Memory(damaged, user="a", config=config()) as mem:
        added = mem.add("Zephyrine the quokka moved into the greenhouse.", session="late", speaker="Eve")
        current = store_of(mem).scope_version(mem.scope)
    with sqlite3.connect(damaged) as conn:
        conn.execute("UPDATE scope_snapshots SET version = ? WHERE scope_key = '[\"a\",\"\"]'", (current,))
    return added


def test_a_moved_version_row_does_not_hide_a_live_trace(damaged):
    """Defect 2: a version row set to the scope's current version hid a trace written since."""
    hidden = _hidden_trace_setup(damaged)
    with Memory(damaged, user="a", config=config()) as mem:
        assert hidden in [e.trace_id for e in mem.search("Zephyrine the quokka", k=3)]
        assert mem.health().snapshots_discarded == 1


def test_a_moved_version_row_with_a_forged_checksum_does_not_hide_a_live_trace(damaged):
    """The same with the checksum recomputed: the traces read with the snapshot give it away."""
    hidden = _hidden_trace_setup(damaged)
    version, _, facts = _head(damaged)
    loaded = json.loads(facts)
    loaded["version"] = version  # the facts agree with the forged row
    with sqlite3.connect(damaged) as conn:
        conn.execute("UPDATE scope_snapshots SET blob = ? WHERE scope_key = '[\"a\",\"\"]'",
                     (json.dumps(loaded).encode("utf-8"),))
    _reseal(damaged)
    with Memory(damaged, user="a", config=config()) as mem:
        assert hidden in [e.trace_id for e in mem.search("Zephyrine the quokka", k=3)]
        assert mem.health().snapshots_discarded == 1


# -- any damage, at random -------------------------------------------------------------------
# Arrays whose every value is an id or an offset the loaders and searches index with; a
# forger who rewrites one out of range and recomputes the checksum must still be refused.
ID_ARRAYS = ("graph.base_indices", "graph.base_indptr", "graph.edge_ids", "graph.edge_ids_ptr",
             "graph.next_turn", "graph.owner_entries", "graph.owner_ptr", "hier.next_turn",
             "hier.prev_turn", "hier.member_window", "hier.member_turn", "hier.turns_of_window",
             "hier.windows_of_turn_ptr", "turn.tokens", "turn.tokens_ptr", "turn.rowids_ptr",
             "turn.session", "turn.lex.post_docs", "turn.lex.post_ptr", "window.lex.post_docs",
             "episode.tokens", "session_turns", "session_turns_ptr", "mention_entity", "mention_label",
             "episode_of_session", "turn_dates_ptr")
OUT_OF_RANGE = (-2, -(1 << 20), 1 << 20, (1 << 31) - 1)
KINDS = ("flip", "truncate", "resize", "format_row", "format_fact", "version_fact", "other_scope",
         "other_scope_resealed", "forged_id")


@st.composite
def damage(draw) -> dict:
    kind = draw(st.sampled_from(KINDS))
    return {"kind": kind, "name": draw(st.sampled_from(ID_ARRAYS)), "where": draw(st.floats(0, 1)),
            "byte": draw(st.integers(1, 255)), "value": draw(st.sampled_from(OUT_OF_RANGE)),
            "grow": draw(st.sampled_from((-3, -2, -1, 1, 2, 3))), "part": draw(st.integers(0, 1 << 16))}


def _apply(db: Path, d: dict) -> int:
    """Damage the snapshot of scope a; returns how many discards a search must report."""
    parts = _parts(db)
    names = sorted(n for n in parts if n != persist.CHECKSUM_PART)
    name = names[d["part"] % len(names)]
    kind = d["kind"]
    if kind == "flip":
        target = d["part"] % (len(names) + 1)
        if target == len(names):  # the facts row
            _, _, facts = _head(db)
            raw = bytearray(facts.encode("utf-8"))
            raw[int(d["where"] * (len(raw) - 1))] ^= d["byte"]
            with sqlite3.connect(db) as conn:
                conn.execute("UPDATE scope_snapshots SET blob = ? WHERE scope_key = '[\"a\",\"\"]'", (bytes(raw),))
        else:
            raw = bytearray(parts[name])
            raw[int(d["where"] * (len(raw) - 1))] ^= d["byte"]
            _put_part(db, name, bytes(raw))
    elif kind == "truncate":
        blob = parts[name]
        _put_part(db, name, blob[:int(d["where"] * (len(blob) - 1))])
    elif kind == "resize":
        array = persist._view(parts[name])
        grown = (np.concatenate([array, array[:1].repeat(d["grow"], axis=0)]) if d["grow"] > 0 and len(array)
                 else array[:max(0, len(array) + d["grow"])])
        _put_part(db, name, _npy(grown))
        if len(grown) == len(array):
            return 0  # an empty array stays what it was
    elif kind == "format_row":  # another format's snapshot: stale, rebuilt without a discard
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE scope_snapshots SET format = ?"
                         " WHERE scope_key = '[\"a\",\"\"]'", (persist.FORMAT - 1,))
        return 0
    elif kind in ("format_fact", "version_fact"):
        _, _, facts = _head(db)
        loaded = json.loads(facts)
        loaded["format" if kind == "format_fact" else "version"] += 1 if d["byte"] % 2 else -1
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE scope_snapshots SET blob = ? WHERE scope_key = '[\"a\",\"\"]'",
                         (json.dumps(loaded).encode("utf-8"),))
    elif kind in ("other_scope", "other_scope_resealed"):
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM scope_snapshot_parts WHERE scope_key = '[\"a\",\"\"]'")
            conn.execute("INSERT INTO scope_snapshot_parts SELECT '[\"a\",\"\"]', name, blob"
                         " FROM scope_snapshot_parts WHERE scope_key = '[\"b\",\"\"]'")
            conn.execute("UPDATE scope_snapshots SET (version, blob) = (SELECT version, blob FROM scope_snapshots"
                         " WHERE scope_key = '[\"b\",\"\"]') WHERE scope_key = '[\"a\",\"\"]'")
        if kind == "other_scope_resealed":
            _reseal(db)
    else:  # forged_id: one id out of range, the checksum recomputed
        array = persist._view(parts[d["name"]]).copy()
        if not len(array):
            return 0
        array[int(d["where"] * (len(array) - 1))] = d["value"]
        _put_part(db, d["name"], _npy(array))
        _reseal(db)
    return 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(d=damage())
def test_any_damage_to_a_snapshot_is_discarded_and_the_answers_are_a_rebuilds(golden, tmp_path_factory, d):
    db = tmp_path_factory.mktemp("fuzzed") / "damaged.db"
    shutil.copy(golden["db"], db)
    discards = _apply(db, d)
    event(f"{d['kind']}: {discards} discard(s)")
    assert _searches_match(db, golden) == discards
    assert _searches_match(db, golden, "b") == 0  # the other scope's snapshot is untouched


def test_a_rebuilt_scope_replaces_the_refused_snapshot(golden, damaged):
    """After a discard the rebuilt index is written over the refused one (at close), so the
    next process loads it instead of refusing it again."""
    blob = bytearray(_parts(damaged)["graph.df"])
    blob[-1] ^= 0xFF
    _put_part(damaged, "graph.df", bytes(blob))
    assert _searches_match(damaged, golden) == 1
    assert _searches_match(damaged, golden) == 0


@pytest.mark.parametrize("value", [-2, 1 << 20])
@pytest.mark.parametrize("name", ID_ARRAYS)
def test_every_forged_id_array_is_refused_by_the_bounds_checks(golden, damaged, caplog, name, value):
    """Each id or offset array, one value out of range, the checksum recomputed: refused by
    persist_checks before anything is built from it (not by an error of the loader after)."""
    assert _apply(damaged, {"kind": "forged_id", "name": name, "where": 0.5, "value": value, "part": 0}) == 1
    with caplog.at_level("WARNING", logger="zeromem"):
        assert _searches_match(damaged, golden) == 1
    reasons = [r.getMessage() for r in caplog.records if "discarded" in r.getMessage()]
    assert len(reasons) == 1 and "could not be" not in reasons[0], reasons


def test_snapshots_written_after_edits_and_erasures_load_without_a_discard(tmp_path):
    """No false alarm: indexes persisted after updates, deletions, a deleted session, traces
    without a session, titles and attachments pass every check, and answer as a rebuild."""
    db = tmp_path / "edited.db"
    with Memory(db, config=config()) as mem:
        ids = mem.add_many(_traces("e", 36))
        mem.add_many([
            {"text": "A loose note about the Oslo budget.", "speaker": "Eve"},
            {"text": "Carla's page about Lisbon.", "session": "pages", "metadata": {"title": "Lisbon"}},
            {"text": "Photo from the offsite.", "session": "e-s1", "attachments": ["Dana and Bob in Berlin"]}])
        mem.index()
        mem.update(ids[3], text="Dana told Bob the meeting moves to Porto instead.")
        mem.delete(ids[5])
        mem.delete_session("e-s2")
        mem.add("Bob: the launch slipped to June.", session="e-s0", speaker="Bob")
        mem.search("launch")  # caught up in memory: the graph now has a delta (dirty turns)
    with Memory(db, config=config()) as mem:  # closing above wrote the index it held
        store = store_of(mem)
        assert store.snapshot_version(mem.scope, persist.FORMAT) == store.scope_version(mem.scope)
        found = {q: _ids(mem, q) for q in QUERIES}
        assert mem.health().snapshots_discarded == 0
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM scope_snapshot_parts")
        conn.execute("DELETE FROM scope_snapshots")
    with Memory(db, config=config()) as mem:
        assert {q: _ids(mem, q) for q in QUERIES} == found


def test_bench_fuzz_snapshot_surface_finds_no_crash_and_no_wrong_answer(tmp_path):
    """``zeromem bench fuzz --surfaces snapshots``: a few cases, searched in a child process."""
    from zeromem_bench.fuzz import make_surface, run_surface

    surface = make_surface("snapshots")
    surface.open(tmp_path, 0)
    try:
        report = run_surface(surface, 12, 0, keep_going=True)
    finally:
        surface.close()
    assert report.cases == 12 and report.failures == 0, report.examples
    assert report.rejected >= 1


def test_facts_that_are_not_utf8_are_discarded_not_raised(golden, damaged):
    """Found by ``bench fuzz --surfaces snapshots``: a flipped byte that made the facts row
    invalid UTF-8 raised UnicodeDecodeError from the store's read, outside the load's checks."""
    _, _, facts = _head(damaged)
    raw = bytearray(facts.encode("utf-8"))
    raw[10] = 0xD5  # a lead byte followed by ASCII: invalid UTF-8
    with sqlite3.connect(damaged) as conn:
        conn.execute("UPDATE scope_snapshots SET blob = ? WHERE scope_key = '[\"a\",\"\"]'", (bytes(raw),))
    assert _searches_match(damaged, golden) == 1
