"""Route(q) ∈ {relational, local} and the view weights ρ / 1 − ρ (docs/design.md#query-profile-and-routing).

Relational questions gather facts spread across the history (aggregation, several named
entities, lists): the entity graph leads. Local questions pin one moment (a time cue, a session
boundary, a single fact): the temporal hierarchy leads. Both views always stay active; only their
weights change.
"""

from __future__ import annotations

from dataclasses import dataclass

from .profile import QueryProfile, is_first_person

DEFAULT_RHO = 0.6


@dataclass(frozen=True)
class Route:
    primary: str  # "relational" or "local"
    rho: float

    def weights(self) -> tuple[float, float]:
        """(graph weight, hierarchy weight)."""
        return (self.rho, 1 - self.rho) if self.primary == "relational" else (1 - self.rho, self.rho)


def route(profile: QueryProfile, rho: float = DEFAULT_RHO, local_rho: float | None = None) -> Route:
    """Score the two routes from the profile; ties go local (the cheaper, safer view).

    ``rho`` is the primary view's weight on relational queries, ``local_rho`` on local ones
    (defaults to ``rho``): fixing one ρ for both was a stated weakness of the paper.
    """
    relational = 0
    local = 0
    # "How long was I in Japan?" names one place, not two. (A date stays a name here: it counts
    # as a time cue too, and dropping it moved HotpotQA R@2 83.1 → 82.8; docs/decisions/0058-subject-never-wrote.md.)
    names = [name for name in profile.names if not is_first_person(name)]
    if len(names) >= 2:
        relational += 2
    elif names and not profile.subject:
        relational += 1
    if profile.bridge:
        relational += 1
    if profile.aggregation or profile.answer_type == "list":
        relational += 1
    if len(profile.mentioned_speakers) > 1:
        relational += 1
    if profile.subject:
        local += 1  # a personal question about a participant: its session context matters
    if profile.temporal_cues or profile.boundary:
        local += 2
    if profile.asks_time or profile.answer_type in ("date", "yes/no"):
        local += 1
    if relational > local:
        return Route("relational", rho)
    return Route("local", rho if local_rho is None else local_rho)
