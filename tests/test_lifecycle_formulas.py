"""The laws of lifecycle/survival.py: hand-computed values, monotonicity, limits."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeromem.lifecycle.survival import E_CAP, LENGTH_CAP, SurvivalLaw, features


def test_omega_is_the_logistic_of_the_weighted_features():
    law = SurvivalLaw(bias=-1.0, weights={"density": 2.0, "constraint": 3.0})
    # z = -1 + 2·0.5 + 3·1 = 3  →  σ(3)
    assert law.omega({"density": 0.5, "constraint": 1.0}) == pytest.approx(1 / (1 + math.exp(-3)))
    assert law.omega({}) == pytest.approx(1 / (1 + math.exp(1)))  # missing features count as 0


def test_the_docstrings_worked_example():
    law = SurvivalLaw()
    x = features(density=0.55, sentiment=0.0, entities=0, tokens=14, signals={"constraint"},
                 role="user", attachments=0, importance=None)
    z = -2.2 + 1.6 * 0.55 + 0.8 * 14 / 30 + 3.9 + 0.4
    assert law.omega(x) == pytest.approx(1 / (1 + math.exp(-z)))
    omega = law.omega(x)
    assert law.effective(omega, 200) == pytest.approx(omega * math.exp(-0.001 * (1 - 0.9 * omega) * 200))
    ack = features(density=0.0, sentiment=0.0, entities=0, tokens=3, signals={"ack_like"},
                   role="user", attachments=0, importance=None)
    assert law.omega(ack) < 0.05
    assert omega > 0.9


def test_decay_hand_computed_and_limits():
    law = SurvivalLaw(decay=0.1, inertia=0.5)
    assert law.effective(0.8, 0) == 0.8  # Δn = 0: no decay
    assert law.effective(0.8, -3) == 0.8  # a future anchor does not amplify
    assert law.effective(0.8, 10) == pytest.approx(0.8 * math.exp(-0.1 * (1 - 0.4) * 10))
    assert law.effective(0.0, 10) == 0.0


def test_inertia_makes_rich_traces_decay_slower():
    law = SurvivalLaw()
    rich, poor = 0.9, 0.1
    assert law.effective(rich, 500) / rich > law.effective(poor, 500) / poor
    assert law.newer_until(rich, 0.05) > law.newer_until(poor, 0.05)
    assert law.newer_until(0.04, 0.05) == 0.0
    assert SurvivalLaw(inertia=1.0).newer_until(1.0, 0.5) == math.inf


@given(st.floats(0, 1), st.integers(0, 10_000), st.integers(0, 10_000))
def test_decay_is_monotone_and_bounded(omega, a, b):
    law = SurvivalLaw()
    lo, hi = sorted((a, b))
    assert 0.0 <= law.effective(omega, hi) <= law.effective(omega, lo) <= omega


def test_features_saturate_and_stay_in_range():
    x = features(density=1.7, sentiment=-0.9, entities=E_CAP * 3, tokens=LENGTH_CAP * 5,
                 signals={"preference"}, role="assistant", attachments=2, importance=1.0)
    assert x["density"] == 1.0 and x["sentiment"] == 0.9 and x["entities"] == 1.0 and x["length"] == 1.0
    assert x["role_user"] == 0.0 and x["attachments"] == 1.0 and x["importance"] == 0.5
    assert x["preference"] == 1.0
    low = features(density=0.2, sentiment=0.0, entities=2, tokens=6, signals=set(), role="user",
                   attachments=0, importance=0.0)
    assert low["entities"] == 2 / E_CAP and low["importance"] == -0.5


def test_importance_raises_omega():
    law = SurvivalLaw()
    scores = [law.omega(features(density=0.4, sentiment=0.1, entities=1, tokens=12, signals=set(),
                                 role="user", attachments=0, importance=v)) for v in (0.0, None, 0.5, 1.0)]
    assert scores[0] < scores[1] == scores[2] < scores[3]
