"""`zeromem bench fuzz`: its checks, and a bounded run of every surface for CI.

The full count (10 000 cases per surface) runs with `zeromem bench fuzz`; here each surface
runs CI_CASES cases with the same seed, which is what makes a failure here reproducible there.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import strategies as st
from typer.testing import CliRunner

from internals import store_of
from zeromem import InvalidInput, Memory
from zeromem.main import app
from zeromem_bench import fuzz
from zeromem_bench import fuzz_requests as fr
from zeromem_bench import fuzz_strategies as fs
from zeromem_bench.fuzz_surfaces import ApiSurface, CliSurface, Failure, StoreFixture, snapshot

CI_CASES = 200  # per surface: about 15 s in all on 2 cores, plus loading the models once


# -- the snapshot check itself --------------------------------------------------------------------
@pytest.fixture
def fixture(tmp_path):
    def seed(path):
        with Memory(path, user="u") as mem:
            return mem.add("I moved to Denver last week.", session="s1", metadata={"topic": "home"})

    return StoreFixture(tmp_path, seed)


@pytest.mark.parametrize("change", [
    lambda m, t: m.add("one more"),
    lambda m, t: m.update(t, metadata={"topic": "work"}),
    lambda m, t: m.update(t, text="I moved to Boulder."),
    lambda m, t: m.delete(t),
    lambda m, t: m.add("elsewhere", user="v"),
    lambda m, t: store_of(m).set_meta("note", "x"),
], ids=["add", "metadata", "text", "delete", "other scope", "store_meta"])
def test_snapshot_detects_every_change(fixture, change):
    assert fixture.diff() is None
    with Memory(fixture.live, user="u", config=fuzz_config()) as mem:
        change(mem, fixture.info)
    diff = fixture.diff()
    assert diff, "a change went unnoticed"
    fixture.reset()
    assert fixture.diff() is None


def fuzz_config():
    from zeromem import Config

    return Config(index_on_write=False)


def test_snapshot_is_stable_and_lists_the_changed_tables(fixture):
    assert snapshot(fixture.live) == snapshot(fixture.live)
    before = snapshot(fixture.live)
    with Memory(fixture.live, user="u", config=fuzz_config()) as mem:
        mem.add("one more")
    after = snapshot(fixture.live)
    assert "traces" in fuzz.fuzz_surfaces.changed_tables(before, after)
    assert "traces: 1 -> 2 rows" in fuzz.fuzz_surfaces.describe_change(before, after)


def test_a_read_may_record_the_embedder_fingerprint_and_nothing_else(fixture):
    from zeromem.store.fingerprint import fingerprint_key
    from zeromem.types import Scope

    with Memory(fixture.live, user="u", config=fuzz_config()) as mem:
        store_of(mem).set_meta(fingerprint_key(Scope("new", None)), "{}")
    assert fixture.diff(read=True) == ""  # changed, but only by what a first search records
    assert fixture.diff()  # a write (or a refused one) may not even do that
    with Memory(fixture.live, user="u", config=fuzz_config()) as mem:
        mem.add("more")
    assert fixture.diff(read=True)


@pytest.mark.slow
def test_a_rejected_call_that_writes_is_a_failure(tmp_path, monkeypatch):
    surface = ApiSurface()
    surface.open(tmp_path, 0)
    try:
        def get(trace_id, **_):
            surface.memory.add("written by a call that then fails")
            raise InvalidInput("refused after writing")

        monkeypatch.setattr(surface.memory, "get", get)
        with pytest.raises(Failure, match="store changed by a rejected get"):
            surface.check(fs.Call("get", ("t1",), {}))
        # The store is back to the template for the next case.
        assert surface.fixture.diff() is None
        assert surface.check(fs.Call("get", (surface.seeded.ids[0],), {})) == ("accepted", "accepted:get")
        assert surface.check(fs.Call("get", ("nope",), {}))[0] == "rejected"
        with pytest.raises(Failure, match="unexpected ZeroDivisionError"):
            monkeypatch.setattr(surface.memory, "stats", lambda **_: 1 / 0)
            surface.check(fs.Call("stats", (), {}))
    finally:
        surface.close()


# -- the runner -----------------------------------------------------------------------------------
class ToySurface(fuzz.Surface):
    """Fails on every number of at least 1000: the minimal failing example is exactly 1000."""

    name = "toy"

    def open(self, folder, seed):
        pass

    def strategy(self):
        return st.integers(0, 10**6)

    def check(self, case):
        if case >= 1000:
            raise Failure("too big", f"{case} >= 1000")
        return ("accepted", "accepted:small") if case % 2 else ("rejected", "rejected:even")


def test_the_runner_shrinks_a_failure_to_its_minimal_example():
    report = fuzz.run_surface(ToySurface(), 500, seed=0)
    assert report.failures == 1
    assert report.examples[0]["kind"] == "too big"
    assert report.examples[0]["case"] == "1000"
    assert report.cases <= 500 and report.accepted + report.rejected == report.cases - 1


def test_keep_going_counts_every_failure_and_runs_every_case():
    report = fuzz.run_surface(ToySurface(), 300, seed=0, keep_going=True)
    assert report.cases == 300
    assert report.failures == report.failure_kinds["too big"] > 1
    assert report.accepted + report.rejected + report.failures == 300


def test_the_same_seed_generates_the_same_cases():
    seen: list[list[object]] = [[], []]
    for run in seen:
        surface = ToySurface()
        surface.check = lambda case, run=run: run.append(case) or ("accepted", "accepted:x")
        fuzz.run_surface(surface, 50, seed=3)
    assert seen[0] == seen[1] and len(seen[0]) == 50


def test_bad_surface_names_are_refused():
    with pytest.raises(InvalidInput, match="--surfaces"):
        fuzz.parse_surfaces("api,nope")
    result = CliRunner().invoke(app, ["bench", "fuzz", "--surfaces", "nope", "--cases", "1"])
    assert result.exit_code == 2 and result.stderr.startswith("error: --surfaces")


# -- the bounded run (CI) -------------------------------------------------------------------------
@pytest.mark.slow
def test_every_surface_passes_a_bounded_run(tmp_path):
    out = tmp_path / "fuzz.json"
    result = CliRunner().invoke(app, ["bench", "fuzz", "--cases", str(CI_CASES), "--json", str(out)])
    document = json.loads(out.read_text())
    failures = {name: row["failure_examples"] for name, row in document["surfaces"].items()
                if row["failures"]}
    assert not failures, json.dumps(failures, indent=1)[:6000]
    assert result.exit_code == 0, result.output
    assert document["complete"]
    for name in fuzz.SURFACES:
        row = document["surfaces"][name]
        assert row["cases"] == CI_CASES == row["accepted"] + row["rejected"]
        assert row["accepted"] and row["rejected"]  # both kinds of outcome were exercised
    assert "bench fuzz" in result.stdout and "rest" in result.stdout


@pytest.mark.slow
def test_cli_cases_judged_alike_in_a_real_process(tmp_path):
    """The in-process CLI runner stands for the real command: a few cases, both ways."""
    surface = CliSurface()
    surface.open(tmp_path, 0)
    seeded = surface.seeded
    cases = [
        fr.CliCase(("list", "--user", "alice", "--db", fs.DB)),
        fr.CliCase(("get", seeded.ids[0] + "x", "--user", "alice", "--db", fs.DB)),
        fr.CliCase(("list", "--since", "2023-05-08T10:00:00+24:00", "--user", "\udcff", "--db", fs.DB)),
        fr.CliCase(("list", "--limit", "abc", "--db", fs.DB)),
        fr.CliCase(("ingest", fs.FILE, "--user", "alice", "--db", fs.MISSING),
                   fs.FileCase("chat.jsonl", b'{"text": "fine"}\n{"text": "\\u0000"}\n')),
    ]
    for case in cases:
        assert surface.check(case, process=True) == surface.check(case), case


def test_json_is_due_only_where_the_cli_parses_the_flag():
    from zeromem_bench.fuzz_surfaces import _asks_for_json

    assert _asks_for_json(["search", "q", "--json"])
    assert _asks_for_json(["keys", "add", "--label", "x", "--json", "--user", "alice"])
    assert not _asks_for_json(["keys", "add", "--label", "--json", "--user", "alice"])  # a label
    assert not _asks_for_json(["frobnicate", "--json"])


@pytest.mark.parametrize(("origin", "host", "status"), [
    (None, None, None), ("http://127.0.0.1", None, None), ("https://127.0.0.1/", None, None),
    ("http://evil.example", None, 403), ("null", None, 403), (None, "attacker.example:80", 421),
    ("http://localhost:8420", "localhost:8420", None), ("http://127.0.0.1", "localhost:8420", 403)])
def test_the_rest_oracle_knows_which_page_requests_are_refused(origin, host, status):
    request = fr.Request("GET", "/v1/whoami", origin=origin, host=host)
    assert fr.foreign(request) == status
