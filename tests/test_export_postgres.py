"""Export and import on PostgreSQL: a SQLite store's export restored into PostgreSQL gives the
same bytes back (same ids, same row numbers), a PostgreSQL scope is restored after its delete,
bad input stores nothing, and every statement keeps the scope filter (tests/pg_statements.py)."""

from __future__ import annotations

import pytest

import pg_fixture
from internals import store_of
from pg_statements import Recorder
from zeromem import Config, InvalidInput, Memory, NotFound
from zeromem.store import postgres_portable
from zeromem.store.ids import ID_KEY

LAZY = Config(index_on_write=False)


@pytest.fixture
def pg_url(request):
    yield from pg_fixture.fresh_database(request)


def _fill(mem: Memory) -> dict[str, str]:
    ids = {"denver": mem.add("I live in Chicago.", session="s1", speaker="Ana", metadata={"k": [1]}, user="ana"),
           "cat": mem.add("I adopted a cat named Miso.", session="s1", attachments=["a photo"], user="ana"),
           "gone": mem.add("my old password", session="s2", user="ana"),
           "bot": mem.add("bot scope", role="assistant", session_time="2023-05-02T10:00:00+02:00",
                          user="ana", agent="bot")}
    mem.update(ids["denver"], text="I live in Denver.", user="ana")
    mem.pin(ids["cat"], user="ana")
    mem.delete(ids["gone"], user="ana")
    return ids


def test_a_sqlite_export_restored_into_postgres_gives_the_same_bytes(tmp_path, pg_url):
    with Memory(tmp_path / "a.db", config=LAZY) as source:
        ids = _fill(source)
        texts = {h: "".join(source.export(all_scopes=True, history=h)) for h in (False, True)}
    recorder = Recorder()
    with Memory(pg_url, config=LAZY) as pg:
        with recorder.recording():
            report = pg.import_export(texts[True].splitlines())
            again = {h: "".join(pg.export(all_scopes=True, history=h)) for h in (False, True)}
            scoped = "".join(pg.export(user="ana", history=True))
        assert recorder.statements and recorder.violations() == []
        assert again == texts and (report.traces, report.deleted, report.ids_kept) == (3, 1, True)
        assert '"id":"' + ids["gone"] in scoped and "bot scope" not in scoped
        assert pg.get(ids["cat"], user="ana").metadata == {"pinned": True}
        with pytest.raises(NotFound):
            pg.get(ids["gone"], user="ana")
        parse = store_of(pg).ids.parse
        assert parse(pg.add("later", user="ana")) == parse(ids["bot"]) + 1


def test_a_postgres_scope_is_restored_with_its_ids_and_pages_do_not_show(pg_url, monkeypatch):
    with Memory(pg_url, config=LAZY) as pg:
        ids = _fill(pg)
        pg.add_many([{"text": f"ben {i}"} for i in range(9)], user="ben")
        text = "".join(pg.export(user="ana", history=True))
        whole = "".join(pg.export(all_scopes=True, history=True))
        monkeypatch.setattr(postgres_portable, "EXPORT_PAGE", 2)
        assert "".join(pg.export(all_scopes=True, history=True)) == whole
        pg.delete_scope(user="ana")
        recorder = Recorder()
        with recorder.recording():
            assert pg.import_export(text.splitlines()).ids_kept
        assert recorder.violations() == []
        assert "".join(pg.export(user="ana", history=True)) == text
        assert pg.get(ids["denver"], user="ana").text == "I live in Denver."
        with pytest.raises(InvalidInput, match="already"):
            pg.import_export(text.splitlines())
        assert pg.import_export(text.splitlines(), new_ids=True).traces == 2
        assert pg.stats(user="ana").traces == 4 and pg.stats(user="ben").traces == 9


def test_bad_input_stores_nothing_in_postgres(tmp_path, pg_url):
    with Memory(tmp_path / "a.db", config=LAZY) as source:
        _fill(source)
        lines = "".join(source.export(all_scopes=True, history=True)).splitlines()
    with Memory(pg_url, config=LAZY) as pg:
        key = store_of(pg).get_meta(ID_KEY)
        with pytest.raises(InvalidInput, match="without its end line"):
            pg.import_export(lines[:-1])
        with pytest.raises(InvalidInput, match="NUL"):
            pg.import_export([*lines[:2], lines[2].replace("Chicago", "Chi\\u0000cago"), *lines[3:]])
        assert pg.stats(all_scopes=True).traces == 0 and store_of(pg).get_meta(ID_KEY) == key
        mine = pg.add("mine", user="ana")
        with pytest.raises(InvalidInput, match="own trace id key"):
            pg.import_export(lines)
        assert [t.id for t in pg.list(user="ana")] == [mine]


def test_backup_of_postgres_says_to_use_pg_dump(tmp_path, pg_url):
    with Memory(pg_url, config=LAZY) as pg, pytest.raises(InvalidInput, match="pg_dump"):
        pg.backup(tmp_path / "x.db")
    assert not (tmp_path / "x.db").exists()
