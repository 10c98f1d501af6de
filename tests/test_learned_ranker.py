"""The learned ranker's parts: candidate features, the numpy tree scorer, the trainer.

Features are a pure function of the search (same memory, same query → the same matrix); the
numpy scorer gives LightGBM's own predictions; training the same pools twice gives the same
model bytes.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from zeromem import Memory
from zeromem.config import Config
from zeromem.retrieval.learned import from_document
from zeromem.retrieval.rank_features import FEATURES

TURNS = [
    ("Caroline", "I went to a pottery class last Saturday and made a blue bowl."),
    ("Melanie", "That sounds lovely! Did you keep the bowl?"),
    ("Caroline", "Yes, it sits on my kitchen shelf next to the plants."),
    ("Melanie", "I have been camping with my kids at the lake in July."),
    ("Caroline", "The lake must have been beautiful in summer."),
    ("Melanie", "We also painted a sunrise together after the trip."),
]


def _memory(tmp_path, **retrieval) -> Memory:
    config = Config()
    config = dataclasses.replace(config, retrieval=dataclasses.replace(config.retrieval, **retrieval))
    mem = Memory(tmp_path / "m.db", user="u", config=config)
    mem.add_many([{"text": text, "speaker": who, "session": "s1" if i < 3 else "s2", "seq": i}
                  for i, (who, text) in enumerate(TURNS)], user="u")
    return mem


def test_the_pool_and_its_features_are_the_same_for_the_same_search(tmp_path):
    mem = _memory(tmp_path, export_candidates=True)
    first = mem.search_detailed("What did Caroline make in the pottery class?", user="u", k=3)
    second = mem.search_detailed("What did Caroline make in the pottery class?", user="u", k=3)
    mem.close()
    pool = first.candidates
    assert pool is not None and second.candidates is not None
    assert pool.features.shape == (len(pool.nodes), len(FEATURES))
    assert np.isfinite(pool.features).all()
    assert np.array_equal(pool.features, second.candidates.features)
    assert pool.trace_ids == second.candidates.trace_ids
    # the hand order names the evidence the search returned
    assert [pool.trace_ids[i] for i in pool.hand_order] == [e.trace_id for e in first.evidence]


def test_no_pool_unless_asked(tmp_path):
    mem = _memory(tmp_path)
    assert mem.search_detailed("pottery", user="u", k=2).candidates is None
    mem.close()


def _tree_document() -> dict:
    # feature 0 ≤ 0.5 → (feature 1 ≤ 2 → 1.0 else 2.0) else 3.0; a second tree adds 0.25
    return {"format": "zeromem-ranker/1", "features": list(FEATURES), "depth": 2, "trees": [
        {"feature": [0, 1, -1, -1, -1], "threshold": [0.5, 2.0, 0, 0, 0], "left": [1, 2, 0, 0, 0],
         "right": [4, 3, 0, 0, 0], "value": [0, 0, 1.0, 2.0, 3.0]},
        {"feature": [-1], "threshold": [0], "left": [0], "right": [0], "value": [0.25]}]}


def test_the_numpy_scorer_walks_each_tree():
    model = from_document(_tree_document())
    rows = np.zeros((3, len(FEATURES)))
    rows[1, 1] = 5.0
    rows[2, 0] = 1.0
    assert model.score(rows).tolist() == [1.25, 2.25, 3.25]
    with pytest.raises(ValueError):
        model.score(np.zeros((2, 3)))


def _synthetic():
    from zeromem.bench.ranker_data import Pools

    rng = np.random.default_rng(7)
    queries, per = 40, 12
    features = rng.random((queries * per, len(FEATURES)))
    label = (features[:, 0] + 0.3 * rng.random(queries * per) > 0.9).astype(np.int8)
    label[::per] = 1  # every question has a gold turn: the trainer keeps them all
    query = np.repeat(np.arange(queries), per).astype(np.int32)
    hand = np.tile(np.arange(per), queries).astype(np.int16)
    return Pools(features, label, hand, query, np.array([f"q{i}" for i in range(queries)]),
                 np.array(["all"] * queries), (np.arange(queries) % 2).astype(np.int8),
                 np.bincount(query, weights=label).astype(np.int32))


def test_training_twice_gives_the_same_bytes_and_lightgbms_scores():
    lgb = pytest.importorskip("lightgbm")
    from zeromem.bench import ranker_train

    pools = _synthetic()
    params = {**ranker_train.PARAMS, "min_data_in_leaf": 5}
    first = ranker_train.train(pools, params, rounds=20, start_weight=2.0)
    second = ranker_train.train(pools, params, rounds=20, start_weight=2.0)
    assert ranker_train.model_bytes(first) == ranker_train.model_bytes(second)
    # the exported trees score as LightGBM does, from the same start
    start = -2.0 * pools.features[:, FEATURES.index("hand_rank")]
    sizes = np.bincount(pools.query)
    booster = lgb.train(params, lgb.Dataset(pools.features, label=pools.label.astype(float), group=sizes,
                                            init_score=start, feature_name=list(FEATURES),
                                            params={"verbose": -1, "max_bin": 255, "seed": 29}),
                        num_boost_round=20)
    assert np.allclose(ranker_train.score(first, pools), booster.predict(pools.features, raw_score=True) + start,
                       atol=1e-9)


def test_metrics_read_the_hand_order_and_a_scored_order():
    from zeromem.bench import ranker_train

    pools = _synthetic()
    hand = ranker_train.rankings(pools, None)
    assert all(len(r) == 12 for r in hand)
    perfect = ranker_train.rankings(pools, pools.label.astype(float))
    scores = ranker_train.metrics(pools, perfect, "memdaily")
    assert scores["hit@1"] == 100.0


def test_a_model_that_starts_from_the_hand_order_returns_the_same_evidence(tmp_path, monkeypatch):
    import zeromem.retrieval.engine as engine

    keep_hand = from_document({"format": "zeromem-ranker/1", "features": list(FEATURES), "depth": 0,
                               "trees": [], "linear": {"hand_rank": -1.0}})
    monkeypatch.setattr(engine, "learned_model", lambda: keep_hand)
    query = "Where did Melanie go camping with her kids?"
    plain = _memory(tmp_path / "a")
    learned = _memory(tmp_path / "b", learned_ranker=True)
    hand = [e.text for e in plain.search(query, user="u", k=3)]
    assert [e.text for e in learned.search(query, user="u", k=3)] == hand
    # and a model that prefers the pool's last candidates changes the order
    reverse = from_document({"format": "zeromem-ranker/1", "features": list(FEATURES), "depth": 0,
                             "trees": [], "linear": {"score_rank": 1.0}})
    monkeypatch.setattr(engine, "learned_model", lambda: reverse)
    assert [e.text for e in learned.search(query, user="u", k=3)] != hand
    plain.close()
    learned.close()


def test_no_shipped_model_is_a_clear_error(monkeypatch):
    from zeromem.retrieval import learned

    monkeypatch.setattr(learned, "SHIPPED", "no-such-ranker.json")
    learned.shipped.cache_clear()
    with pytest.raises(FileNotFoundError, match="train-ranker"):
        learned.shipped()
    learned.shipped.cache_clear()


def _dead_pid() -> int:
    import os

    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1


def test_a_pool_memory_stopped_mid_ingest_is_built_again(tmp_path):
    import os

    from zeromem.bench.memories import memory_path, stored_memory
    from zeromem.bench.records import Corpus, Unit

    drafts = [{"text": f"Turn {i} is about the blue kite number {i}.", "session": "s1",
               "speaker": "Ann", "source_id": f"t{i}"} for i in range(6)]
    corpus = Corpus("c1", [Unit(d["source_id"], d, d["text"]) for d in drafts], [])
    config = Config(index_on_write=False)
    path = memory_path(tmp_path, corpus)
    # a run that died mid-ingest left a partial store; one still running has its own
    stopped = tmp_path / f"{path.stem}.{_dead_pid()}.0000.partial.db"
    running = tmp_path / f"{path.stem}.{os.getpid()}.ffff.partial.db"
    for left_by in (stopped, running):
        with Memory(left_by, user="c1", config=config) as left:
            left.add_many(drafts[:2], user="c1")
    mem, ingest_ms = stored_memory(tmp_path, corpus, config)
    with mem:
        assert len(mem.list(limit=100, user="c1")) == 6
    assert ingest_ms is not None and ingest_ms > 0
    assert not stopped.exists() and running.exists()
    assert sorted(p.name for p in tmp_path.glob("*.partial.db")) == [running.name]
    assert not list(tmp_path.glob(f"{path.name}-wal"))  # the published file holds everything
    # a complete store is reopened, not built again
    stamp = path.stat().st_mtime_ns
    mem, ingest_ms = stored_memory(tmp_path, corpus, config)
    with mem:
        assert len(mem.list(limit=100, user="c1")) == 6
    assert ingest_ms is None and path.stat().st_mtime_ns == stamp
    # the name follows the corpus's content: the same units, the same file; other units, another
    assert memory_path(tmp_path, Corpus("c1", list(corpus.units), [])) == path
    edited = [Unit(u.key, {**u.draft, "text": u.draft["text"] + "!"}, u.text) for u in corpus.units]
    assert memory_path(tmp_path, Corpus("c1", edited, [])) != path
    assert memory_path(tmp_path, Corpus("c2", list(corpus.units), [])) != path


def test_two_runs_building_one_memory_at_once_both_get_it_whole(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from zeromem.bench.memories import memory_path, stored_memory
    from zeromem.bench.records import Corpus, Unit

    drafts = [{"text": f"Entry {i}: the green boat sailed to island {i}.", "session": f"s{i % 3}",
               "speaker": "Bo", "source_id": f"e{i}"} for i in range(12)]
    corpus = Corpus("race", [Unit(d["source_id"], d, d["text"]) for d in drafts], [])
    config = Config(index_on_write=False)

    def build(_: int) -> int:
        mem, _ms = stored_memory(tmp_path, corpus, config)
        with mem:
            return len(mem.list(limit=100, user="race"))

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(build, range(2))) == [12, 12]
    assert [p.name for p in tmp_path.glob("*.db")] == [memory_path(tmp_path, corpus).name]
