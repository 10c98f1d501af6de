"""A reader process and a writer process on one file and one scope: the reader never raises,
and everything it returns was committed at some point (``zeromem_bench.race``)."""

from __future__ import annotations

import pytest

from zeromem_bench import race

SECONDS = 6.0


@pytest.mark.slow  # two spawned processes, each loading the models
def test_searching_while_another_process_writes_never_fails_nor_invents(tmp_path, example_path):
    document = race.run(example_path, seconds=SECONDS, seed=7, workdir=tmp_path)
    assert document["searches"] > 0 and document["writes"] > 0
    assert document["exceptions_writer"] == 0, "\n".join(document["tracebacks_writer"])
    assert document["exceptions_reader"] == 0, "\n".join(document["tracebacks_reader"])
    assert document["evidence_checked"] > 0
    assert document["inconsistent_results"] == 0, document["inconsistent_examples"]
    assert not race.failed(document)
