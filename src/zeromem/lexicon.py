"""The word tables every layer shares: month and weekday names, number words, stopwords.

One table each, so that a date the store reads strictly (store/dates.py), a time expression
the encoders resolve (encoders/timexpr.py), a name or quantity the extractors keep or refuse
(encoders/extractors.py, encoders/aliases.py), a query the retrieval profiles
(retrieval/profile.py, profile_zh.py) and an answer calibrated to digits
(retrieval/answer_calibration.py) agree on what a month, a number or a function word is. A
leaf module: it imports nothing from zeromem. A table used by one rule only, and part of that
rule (the question words of profile_zh.py, a pattern's alternatives), stays beside the rule.

The BM25 index has its own, larger English list (``encoders.tokenize.ENGLISH_STOPWORDS``:
bm25s's English list plus :data:`CONTRACTIONS`): it decides which tokens every index holds, so
it changes only with a re-index.
"""

from __future__ import annotations

# -- calendar ------------------------------------------------------------------------------
# Month → number, full names first, then their abbreviations ("may" is both).
MONTHS: dict[str, int] = {name: number for number, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
    ("october", "oct"), ("november", "nov"), ("december", "dec")), start=1) for name in names}
MONTH_NAMES: tuple[str, ...] = ("january", "february", "march", "april", "may", "june", "july",
                                "august", "september", "october", "november", "december")
# Weekday → number (Monday = 0, as datetime.weekday), full names and abbreviations.
WEEKDAYS: dict[str, int] = {name: number for number, names in enumerate((
    ("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"),
    ("thursday", "thu", "thur", "thurs"), ("friday", "fri"), ("saturday", "sat"),
    ("sunday", "sun"))) for name in names}
WEEKDAY_NAMES: tuple[str, ...] = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                  "sunday")
RELATIVE_DAYS: tuple[str, ...] = ("today", "yesterday", "tomorrow")


def month_abbreviations() -> list[str]:
    """The abbreviations in MONTHS, in calendar order, longer first ("sept" before "sep")."""
    return sorted((name for name in MONTHS if name not in MONTH_NAMES), key=lambda n: (MONTHS[n], -len(n)))


# -- numbers ------------------------------------------------------------------------------
# English number words → value, in counting order: what "three weeks ago" counts
# (encoders/timexpr.py), a quantity the extractors keep and an answer given in digits
# (retrieval/answer_calibration.py) read.
NUMBER_WORDS: dict[str, int] = {word: number for number, word in enumerate(
    "one two three four five six seven eight nine ten eleven twelve".split(), start=1)}
# Round numbers past twelve that quantities are written with ("twenty minutes"; extractors.py).
ROUND_NUMBER_WORDS: dict[str, int] = {"fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40,
                                      "fifty": 50, "hundred": 100}
# Counts without a number word, as a time expression reads them ("a couple of weeks ago" = 2).
VAGUE_COUNT_WORDS: dict[str, int] = {"a": 1, "an": 1, "couple of": 2, "a couple of": 2, "few": 3,
                                     "a few": 3}


# -- stopwords -----------------------------------------------------------------------------
# English function words: what a query's keywords leave out (retrieval/profile.py). Every
# narrower list below is drawn from this one.
STOPWORDS: frozenset[str] = frozenset("""
a an the of to in on at for from by with about as and or but is are was were be been being
do does did has have had what which who whom whose when where why how that this these those it its
his her their them they he she you your i me my we our us can could would will should shall may might
must not no yes any some there here than then so if into out up down over under again very just
""".split())


def _stopwords(words: str) -> frozenset[str]:
    chosen = frozenset(words.split())
    stray = chosen - STOPWORDS
    if stray:
        raise ValueError(f"not in STOPWORDS: {sorted(stray)}")
    return chosen


# Words that open a question before a name ("When did Caroline ..."): not part of the name.
QUESTION_LEAD_WORDS = _stopwords("what when where who whom whose which why how is are was were do does "
                                 "did has have had can could would will should in on at the a an")
# Capitalized question words that are not terms a turn must contain verbatim.
QUESTION_WORDS = _stopwords("what when where who how which did does is")
# What an answer's content words leave out when they are matched against the evidence.
ANSWER_FILLER_WORDS = _stopwords("a an the and or of in on at to for with by is was were be it she he "
                                 "they her his their i you we my our")


# Contractions as they appear after apostrophe normalization: stopwords of the BM25 index
# (encoders/tokenize.py adds them to bm25s's English list).
CONTRACTIONS: frozenset[str] = frozenset(
    "i'm i've i'll i'd it's that's don't didn't doesn't can't won't isn't aren't wasn't weren't "
    "you're you've we're they're let's there's what's he's she's".split())
# Chinese function characters and pronouns only, content words stay searchable: left out of
# the BM25 index (encoders/tokenize.py) and of a Chinese query's keywords (profile_zh.py).
CHINESE_STOPWORDS: frozenset[str] = frozenset(
    "的 了 是 在 和 与 及 也 就 都 而 着 这 那 吗 呢 吧 啊 呀 哦 嗯 我 你 他 她 它 我们 你们 他们 "
    "她们 它们 之 其 个 把 被 给 让 从 对 于 又 还 很 所 等 这个 那个 一个".split())


# -- Chinese calendar words ----------------------------------------------------------------
# Shared by the strict date reader (store/dates.py) and the time expressions (encoders/timexpr.py).
# Weekday suffix after 周 / 星期 / 礼拜 → number (Monday = 0); 日 and 天 both name Sunday.
ZH_WEEKDAYS: dict[str, int] = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
                               "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}
ZH_WEEK_WORDS: tuple[str, ...] = ("星期", "礼拜", "周")
# Chinese numerals (digits of a count, a month or a day); 两 is the counting form of 二.
ZH_DIGITS: dict[str, int] = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5,
                             "六": 6, "七": 7, "八": 8, "九": 9}


def zh_number(text: str) -> int | None:
    """A written number up to 99 (digits, or 一…九十九 with 十), None when it is not one.

    >>> zh_number("十二"), zh_number("两"), zh_number("二十五"), zh_number("12")
    (12, 2, 25, 12)
    """
    if not text:
        return None
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        high = ZH_DIGITS.get(tens, -1) if tens else 1
        low = ZH_DIGITS.get(ones, -1) if ones else 0
        return None if high < 0 or low < 0 or "十" in ones else high * 10 + low
    if len(text) == 1:
        return ZH_DIGITS.get(text)
    digits = [ZH_DIGITS.get(ch) for ch in text]  # 二〇二四 (a year written digit by digit)
    return None if any(d is None for d in digits) else int("".join(str(d) for d in digits))
