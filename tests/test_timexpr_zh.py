"""Chinese dates: the strict reader (store/dates.py) and time expressions (encoders/timexpr.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from zeromem.encoders.timexpr import parse_absolute, resolve_relative
from zeromem.lexicon import zh_number
from zeromem.store.dates import DateError, parse

WEDNESDAY = dt.date(2024, 4, 3)

# (text, surface, first, last, granularity), anchored on Wednesday 3 April 2024.
RELATIVE = [
    ("我昨天去了公园", "昨天", "2024-04-02", "2024-04-02", "day"),
    ("前天下雨了", "前天", "2024-04-01", "2024-04-01", "day"),
    ("大前天", "大前天", "2024-03-31", "2024-03-31", "day"),
    ("今天很忙", "今天", "2024-04-03", "2024-04-03", "day"),
    ("明天下午见", "明天", "2024-04-04", "2024-04-04", "day"),
    ("后天出发", "后天", "2024-04-05", "2024-04-05", "day"),
    ("上周六我们爬山", "上周六", "2024-03-30", "2024-03-30", "day"),
    ("下周一开会", "下周一", "2024-04-08", "2024-04-08", "day"),
    ("这周三", "这周三", "2024-04-03", "2024-04-03", "day"),
    ("本周日", "本周日", "2024-04-07", "2024-04-07", "day"),
    ("下下周日晚上七点", "下下周日", "2024-04-21", "2024-04-21", "day"),
    ("上个星期五", "上个星期五", "2024-03-29", "2024-03-29", "day"),
    ("下礼拜天", "下礼拜天", "2024-04-14", "2024-04-14", "day"),
    ("上周末去了海边", "上周末", "2024-03-30", "2024-03-31", "week"),
    ("下周很忙", "下周", "2024-04-08", "2024-04-14", "week"),
    ("两周前", "两周前", "2024-03-18", "2024-03-24", "week"),
    ("三天前", "三天前", "2024-03-31", "2024-03-31", "day"),
    ("5天后", "5天后", "2024-04-08", "2024-04-08", "day"),
    ("3个月后", "3个月后", "2024-07-01", "2024-07-31", "month"),
    ("十年前", "十年前", "2014-01-01", "2014-12-31", "year"),
    ("上个月", "上个月", "2024-03-01", "2024-03-31", "month"),
    ("下个月", "下个月", "2024-05-01", "2024-05-31", "month"),
    ("去年夏天", "去年", "2023-01-01", "2023-12-31", "year"),
    ("明年", "明年", "2025-01-01", "2025-12-31", "year"),
    ("4月1日", "4月1日", "2024-04-01", "2024-04-01", "day"),
    ("四月十二号", "四月十二号", "2024-04-12", "2024-04-12", "day"),
]


@pytest.mark.parametrize(("text", "surface", "first", "last", "granularity"), RELATIVE)
def test_relative_chinese_expressions(text, surface, first, last, granularity):
    spans = resolve_relative(text, WEDNESDAY)
    assert [(s.surface, s.first.isoformat(), s.last.isoformat(), s.granularity) for s in spans] == [
        (surface, first, last, granularity)]


@pytest.mark.parametrize("text", ["周六", "持续时间是五个周", "2024年4月1日", "规模是五百人", "2月30日"])
def test_not_relative(text):
    assert resolve_relative(text, WEDNESDAY) == []


def test_no_anchor_no_resolution():
    assert resolve_relative("昨天", None) == []


def test_english_unchanged_next_to_chinese():
    spans = resolve_relative("yesterday 我和朋友 昨天", WEDNESDAY)
    assert [s.surface for s in spans] == ["yesterday", "昨天"]


ABSOLUTE = [
    ("2024年04月01日 周一 08:39", "2024年04月01日", "2024-04-01", "2024-04-01", "day"),
    ("我2024年4月1号到的", "2024年4月1号", "2024-04-01", "2024-04-01", "day"),
    ("2024年4月", "2024年4月", "2024-04-01", "2024-04-30", "month"),
    ("2023年去过", "2023年", "2023-01-01", "2023-12-31", "year"),
]


@pytest.mark.parametrize(("text", "surface", "first", "last", "granularity"), ABSOLUTE)
def test_absolute_chinese_dates(text, surface, first, last, granularity):
    spans = parse_absolute(text)
    assert [(s.surface, s.first.isoformat(), s.last.isoformat(), s.granularity) for s in spans] == [
        (surface, first, last, granularity)]


def test_absolute_needs_a_year():
    assert parse_absolute("4月1日") == [] and parse_absolute("规模是500人") == []


@pytest.mark.parametrize(("text", "value"), [("十二", 12), ("两", 2), ("二十五", 25), ("12", 12),
                                             ("十", 10), ("几", None), ("", None)])
def test_zh_number(text, value):
    assert zh_number(text) == value


STRICT = [
    ("2024年04月01日 周一 08:39", "2024-04-01T08:39:00"),
    ("2024年4月1号", "2024-04-01T00:00:00"),
    ("2024年4月", "2024-04-01T00:00:00"),
    ("2024年04月01日 星期一", "2024-04-01T00:00:00"),
    ("2024年4月1日 下午3点", "2024-04-01T15:00:00"),
    ("2024年4月1日 晚上7点30分", "2024-04-01T19:30:00"),
    ("2024年4月1日 8点半", "2024-04-01T08:30:00"),
    ("2024年4月1日 08:39 +08:00", "2024-04-01T08:39:00+08:00"),
]


@pytest.mark.parametrize(("text", "iso"), STRICT)
def test_strict_reader_accepts_chinese_dates(text, iso):
    assert parse(text).isoformat() == iso


@pytest.mark.parametrize(("text", "why"), [
    ("2024年04月01日 周二 08:39", "Monday, not 周二"),
    ("2024年13月1日", "no such date"),
    ("4月1日", "no year"),
    ("2024年4月1日 随便", "not a form"),
])
def test_strict_reader_refuses(text, why):
    with pytest.raises(DateError, match=why):
        parse(text)
