"""Erasure on PostgreSQL and on Citus reaches every file of every node: after a scope's
deletion and ``compact``, no data folder of any node (the coordinator and each worker on
Citus) holds the deleted text or identifiers in a table, index, TOAST table or the column
statistics (``pg_statistic``) — whose rows ANALYZE leaves as they were when a table is left
empty. Only the write-ahead log (``pg_wal``) may keep them, and the receipt says so."""

from __future__ import annotations

import secrets
from pathlib import Path

from zeromem import Memory
from zeromem.config import Config, RetrievalConfig


def _data_folders(server) -> list[Path]:
    if hasattr(server, "data_folders"):
        return server.data_folders()
    return [server.folder / "data"]


def _holding(folders: list[Path], marks: list[str]) -> dict[str, list[str]]:
    """For each mark, the files (below pg_wal's level) of the data folders that hold it."""
    found: dict[str, list[str]] = {m: [] for m in marks}
    for folder in folders:
        for file in folder.rglob("*"):
            if not file.is_file() or "pg_wal" in file.parts or file.name.endswith(".log"):
                continue
            blob = file.read_bytes().lower()
            for mark in marks:
                if mark.encode() in blob:
                    found[mark].append(str(file.relative_to(folder.parent.parent)))
    return {m: files for m, files in found.items() if files}


def test_a_deleted_scope_leaves_nothing_in_any_node_after_compact(postgres_server):
    url = postgres_server.fresh_database()
    token = secrets.token_hex(6)
    marks = {"user": f"quserx{token}", "session": f"qsessionx{token}", "text": f"qtextx{token}",
             "speaker": f"qspeakerx{token}", "toast": f"qtoastx{token}"}
    # A text far over PostgreSQL's 2 kB TOAST threshold and too random for pglz to shrink by
    # the quarter it demands: it is stored out of line, uncompressed, so the mark is findable
    # in the TOAST table's file (checked below before the deletion).
    long_text = f"Pasted notes {marks['toast']} " + " ".join(secrets.token_urlsafe(48) for _ in range(180))
    config = Config(retrieval=RetrievalConfig(snapshot_min_turns=1))
    with Memory(url, user=marks["user"], config=config) as mem:
        mem.add_many([{"text": f"My locker code is {marks['text']} and Priya moved to Denver.",
                       "session": marks["session"], "speaker": marks["speaker"]},
                      {"text": "Priya loves the mountains there.", "session": marks["session"],
                       "speaker": marks["speaker"]},
                      {"text": long_text, "session": marks["session"], "speaker": marks["speaker"]}])
        assert mem.search("Where does Priya live?", k=2)
        mem.index()
        mem.compact()  # ANALYZE samples the rows into pg_statistic, as autovacuum would
        before = _holding(_data_folders(postgres_server), [marks["toast"]])
        assert before, "the long text's mark should be in a data file (its TOAST table) before the deletion"
        receipt = mem.delete_scope()
        assert any("pg_wal" in line for line in receipt.retained)
        done = mem.compact()
    assert any("pg_wal" in line and "max_wal_size" in line for line in done.retained), done.retained
    left = _holding(_data_folders(postgres_server), list(marks.values()))
    assert left == {}, left
    postgres_server.drop(url)
