"""One Memory shared by several threads: writers and searchers at once, nothing breaks.

A Memory keeps no per-call results on the instance, each scope's in-memory index has its own
lock, and a search sees one applied version of its scope — so concurrent searches, writes and
reindexes in one process raise nothing and return only text that was stored.
"""

from __future__ import annotations

import threading

import pytest

from zeromem import Memory

pytestmark = pytest.mark.slow

TEXTS = ["Caroline adopted a grey cat named Biscuit.", "Melanie moved to Denver in June.",
         "Our team won the regional chess cup.", "I started a pottery class in Lisbon.",
         "Running helps me destress every morning."]
QUERIES = ["Where did Melanie move?", "cat name", "chess cup", "pottery class"]


def test_threads_sharing_one_memory_search_and_write_without_errors(tmp_path):
    errors: list[BaseException] = []
    stored: set[str] = set()
    lock = threading.Lock()
    with Memory(tmp_path / "threads.db", user="u") as memory:
        memory.add_many([{"text": t, "session": "seed", "speaker": "Ana"} for t in TEXTS])
        stored.update(TEXTS)

        def writer(worker: int) -> None:
            try:
                ids = []
                for n in range(8):
                    text = f"{TEXTS[n % len(TEXTS)]} (worker {worker}, note {n})"
                    with lock:
                        stored.add(text)
                    ids.append(memory.add(text, session=f"w{worker}", speaker="Ana"))
                    if n % 3 == 2:
                        new = f"Updated note {n} of worker {worker} about chess."
                        with lock:
                            stored.add(new)
                        memory.update(ids[-1], text=new)
                    if n % 4 == 3:
                        memory.delete(ids.pop(0))
                if worker == 0:
                    memory.reindex()
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        def searcher(user: str) -> None:
            try:
                for n in range(30):
                    for evidence in memory.search(QUERIES[n % len(QUERIES)], k=5, user=user):
                        with lock:
                            assert evidence.text in stored
            except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
        threads += [threading.Thread(target=searcher, args=(user,)) for user in ("u", "u", "other")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not errors, errors
        final = {e.text for q in QUERIES for e in memory.search(q, k=5)}
        assert final and final <= {t.text for t in memory.list()}
