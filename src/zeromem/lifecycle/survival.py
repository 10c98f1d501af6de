"""Survival score Ω and its interaction-count decay Ω_eff (docs/design.md#survival-score).

Laws
----
Survival score, a logistic projection of a trace's features x (each in [0, 1])::

    Ω = σ(β₀ + Σᵢ βᵢ·xᵢ),   σ(z) = 1 / (1 + e^(−z))

Features (``features``): information density ID, sentiment magnitude |S|, saturated entity
count E_norm = min(E, E_cap)/E_cap, saturated length, the eight dialogue signals (0 or 1),
and provenance: the author is the user (role ``user``), the trace has attachments, and the
caller-set importance I ∈ [0, 1] (centred: a trace without one counts as I = 0.5, i.e. 0).

Interaction-count decay, with Δn the number of newer traces in the scope (not wall-clock
time, so the state is a pure function of the trace sequence)::

    Ω_eff(Δn) = Ω · exp(−λ · (1 − η·Ω) · Δn)

The factor (1 − η·Ω) is inertia: a rich trace decays slower than an acknowledgement, so the
gap between them widens with age instead of closing.

Units and ranges: Ω, Ω_eff ∈ (0, 1), dimensionless; Δn ≥ 0 is a count of traces; λ is per
trace. Δn = 0 gives Ω_eff = Ω; Ω_eff is non-increasing in Δn and never exceeds Ω.

Worked example (the defaults below). "I'm allergic to peanuts, never put them in my food."
by the user: ID = 0.55, |S| = 0.0, E_norm = 0.0, length 14/30 = 0.47, constraint = 1::

    z = −2.2 + 1.6·0.55 + 0.8·0.47 + 3.9·1 + 0.4·1 = 3.35   →  Ω = σ(3.35) = 0.966
    after 200 newer traces:  Ω_eff = 0.966·exp(−0.001·(1 − 0.9·0.966)·200) = 0.941

"ok thanks!" by the user: ID = 0, length 0.10, ack_like = 1::

    z = −2.2 + 0.8·0.10 − 2.4 + 0.4 = −4.12  →  Ω = 0.016; after 200: 0.016·e^(−0.197) = 0.013

Cost: one ``math.exp`` per score and per decay step, no I/O, no model; the features come
from ``signals.py`` (spaCy POS + VADER + stored NER mentions + ``rules.py``).

How the constants were chosen: docs/decisions/0018-survival-score.md — the
weights by the role each signal should play (acks out first, constraints and preferences
last), then λ and η checked on two LoCoMo dev conversations and reported on the other three.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

E_CAP = 5  # entities at which E_norm saturates (DMF: most turns name at most 3-4)
LENGTH_CAP = 30  # tokens at which the length feature saturates


def _default_weights() -> dict[str, float]:
    return {
        "density": 1.6,
        "sentiment": 0.6,
        "entities": 1.2,
        "length": 0.8,
        "constraint": 3.9,
        "preference": 3.3,
        "current_state": 1.4,
        "past_state": 0.4,
        "correction": 1.2,
        "replacement": 1.0,
        "query_like": -0.6,
        "ack_like": -2.4,
        "role_user": 0.4,
        "attachments": 0.6,
        "importance": 3.0,
    }


@dataclass(frozen=True)
class SurvivalLaw:
    """The constants of Ω and Ω_eff, named and defaulted (see the module docstring)."""

    bias: float = -2.2  # β₀: a plain, short, neutral turn starts below 0.5
    weights: Mapping[str, float] = field(default_factory=_default_weights)  # βᵢ per feature
    decay: float = 0.001  # λ, per newer trace: half-life ≈ 690 traces at Ω → 0
    inertia: float = 0.9  # η ∈ [0, 1): Ω = 0.9 decays 5× slower than Ω → 0

    def omega(self, features: Mapping[str, float]) -> float:
        """Ω = σ(β₀ + Σ βᵢ·xᵢ); features missing from ``features`` count as 0."""
        z = self.bias + sum(w * float(features.get(name, 0.0)) for name, w in self.weights.items())
        return _sigmoid(z)

    def effective(self, omega: float, newer: int) -> float:
        """Ω_eff = Ω·exp(−λ(1 − ηΩ)Δn) with Δn = ``newer`` (clamped at 0)."""
        if newer <= 0 or omega <= 0.0:
            return omega
        return omega * math.exp(-self.decay * (1.0 - self.inertia * omega) * newer)

    def newer_until(self, omega: float, floor: float) -> float:
        """Δn at which Ω_eff falls to ``floor`` (inf when it never does): for explanations."""
        if omega <= floor:
            return 0.0
        rate = self.decay * (1.0 - self.inertia * omega)
        return math.inf if rate <= 0 else math.log(omega / floor) / rate


def features(*, density: float, sentiment: float, entities: int, tokens: int,
             signals: frozenset[str] | set[str], role: str | None, attachments: int,
             importance: float | None) -> dict[str, float]:
    """The feature vector x of one trace, every value in [0, 1] (importance centred on 0)."""
    x = {
        "density": _unit(density),
        "sentiment": _unit(abs(sentiment)),
        "entities": min(max(entities, 0), E_CAP) / E_CAP,
        "length": min(max(tokens, 0), LENGTH_CAP) / LENGTH_CAP,
        "role_user": 1.0 if role == "user" else 0.0,
        "attachments": 1.0 if attachments > 0 else 0.0,
        "importance": (_unit(importance) - 0.5) if importance is not None else 0.0,
    }
    for name in signals:
        x[name] = 1.0
    return x


def _unit(value: float) -> float:
    return min(max(float(value), 0.0), 1.0)


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)
