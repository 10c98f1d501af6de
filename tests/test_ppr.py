import numpy as np
import pytest
import scipy.sparse as sp

from zeromem.views.ppr import personalized_pagerank, push_pagerank


def _degree(adjacency: sp.csr_matrix) -> np.ndarray:
    return np.asarray(adjacency.sum(axis=1)).ravel()


def test_two_node_closed_form():
    # π0 = 0.5 + 0.5 π1, π1 = 0.5 π0  →  π = (2/3, 1/3)
    a = sp.csr_matrix(np.array([[0, 1], [1, 0]], dtype=float))
    pi = personalized_pagerank([a], _degree(a), np.array([1.0, 0.0]), damping=0.5)
    assert np.allclose(pi, [2 / 3, 1 / 3], atol=1e-7)


def _symmetric_graph(n: int, seed: int, *, isolated: int = 0) -> sp.csr_matrix:
    """A random weighted undirected graph: a ring plus chords, then ``isolated`` edgeless nodes."""
    rng = np.random.default_rng(seed)
    dense = np.triu((rng.random((n, n)) < 0.15) * rng.random((n, n)), k=1)
    for i in range(n):
        dense[min(i, (i + 1) % n), max(i, (i + 1) % n)] += 0.5
    adjacency = sp.csr_matrix(dense + dense.T)
    if isolated:
        adjacency = sp.block_diag([adjacency, sp.csr_matrix((isolated, isolated))], format="csr")
    return adjacency


def test_matches_linear_solve_with_dangling_mass_returned_to_the_restart():
    a = _symmetric_graph(30, seed=0, isolated=2)
    n = a.shape[0]
    r = np.zeros(n)
    r[[3, 7, n - 1]] = [0.5, 0.3, 0.2]
    gamma = 0.6
    degree = _degree(a)
    pi = personalized_pagerank([a], degree, r, damping=gamma, tol=1e-12, max_iter=500)
    # π = (1−γ) r + γ (Pᵀ π + (d·π) r), P = D⁻¹A
    p = np.divide(a.toarray(), degree[:, None], out=np.zeros((n, n)), where=degree[:, None] > 0)
    dangling = (degree == 0).astype(float)
    system = np.eye(n) - gamma * (p.T + np.outer(r, dangling))
    expected = np.linalg.solve(system, (1 - gamma) * r)
    assert np.allclose(pi, expected, atol=1e-9)
    assert pi.sum() == pytest.approx(1.0)


def test_an_adjacency_given_in_parts_is_their_sum():
    a = _symmetric_graph(40, seed=5)
    upper = sp.triu(a, format="csr")
    base, delta = sp.csr_matrix(upper + upper.T - a.multiply(0.5)), sp.csr_matrix(a.multiply(0.5))
    r = np.zeros(40)
    r[[1, 9]] = [0.6, 0.4]
    whole = personalized_pagerank([a], _degree(a), r, tol=1e-12, max_iter=500)
    parts = personalized_pagerank([base, delta], _degree(a), r, tol=1e-12, max_iter=500)
    assert np.allclose(whole, parts, atol=1e-12)
    assert np.allclose(push_pagerank([a], _degree(a), r, epsilon=1e-9),
                       push_pagerank([base, delta], _degree(a), r, epsilon=1e-9), atol=1e-9)


def test_zero_restart_gives_zero_and_bad_damping_is_refused():
    a = _symmetric_graph(5, seed=4)
    assert not personalized_pagerank([a], _degree(a), np.zeros(5)).any()
    with pytest.raises(ValueError):
        personalized_pagerank([a], _degree(a), np.ones(5), damping=1.0)


def test_push_underestimates_exact_ppr_by_at_most_epsilon_times_degree():
    a = _symmetric_graph(40, seed=1)
    degree = _degree(a)
    r = np.zeros(40)
    r[[2, 17]] = [0.8, 0.2]
    exact = personalized_pagerank([a], degree, r, damping=0.6, tol=1e-14, max_iter=1000)
    for epsilon in (1e-2, 1e-3, 1e-5):
        approx = push_pagerank([a], degree, r, damping=0.6, epsilon=epsilon)
        gap = exact - approx
        assert gap.min() >= -1e-12
        assert (gap <= epsilon * degree + 1e-12).all()
    assert np.abs(exact - push_pagerank([a], degree, r, damping=0.6, epsilon=1e-9)).max() < 1e-8


def test_push_returns_mass_of_an_isolated_restart_node_like_power_iteration():
    a = _symmetric_graph(12, seed=2, isolated=1)  # node 12: no edges
    degree = _degree(a)
    r = np.zeros(13)
    r[[0, 12]] = [0.5, 0.5]
    exact = personalized_pagerank([a], degree, r, damping=0.6, tol=1e-14, max_iter=1000)
    approx = push_pagerank([a], degree, r, damping=0.6, epsilon=1e-8)
    assert np.abs(exact - approx).max() < 1e-6


def test_push_is_deterministic_and_refuses_bad_parameters():
    a = _symmetric_graph(30, seed=3)
    degree = _degree(a)
    r = np.zeros(30)
    r[5] = 1.0
    first = push_pagerank([a], degree, r, epsilon=1e-4)
    assert first.tobytes() == push_pagerank([a], degree, r, epsilon=1e-4).tobytes()
    assert not push_pagerank([a], degree, np.zeros(30), epsilon=1e-4).any()
    with pytest.raises(ValueError):
        push_pagerank([a], degree, r, epsilon=0.0)
    with pytest.raises(ValueError):
        push_pagerank([a], degree, r, damping=1.0, epsilon=1e-4)
