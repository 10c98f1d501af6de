import numpy as np
import pytest
import scipy.sparse as sp

from zeromem.views.ppr import personalized_pagerank, push_pagerank, row_normalize


def test_row_normalize_rows_sum_to_one_and_empty_rows_stay_empty():
    adjacency = sp.csr_matrix(np.array([[0, 2, 2], [1, 0, 0], [0, 0, 0]], dtype=float))
    p = row_normalize(adjacency).toarray()
    assert np.allclose(p.sum(axis=1), [1, 1, 0])
    assert np.allclose(p[0], [0, 0.5, 0.5])


def test_two_node_closed_form():
    # π0 = 0.5 + 0.5 π1, π1 = 0.5 π0  →  π = (2/3, 1/3)
    p = row_normalize(sp.csr_matrix(np.array([[0, 1], [1, 0]], dtype=float)))
    pi = personalized_pagerank(p, np.array([1.0, 0.0]), damping=0.5)
    assert np.allclose(pi, [2 / 3, 1 / 3], atol=1e-7)


def test_matches_linear_solve_on_random_graph():
    rng = np.random.default_rng(0)
    dense = (rng.random((30, 30)) < 0.2) * rng.random((30, 30))
    p = row_normalize(sp.csr_matrix(dense))
    r = np.zeros(30)
    r[[3, 7]] = [0.7, 0.3]
    gamma = 0.6
    pi = personalized_pagerank(p, r, damping=gamma, tol=1e-12, max_iter=500)
    # Dangling mass returns to r: π = (1−γ) r + γ (Pᵀ π + (d·π) r)
    pt = p.toarray().T
    dangling = (p.toarray().sum(axis=1) == 0).astype(float)
    system = np.eye(30) - gamma * (pt + np.outer(r, dangling))
    expected = np.linalg.solve(system, (1 - gamma) * r)
    assert np.allclose(pi, expected, atol=1e-9)
    assert pi.sum() == pytest.approx(1.0)


def test_zero_restart_gives_zero_and_bad_damping_is_refused():
    p = row_normalize(sp.identity(3, format="csr"))
    assert not personalized_pagerank(p, np.zeros(3)).any()
    with pytest.raises(ValueError):
        personalized_pagerank(p, np.ones(3), damping=1.0)


def _symmetric_graph(n: int, seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """A random weighted undirected graph in which every node has an edge (a ring plus chords)."""
    rng = np.random.default_rng(seed)
    dense = np.triu((rng.random((n, n)) < 0.15) * rng.random((n, n)), k=1)
    for i in range(n):
        dense[min(i, (i + 1) % n), max(i, (i + 1) % n)] += 0.5
    adjacency = sp.csr_matrix(dense + dense.T)
    return adjacency, np.asarray(adjacency.sum(axis=1)).ravel()


def test_push_underestimates_exact_ppr_by_at_most_epsilon_times_degree():
    adjacency, degree = _symmetric_graph(40, seed=1)
    p = row_normalize(adjacency)
    r = np.zeros(40)
    r[[2, 17]] = [0.8, 0.2]
    exact = personalized_pagerank(p, r, damping=0.6, tol=1e-14, max_iter=1000)
    for epsilon in (1e-2, 1e-3, 1e-5):
        approx = push_pagerank(p, r, degree=degree, damping=0.6, epsilon=epsilon)
        gap = exact - approx
        assert gap.min() >= -1e-12
        assert (gap <= epsilon * degree + 1e-12).all()
    assert np.abs(exact - push_pagerank(p, r, degree=degree, damping=0.6, epsilon=1e-9)).max() < 1e-8


def test_push_returns_mass_of_an_isolated_restart_node_like_power_iteration():
    adjacency, degree = _symmetric_graph(12, seed=2)
    adjacency = sp.block_diag([adjacency, sp.csr_matrix((1, 1))], format="csr")  # node 12: no edges
    degree = np.append(degree, 0.0)
    p = row_normalize(adjacency)
    r = np.zeros(13)
    r[[0, 12]] = [0.5, 0.5]
    exact = personalized_pagerank(p, r, damping=0.6, tol=1e-14, max_iter=1000)
    approx = push_pagerank(p, r, degree=degree, damping=0.6, epsilon=1e-8)
    assert np.abs(exact - approx).max() < 1e-6


def test_push_is_deterministic_and_refuses_bad_parameters():
    adjacency, degree = _symmetric_graph(30, seed=3)
    p = row_normalize(adjacency)
    r = np.zeros(30)
    r[5] = 1.0
    first = push_pagerank(p, r, degree=degree, epsilon=1e-4)
    assert first.tobytes() == push_pagerank(p, r, degree=degree, epsilon=1e-4).tobytes()
    assert not push_pagerank(p, np.zeros(30), degree=degree, epsilon=1e-4).any()
    with pytest.raises(ValueError):
        push_pagerank(p, r, degree=degree, epsilon=0.0)
    with pytest.raises(ValueError):
        push_pagerank(p, r, degree=degree, damping=1.0, epsilon=1e-4)
