"""The lab: the benchmark harness (LoCoMo and HotpotQA retrieval, baselines side by side, cost
accounting), the fuzz harness and the no-answer fit. A distribution of its own (zeromem-bench,
bench/pyproject.toml) that drives zeromem; zeromem never imports it.

Every quality and speed claim of zeromem comes from here. ``zeromem bench locomo`` and
``zeromem bench hotpotqa`` (see :mod:`zeromem_bench.cli`) run zeromem and the BM25, dense and
hybrid baselines on the same data, with the same encoders, and write one JSON document.
Metric definitions live in :mod:`zeromem_bench.metrics`.
"""

from .hotpotqa import load_hotpotqa
from .locomo import load_locomo
from .runner import Corpus, Query, QueryResult, Unit, execute, make_systems, run_benchmark

__all__ = [
           "Corpus",
           "Query",
           "QueryResult",
           "Unit",
           "execute",
           "load_hotpotqa",
           "load_locomo",
           "make_systems",
           "run_benchmark",
]
