"""Updates and corrections: which state assertion supersedes which (docs/design.md#supersession).

A **state assertion** is a first-person claim about how things are, keyed by (speaker,
attribute): "I live in Boston" → (Ana, residence, boston); "my favourite colour is green" →
(Ana, favorite colour, green); "我现在住在上海" → (李雷, residence, 上海). Within one key the
newest assertion is the current state and every older one with another value is superseded
by it: the older trace is kept and marked, never removed, and the newer ranks first.

A **bare correction** names a new value without saying of what ("Actually, make that
Thursday.", "sorry, I meant Lisbon", "不对，是周四"). It takes the attribute of the same
speaker's latest assertion in the same session, at most ``CORRECTION_REACH`` turns before,
and then behaves like an assertion of that attribute — so chains A → B → C propagate: every
older link is superseded by the newest one.

The rules are deliberately narrow (first person, a known attribute or an explicit correction
cue right before): a false supersession would push a current fact behind a stale one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

CORRECTION_REACH = 6  # turns of the same session a bare correction may reach back

_VALUE = r"([\w'’&-]+(?:\s+[\w'’&-]+){0,4})"  # up to five words
_NAME = r"((?:[A-Z][\w'’-]+)(?:\s+[A-Z][\w'’-]+)*)"
_ATTRIBUTES = ("phone number|number|email address|email|address|car|job title|job|title|role|"
               "username|nickname|name|budget|deadline|goal|diet|team|manager|boss|partner|doctor|"
               "dentist|school|major|hobby|birthday|schedule|gym|bank|salary|rent|plan|flight|"
               "appointment|meeting|password|pin|office|desk|room|size|order|allergy")

_EN_PATTERNS: list[tuple[str | None, re.Pattern[str]]] = [
    ("residence", re.compile(r"\bI(?:'ve|'m| have| am)?\s+(?:(?:just|recently|finally|now|currently)\s+)*"
                             r"(?:live|living|moved|relocated|moving|staying)\s+(?:back\s+)?(?:in|to)\s+"
                             + _NAME)),
    ("employer", re.compile(r"\bI(?:'ve| have)? (?:just |recently |now )?(?:work|started working|got a job|am working)"
                            r"\s+(?:at|for|with)\s+((?:[A-Z][\w&'-]+)(?:\s+[A-Z][\w&'-]+)*)")),
    ("job", re.compile(r"\bI(?:'m| am) (?:now )?(?:a|an) ([a-z]+(?: [a-z]+)?) (?:at|for|now)\b")),
    ("favorite", re.compile(r"\bmy (?:new )?favou?rite ([a-z]+) (?:is|are|has become|is now) ([\w' -]+)",
                            re.IGNORECASE)),
    ("relationship", re.compile(r"\bI(?:'m| am) (?:now )?(single|married|engaged|divorced|dating)\b", re.IGNORECASE)),
    (None, re.compile(r"\bmy (?:new |current )?(" + _ATTRIBUTES + r") (?:is now|is|has changed to|"
                      r"was changed to|was moved to|moved to|changed to) (?:now )?" + _VALUE, re.IGNORECASE)),
    (None, re.compile(r"\b(?:I|we) (?:switched|changed|moved) my (" + _ATTRIBUTES + r") (?:from [\w' -]+? )?to "
                      + _VALUE, re.IGNORECASE)),
]
# Bare corrections: the value is the group; the attribute comes from what they correct.
_EN_CORRECTIONS = [
    re.compile(r"^\W*(?:actually|correction|sorry|oops|wait|no)\b[,:!.]?\s*(?:no,?\s*)?"
               r"(?:it'?s|it is|it'?ll be|that'?s|that is|make (?:it|that)|I meant|I mean|change (?:it|that) to)\s+"
               + _VALUE, re.IGNORECASE),
    re.compile(r"\b(?:I meant|I mean|make that|change that to|update (?:it|that) to)\s+" + _VALUE, re.IGNORECASE),
]
_STOP_VALUE = re.compile(r"\s+(?:not|instead|rather|and|but|because|since|so|though|now|anymore)\b.*$", re.IGNORECASE)

_ZH_PATTERNS: list[tuple[str | None, re.Pattern[str]]] = [
    ("residence", re.compile(r"我(?:现在|目前|已经)?(?:住在|搬到了?|搬去了?)([^\s，。,！!？?；;、]{1,12})")),
    ("employer", re.compile(r"我(?:现在|目前)?在([^\s，。,！!？?；;、]{1,12}?)(?:工作|上班)")),
    ("favorite", re.compile(r"我最喜欢的([^\s，。,！!？?是]{1,6})(?:是|变成了?)([^\s，。,！!？?；;]{1,12})")),
    (None, re.compile(r"我的(电话|手机号|邮箱|地址|预算|生日|工作|职位|老板|学校|专业|爱好)"
                      r"(?:现在)?(?:是|改成了?|换成了?)"
                      r"([^\s，。,！!？?；;]{1,16})")),
]
_ZH_CORRECTIONS = [
    re.compile(r"(?:不对|说错了|更正|纠正|其实|我是说)[，,：:\s]*(?:应该)?是([^\s，。,！!？?；;]{1,16})"),
    re.compile(r"(?:改成|换成|改为)([^\s，。,！!？?；;]{1,16})"),
]


@dataclass(frozen=True)
class StateAssertion:
    """One claim about the speaker's state. ``attribute`` is "" for a bare correction."""

    speaker: str
    attribute: str
    value: str
    session: str | None = None
    seq: int | None = None


