"""Dialogue signals G(t) (docs/design.md#signals): deterministic language rules, English and Chinese.

Each signal is a table of regular expressions; a text has the signal when any of its rules
matches. Both tables run on every text (a Chinese rule never matches English and the reverse),
so mixed-language histories need no language guess. The rules are conservative on purpose:
a missed signal only costs the text its bonus in the survival score Ω, while a false one
keeps noise in the agent's active memory.

- ``constraint``: a standing rule the agent must keep ("never…", "I'm allergic to…", 不要, 必须).
- ``preference``: a like or dislike ("I prefer…", "my favourite…", 我喜欢, 讨厌).
- ``current_state``: how things are now ("I now live in…", "currently…", 现在住在, 目前).
- ``past_state``: how things were ("I used to…", "back then", 以前, 曾经).
- ``correction``: a fix of something said before ("actually, …", "I meant…", 其实, 说错了).
- ``replacement``: one thing instead of another ("instead of…", "switched to…", 改成, 不再).
- ``query_like``: a question (a "?" or a question word first; 吗/呢, 什么, 为什么).
- ``ack_like``: a short acknowledgement ("ok thanks", "got it", 好的, 收到) — nothing else.

Cost: one pass of ~60 compiled patterns, ~20 µs for a 30-word turn.
"""

from __future__ import annotations

import re

SIGNALS = ("constraint", "preference", "current_state", "past_state", "correction",
           "replacement", "query_like", "ack_like")

_I = re.IGNORECASE


def _any(*patterns: str, flags: int = _I) -> list[re.Pattern[str]]:
    return [re.compile(p, flags) for p in patterns]


_EN: dict[str, list[re.Pattern[str]]] = {
    "constraint": _any(
        r"\b(?:never|don'?t ever|do not ever|please don'?t|please do not|must not|mustn'?t)\b",
        # "I can't eat gluten" is a rule; "I can't wait" / "can't believe" are not.
        r"\b(?:i|we) (?:must|have to|need to|can(?:not|'t)|am not allowed to|shouldn'?t)\b"
        r"(?! (?:wait|believe|stop|help|thank|imagine|get over|remember|say|tell|describe|express)\b)",
        # an instruction: "Always…", "Please always…", "make sure to…" (not "always been fun")
        r"(?:^|[.!?]\s+)(?:please\s+)?always\s+(?!been\b|was\b|is\b|are\b|had\b|have\b|good\b|great\b|fun\b|there\b)\w+",
        r"\b(?:make sure to|be sure to|remember to)\s+\w+",
        r"\b(?:i'?m|i am|she'?s|he'?s) (?:allergic|intolerant|vegan|vegetarian|gluten[- ]free|lactose[- ]intolerant)\b",
        r"\ballerg(?:y|ic) to\b",
        r"\b(?:no more than|at most|at least|not more than|up to) \$?\d",
        r"\b(?:my|our|the) (?:budget|deadline|limit) (?:is|was set to)\b",
        r"\b(?:avoid|do not|don'?t) (?:use|send|call|book|schedule|share|mention|include|add|put|give)\b",
    ),
    "preference": _any(
        # "I love hiking" states a taste; "I love that!" / "I love your…" reacts to something.
        r"\b(?:i|we) (?:really |kind of |kinda |much |definitely |also |just |totally |absolutely )?"
        r"(?:prefer|like|love|enjoy|adore|hate|dislike|detest)s?\b"
        r"(?! (?:that|this|it|your|how you|what you|seeing (?:you|your)|hearing|the (?:pic|photo|picture))\b)",
        r"\b(?:i|we)(?:'d| would) (?:rather|prefer|love)\b",
        r"\b(?:i|we)(?:'m| am|'re| are) (?:a (?:big |huge )?fan of|huge fans of|big fans of|into|not a fan of|fond of|"
        r"crazy about|passionate about|keen on|obsessed with|hooked on)\b",
        r"\bi can'?t stand\b",
        r"\b(?:my|our) (?:new |all-time |top )?(?:favou?rites?|faves?|top pick)\b",
        r"\b(?:my|our) (?:love|passion) (?:for|of)\b",
        r"\bmy (?:dream|goal|passion) is\b",
        r"\b(?:is|are) (?:my|our) (?:thing|jam|go-to)\b",
        r"\bmust-have\b",
    ),
    "current_state": _any(
        r"\b(?:i|we)(?:'m| am| are)? (?:now|currently)\b",
        r"\b(?:currently|nowadays|these days|at the moment|right now|as of (?:now|today))\b",
        r"\b(?:i|we) (?:live|work|study|stay) (?:in|at|for|with)\b",
        r"\bi(?:'m| am) (?:living|working|studying|staying) (?:in|at|for|with)\b",
        r"\b(?:i|we)(?:'ve| have)? (?:just |recently )?(?:moved|relocated) to\b",
        r"\bmy \w+(?: \w+)? (?:is|are) now\b",
    ),
    "past_state": _any(
        r"\b(?:i|we) used to\b",
        r"\b(?:previously|formerly|back then|back in the day|in the past|years ago|once upon a time)\b",
        r"\bwhen i was (?:a |young|little|in )",
        r"\b(?:i|we) (?:had|have) (?:once )?(?:been|lived|worked)\b",
        r"\bmy (?:old|former|previous|ex-?)\s*\w+",
    ),
    "correction": _any(
        r"^\W*(?:actually|correction|wait,? no|no,? wait|oops|sorry,? (?:i|that))\b",
        r"\b(?:i|what i) meant\b",
        r"\b(?:i misspoke|let me correct|to correct (?:myself|that)|i was wrong"
        r"|that'?s (?:not right|wrong|incorrect))\b",
        r"\bi (?:mean|meant),",
        r"\bnot \w+(?: \w+)?,? but\b",
    ),
    "replacement": _any(
        r"\binstead of\b",
        r"\brather than\b",
        r"\b(?:switched|changed|upgraded|converted) (?:from \w+(?: \w+)? )?to\b",
        r"\b(?:moved|went) from \w+(?: \w+)? to\b",
        r"\breplaced? \w+(?: \w+)? with\b",
        r"\b(?:no longer|not anymore|any ?more)\b",
        r"\bfrom now on\b",
    ),
    "query_like": _any(
        r"\?\s*$",
        r"^\W*(?:what|how|why|when|where|who|whom|whose|which|can you|could you|would you|"
        r"do you|did you|are you|is it|is there|are there|have you|will you|should i|shall we)\b",
    ),
}

