import numpy as np
import pytest
import scipy.sparse as sp

from zeromem.views.ppr import personalized_pagerank, row_normalize


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
