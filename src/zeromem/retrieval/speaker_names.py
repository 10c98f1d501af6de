"""The other names of a conversation's speakers, learned from the conversation itself.

People are not always called by the name their messages are filed under. A chat export names
an account ("Emi") while the other person greets her as "Kate"; a question spells a name the way
it sounds ("Faheem" for "Fahim", "Nerbaas" for "Nebraas"). Turns almost never name their own
speaker, so a question about "Kate" matches nothing of hers by name, and her turns lose the
subject match they should lead with. Two deterministic rules, no model:

1. **Names used to address someone.** A capitalized word a turn opens with after a greeting or
   thanks ("Hey Kate!", "Thanks Kate") or closes on after a comma ("…, Kate!") addresses the
   other person of the conversation: the nearest earlier turn by another speaker (else the next
   one). A word that is addressed ``MIN_ADDRESSED`` times or more, to one speaker in at least
   ``DOMINANT_SHARE`` of them, is another name of that speaker when that speaker writes at most
   ``SELF_SHARE`` of the turns that contain it: people do not name themselves, while a place
   named after a comma ("…we loved LA, Miami!") is named by both.
2. **Spelling variants.** A name in a question that no turn contains and that is within one
   edit (names of up to ``SHORT_NAME`` letters) or two edits (longer ones) of exactly one
   speaker's first name or learned name, starting with the same letter, is that speaker.

``canonical(query)`` writes the query with each such name replaced by the speaker's name, so
every later step (the profile's subject, BM25 over the speaker-prefixed units, the embedding)
sees the speaker the question is about.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from ..lexicon import MONTH_NAMES, QUESTION_WORDS, STOPWORDS, WEEKDAY_NAMES

MIN_ADDRESSED = 2
DOMINANT_SHARE = 0.8
SELF_SHARE = 0.2
SHORT_NAME = 5
NEIGHBOUR_REACH = 8  # turns looked at, each way, for the person a turn addresses

_CAP = r"([A-Z][a-z]{2,})"
_GREETING = (r"(?:hey+|hi+|hii+|hello|hiya|yo|heya|howdy|morning|good (?:morning|afternoon|evening|night)|"
             r"thanks|thank you|thx|ty|bye|goodnight|night|congrats|congratulations|happy birthday|"
             r"dear|ok(?:ay)?|oh|aw+|omg|sorry|welcome back|miss you|love you|see you|sup|wow)")
_LEAD = re.compile(rf"^\W*{_GREETING}[\s,!.]+(?:so\s+much\s+|again\s+)?{_CAP}\b(?![\w'’])", re.I)
_TAIL = re.compile(rf",\s*{_CAP}\s*(?:[!.?]+|[\U0001F300-\U0001FAFF\u2600-\u27BF]+|$)")
_NOT_NAMES = frozenset(STOPWORDS) | frozenset(QUESTION_WORDS) | frozenset(MONTH_NAMES) | frozenset(WEEKDAY_NAMES) | {
    "girl", "man", "bro", "dude", "guys", "everyone", "babe", "baby", "honey", "sis", "buddy", "friend",
    "lol", "haha", "omg", "yes", "yeah", "nope", "sure", "cool", "nice", "great", "good", "god", "there",
    "again", "much", "all", "you", "for", "the", "and", "but", "too", "also", "today", "tomorrow", "tonight",
}
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
ROLES = frozenset({"user", "assistant", "system", "tool", "human", "ai", "bot", "model"})


def addressed_names(text: str) -> tuple[str, ...]:
    """The capitalized names ``text`` addresses someone by (rule 1's two positions)."""
    found: list[str] = []
    lead = _LEAD.match(text)
    # _LEAD is case-insensitive for the greeting; the name must still be written capitalized.
    if lead and lead.group(1)[0].isupper():
        found.append(lead.group(1))
    for m in _TAIL.finditer(text):
        found.append(m.group(1))
    return tuple(dict.fromkeys(name for name in found if name.lower() not in _NOT_NAMES))


def learn_names(vocatives: Mapping[int, tuple[str, ...]], addressed: Callable[[int], str | None],
                writers: Callable[[str], Mapping[str | None, int]], speakers: Iterable[str]) -> dict[str, str]:
    """Rule 1: lower-cased name → speaker. ``vocatives``: turn → the names it addresses;
    ``addressed(turn)``: the speaker that turn talks to; ``writers(word)``: how many turns of
    each speaker contain the word."""
    known = {w.lower() for s in speakers for w in s.split()}
    votes: dict[str, Counter[str]] = {}
    for turn in sorted(vocatives):
        to = addressed(turn)
        if to is None:
            continue
        for name in vocatives[turn]:
            if name.lower() not in known:
                votes.setdefault(name.lower(), Counter())[to] += 1
    out: dict[str, str] = {}
    for name, counter in sorted(votes.items()):
        total = sum(counter.values())
        speaker, top = min(counter.items(), key=lambda kv: (-kv[1], kv[0]))
        if total < MIN_ADDRESSED or top < DOMINANT_SHARE * total:
            continue
        written = writers(name)
        if written.get(speaker, 0) <= SELF_SHARE * max(1, sum(written.values())):
            out[name] = speaker
    return out


def _edits(a: str, b: str) -> int:
    """Optimal-string-alignment distance (a swap of two neighbouring letters is one edit)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def variant_of(word: str, names: Mapping[str, str]) -> str | None:
    """Rule 2: the speaker whose name (``names``: lower-cased name → speaker) ``word`` is a
    spelling variant of, when exactly one speaker's names are close enough."""
    w = word.lower()
    reach = 1 if len(w) <= SHORT_NAME else 2
    if len(w) < 4:
        return None
    hits = {speaker for name, speaker in names.items()
            if name[0] == w[0] and abs(len(name) - len(w)) <= reach and _edits(w, name) <= reach}
    return next(iter(hits)) if len(hits) == 1 else None


class SpeakerNames:
    """A scope's speakers and their other names; ``canonical`` rewrites a query with them."""

    def __init__(self, speakers: Iterable[str], learned: Mapping[str, str] | Callable[[], Mapping[str, str]],
                 writers: Callable[[str], Mapping[str | None, int]]) -> None:
        """``learned``: rule 1's names, or how to learn them (called once, when a query first
        holds a capitalized word that is not a speaker's name)."""
        self.speakers = sorted(s for s in speakers if s)
        self._learn = learned if callable(learned) else (lambda: learned)
        self._learned: dict[str, str] | None = None
        self._writers = writers
        self._known = {w.lower() for s in self.speakers for w in s.split()}
        # One instance serves one version of the scope (PreparedScope.speaker_names): a word's
        # answer cannot change, so each is worked out once (its postings, its edit distances).
        self._answers: dict[str, str | None] = {}
        self._names_cache: dict[str, str] | None = None

    @property
    def learned(self) -> dict[str, str]:
        if self._learned is None:
            self._learned = dict(self._learn())
        return self._learned

    @property
    def _names(self) -> dict[str, str]:
        if self._names_cache is None:
            # A role ("user", "assistant") is not a name a question misspells ("Uber" is not "user").
            names = {s.split()[0].lower(): s for s in self.speakers
                     if s.split() and s.split()[0].lower() not in ROLES}
            names.update(self.learned)
            self._names_cache = names
        return self._names_cache

    def speaker_of(self, word: str) -> str | None:
        """The speaker a capitalized word of a query names by another name, else None."""
        w = word.lower()
        if w not in self._answers:
            self._answers[w] = self._speaker_of(w)
        return self._answers[w]

    def _speaker_of(self, w: str) -> str | None:
        if w in self._known or w in _NOT_NAMES:
            return None
        if w in self.learned:
            return self.learned[w]
        if sum(self._writers(w).values()) > 0:  # a name the conversation uses: someone (or something) else
            return None
        return variant_of(w, self._names)

    def canonical(self, query: str) -> str:
        """``query`` with each other name of a speaker written as the speaker's first name."""
        if not self.speakers:
            return query

        def swap(m: re.Match[str]) -> str:
            word: str = m.group(0)
            base, tail = (word[:-2], word[-2:]) if word.endswith(("'s", "’s")) else (word, "")
            if not base[:1].isupper():
                return word
            speaker = self.speaker_of(base)
            return f"{speaker.split()[0]}{tail}" if speaker else word

        return _WORD.sub(swap, query)

    def without_names(self, query: str) -> str:
        """``query`` without the speakers' names (a role such as "user" stays): what is asked
        about a person, not who the person is. A query of names only is returned as it is."""
        names = {w.lower() for s in self.speakers for w in s.split() if w.lower() not in ROLES}
        if not names:
            return query

        def drop(m: re.Match[str]) -> str:
            word = m.group(0)
            base = word[:-2] if word.endswith(("'s", "’s")) else word
            return "" if base.lower() in names else word

        rest = " ".join(_WORD.sub(drop, query).split())
        return rest if _WORD.search(rest) else query  # a query that is only a name stays as written
