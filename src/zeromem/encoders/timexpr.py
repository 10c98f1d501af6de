"""Deterministic time expressions: relative ones in traces, absolute ones in queries.

Relative expressions ("yesterday", "last Saturday", "two weeks ago", "next month") resolve
against the trace's own session or event time; the result is an annotation shown beside the
verbatim text, never a rewrite. Absolute expressions ("in May 2023", "8 May 2023", "in 2022")
become date ranges a query can filter and rank by. Pure functions, regular expressions only.

Chinese, from the tables below (``_ZH_DAYS``, ``_ZH_WEEK_SHIFT``, ``_ZH_MONTHS_REL``,
``_ZH_YEARS_REL``, ``_ZH_UNITS``; numerals and weekdays from ``lexicon``):

- relative: 昨天 / 前天 / 大前天 / 今天 / 明天 / 后天 (days); 上周六, 下周一, 这周三, 下下周日,
  上个星期五 (a weekday of a calendar week, Monday first); 上周 / 本周 / 下周 and 上周末 (weeks);
  上个月 / 本月 / 下个月; 去年 / 今年 / 明年 / 前年 / 后年; 三天前, 两周前, 3个月后, 十年前
  (a count of units before or after); and a date without its year (4月1日, 四月一日) — the
  anchor's year;
- absolute: 2024年04月01日 (also with 号, a weekday and a clock time after it: the date is
  kept), 2024年4月 (a month), 2024年 (a year).
A bare weekday (周六) stays unresolved, as "Saturday" does in English.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass

from ..lexicon import (
    MONTHS,
    NUMBER_WORDS,
    VAGUE_COUNT_WORDS,
    WEEKDAY_NAMES,
    WEEKDAYS,
    ZH_DIGITS,
    ZH_WEEK_WORDS,
    ZH_WEEKDAYS,
    zh_number,
)

_COUNT_WORDS = {**NUMBER_WORDS, **VAGUE_COUNT_WORDS}


def _alternation(words) -> str:
    """A regex alternation of ``words``, longer first, so that a word never loses to its prefix."""
    return "|".join(sorted(words, key=len, reverse=True))


# Every name of the month table, a month's longer names first ("september|sept|sep").
_MONTH = "(" + "|".join(sorted(MONTHS, key=lambda name: (MONTHS[name], -len(name)))) + ")"
_NUM = rf"(\d+|{_alternation(VAGUE_COUNT_WORDS)}|{'|'.join(NUMBER_WORDS)})"
_UNIT = r"(day|week|month|year|weekend)s?"
_WEEKDAY = "(" + "|".join(WEEKDAY_NAMES) + ")"

_RELATIVE = [
    ("ago", re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", re.I)),
    ("in_n", re.compile(rf"\bin\s+{_NUM}\s+{_UNIT}\b", re.I)),
    ("shift", re.compile(rf"\b(last|this|next|past)\s+{_UNIT}\b", re.I)),
    ("weekday", re.compile(rf"\b(last|this|next|on)?\s*{_WEEKDAY}\b", re.I)),
    ("day", re.compile(r"\b(yesterday|today|tonight|tomorrow|last night|this morning|this evening)\b", re.I)),
]
_ABS_DAY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(\d{{4}})\b", re.I)
_ABS_DAY_US = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_ABS_MONTH = re.compile(rf"\b{_MONTH},?\s+(\d{{4}})\b", re.I)
_ABS_YEAR = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d{2})\b", re.I)
_ABS_ISO = re.compile(r"\b((?:19|20)\d{2})-(\d{2})-(\d{2})\b")


# -- Chinese -------------------------------------------------------------------------------
_ZH_DAYS = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "昨晚": -1, "昨夜": -1,
            "今天": 0, "今日": 0, "今晚": 0, "今早": 0, "明天": 1, "明日": 1, "明晚": 1, "明早": 1,
            "后天": 2, "大后天": 3}
_ZH_WEEK_SHIFT = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_ZH_MONTHS_REL = {"上上个月": -2, "上个月": -1, "上月": -1, "这个月": 0, "本月": 0, "下个月": 1,
                  "下月": 1, "下下个月": 2}
_ZH_YEARS_REL = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2, "大后年": 3}
_ZH_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month",
             "年": "year"}
_ZH_BEFORE = ("前", "以前", "之前")


_ZH_NUMERAL = "[" + "".join(ZH_DIGITS) + "十]"
_ZH_N = rf"(\d{{1,2}}|{_ZH_NUMERAL}{{1,3}})"
_ZH_NOT_AFTER_NUMBER = rf"(?<![\d{''.join(ZH_DIGITS)}十])"
_ZH_RELATIVE = [
    ("zh_count", re.compile(rf"{_ZH_NOT_AFTER_NUMBER}{_ZH_N}\s*个?\s*({_alternation(_ZH_UNITS)})"
                            rf"\s*({_alternation((*_ZH_BEFORE, '以后', '之后', '后'))})")),
    ("zh_week", re.compile(rf"({_alternation(_ZH_WEEK_SHIFT)})个?(?:{_alternation(ZH_WEEK_WORDS)})"
                           rf"([{''.join(ZH_WEEKDAYS)}]|末)?")),
    ("zh_month", re.compile(_alternation(_ZH_MONTHS_REL))),
    ("zh_year", re.compile(_alternation(_ZH_YEARS_REL))),
    ("zh_day", re.compile(_alternation(_ZH_DAYS))),
    ("zh_month_day", re.compile(rf"(?<![\d年]){_ZH_N}\s*月\s*{_ZH_N}\s*[日号]")),
]
_ZH_ABS_DAY = re.compile(rf"(?<!\d)((?:19|20)\d{{2}})\s*年\s*{_ZH_N}\s*月\s*{_ZH_N}\s*[日号]")
_ZH_ABS_MONTH = re.compile(rf"(?<!\d)((?:19|20)\d{{2}})\s*年\s*{_ZH_N}\s*月")
_ZH_ABS_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})\s*年")


def _zh_relative(kind: str, m: re.Match, anchor: dt.date) -> tuple[dt.date, dt.date, str] | None:
    if kind == "zh_count":
        count = zh_number(m.group(1))
        if count is None:
            return None
        sign = -1 if m.group(3) in _ZH_BEFORE else 1
        return _shift(anchor, _ZH_UNITS[m.group(2)], sign * count)
    if kind == "zh_week":
        shift = _ZH_WEEK_SHIFT[m.group(1)]
        which = m.group(2)
        if which is None:
            return _shift(anchor, "week", shift)
        if which == "末":
            return _shift(anchor, "weekend", shift)
        day = anchor - dt.timedelta(days=anchor.weekday()) + dt.timedelta(weeks=shift,
                                                                            days=ZH_WEEKDAYS[which])
        return day, day, "day"
    if kind == "zh_month":
        return _shift(anchor, "month", _ZH_MONTHS_REL[m.group(0)])
    if kind == "zh_year":
        return _shift(anchor, "year", _ZH_YEARS_REL[m.group(0)])
    if kind == "zh_day":
        day = anchor + dt.timedelta(days=_ZH_DAYS[m.group(0)])
        return day, day, "day"
    month, day_n = zh_number(m.group(1)), zh_number(m.group(2))  # zh_month_day: the anchor's year
    try:
        day = dt.date(anchor.year, month or 0, day_n or 0)
    except ValueError:
        return None
    return day, day, "day"


@dataclass(frozen=True, slots=True)
class TimeSpan:
    """A resolved expression: where it stood in the text and the date range it denotes."""

    surface: str
    start_char: int
    end_char: int
    first: dt.date
    last: dt.date
    granularity: str  # day / week / month / year

    def label(self) -> str:
        if self.granularity == "day":
            return self.first.strftime("%-d %B %Y")
        if self.granularity == "month":
            return self.first.strftime("%B %Y")
        if self.granularity == "year":
            return str(self.first.year)
        return f"week of {self.first.strftime('%-d %B %Y')}"


def parse_anchor(value: str | None) -> dt.date | None:
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value).date()
    except ValueError:
        return None


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _COUNT_WORDS.get(word, 1)


def _month_range(year: int, month: int) -> tuple[dt.date, dt.date]:
    return dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1])


def _add_months(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return dt.date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def _shift(anchor: dt.date, unit: str, amount: int) -> tuple[dt.date, dt.date, str]:
    unit = unit.lower()
    if unit == "day":
        day = anchor + dt.timedelta(days=amount)
        return day, day, "day"
    if unit in ("week", "weekend"):
        start = anchor - dt.timedelta(days=anchor.weekday()) + dt.timedelta(weeks=amount)
        if unit == "weekend":
            return start + dt.timedelta(days=5), start + dt.timedelta(days=6), "week"
        return start, start + dt.timedelta(days=6), "week"
    if unit == "month":
        first = _add_months(anchor.replace(day=1), amount)
        return (*_month_range(first.year, first.month), "month")
    year = anchor.year + amount
    return dt.date(year, 1, 1), dt.date(year, 12, 31), "year"


def resolve_relative(text: str, anchor: dt.date | None) -> list[TimeSpan]:
    """Relative time expressions in ``text`` resolved against ``anchor`` (the trace's date)."""
    if anchor is None:
        return []
    found: list[TimeSpan] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in (_RELATIVE + _ZH_RELATIVE) if _has_han(text) else _RELATIVE:
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            if kind == "zh_month_day" and _inside_absolute(text, m):
                continue  # 2024年4月1日 is absolute (parse_absolute), not the anchor's year
            try:
                span = _zh_relative(kind, m, anchor) if kind.startswith("zh_") else _resolve_one(kind, m, anchor)
            except (ValueError, OverflowError):
                continue  # "7000 years ago": before year 1, no calendar date to annotate
            if span is None:
                continue
            first, last, granularity = span
            found.append(TimeSpan(m.group(0).strip(), m.start(), m.end(), first, last, granularity))
            taken.append((m.start(), m.end()))
    return sorted(found, key=lambda s: s.start_char)


def _has_han(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def _inside_absolute(text: str, m: re.Match) -> bool:
    return bool(re.search(r"(?:19|20)\d{2}\s*年\s*$", text[:m.start()]))


def _resolve_one(kind: str, m: re.Match, anchor: dt.date):
    if kind == "ago":
        return _shift(anchor, m.group(2), -_count(m.group(1)))
    if kind == "in_n":
        return _shift(anchor, m.group(2), _count(m.group(1)))
    if kind == "shift":
        direction = {"last": -1, "past": -1, "this": 0, "next": 1}[m.group(1).lower()]
        return _shift(anchor, m.group(2), direction)
    if kind == "weekday":
        which = (m.group(1) or "").lower()
        target = WEEKDAYS[m.group(2).lower()]
        if which == "next":
            delta = (target - anchor.weekday()) % 7 or 7
        elif which == "this":
            delta = target - anchor.weekday()
        elif which == "last":
            delta = -((anchor.weekday() - target) % 7 or 7)
        else:
            return None  # a bare weekday is too ambiguous to annotate
        day = anchor + dt.timedelta(days=delta)
        return day, day, "day"
    word = m.group(1).lower()
    offset = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(word, 0)
    day = anchor + dt.timedelta(days=offset)
    return day, day, "day"


# 10.01.2024, 1/19/2024, 19-01-2024: day and month in the writer's order, which the date alone
# may not tell (10.01 is 10 January in most of Europe, October 1 in the US).
_NUMERIC_DATE = re.compile(r"(?<![\w./-])(\d{1,2})([./-])(\d{1,2})\2((?:19|20)\d{2})(?![\d/-]|\.\d)")


def numeric_dates(text: str) -> list[TimeSpan]:
    """Every day a numeric date of ``text`` can be read as: one span when only one of day-month
    and month-day is a valid date (19.01.2024) or both read the same (05.05.2024), two spans
    with the same surface when both are valid (10.01.2024: 10 January or October 1). The caller
    decides between two readings (``retrieval.engine`` keeps the one within the memory's dates)."""
    out: list[TimeSpan] = []
    for m in _NUMERIC_DATE.finditer(text):
        first, second, year = int(m.group(1)), int(m.group(3)), int(m.group(4))
        days: list[dt.date] = []
        for day_n, month_n in ((first, second), (second, first)):
            try:
                day = dt.date(year, month_n, day_n)
            except ValueError:
                continue
            if day not in days:
                days.append(day)
        out.extend(TimeSpan(m.group(0), m.start(), m.end(), day, day, "day") for day in days)
    return out


def parse_absolute(text: str) -> list[TimeSpan]:
    """Absolute dates in ``text``: day, month or year ranges, most specific first."""
    found: list[TimeSpan] = []
    taken: list[tuple[int, int]] = []

    def keep(m: re.Match, first: dt.date, last: dt.date, granularity: str) -> None:
        if any(s < m.end() and m.start() < e for s, e in taken):
            return
        found.append(TimeSpan(m.group(0), m.start(), m.end(), first, last, granularity))
        taken.append((m.start(), m.end()))

    for m in _ABS_ISO.finditer(text):
        try:
            day = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            continue
        keep(m, day, day, "day")
    for pattern, order in ((_ABS_DAY, (1, 2, 3)), (_ABS_DAY_US, (2, 1, 3))):
        for m in pattern.finditer(text):
            day_s, month_s, year_s = (m.group(i) for i in order)
            try:
                day = dt.date(int(year_s), MONTHS[month_s.lower()], int(day_s))
            except (ValueError, KeyError):
                continue
            keep(m, day, day, "day")
    for m in _ABS_MONTH.finditer(text):
        month = MONTHS.get(m.group(1).lower())
        if month:
            keep(m, *_month_range(int(m.group(2)), month), "month")
    for m in _ABS_YEAR.finditer(text):
        year = int(m.group(1))
        keep(m, dt.date(year, 1, 1), dt.date(year, 12, 31), "year")
    if _has_han(text):
        _zh_absolute(text, keep)
    return sorted(found, key=lambda s: s.start_char)


def _zh_absolute(text: str, keep) -> None:
    """Chinese absolute dates, most specific first (see the module docstring)."""
    for m in _ZH_ABS_DAY.finditer(text):
        month, day_n = zh_number(m.group(2)), zh_number(m.group(3))
        try:
            day = dt.date(int(m.group(1)), month or 0, day_n or 0)
        except ValueError:
            continue
        keep(m, day, day, "day")
    for m in _ZH_ABS_MONTH.finditer(text):
        month = zh_number(m.group(2))
        if month is not None and 1 <= month <= 12:
            keep(m, *_month_range(int(m.group(1)), month), "month")
    for m in _ZH_ABS_YEAR.finditer(text):
        year = int(m.group(1))
        keep(m, dt.date(year, 1, 1), dt.date(year, 12, 31), "year")
