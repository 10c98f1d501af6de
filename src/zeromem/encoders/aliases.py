"""Deterministic alias linking within one scope: which entity keys name the same thing.

Two rules, applied to normalized, purely alphabetic keys (see ``normalize_entity``):

1. **First name → full name.** A one-word key links to the multi-word key that starts with it,
   if exactly one such key exists: "caroline" → "caroline smith". Two candidates ("caroline
   smith", "caroline jones") are ambiguous: no link.
2. **Nickname → name.** A one-word key of at least ``MIN_NICKNAME_CHARS`` letters that is a
   strict prefix of exactly one other one-word key links to it: "mel" → "melanie". Rule 1 is
   then followed from the target, so "mel" → "melanie smith" when "melanie" → "melanie smith".

Month and weekday names never take part ("may" is not a first name of "may 2023"). The result is
a pure function of the *set* of keys (order does not matter) and contains only real links.
"""

from __future__ import annotations

from typing import Iterable, Mapping

MIN_NICKNAME_CHARS = 3
_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday "
    "saturday sunday today yesterday tomorrow".split())


def _eligible(key: str) -> bool:
    words = key.split()
    return bool(words) and all(w.isalpha() for w in words) and not (set(words) & _CALENDAR)


def link_aliases(entities: Iterable[str], counts: Mapping[str, int] | None = None) -> dict[str, str]:
    """Map each alias key to its canonical key (only keys that have one appear).

    ``counts`` (mention counts per key), when given, restricts linking to keys that are still
    mentioned (count > 0), so an entity whose last mention was deleted links nothing.

    >>> link_aliases(["caroline", "caroline smith", "mel", "melanie", "jo"])
    {'caroline': 'caroline smith', 'mel': 'melanie'}
    """
    keys = {k for k in entities if _eligible(k) and (counts is None or counts.get(k, 0) > 0)}
    singles = sorted(k for k in keys if " " not in k)
    multis = sorted(k for k in keys if " " in k)

    full_name: dict[str, str] = {}
    by_first: dict[str, list[str]] = {}
    for key in multis:
        by_first.setdefault(key.split(" ", 1)[0], []).append(key)
    for key in singles:
        candidates = by_first.get(key, [])
        if len(candidates) == 1:
            full_name[key] = candidates[0]

    links = dict(full_name)
    for key in singles:
        if key in links or len(key) < MIN_NICKNAME_CHARS:
            continue
        longer = [other for other in singles if other != key and other.startswith(key)]
        if len(longer) == 1:
            target = longer[0]
            links[key] = full_name.get(target, target)
    return dict(sorted(links.items()))
