"""BM25 over pre-tokenized units, kept up to date one document at a time.

Scoring is Lucene's BM25 (the default similarity of Lucene/Elasticsearch):

    idf(t)    = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d)  = Σ_{t ∈ q} idf(t) · tf(t,d) / (tf(t,d) + k1 · (1 - b + b · |d| / avgdl))

with k1 = 1.2, b = 0.75; N and avgdl count the documents that have at least one token (as
Lucene's docCount does), so an empty unit neither matches nor shifts anyone's score. A query
token that occurs twice counts twice; tokens absent from the index contribute nothing.

Why not bm25s any more: bm25s bakes N, avgdl and idf into a precomputed sparse matrix, so one
added document changes every weight and the whole matrix must be rebuilt (O(scope) per write).
Here the postings keep raw term frequencies and the weights are computed at query time on the
query terms' postings only, with the *current* N, df and avgdl — the scores of a full rebuild,
exactly, after every write (tests check them against bm25s on the same tokens).

Documents live in slots. Replacing or removing a slot's document bumps the slot's generation;
postings of older generations are skipped at query time and dropped from a term's list once
they outnumber its live postings, so the lists stay within twice their live size.

Cost: ``set_document`` O(|d|); ``scores`` O(postings of the query terms).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .growable import Growable
from .ragged import Ragged
from .topk import top_k

K1 = 1.2
B = 0.75


class Vocabulary:
    """Token ↔ id, shared by the levels of one scope (ids are never reused)."""

    def __init__(self, terms: Sequence[str] = ()) -> None:
        self.terms: list[str] = list(terms)
        self.ids: dict[str, int] = {t: i for i, t in enumerate(self.terms)}

    def __len__(self) -> int:
        return len(self.terms)

    def encode(self, tokens: Sequence[str]) -> np.ndarray:
        out = np.empty(len(tokens), dtype=np.int32)
        ids = self.ids
        for i, token in enumerate(tokens):
            tid = ids.get(token)
            if tid is None:
                tid = ids[token] = len(self.terms)
                self.terms.append(token)
            out[i] = tid
        return out

    def lookup(self, tokens: Sequence[str]) -> list[int]:
        """Ids of the tokens the vocabulary knows, in order (unknown ones are skipped)."""
        return [self.ids[t] for t in tokens if t in self.ids]


class _Postings:
    __slots__ = ("docs", "gens", "stale", "tfs")

    def __init__(self) -> None:
        self.docs = Growable(np.int32, capacity=4)
        self.gens = Growable(np.int32, capacity=4)
        self.tfs = Growable(np.float32, capacity=4)  # term frequencies: small integers, exact
        self.stale = 0


class LexicalIndex:
    """BM25 over the documents (token-id arrays) held in slots 0..size-1."""

    def __init__(self, docs_tokens: Sequence[Sequence[str]] = (), *, vocabulary: Vocabulary | None = None,
                 k1: float = K1, b: float = B, remember_terms: bool = True) -> None:
        self.vocabulary = vocabulary if vocabulary is not None else Vocabulary()
        self.k1, self.b = k1, b
        self._gen = Growable(np.int32)
        self._length = Growable(np.float64)
        self._has_doc = Growable(bool, fill=False)
        # Each slot's distinct term ids (to undo df on removal). An owner that keeps the
        # documents itself passes them to ``remove_document`` instead (remember_terms=False).
        self._terms: Ragged | None = Ragged(np.int32) if remember_terms else None
        self._postings: dict[int, _Postings] = {}
        self._df = Growable(np.int64)  # per term id
        self.n_docs = 0  # documents with at least one token
        self.total_length = 0.0
        for slot, tokens in enumerate(docs_tokens):
            self.set_document(slot, self.vocabulary.encode(tokens))
        self.reserve(len(docs_tokens))

    @property
    def size(self) -> int:
        return self._gen.size

    def __len__(self) -> int:
        return self.size

    def reserve(self, size: int) -> None:
        self._gen.reserve(size)
        self._length.reserve(size)
        self._has_doc.reserve(size)
        if self._terms is not None:
            self._terms.reserve(size)

    def set_document(self, slot: int, term_ids: np.ndarray) -> None:
        """Put a document (token ids, repeats counted) into an empty ``slot`` (or, when the index
        remembers its documents, replace what was there)."""
        if self._terms is not None:
            self.remove_document(slot)
        elif slot < self.size and self._has_doc[slot]:
            raise ValueError("slot holds a document: remove_document(slot, its term ids) first")
        self.reserve(slot + 1)
        if len(term_ids) == 0:
            return
        terms, counts = np.unique(np.asarray(term_ids, dtype=np.int64), return_counts=True)
        gen = int(self._gen[slot])
        self._df.reserve(max(self._df.size, int(terms[-1]) + 1))
        for term, count in zip(terms.tolist(), counts.tolist()):
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.docs.append(slot)
            postings.gens.append(gen)
            postings.tfs.append(count)
        self._df[terms] += 1
        if self._terms is not None:
            self._terms[slot] = terms
        self._has_doc[slot] = True
        self._length[slot] = float(len(term_ids))
        self.n_docs += 1
        self.total_length += float(len(term_ids))

    def remove_document(self, slot: int, term_ids: np.ndarray | None = None) -> None:
        """Take a slot's document out; ``term_ids``: the document (required when the index
        does not remember its documents' terms)."""
        if slot >= self.size or not self._has_doc[slot]:
            return
        if self._terms is not None:
            terms = self._terms[slot]
        elif term_ids is None:
            raise ValueError("remove_document needs the document's term ids (remember_terms=False)")
        else:
            terms = np.unique(np.asarray(term_ids, dtype=np.int64)).astype(np.int32)
        self._df[terms.astype(np.int64)] -= 1
        for term in terms.tolist():
            postings = self._postings[term]
            postings.stale += 1
            if postings.stale > max(8, len(postings.docs) // 2):
                self._compact(postings)
        self._gen[slot] += 1
        self.n_docs -= 1
        self.total_length -= float(self._length[slot])
        self._length[slot] = 0.0
        if self._terms is not None:
            self._terms[slot] = ()
        self._has_doc[slot] = False

    def _compact(self, postings: _Postings) -> None:
        docs, gens, tfs = postings.docs.view(), postings.gens.view(), postings.tfs.view()
        live = self._gen.view()[docs] == gens
        kept = (docs[live].copy(), gens[live].copy(), tfs[live].copy())
        for array, values in zip((postings.docs, postings.gens, postings.tfs), kept):
            array.size = 0
            array.extend(values)
        postings.stale = 0

    def document_frequency(self, token: str) -> int:
        tid = self.vocabulary.ids.get(token)
        return 0 if tid is None or tid >= self._df.size else int(self._df[tid])

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """float32 BM25 score of every slot (zeros for empty slots and when nothing matches)."""
        out = np.zeros(self.size, dtype=np.float64)
        if self.n_docs == 0:
            return out.astype(np.float32)
        avgdl = self.total_length / self.n_docs
        gen = self._gen.view()
        lengths = self._length.view()
        df_of = self._df.view()
        for term in self.vocabulary.lookup([t for t in query_tokens if t]):
            df = int(df_of[term]) if term < len(df_of) else 0
            if df == 0:
                continue
            postings = self._postings[term]
            docs = postings.docs.view()
            tfs = postings.tfs.view()
            if postings.stale:
                live = gen[docs] == postings.gens.view()
                docs, tfs = docs[live], tfs[live]
            idf = np.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))
            norm = self.k1 * (1.0 - self.b + self.b * lengths[docs] / avgdl)
            out[docs] += idf * tfs / (tfs + norm)
        return out.astype(np.float32)

    def search(self, query_tokens: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best documents with a positive score: (indices, scores), best first,
        equal scores in index order."""
        return top_k(self.scores(query_tokens), k, positive_only=True)

    # -- persistence --------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """Arrays that ``from_state`` turns back into this index (postings grouped by term)."""
        terms = sorted(self._postings)
        lengths = [len(self._postings[t].docs) for t in terms]
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

        def joined(name: str, dtype) -> np.ndarray:
            parts = [getattr(self._postings[t], name).view() for t in terms]
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)
        remembered = {}
        if self._terms is not None:
            remembered["terms_ptr"], remembered["terms_values"] = self._terms.flat()
        return remembered | {
                "gen": self._gen.view(), "length": self._length.view(), "has_doc": self._has_doc.view(),
                "df": self._df.view(),
                "post_terms": np.asarray(terms, dtype=np.int64), "post_ptr": ptr,
                "post_docs": joined("docs", np.int32), "post_gens": joined("gens", np.int32),
                "post_tfs": joined("tfs", np.float32),
                "post_stale": np.asarray([self._postings[t].stale for t in terms], dtype=np.int64),
                "totals": np.asarray([self.n_docs, self.total_length], dtype=np.float64)}

    @classmethod
    def from_state(cls, state: dict[str, np.ndarray], vocabulary: Vocabulary) -> LexicalIndex:
        index = cls(vocabulary=vocabulary, remember_terms="terms_ptr" in state)
        index._gen = Growable.wrap(state["gen"])
        index._length = Growable.wrap(state["length"])
        index._has_doc = Growable.wrap(state["has_doc"], fill=False)
        index._df = Growable.wrap(state["df"])
        if "terms_ptr" in state:
            index._terms = Ragged(np.int32, state["terms_ptr"], state["terms_values"])
            index._terms.reserve(index._gen.size)
        ptr = state["post_ptr"]
        docs, gens, tfs = state["post_docs"], state["post_gens"], state["post_tfs"]
        for i, (term, stale) in enumerate(zip(state["post_terms"].tolist(), state["post_stale"].tolist())):
            postings = _Postings()
            lo, hi = ptr[i], ptr[i + 1]
            postings.docs = Growable.wrap(docs[lo:hi])
            postings.gens = Growable.wrap(gens[lo:hi])
            postings.tfs = Growable.wrap(tfs[lo:hi])
            postings.stale = stale
            index._postings[term] = postings
        index.n_docs = int(state["totals"][0])
        index.total_length = float(state["totals"][1])
        return index
