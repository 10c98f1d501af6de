"""PPR with the low-degree nodes folded (views/ppr_folded.py) solves the same law as the plain iteration."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from zeromem.views.ppr import personalized_pagerank
from zeromem.views.ppr_folded import Folding, folded_pagerank_from


def folded_pagerank(folding: Folding, restart: np.ndarray, **options) -> np.ndarray:
    """The folded PPR of a dense restart vector (the form ``ppr.personalized_pagerank`` takes)."""
    seeds = np.flatnonzero(restart)
    return folded_pagerank_from(folding, seeds, restart[seeds], **options)


def _degree(adjacency: sp.csr_matrix) -> np.ndarray:
    return np.asarray(adjacency.sum(axis=1)).ravel()


def _graph(seed: int, *, core: int = 30, leaves: int = 20, pairs: int = 2, isolated: int = 3) -> sp.csr_matrix:
    """Core nodes joined at random, leaves hung on them, isolated leaf pairs and edgeless nodes."""
    rng = np.random.default_rng(seed)
    rows, cols = [], []
    for _ in range(2 * core):
        a, b = (int(x) for x in rng.integers(0, core, 2))
        if a != b:
            rows += [a, b]
            cols += [b, a]
    for leaf in range(core, core + leaves):
        anchor = int(rng.integers(0, core))
        rows += [leaf, anchor]
        cols += [anchor, leaf]
    first_pair = core + leaves
    for p in range(pairs):
        a, b = first_pair + 2 * p, first_pair + 2 * p + 1
        rows += [a, b]
        cols += [b, a]
    n = first_pair + 2 * pairs + isolated
    weights = np.repeat(rng.uniform(0.1, 2.0, len(rows) // 2), 2)
    return sp.csr_matrix((weights, (rows, cols)), shape=(n, n))


def test_folding_leaves_no_edge_among_folded_nodes_and_keeps_busy_nodes():
    a = _graph(0, core=30, leaves=20, pairs=2, isolated=3)
    folding = Folding.build([a], _degree(a), 0.6)
    folded = set(folding.folded.tolist())
    assert set(range(30, 50)) <= folded  # every leaf on the core
    assert {50, 52} <= folded and not {51, 53} & folded  # of two leaves joined, the first folds
    assert not {54, 55, 56} & (set(folding.core.tolist()) | folded)  # no edges: neither
    rows, cols = a.nonzero()
    assert not any(r in folded and c in folded for r, c in zip(rows.tolist(), cols.tolist()))
    neighbours = np.diff(a.indptr)
    assert all(1 <= neighbours[node] <= 4 for node in folded)
    assert set(np.flatnonzero(neighbours > 4).tolist()) <= set(folding.core.tolist())


def test_leaves_alone_fold_with_one_neighbour_at_most():
    a = _graph(1)
    folding = Folding.build([a], _degree(a), 0.6, max_neighbours=1)
    assert all(np.diff(a.indptr)[node] == 1 for node in folding.folded.tolist())


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), damping=st.sampled_from([0.3, 0.6, 0.85]),
       restarts=st.lists(st.integers(0, 56), min_size=1, max_size=6, unique=True),
       max_neighbours=st.sampled_from([1, 2, 4, 8]))
def test_folded_equals_plain_power_iteration(seed, damping, restarts, max_neighbours):
    a = _graph(seed)
    degree = _degree(a)
    r = np.zeros(a.shape[0])
    r[restarts] = np.linspace(1.0, 0.2, len(restarts))  # leaves, pairs and edgeless nodes too
    plain = personalized_pagerank([a], degree, r, damping=damping, tol=1e-13, max_iter=3000)
    folded = folded_pagerank(Folding.build([a], degree, damping, max_neighbours), r, tol=1e-13, max_iter=3000)
    assert np.abs(plain - folded).max() < 1e-9
    assert folded.sum() == pytest.approx(1.0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n_out=st.integers(0, 60),
       restarts=st.lists(st.integers(0, 56), min_size=1, max_size=6, unique=True))
def test_asking_for_the_first_nodes_gives_exactly_those_of_the_whole_answer(seed, n_out, restarts):
    a = _graph(seed)
    folding = Folding.build([a], _degree(a), 0.6)
    r = np.zeros(a.shape[0])
    r[restarts] = np.linspace(1.0, 0.2, len(restarts))
    whole = folded_pagerank(folding, r, tol=1e-4, max_iter=50)
    first = folded_pagerank(folding, r, tol=1e-4, max_iter=50, n_out=n_out)
    assert np.array_equal(first, whole[:n_out])  # bit for bit: the same sums, fewer outputs


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), restarts=st.lists(st.integers(0, 56), min_size=1, max_size=6, unique=True))
def test_restart_given_by_its_entries_equals_the_dense_vector(seed, restarts):
    a = _graph(seed)
    folding = Folding.build([a], _degree(a), 0.6)
    mass = np.linspace(1.0, 0.2, len(restarts))
    r = np.zeros(a.shape[0])
    r[restarts] = mass
    dense = folded_pagerank(folding, r, tol=1e-10, max_iter=200, n_out=40)
    # any order of the entries, and entries that hold nothing, give the same answer
    order = np.argsort(-np.asarray(restarts), kind="stable")
    spare = next(node for node in range(57) if node not in restarts)
    sparse = folded_pagerank_from(folding, np.append(np.asarray(restarts)[order], spare), np.append(mass[order], 0.0),
                                  tol=1e-10, max_iter=200, n_out=40)
    assert np.abs(dense - sparse).max() < 1e-12
    assert not folded_pagerank_from(folding, np.array([3]), np.array([0.0]), tol=1e-8,
                                    max_iter=10).any()


def test_parts_with_zeroed_entries_fold_like_their_sum():
    a = _graph(3)
    removed = a.copy()
    removed.data[:] = 0.0  # a base whose entries were masked: stored, but no edges
    folding = Folding.build([removed, a], _degree(a), 0.6)
    whole = Folding.build([a], _degree(a), 0.6)
    assert np.array_equal(folding.core, whole.core) and np.array_equal(folding.folded, whole.folded)


def test_zero_restart_gives_zero_and_bad_damping_is_refused():
    a = _graph(4)
    folding = Folding.build([a], _degree(a), 0.6)
    assert not folded_pagerank(folding, np.zeros(a.shape[0]), tol=1e-8, max_iter=10).any()
    with pytest.raises(ValueError):
        Folding.build([a], _degree(a), 1.0)


def test_folding_leaves_read_only_parts_untouched():
    a = _graph(5)
    a.data[:3] = 0.0  # stored zeros, as a base keeps for removed turns
    for array in (a.data, a.indices, a.indptr):
        array.setflags(write=False)  # as a snapshot's memory-mapped arrays are
    before = (a.data.copy(), a.indices.copy(), a.indptr.copy())
    Folding.build([a], _degree(a), 0.6)
    assert all(np.array_equal(x, y) for x, y in zip(before, (a.data, a.indices, a.indptr)))
