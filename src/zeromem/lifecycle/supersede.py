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

A **value update** restates a quantity of something that changes: a count ("I've added 25
postcards", "now I have three cats", "我现在有两只猫", "一共十本"), a duration ("for 9 months
now"), a score or a rank ("my 5th project"), a clock time or a weekday ("the gym, usually at
6 pm", "class on Fridays"). What is counted is named in words that vary from one mention to
the next ("17 new ones", "25 new postcards"), so no key can be read from the turn alone: the
question names it. Among the evidence for one question, the turns of one speaker that both
state a value (``states_value``) and cover the question's terms (``VALUE_UPDATE_COVERAGE``)
are taken as successive states of what the question asks, and are put newest first in the
positions they hold (``newest_value_first``) — when the question asks for a value that changes
("how many", "how long", "what time", "current", "now", 多少, 几, 现在; ``asks_for_value``) and not
for an earlier state ("previous", "at first", "before …", 以前; ``asks_earlier_state``): an event
question ("When did she first…?") is not asking for the newest number. They are reordered only,
never marked superseded: two such turns may be two events ("7 bass on the first trip, 9 on
the second"), which a mark would misstate.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..lexicon import WEEKDAYS

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



# -- value updates (module docstring) -------------------------------------------------------
# A candidate turn counts as a state of what the question asks when it holds at least this
# share of the question's idf weight (retrieval/select.query_term_weights). Chosen on half A of
# the LongMemEval-S dev knowledge-update questions (docs/decisions/0040-knowledge-updates.md).
VALUE_UPDATE_COVERAGE = 0.4

_EN_COUNT_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
                   "fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|"
                   "seventy|eighty|ninety|hundred|thousand|million|dozen|dozens|twice|thrice|"
                   "a couple of|a few|several|half")
_EN_ORDINALS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|"
                "twelfth|twentieth|hundredth")
_EN_VALUE = re.compile(r"\d|\b(?:" + _EN_COUNT_WORDS + "|" + _EN_ORDINALS + "|"
                       + "|".join(sorted(WEEKDAYS, key=len, reverse=True)) + r")s?\b", re.IGNORECASE)
_ZH_NUMERAL = "[0-9零〇一二两三四五六七八九十百千万几]"
_ZH_VALUE = re.compile(
    _ZH_NUMERAL + r"+\s*(?:个|只|本|次|张|位|件|条|台|辆|家|所|种|篇|部|首|场|遍|双|套|杯|瓶|块|元|"
    r"岁|年|月|周|星期|天|日|小时|分钟|分|点|公里|公斤|斤|页|集|章|级|名|倍|层|盆|棵|门|节|口|份|对)"
    r"|第" + _ZH_NUMERAL + r"+|(?:星期|周|礼拜)[一二三四五六日天]")

# Questions about an earlier state than the newest one ("my previous best", "at first", "before
# I moved"): the newest value is not what they ask for.
_EN_EARLIER = re.compile(r"\b(?:previous(?:ly)?|earlier|before|at first|initial(?:ly)?|"
                         r"original(?:ly)?|used to|formerly|prior|former|in the beginning|"
                         r"(?:when|after) I (?:just |first )?(?:started|began|got))\b", re.IGNORECASE)
_ZH_EARLIER = re.compile(r"以前|之前|原来|原先|最初|起初|一开始|当初|刚开始|本来|最早")

# Questions that ask for a value that changes over time: a quantity, a duration, a frequency, a
# clock time or a weekday, or whatever holds now. Other questions ("When did she first…", "Which
# cities has he been to?") ask about events, and the newest turn that states some number is not
# their answer.
_EN_ASKS_VALUE = re.compile(
    r"\bhow (?:many|much|long|often|old|far|frequently)\b|\bwhat (?:time|day)\b|"
    r"\b(?:current(?:ly)?|now|so far|at the moment|these days|at present|presently|latest|"
    r"most recent(?:ly)?|still|to date)\b", re.IGNORECASE)
_ZH_ASKS_VALUE = re.compile(r"多少|几(?!乎)|多久|多长|多大|现在|目前|如今|眼下|至今|迄今|最近|最新|仍然|还在")


def states_value(text: str) -> bool:
    """Whether a turn states a quantity: a number (digits or words), an ordinal, a clock time,
    a weekday; in Chinese a numeral with a measure word, 第 + numeral, or 周/星期 + day."""
    return bool(_EN_VALUE.search(text) or _ZH_VALUE.search(text))


def asks_earlier_state(query: str) -> bool:
    """Whether the question asks for a state older than the newest ("What was my previous
    record?", "How many did I have at first?", "我以前住在哪里？")."""
    return bool(_EN_EARLIER.search(query) or _ZH_EARLIER.search(query))


def asks_for_value(query: str) -> bool:
    """Whether the question asks for a value that changes ("How many cats do I have?", "What
    time do I usually get up?", "What is my current record?", "我现在有几只猫？")."""
    return bool(_EN_ASKS_VALUE.search(query) or _ZH_ASKS_VALUE.search(query))


def wants_newest_value(query: str) -> bool:
    """Whether successive values among a question's evidence go newest first: it asks for a
    value, and not for an earlier one."""
    return asks_for_value(query) and not asks_earlier_state(query)


@dataclass(frozen=True)
class ValueCandidate:
    """One evidence turn as ``newest_value_first`` sees it.

    ``coverage``: the share of the question's idf weight the turn contains; ``order``: its
    position in the conversation (sortable; later is newer).
    """

    speaker: str | None
    order: tuple
    coverage: float
    states_value: bool


def newest_value_first(candidates: Sequence[ValueCandidate],
                       min_coverage: float = VALUE_UPDATE_COVERAGE) -> list[int]:
    """A permutation of ``range(len(candidates))``: within each speaker, the turns that state a
    value and cover at least ``min_coverage`` of the question go newest first, in the positions
    those turns held; every other turn keeps its position."""
    out = list(range(len(candidates)))
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        if c.speaker and c.states_value and c.coverage >= min_coverage:
            groups.setdefault(c.speaker, []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        newest_first = sorted(members, key=lambda i: candidates[i].order, reverse=True)
        for position, member in zip(members, newest_first):
            out[position] = member
    return out
