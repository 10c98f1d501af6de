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
postings of older generations are skipped at query time. Postings are kept as a *base* (CSR by
term: one pointer array and three flat arrays, for every term together) plus a *delta* of the
postings added since, indexed by term; when the delta or the stale postings grow past a share of
the base, both are merged into a new base without the stale ones. A scope's BM25 index is then
eight arrays per level (not three arrays per term), so it costs little memory and loads from a
snapshot without a Python object per term.

Cost: ``set_document`` O(|d|) amortized; ``scores`` O(postings of the query terms).
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


MERGE_SHARE = 0.25  # delta (or stale) postings, as a share of the base, that trigger a merge
MERGE_MIN = 4096  # ... but never merge for fewer postings than this


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
        # Postings: base (CSR by term id) + delta (appended since the last merge).
        self._base_ptr = np.zeros(1, dtype=np.int64)
        self._base_docs = np.zeros(0, dtype=np.int32)
        self._base_gens = np.zeros(0, dtype=np.int32)
        self._base_tfs = np.zeros(0, dtype=np.float32)  # term frequencies: small integers, exact
        self._delta_docs = Growable(np.int32)
        self._delta_gens = Growable(np.int32)
        self._delta_tfs = Growable(np.float32)
        self._delta_terms = Growable(np.int32)
        self._delta_of_term: dict[int, list[int]] = {}  # term id → positions in the delta
        self._stale = 0  # postings of removed documents still stored
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
        start = self._delta_terms.size
        self._delta_terms.extend(terms)
        self._delta_docs.extend(np.full(len(terms), slot))
        self._delta_gens.extend(np.full(len(terms), gen))
        self._delta_tfs.extend(counts)
        of_term = self._delta_of_term
        for position, term in enumerate(terms.tolist(), start):
            found = of_term.get(term)
            if found is None:
                of_term[term] = [position]
            else:
                found.append(position)
        self._df[terms] += 1
        if self._terms is not None:
            self._terms[slot] = terms
        self._has_doc[slot] = True
        self._length[slot] = float(len(term_ids))
        self.n_docs += 1
        self.total_length += float(len(term_ids))
        self._merge_if_due()

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
        self._stale += len(terms)
        self._gen[slot] += 1
        self.n_docs -= 1
        self.total_length -= float(self._length[slot])
        self._length[slot] = 0.0
        if self._terms is not None:
            self._terms[slot] = ()
        self._has_doc[slot] = False

        self._merge_if_due()

    def _merge_if_due(self) -> None:
        threshold = max(MERGE_MIN, MERGE_SHARE * len(self._base_docs))
        if self._delta_terms.size > threshold or self._stale > threshold:
            self._merge()

    def _merge(self) -> None:
        """One base from base + delta, without the postings of removed documents; within a term,
        postings keep the order they were added in (a stable sort by term)."""
        base_terms = np.repeat(np.arange(len(self._base_ptr) - 1, dtype=np.int64), np.diff(self._base_ptr))
        terms = np.concatenate([base_terms, self._delta_terms.view().astype(np.int64)])
        docs = np.concatenate([self._base_docs, self._delta_docs.view()])
        gens = np.concatenate([self._base_gens, self._delta_gens.view()])
        tfs = np.concatenate([self._base_tfs, self._delta_tfs.view()])
        live = self._gen.view()[docs] == gens
        order = np.argsort(terms[live], kind="stable")
        terms, docs, gens, tfs = terms[live][order], docs[live][order], gens[live][order], tfs[live][order]
        n_terms = max(self._df.size, len(self._base_ptr) - 1)
        self._base_ptr = np.concatenate([[0], np.cumsum(np.bincount(terms, minlength=n_terms))]).astype(np.int64)
        self._base_docs, self._base_gens, self._base_tfs = docs, gens, tfs
        for delta in (self._delta_terms, self._delta_docs, self._delta_gens, self._delta_tfs):
            delta.size = 0
        self._delta_of_term = {}
        self._stale = 0

    def _postings(self, term: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(documents, generations, term frequencies) of every stored posting of ``term``."""
        lo = hi = 0
        if term + 1 < len(self._base_ptr):
            lo, hi = int(self._base_ptr[term]), int(self._base_ptr[term + 1])
        docs, gens, tfs = self._base_docs[lo:hi], self._base_gens[lo:hi], self._base_tfs[lo:hi]
        added = self._delta_of_term.get(term)
        if added:
            at = np.asarray(added, dtype=np.int64)
            docs = np.concatenate([docs, self._delta_docs.view()[at]])
            gens = np.concatenate([gens, self._delta_gens.view()[at]])
            tfs = np.concatenate([tfs, self._delta_tfs.view()[at]])
        return docs, gens, tfs

    def document_frequency(self, token: str) -> int:
        tid = self.vocabulary.ids.get(token)
        return 0 if tid is None or tid >= self._df.size else int(self._df[tid])

    def documents(self, token: str) -> np.ndarray:
        """The slots whose current document contains ``token`` (in the order they were added)."""
        tid = self.vocabulary.ids.get(token)
        if tid is None or tid >= self._df.size or self._df[tid] == 0:
            return np.zeros(0, dtype=np.int64)
        docs, gens, _ = self._postings(tid)
        if self._stale:
            docs = docs[self._gen.view()[docs] == gens]
        return docs.astype(np.int64)

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
            docs, gens, tfs = self._postings(term)
            if self._stale:
                live = gen[docs] == gens
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
        """Arrays that ``from_state`` turns back into this index (the postings merged)."""
        if self._delta_terms.size or self._stale:
            self._merge()
        remembered = {}
        if self._terms is not None:
            remembered["terms_ptr"], remembered["terms_values"] = self._terms.flat()
        return remembered | {
                "gen": self._gen.view(), "length": self._length.view(), "has_doc": self._has_doc.view(),
                "df": self._df.view(), "post_ptr": self._base_ptr, "post_docs": self._base_docs,
                "post_gens": self._base_gens, "post_tfs": self._base_tfs,
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
        index._base_ptr = np.asarray(state["post_ptr"], dtype=np.int64)
        index._base_docs = state["post_docs"]
        index._base_gens = state["post_gens"]
        index._base_tfs = state["post_tfs"]
        index.n_docs = int(state["totals"][0])
        index.total_length = float(state["totals"][1])
        return index