# An acknowledgement is short and built only from these words (plus punctuation/emoji).
_ACK_WORDS = frozenset(
    ["ok", "okay", "k", "kk", "thanks", "thank", "thx", "ty", "you", "so", "much", "a", "lot", "got", "it",
     "sure", "cool", "great", "nice", "awesome", "sounds", "good", "perfect", "yes", "yeah", "yep", "yup",
     "no", "worries", "problem", "np", "welcome", "you're", "lol", "haha", "hahaha", "wow", "alright", "right",
     "bye", "see", "ya", "later", "cheers", "noted", "understood", "will", "do", "fine", "good", "gotcha",
     "indeed", "oh", "ah", "hmm", "yay", "omg", "love", "it", "that's", "true", "totally", "agreed", "agree"])
_ACK_MAX_WORDS = 6
_WORD = re.compile(r"[a-z']+")

_ZH: dict[str, list[re.Pattern[str]]] = {
    "constraint": _any(r"不要|别再|不能|不可以|不许|禁止|千万|必须|一定要|务必|只能|过敏|忌口|不吃|"
                       r"不超过|至少|最多|不得"),
    "preference": _any(r"我(?:很|非常|特别|比较|更|最)?(?:喜欢|爱|偏好|偏爱|讨厌|不喜欢|反感)|"
                       r"最喜欢|宁愿|宁可|更倾向"),
    "current_state": _any(r"现在|目前|如今|当前|眼下|正在|我住在|我在\S{1,12}(?:工作|上班|上学|读书)|"
                          r"搬到了?|已经是"),
    "past_state": _any(r"以前|过去|曾经|原来|之前|当年|那时候?|从前|小时候"),
    "correction": _any(r"其实|更正|纠正|说错了|搞错了|我是说|不对|准确地说|确切地说|口误"),
    "replacement": _any(r"改成|换成|改为|换了|改了|不再|而不是|代替|取代|从现在(?:起|开始)|以后都"),
    "query_like": _any(r"[？?]\s*$|[吗呢]\s*[。！!？?]?\s*$|什么|怎么|为什么|为何|哪里|哪儿|哪个|谁|几点|多少|是否"),
}
_ZH_ACK = re.compile(r"^\s*(?:好的?|嗯+|哦+|谢谢(?:你|您)?|多谢|感谢|收到|明白(?:了)?|知道了|"
                     r"哈哈+|没问题|行|可以|再见|拜拜|不客气|好吧|对|是的|辛苦了)"
                     r"(?:[，,、\s]*(?:好的?|谢谢(?:你|您)?|多谢|收到|明白了?|知道了|哈哈+|没问题|啦|呀|哦|嗯))*"
                     r"[。！!~～…\s]*$")


def dialogue_signals(text: str) -> frozenset[str]:
    """The dialogue signals G(t) of one text (any of ``SIGNALS``).

    >>> sorted(dialogue_signals("Actually, I now live in Denver instead of Boston."))
    ['correction', 'current_state', 'replacement']
    >>> sorted(dialogue_signals("ok thanks!"))
    ['ack_like']
    """
    found = {name for table in (_EN, _ZH) for name, rules in table.items()
             if any(rule.search(text) for rule in rules)}
    if is_ack(text):
        found.add("ack_like")
    return frozenset(found)


def is_ack(text: str) -> bool:
    """Short and made only of acknowledgement words: "ok thanks", "got it!", "好的，谢谢"."""
    if _ZH_ACK.match(text):
        return True
    words = _WORD.findall(text.lower())
    if not words or len(words) > _ACK_MAX_WORDS:
        return False
    if any(ch.isdigit() for ch in text):
        return False
    return all(w in _ACK_WORDS for w in words)
