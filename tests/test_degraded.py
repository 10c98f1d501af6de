"""Search degrades gracefully: with the embedder or the NER pipeline missing or failing it still
answers from the indexes that work, says so in ``degraded``, and catches up when the model is
back (docs/design.md#degraded-search). Writes never fail because a model is missing."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from internals import encoders_of, indexer_of, store_of
from zeromem import Memory
from zeromem.config import Config, EncoderConfig
from zeromem.errors import ModelUnavailable
from zeromem.ingest import load_file
from zeromem.retrieval import persist

pytestmark = pytest.mark.slow

QUERIES = ["Where did Priya live before she moved to Denver?", "What is the name of Priya's cat?",
           "When is Marcus going to Lisbon?"]


def _broken(component: str, tmp_path: Path) -> Config:
    """A config naming a model that does not exist for ``component``."""
    if component == "embedder":
        return Config(encoders=EncoderConfig(embedding_model=str(tmp_path / "no-such-model")))
    return Config(encoders=EncoderConfig(spacy_pipeline="no_such_pipeline"))


def _fill(memory: Memory, example_path: Path) -> list[str]:
    """The example conversation, then an update and a delete (all written while degraded)."""
    ids = memory.add_many(load_file(example_path)[0].drafts)
    memory.update(ids[3], text="I used to live in Logan Square, Chicago, near the lake.")
    memory.delete(ids[5])
    return ids


def _evidence(memory: Memory) -> list[list[tuple]]:
    return [[(e.trace_id, e.score, e.why["reason"]) for e in memory.search(q, k=6)] for q in QUERIES]


def _check_provenance(memory: Memory, evidence) -> None:
    assert evidence
    for ev in evidence:
        trace = memory.get(ev.trace_id)
        p = ev.provenance
        assert ev.text == trace.text  # verbatim
        assert (p.trace_id, p.session, p.speaker, p.source_id) == (
            trace.id, trace.session, trace.speaker, trace.source_id)


class FailingEncoder:
    """Stands in for a loaded encoder that raises whenever it is asked to encode."""

    name, dim = "broken", 384

    def _boom(self, *args, **kwargs):
        raise RuntimeError("the accelerator fell over")

    encode = encode_query = extract = _boom


class EchoReader:
    """A reader that needs no LLM: it always answers "Biscuit"."""

    def answer(self, question: str, context) -> str:
        return "Biscuit"


# -- a model that cannot be loaded ---------------------------------------------------------------
def test_a_missing_model_is_a_clear_model_unavailable_for_direct_indexing(tmp_path, example_path):
    for component, hint in (("embedder", "no-such-model"), ("ner", "pip install no-such-pipeline")):
        with Memory(tmp_path / f"{component}.db", config=_broken(component, tmp_path)) as memory:
            ids = memory.add_many(load_file(example_path)[0].drafts)  # the write succeeds
            assert len(ids) == 40 and memory.stats().traces == 40
            with pytest.raises(ModelUnavailable, match=hint):
                memory.index()
            with pytest.raises(ModelUnavailable, match=hint):
                memory.reindex()


def test_without_the_embedder_search_ranks_by_bm25_and_the_graph_and_says_so(
        tmp_path, example_path, caplog):
    caplog.set_level(logging.WARNING, logger="zeromem")
    with Memory(tmp_path / "m.db", config=_broken("embedder", tmp_path)) as memory:
        ids = _fill(memory, example_path)
        result = memory.search_detailed(QUERIES[0], k=5)
        assert len(result.degraded) == 1
        assert result.degraded[0].startswith("embedder: embedding model")
        assert "no-such-model" in result.degraded[0] and "skipped: dense similarity" in result.degraded[0]
        _check_provenance(memory, result.evidence)
        assert "D2:3" in [e.provenance.source_id for e in result.evidence]  # "moving to Denver"
        assert all(e.why["dense_cosine"] == 0.0 for e in result.evidence)
        assert any(e.why["ppr"] > 0 for e in result.evidence)  # NER works: so does the graph
        assert ids[5] not in {e.trace_id for q in QUERIES for e in memory.search(q, k=10)}
        # render_context and answer go through the same search, and say so too
        context = memory.render_context(QUERIES[1], k=5)
        assert context.evidence and context.degraded == result.degraded
        answer = memory.answer(QUERIES[1], EchoReader(), k=5)
        assert answer.reader == "Biscuit" and answer.context.degraded == context.degraded
        # nothing degraded is stored: the sessions wait for the embedder
        assert indexer_of(memory).pending_sessions(memory.scope)
        health = memory.health()
        assert health.ready is True and health.store == "ok" and health.ner == "ok"
        assert health.embedder.startswith("unavailable: embedding model")
        assert [line.split(":")[0] for line in health.degraded] == ["embedder"]
    warnings = [r for r in caplog.records if "embedder is unavailable" in r.getMessage()]
    assert len(warnings) == 1  # once, not at every write and search


def test_without_ner_the_graph_view_is_skipped_and_says_so(tmp_path, example_path):
    with Memory(tmp_path / "m.db", config=_broken("ner", tmp_path)) as memory:
        _fill(memory, example_path)
        result = memory.search_detailed(QUERIES[0], k=5)
        assert [line.split(":")[0] for line in result.degraded] == ["ner"]
        assert "no_such_pipeline" in result.degraded[0] and "skipped: graph view" in result.degraded[0]
        _check_provenance(memory, result.evidence)
        assert "D2:3" in [e.provenance.source_id for e in result.evidence]
        assert any(e.why["dense_cosine"] > 0 for e in result.evidence)  # the embedder works
        health = memory.health()
        assert health.ready is True and health.embedder == "ok"
        assert health.ner.startswith("unavailable: spaCy pipeline 'no_such_pipeline'")


@pytest.mark.parametrize("component", ["embedder", "ner"])
def test_when_the_model_is_back_search_catches_up_to_a_fresh_rebuild(tmp_path, example_path, component):
    path = tmp_path / "m.db"
    with Memory(path, config=_broken(component, tmp_path)) as memory:
        _fill(memory, example_path)
        degraded = _evidence(memory)
        memory.add("Marcus said the Lisbon trip moved to November.", session="session_9", speaker="Marcus")
        before = _evidence(memory)
        with pytest.raises(ModelUnavailable):
            memory.reindex()  # refused before it drops anything
        assert _evidence(memory) == before
    with Memory(path) as memory:  # the normal config: every model loads
        result = memory.search_detailed(QUERIES[2], k=6)
        assert result.degraded == ()
        assert not indexer_of(memory).pending_sessions(memory.scope)
        caught_up = _evidence(memory)
        memory.reindex()
        assert _evidence(memory) == caught_up
    with Memory(path) as memory:
        assert _evidence(memory) == caught_up
    assert caught_up != degraded  # the full engine did answer differently


@pytest.mark.parametrize("component", ["embedder", "ner"])
def test_a_degraded_memory_takes_over_what_a_healthy_process_stores(tmp_path, example_path, component):
    """Sessions a degraded memory derived in memory are replaced by the stored ones once another
    (healthy) memory derives them; it then answers as a fresh memory in its state would."""
    path = tmp_path / "m.db"
    with Memory(path, config=_broken(component, tmp_path)) as degraded, Memory(path) as healthy:
        _fill(degraded, example_path)
        assert degraded.search_detailed(QUERIES[0]).degraded
        healthy_evidence = _evidence(healthy)  # derives and stores every session
        taken_over = _evidence(degraded)
        if component == "ner":  # nothing waits for NER any more: the full engine answers
            assert degraded.search_detailed(QUERIES[0]).degraded == ()
            assert taken_over == healthy_evidence
    with Memory(path, config=_broken(component, tmp_path)) as fresh:
        assert _evidence(fresh) == taken_over


@pytest.mark.parametrize("component", ["embedder", "ner"])
def test_degraded_evidence_is_deterministic_streamed_or_from_scratch(tmp_path, example_path, component):
    path = tmp_path / "m.db"
    config = _broken(component, tmp_path)
    config.retrieval.snapshot_min_turns = 0  # a healthy close would persist the index
    with Memory(path, config=config) as memory:
        conversation = load_file(example_path)[0].drafts
        ids = memory.add_many(conversation[:20])
        memory.search(QUERIES[0])
        ids += memory.add_many(conversation[20:])
        memory.search(QUERIES[1])
        memory.update(ids[3], text="I used to live in Logan Square, Chicago, near the lake.")
        memory.search(QUERIES[2])
        memory.delete(ids[5])
        streamed = _evidence(memory)
        assert streamed == _evidence(memory)
    with Memory(path, config=config) as memory:
        assert _evidence(memory) == streamed
        # an index holding sessions derived in memory only is never persisted
        assert store_of(memory).snapshot_version(memory.scope, persist.FORMAT) is None


def test_a_large_scope_scores_candidates_without_a_query_vector(tmp_path, example_path):
    config = _broken("embedder", tmp_path)
    config.retrieval.large_scope_turns = 10  # the candidate path of retrieval/turn_scores.py
    with Memory(tmp_path / "m.db", config=config) as memory:
        _fill(memory, example_path)
        result = memory.search_detailed(QUERIES[0], k=5)
        assert result.degraded and "D2:3" in [e.provenance.source_id for e in result.evidence]
        _check_provenance(memory, result.evidence)


# -- an encoder that loads but fails while encoding (monkeypatched here only) ------------------------
def test_an_embedder_failing_at_query_time_degrades_search(tmp_path, example_path):
    with Memory(tmp_path / "m.db") as memory:
        memory.add_many(load_file(example_path)[0].drafts)
        healthy = memory.search_detailed(QUERIES[0], k=5)
        assert healthy.degraded == ()
        encoders_of(memory).embedder = FailingEncoder()  # this Memory's bundle only
        result = memory.search_detailed(QUERIES[0], k=5)
        assert result.degraded and result.degraded[0].startswith(
            "embedder: RuntimeError: the accelerator fell over")
        _check_provenance(memory, result.evidence)
        # a write goes through; the new turn is found by its words
        tid = memory.add("The ferry to Bainbridge leaves at 7:10.", session="s9", speaker="Priya")
        found = memory.search_detailed("When does the ferry to Bainbridge leave?", k=3)
        assert found.evidence[0].trace_id == tid and found.degraded
        assert memory.health().embedder.startswith("unavailable: RuntimeError")


def test_ner_failing_while_encoding_skips_the_graph_for_what_it_could_not_read(tmp_path, example_path):
    with Memory(tmp_path / "m.db") as memory:
        memory.add_many(load_file(example_path)[0].drafts)
        assert memory.search_detailed(QUERIES[0], k=5).degraded == ()
        encoders_of(memory).extractor = FailingEncoder()  # this Memory's bundle only
        tid = memory.add("The ferry to Bainbridge leaves at 7:10.", session="s9", speaker="Priya")
        result = memory.search_detailed("When does the ferry to Bainbridge leave?", k=3)
        assert [line.split(":")[0] for line in result.degraded] == ["ner"]
        assert "RuntimeError: the accelerator fell over" in result.degraded[0]
        assert result.evidence[0].trace_id == tid
        _check_provenance(memory, result.evidence)
        assert indexer_of(memory).pending_sessions(memory.scope) == ["s9"]


def test_a_healthy_memory_reports_every_component_ok(mem):
    report = dataclasses.asdict(mem.health())
    cache = report.pop("index_cache")
    assert report == {"ready": True, "store": "ok", "embedder": "ok", "ner": "ok", "degraded": (),
                      "snapshots_discarded": 0, "placement": None}
    assert set(cache) == {"budget_bytes", "bytes", "scopes", "hits", "misses", "evictions"}
