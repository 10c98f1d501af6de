"""Stored scope names that today's name rules refuse (``zeromem check-names``).

A store written before the rules of ``validate.clean_scope_part`` (no invisible or
default-ignorable characters, Unicode NFKC form) may hold scopes whose names are now refused,
and pairs of scopes whose names read the same ("alice" and "alice" + U+200D). Every call that
names such a scope is refused with the name to pass instead, so their traces are reachable only
under the old name's rules; this lists them, with the API keys bound to them, so that an
operator sees what to move or erase. It reads only the scope names, never a trace's text.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..types import Scope
from . import validate


@dataclass(frozen=True, slots=True)
class NameFinding:
    """One stored scope the rules refuse, or one of several that read the same.

    ``where``: ``"traces"`` or ``"api key <id>"``; ``problem``: the refusal (the error a call
    naming the scope gets), or which other scopes it reads the same as.
    """

    user: str | None
    agent: str | None
    where: str
    problem: str


@dataclass(frozen=True, slots=True)
class NameReport:
    """What ``check_names`` found: the findings, and how many scopes and keys it read."""

    findings: tuple[NameFinding, ...]
    scopes: int
    keys: int
    rules: tuple[str, ...] = field(default=(
        "no invisible, default-ignorable or direction-changing character (validate.invisible_char)",
        "Unicode NFKC form"))

    @property
    def clean(self) -> bool:
        return not self.findings

    def as_dict(self) -> dict[str, Any]:
        return {"scopes": self.scopes, "keys": self.keys, "clean": self.clean, "rules": list(self.rules),
                "findings": [{"user": f.user, "agent": f.agent, "where": f.where, "problem": f.problem}
                             for f in self.findings]}


def reads_as(value: str | None) -> str:
    """The name ``value`` reads as: its visible characters in NFKC form ("" for None)."""
    if not value:
        return ""
    visible = "".join(char for char in value if validate.invisible_char(char) is None)
    return unicodedata.normalize("NFKC", visible).strip()


def check_names(scopes: Iterable[Scope], keys: Iterable[tuple[str, Scope]]) -> NameReport:
    """The findings over the stored ``scopes`` (those with traces) and the ``(key id, scope)``
    of every API key, in a fixed order: refused names first, then names that read the same."""
    scopes = list(scopes)
    keys = list(keys)
    findings: list[NameFinding] = []
    places = [("traces", scope) for scope in scopes] + [(f"api key {kid}", scope) for kid, scope in keys]
    for where, scope in places:
        for part, value in (("user", scope.user), ("agent", scope.agent)):
            problem = None if value is None else validate.name_problem(value, part)
            if problem is not None:
                findings.append(NameFinding(scope.user, scope.agent, where, problem))
    readings: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for _, scope in places:
        readings[(reads_as(scope.user), reads_as(scope.agent))].add(scope.key)
    for reading, keys_alike in sorted(readings.items()):
        if len(keys_alike) > 1:
            alike = sorted(keys_alike)
            for user, agent in alike:
                others = ", ".join(f"(user={u!r}, agent={a!r})" for u, a in alike if (u, a) != (user, agent))
                findings.append(NameFinding(user or None, agent or None, "names",
                                            f"reads the same as {others}: "
                                            f"(user={reading[0]!r}, agent={reading[1]!r})"))
    return NameReport(tuple(findings), len(scopes), len(keys))
