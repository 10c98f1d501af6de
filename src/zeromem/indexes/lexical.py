"""BM25 over pre-tokenized units, with a score for every unit (the engine fuses them all).

Scoring is Lucene's BM25 (the default similarity of Lucene/Elasticsearch), computed by
``bm25s`` on a sparse matrix of precomputed per-(term, unit) weights:

    idf(t)    = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d)  = Σ_{t ∈ q} idf(t) · tf(t,d) / (tf(t,d) + k1 · (1 - b + b · |d| / avgdl))

with k1 = 1.2, b = 0.75; N and avgdl count the documents that have at least one token (as
Lucene's docCount does), so an empty unit neither matches nor shifts anyone's score. A query token that occurs twice counts twice; tokens absent from the
index contribute nothing. Why bm25s and not SQLite FTS5: measured on LoCoMo turns, bm25s gives
the same recall@10 and returns scores for *all* units in one vectorized call, which FTS5 can
only do by matching every row (see docs/decisions.md).

Cost: building is O(total tokens); ``scores`` is O(postings of the query terms).
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from .topk import top_k

K1 = 1.2
B = 0.75


class LexicalIndex:
    """An immutable BM25 index over documents given as token lists (see ``encoders.tokenize``)."""

    def __init__(self, docs_tokens: Sequence[Sequence[str]], *, k1: float = K1, b: float = B) -> None:
        self.size = len(docs_tokens)
        self.k1, self.b = k1, b
        self._bm25 = None
        # Like Lucene, N and avgdl count only documents that have tokens; empty ones score 0.
        self._rows = np.asarray([i for i, doc in enumerate(docs_tokens) if len(doc)], dtype=np.int64)
        if len(self._rows):
            import bm25s

            logging.getLogger("bm25s").setLevel(logging.WARNING)
            self._bm25 = bm25s.BM25(k1=k1, b=b, method="lucene")
            self._bm25.index([list(docs_tokens[i]) for i in self._rows], show_progress=False)

    def __len__(self) -> int:
        return self.size

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """float32 BM25 score of every document, in document order (zeros when nothing matches)."""
        if self._bm25 is None:
            return np.zeros(self.size, dtype=np.float32)
        ids = self._bm25.get_tokens_ids([t for t in query_tokens if t])
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        partial = np.asarray(self._bm25.get_scores_from_ids(ids), dtype=np.float32)
        if len(self._rows) == self.size:
            return partial
        scores = np.zeros(self.size, dtype=np.float32)
        scores[self._rows] = partial
        return scores

    def search(self, query_tokens: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best documents with a positive score: (indices, scores), best first,
        equal scores in index order."""
        return top_k(self.scores(query_tokens), k, positive_only=True)
