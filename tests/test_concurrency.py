"""Several processes writing to one file at once lose nothing."""

from __future__ import annotations

import multiprocessing as mp

from zeromem import Memory

WRITERS = 4
PER_WRITER = 60


def _writer(path: str, worker: int, start, results) -> None:
    mem = Memory(path, user="shared")
    start.wait()  # all writers begin together to maximize lock contention
    ids = []
    for n in range(PER_WRITER // 2):  # single adds: one transaction each
        ids.append(mem.add(f"w{worker} single {n}", session=f"w{worker}"))
    for chunk in range(3):  # and batches, interleaved with the other writers' singles
        batch = [{"text": f"w{worker} batch {chunk}.{n}", "session": f"w{worker}"}
                 for n in range(PER_WRITER // 6)]
        ids.extend(mem.add_many(batch))
    mem.close()
    results.put((worker, ids))


def test_four_processes_writing_concurrently_lose_nothing(db_path):
    Memory(db_path).close()  # create and migrate once, before the race
    ctx = mp.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(db_path), w, start, results))
             for w in range(WRITERS)]
    for proc in procs:
        proc.start()
    start.set()
    reported = dict(results.get(timeout=120) for _ in procs)
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    all_ids = [tid for ids in reported.values() for tid in ids]
    assert len(all_ids) == len(set(all_ids)) == WRITERS * PER_WRITER
    with Memory(db_path, user="shared") as mem:
        traces = mem.list()
        assert len(traces) == WRITERS * PER_WRITER
        assert {t.id for t in traces} == set(all_ids)
        for worker in range(WRITERS):
            seqs = [t.seq for t in mem.list(session=f"w{worker}")]
            assert seqs == list(range(PER_WRITER))  # each writer's order kept, no gaps


def test_concurrent_first_opens_migrate_the_file_once(tmp_path):
    path = str(tmp_path / "fresh.db")
    ctx = mp.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, w, start, results)) for w in range(WRITERS)]
    for proc in procs:
        proc.start()
    start.set()
    for _ in procs:
        results.get(timeout=120)
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    with Memory(path, user="shared") as mem:
        assert mem.stats().traces == WRITERS * PER_WRITER
