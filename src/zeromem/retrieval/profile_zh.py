"""The query profile φ(q) of a Chinese question (``profile.build_profile`` hands Han text here).

Same fields as the English profile, from tables instead of English regular expressions:

- **words / keywords**: jieba's segmentation (punctuation dropped); keywords leave out the
  function words (``lexicon.CHINESE_STOPWORDS``) and the question words below. The
  noun compounds the entity extractor indexes as one name ("深圳银行柜员招聘会") are added to
  ``words`` whole, so the engine's exact entity alignment (n-grams of words) can meet them.
- **answer type** (``_ANSWER_TYPES``, first match in table order): 什么时候 / 哪天 / 几点 → date,
  谁 / 哪位 → person, 哪里 / 哪儿 / 什么地方 → place, 多少 / 几 / 多大 / 多久 → number,
  为什么 / 为何 → reason, 是否 / 是不是 / 有没有 / a final 吗 → yes/no; else description
  (list when the question aggregates).
- **aggregation** (``_AGGREGATE``): 都 / 所有 / 哪些 / 几次 / 一共 / 总共 / 分别 / 多少次 /
  有几个 — the question asks for every matching memory, not one.
- **time**: ``asks_time`` for date questions and time words (之前 / 之后 / 最近 / 第一次 /
  最后一次 …); absolute dates (2024年4月1日, 2024年4月) are the temporal cues, and relative ones
  (昨天, 上周六, 两周前) when the search says when the question is asked (``query_profile.time_cues``).
- **names**: persons, places, organizations and proper-noun compounds tagged by jieba.posseg
  (``encoders.entities_zh``); the subject is a known speaker named in the question.
- **bridge**: a definite description through a relative clause ("那个…的人", "那位…的同事"):
  the entity asked about is defined through another one.
- **boundary**: 刚才 / 紧接着 / 同一天 / 上一次聊天 … (a position in the conversation).

Pure table lookups and jieba: no model, deterministic.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

from ..encoders import entities_zh
from ..lexicon import CHINESE_STOPWORDS
from .query_profile import QueryProfile, time_cues

# (answer type, question words) — checked in this order, the first type that matches wins.
_ANSWER_TYPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("date", ("什么时候", "什么时间", "哪天", "哪一天", "哪年", "哪一年", "几月", "几号", "几点",
              "何时", "哪个月", "星期几", "周几", "多会儿")),
    ("reason", ("为什么", "为何", "为啥", "怎么会")),
    ("person", ("谁", "哪位", "哪个人", "什么人")),
    ("place", ("哪里", "哪儿", "什么地方", "在哪", "去哪", "哪个城市", "哪座城市", "哪个国家")),
    ("number", ("多少", "几个", "几次", "几岁", "多大", "多久", "多长", "多远", "多高", "多重",
                "几")),
    ("yes/no", ("是否", "是不是", "有没有", "能不能", "会不会", "要不要", "对不对")),
)
_FINAL_MA = re.compile(r"吗\s*[？?。!！]*\s*$")
_AGGREGATE = ("都", "所有", "哪些", "几次", "多少次", "一共", "总共", "总计", "分别", "有几个",
              "多少个", "各个", "每个", "每次", "全部")
_TIME_WORDS = ("什么时候", "什么时间", "哪天", "哪一天", "几点", "何时", "之前", "以前", "之后",
               "以后", "最近", "第一次", "最后一次", "上一次", "下一次", "多久", "多长时间")
_BOUNDARY = ("刚才", "刚刚", "紧接着", "随后", "同一天", "当天", "上一次聊天", "上次聊天",
             "这次聊天")
_BRIDGE = re.compile(r"那(?:个|位|家|只|次|件|条|本|辆|座)[^，。？?！!；;]{2,}?的")
_QUESTION_WORDS = frozenset(
    word for _, words in _ANSWER_TYPES for word in words) | frozenset(
    "什么 哪个 哪 怎么 怎样 如何 呢 吗 来着 请问".split())
_PUNCT = re.compile(r"^[\W_]+$")


def _first(text: str, words: Iterable[str]) -> str | None:
    return next((w for w in words if w in text), None)


def answer_type_zh(query: str) -> str:
    """The answer type a Chinese question asks for (see the module docstring)."""
    for kind, words in _ANSWER_TYPES:
        if _first(query, words):
            return kind
    if _FINAL_MA.search(query):
        return "yes/no"
    if _first(query, _AGGREGATE):
        return "list"
    return "description"


def build_profile_zh(query: str, speakers: Iterable[str], asked_at: dt.date | None = None) -> QueryProfile:
    """The profile of a question written in Chinese (Latin words in it are kept as words)."""
    tagged = entities_zh.tagged(query)
    words = [word.lower() for _, _, word, _ in tagged if word.strip() and not _PUNCT.match(word)]
    spans = entities_zh.spans_of(tagged)
    compounds = [query[s:e].lower() for s, e, _ in spans if query[s:e].lower() not in words]
    known = [s for s in speakers if s]
    mentioned = [s for s in known if s in query or s.lower() in words]
    speaker_words = {s.lower() for s in known}
    keywords = [w for w in words if w not in CHINESE_STOPWORDS and w not in _QUESTION_WORDS
                and w not in speaker_words]
    named = [(s, e) for s, e, label in spans if label != "NOUN_PHRASE"]
    names: list[str] = []
    for start, end in named:  # a place inside a compound name is not a name of its own
        name = query[start:end]
        inside = any(s <= start and end <= e and (s, e) != (start, end) for s, e in named)
        if not inside and name not in names and name.lower() not in speaker_words:
            names.append(name)
    kind = answer_type_zh(query)
    boundary = _first(query, _BOUNDARY)
    return QueryProfile(
        text=query, words=tuple(words + compounds), subject=mentioned[0] if mentioned else None,
        mentioned_speakers=tuple(mentioned), answer_type=kind, temporal_cues=tuple(time_cues(query, asked_at)),
        asks_time=kind == "date" or _first(query, _TIME_WORDS) is not None,
        aggregation=_first(query, _AGGREGATE) is not None, boundary=boundary,
        keywords=tuple(keywords), names=tuple(names), bridge=bool(_BRIDGE.search(query)),
        about_asker="我" in query and not ("你" in query or "您" in query))


_ENDS = frozenset("。！？!?；;…")
_OPEN, _CLOSE = "“‘「『《（(", "”’」』》）)"
_ASKS = re.compile(r"[？?]\s*$")


def sentences(text: str) -> list[str]:
    """``text`` cut after each sentence-ending mark (。！？!?；;…) that is not inside quotes or
    brackets (a quoted "…。" stays in its sentence); runs of marks stay together."""
    out: list[str] = []
    depth = straight = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(depth - 1, 0)
        elif ch == '"':
            straight ^= 1
        elif ch in _ENDS and not depth and not straight and (i + 1 == len(text) or text[i + 1] not in _ENDS):
            out.append(text[start:i + 1])
            start = i + 1
    if text[start:].strip():
        out.append(text[start:])
    joined: list[str] = []
    for piece in (s for s in out if s.strip()):
        if joined and _continues(piece):
            joined[-1] += piece
        else:
            joined.append(piece)
    return joined


_JOINS = frozenset("，,、：:")


def _continues(piece: str) -> bool:
    """Whether ``piece`` carries on the sentence before it: no sentence opens with a comma or
    with the particle 的 ("那个主要内容是……。的活动在哪里？" quotes a sentence without quote
    marks, and its 。 does not end the question)."""
    head = piece.lstrip()  # never empty: blank pieces are dropped before
    if head[0] in _JOINS:
        return True
    if head[0] != "的":  # the tagger (the costly part) only decides between 的 and 的确
        return False
    words = entities_zh.tagged(head[:8])
    return bool(words) and words[0][2] == "的" and words[0][3] == "uj"


def question_parts(query: str) -> list[str]:
    """The questions of a message that asks more than one ("这个公园叫什么？另外，上司的电话是多少？"),
    each on its own; one question, or none: ``[query]``."""
    asking = [s.strip() for s in sentences(query) if _ASKS.search(s)]
    return asking if len(asking) > 1 else [query]
