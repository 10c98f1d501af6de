"""Deterministic alias linking within one scope: which entity keys name the same thing.

Two rules, applied to normalized, purely alphabetic keys (see ``normalize_entity``):

1. **First name → full name.** A one-word key links to the multi-word key that starts with it,
   if exactly one such key exists: "caroline" → "caroline smith". Two candidates ("caroline
   smith", "caroline jones") are ambiguous: no link.
2. **Nickname → name.** A one-word key of at least ``MIN_NICKNAME_CHARS`` letters that is a
   strict prefix of exactly one other one-word key links to it: "mel" → "melanie". Rule 1 is
   then followed from the target, so "mel" → "melanie smith" when "melanie" → "melanie smith".

With mention ``counts``, a candidate that is mentioned at least ``DOMINANCE`` times as often as
all other candidates together wins the tie: "mel" → "melanie" when "melanie" has 56 mentions and
a typo "mell" has 1. Without counts, or without a dominant candidate, ambiguity means no link.

Callers should pass person-like keys (PERSON / NAME mentions): the rules know nothing about
labels, and "blue" → "blue vase" is what rule 1 would say about a colour.

Month and weekday names never take part ("may" is not a first name of "may 2023"). The result is
a pure function of the *set* of keys (order does not matter) and contains only real links.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Mapping

from ..lexicon import MONTHS, RELATIVE_DAYS, WEEKDAY_NAMES

MIN_NICKNAME_CHARS = 3
BULK_CHANGES = 256  # ``AliasLinks``: more changed keys than this (and a quarter of all) relink all
DOMINANCE = 5
_CALENDAR = frozenset(MONTHS) | frozenset(WEEKDAY_NAMES) | frozenset(RELATIVE_DAYS)


@functools.lru_cache(maxsize=1 << 16)  # a pure function of the key; a scope asks for every key on every update
def _eligible(key: str) -> bool:
    words = key.split()
    return bool(words) and all(w.isalpha() for w in words) and not (set(words) & _CALENDAR)


def _unique(candidates: list[str], counts: Mapping[str, int] | None) -> str | None:
    """The single candidate, or the dominant one by mention count, else None (ambiguous)."""
    if len(candidates) == 1:
        return candidates[0]
    if not candidates or counts is None:
        return None
    ranked = sorted(candidates, key=lambda k: (-counts.get(k, 0), k))
    rest = sum(counts.get(k, 0) for k in ranked[1:])
    return ranked[0] if counts.get(ranked[0], 0) >= DOMINANCE * rest else None


def link_aliases(entities: Iterable[str], counts: Mapping[str, int] | None = None) -> dict[str, str]:
    """Map each alias key to its canonical key (only keys that have one appear).

    ``counts`` (mention counts per key), when given, restricts linking to keys that are still
    mentioned (count > 0), so an entity whose last mention was deleted links nothing, and
    settles ambiguity in favour of a dominant candidate (see the module docstring).

    >>> link_aliases(["caroline", "caroline smith", "mel", "melanie", "jo"])
    {'caroline': 'caroline smith', 'mel': 'melanie'}
    """
    # Without counts every key weighs the same, and equal weights never make a candidate
    # dominant: ambiguity then means no link, as the rules say.
    weights = {k: 1 if counts is None else counts.get(k, 0) for k in entities}
    links = AliasLinks()
    links.rebuild(weights)
    return dict(sorted(links.links.items()))


class AliasLinks:
    """``link_aliases(keys, counts)`` kept up to date as counts change, in time that follows
    the change, not the number of keys.

    A key's link depends only on the keys that extend it (its first word's full names, the
    longer one-word keys it prefixes, and those keys' full names), so a changed key can move
    only the links of the one-word prefixes of its first word: those are recomputed. After
    every ``update``, ``links`` equals ``link_aliases`` of the keys with a positive count
    (property-tested in tests/test_aliases_incremental.py).
    """

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}  # eligible keys with a positive count
        self._singles: list[str] = []  # the one-word ones, sorted
        self._single_set: set[str] = set()
        self._by_first: dict[str, list[str]] = {}  # first word → multi-word keys, sorted
        self._full_name: dict[str, str] = {}
        self.links: dict[str, str] = {}

    def update(self, counts: Mapping[str, int], changed: Iterable[str]) -> set[str]:
        """Take the current ``counts`` (of every key) for the ``changed`` keys; return the keys
        whose link moved. Many changes at once (a first build, an import) relink from scratch."""
        changed = list(changed)
        if len(changed) > max(BULK_CHANGES, len(self._counts) // 4):
            return self.rebuild(counts)
        firsts: set[str] = set()
        for key in changed:
            if not _eligible(key):
                continue
            count = counts.get(key, 0)
            had = key in self._counts
            if count > 0:
                self._counts[key] = count
            else:
                self._counts.pop(key, None)
            first = key.split(" ", 1)[0]
            firsts.add(first)
            if (count > 0) == had:
                continue
            if " " in key:
                group = self._by_first.setdefault(first, [])
                if had:
                    group.remove(key)
                    if not group:
                        del self._by_first[first]
                else:
                    bisect.insort(group, key)
            elif had:
                self._singles.pop(bisect.bisect_left(self._singles, key))
                self._single_set.discard(key)
            else:
                bisect.insort(self._singles, key)
                self._single_set.add(key)
        affected = sorted({word[:n] for word in firsts for n in range(1, len(word) + 1)
                           if word[:n] in self._single_set or word[:n] in self.links})
        for key in affected:
            target = (_unique(self._by_first.get(key, []), self._counts)
                      if key in self._single_set else None)
            if target is None:
                self._full_name.pop(key, None)
            else:
                self._full_name[key] = target
        moved = set()
        for key in affected:
            link = self._link_of(key)
            if link != self.links.get(key):
                moved.add(key)
                if link is None:
                    del self.links[key]
                else:
                    self.links[key] = link
        return moved

    def rebuild(self, counts: Mapping[str, int]) -> set[str]:
        """Link every key of ``counts`` from scratch; return the keys whose link moved."""
        self._counts = {k: c for k, c in counts.items() if c > 0 and _eligible(k)}
        self._singles = sorted(k for k in self._counts if " " not in k)
        self._single_set = set(self._singles)
        self._by_first = {}
        for key in sorted(k for k in self._counts if " " in k):
            self._by_first.setdefault(key.split(" ", 1)[0], []).append(key)
        self._full_name = {}
        for key in self._singles:
            target = _unique(self._by_first.get(key, []), self._counts)
            if target is not None:
                self._full_name[key] = target
        before = self.links
        self.links = {key: link for i, key in enumerate(self._singles)
                      if (link := self._link_of(key, i)) is not None}
        return {k for k in set(before) | set(self.links) if before.get(k) != self.links.get(k)}

    def _link_of(self, key: str, at: int | None = None) -> str | None:
        """``key``'s link: its full name, else the one longer one-word key it is a nickname of
        (and that key's full name); ``at``: its place in the sorted one-word keys, if known."""
        if key not in self._single_set:
            return None
        if key in self._full_name:
            return self._full_name[key]
        if len(key) < MIN_NICKNAME_CHARS:
            return None
        # The keys that start with ``key`` follow it in sorted order, in one run.
        start = (bisect.bisect_left(self._singles, key) if at is None else at) + 1
        longer = self._singles[start:bisect.bisect_left(self._singles, key + "\U0010ffff", start)]
        target = _unique(longer, self._counts)
        return None if target is None else self._full_name.get(target, target)