def state_assertions(text: str, speaker: str | None, session: str | None = None,
                     seq: int | None = None) -> list[StateAssertion]:
    """First-person state claims and bare corrections in one turn."""
    if not speaker:
        return []
    found: list[StateAssertion] = []
    for attribute, pattern in (*_EN_PATTERNS, *_ZH_PATTERNS):
        for m in pattern.finditer(text):
            if attribute is None or m.lastindex == 2:
                key = f"{attribute} {m.group(1).lower()}" if attribute else m.group(1).lower()
                value = m.group(2)
            else:
                key, value = attribute, m.group(1)
            found.append(StateAssertion(speaker, key, _clean_value(value), session, seq))
    if not found:
        for pattern in (*_EN_CORRECTIONS, *_ZH_CORRECTIONS):
            hit = pattern.search(text)
            if hit:
                found.append(StateAssertion(speaker, "", _clean_value(hit.group(1)), session, seq))
                break
    return found


def _clean_value(value: str) -> str:
    return _STOP_VALUE.sub("", value).strip(" '’\"").lower()


def supersession(assertions: Mapping[int, list[StateAssertion]],
                 order: Mapping[int, tuple] | Callable[[int], tuple]) -> dict[int, int]:
    """Map each superseded node to the node of the current state of its key.

    ``order`` gives each node's position in the conversation (sortable). Nodes are read
    oldest first; a bare correction takes the attribute of its speaker's latest assertion in
    the same session within ``CORRECTION_REACH`` turns (it is dropped otherwise).
    """
    key_of = order if callable(order) else order.__getitem__
    resolved: dict[int, list[tuple[str, str, str]]] = {}
    last: dict[str, StateAssertion] = {}
    for node in sorted(assertions, key=key_of):
        for a in assertions[node]:
            attribute = a.attribute
            if not attribute:
                previous = last.get(a.speaker)
                if previous is None or not _within_reach(previous, a):
                    continue
                attribute = previous.attribute
            resolved.setdefault(node, []).append((a.speaker, attribute, a.value))
            last[a.speaker] = StateAssertion(a.speaker, attribute, a.value, a.session, a.seq)
    latest: dict[tuple[str, str], int] = {}
    for node in sorted(resolved, key=key_of):
        for speaker, attribute, _ in resolved[node]:
            latest[(speaker, attribute)] = node
    superseded: dict[int, int] = {}
    for node, items in resolved.items():
        for speaker, attribute, value in items:
            newest = latest[(speaker, attribute)]
            newest_values = {v for s, att, v in resolved[newest] if (s, att) == (speaker, attribute)}
            if newest != node and key_of(newest) > key_of(node) and value not in newest_values:
                superseded[node] = newest
    return superseded


def _within_reach(previous: StateAssertion, correction: StateAssertion) -> bool:
    if previous.session != correction.session:
        return False
    if previous.seq is None or correction.seq is None:
        return True
    return 0 <= correction.seq - previous.seq <= CORRECTION_REACH


def restrict(assertions: Mapping[int, list[StateAssertion]], keep: Callable[[int], bool]
             ) -> dict[int, list[StateAssertion]]:
    """The assertions of the nodes ``keep`` accepts (e.g. those visible ``as_of`` a time)."""
    return {node: found for node, found in assertions.items() if keep(node)}
