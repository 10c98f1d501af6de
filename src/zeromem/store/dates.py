"""Strict reading of dates and times given as text, and the UTC key they are compared by.

Why strict: a lenient parser (dateutil) reads "May 32" as 1 May 2032, "5" as the 5th of January
of the year it happens to run in, and drops "PDT" with a warning. A stored time is provenance,
so a date zeromem cannot read exactly is refused (``DateError``, turned into InvalidInput by
``validate.clean_time``) instead of being guessed.

Accepted (case-insensitive):

* ISO 8601: ``2023-05-08``, ``2023-05-08T13:56``, ``2023-05-08 13:56:00.5``, with an optional
  offset (``Z``, ``+02:00``, ``-0700``); the reduced forms ``2023`` and ``2023-05`` mean the
  first day of that year or month;
* a date with its year written out: ``8 May 2023``, ``May 8, 2023``, ``Monday, 8 May 2023``,
  ``May 2023``, optionally with a time before or after it: ``1:56 pm on 8 May, 2023`` (LoCoMo),
  ``8 May 2023 13:56``, ``May 8, 2023 at 1:56 pm``;
* a Chinese date with its year: ``2024年04月01日``, ``2024年4月1号``, ``2024年4月`` (the first
  of the month), with an optional weekday (``周一``, ``星期一``; it must be that date's) and an
  optional clock time after it (``08:39``, ``下午3点``, ``晚上7点30分``): MemDaily-style
  ``2024年04月01日 周一 08:39``;
* either one followed by a time zone: an abbreviation of ``ZONES`` (UTC, PDT, CET...), an offset
  (``+02:00``, ``UTC+2``) or an IANA name (``America/Chicago``).

A date without a year is refused: zeromem never takes the year of the day it runs (the same
input must mean the same instant whenever it is stored). A time without a zone stays a
wall-clock time without one (stored as given, compared as if it were UTC).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import zoneinfo

from ..lexicon import MONTHS, WEEKDAYS, ZH_WEEK_WORDS, ZH_WEEKDAYS

ACCEPTED = ("use ISO 8601 (2023-05-08, 2023-05-08T13:56:00, 2023-05-08T13:56:00-07:00) or a date "
            "with its year written out ('8 May 2023', 'May 8, 2023', '1:56 pm on 8 May, 2023', "
            "'8 May 2023 13:56', '2024年04月01日 周一 08:39'), optionally followed by a time zone "
            "(UTC, PDT, CET, +02:00, or an IANA name like America/Chicago)")

# Common abbreviations with one fixed offset each. Ambiguous ones take their most common
# meaning (IST: India, BST: British Summer Time, CST: US Central); others are refused rather
# than guessed — an offset or an IANA name says the same without ambiguity.
ZONES: dict[str, dt.timedelta] = {name: dt.timedelta(hours=hours) for name, hours in {
    "UTC": 0, "GMT": 0, "Z": 0, "UT": 0,
    "PST": -8, "PDT": -7, "MST": -7, "MDT": -6, "CST": -6, "CDT": -5, "EST": -5, "EDT": -4,
    "AKST": -9, "AKDT": -8, "HST": -10,
    "WET": 0, "WEST": 1, "BST": 1, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3, "MSK": 3,
    "IST": 5.5, "SGT": 8, "HKT": 8, "JST": 9, "KST": 9,
    "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
}.items()}


_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ].*)?$|^\d{8}(?:T.*)?$", re.IGNORECASE)
_ISO_YEAR = re.compile(r"^(\d{4})(?:-(\d{2}))?$")
_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)
_IANA = re.compile(r"^[A-Za-z_]+(?:/[A-Za-z0-9_+-]+)+$")
_WEEKDAY = r"(?:(?P<wd>[a-z]+)\.?,?\s+)?"
_TIME = r"(?P<h>\d{1,2})(?::(?P<mi>\d{2})(?::(?P<s>\d{2}))?)?\s*(?P<ap>[ap]\.?m\.?)?"
_DATES = (
    r"(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mon>[a-z]+)\.?,?\s+(?P<y>\d{4})",
    r"(?P<mon>[a-z]+)\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<y>\d{4})",
    r"(?P<mon>[a-z]+)\.?,?\s+(?P<y>\d{4})",
)
_FORMS = [re.compile(pattern) for date in _DATES for pattern in (
    rf"^{_WEEKDAY}{date}(?:\s*(?:,|at|@)?\s*{_TIME})?$",
    rf"^{_TIME}\s*(?:,|on|at)?\s*{_WEEKDAY}{date}$",
)]


_ZH_DATE = re.compile(
    r"^(?P<y>\d{4})\s*年\s*(?P<mon>\d{1,2})\s*月(?:\s*(?P<d>\d{1,2})\s*[日号])?"
    rf"(?:\s*[,，]?\s*(?:{'|'.join(ZH_WEEK_WORDS)})(?P<wd>[{''.join(w for w in ZH_WEEKDAYS if not w.isdigit())}]))?"
    r"(?:\s*[,，]?\s*(?P<half>上午|早上|凌晨|中午|下午|傍晚|晚上)?\s*(?P<h>\d{1,2})\s*"
    r"(?:[:：]\s*(?P<mi>\d{2})(?:[:：](?P<s>\d{2}))?|点(?:\s*(?P<mi2>\d{1,2})\s*分)?|点半(?P<half_hour>))?)?$")
_ZH_AFTERNOON = ("下午", "傍晚", "晚上")


class DateError(ValueError):
    """Text that is not a date zeromem can read exactly; the message says why."""


def parse(text: str) -> dt.datetime:
    """The instant (or wall-clock time, when no zone is given) ``text`` names exactly.

    Raises DateError saying what is wrong (no year, no such day, unknown zone...).
    """
    words = text.strip().split()
    if not words:
        raise DateError("it is empty")
    zone, words = _split_zone(words)
    rest = " ".join(words)
    if not rest:
        raise DateError("it names a time zone but no date")
    parsed = _parse_iso(rest) if _ISO.match(rest) or _ISO_YEAR.match(rest) else _parse_words(rest)
    if zone is not None:
        if parsed.tzinfo is not None:
            raise DateError("it gives two time zones (an offset and a zone name): keep one")
        parsed = parsed.replace(tzinfo=zone)
    if parsed.tzinfo is not None:
        try:
            parsed.astimezone(dt.UTC)
        except (OverflowError, ValueError):
            raise DateError("in UTC it falls outside the years 1-9999") from None
    return parsed


def _split_zone(words: list[str]) -> tuple[dt.tzinfo | None, list[str]]:
    """The one time zone among the words (after the first), and the words without it."""
    found: list[tuple[int, dt.tzinfo]] = []
    for index, word in enumerate(words):
        zone = _zone(word.strip("(),")) if index else None
        if zone is not None:
            found.append((index, zone))
    if len(found) > 1:
        raise DateError("it gives more than one time zone: keep one")
    if not found:
        return None, words
    index, zone = found[0]
    return zone, words[:index] + words[index + 1:]


def _zone(word: str) -> dt.tzinfo | None:
    """The time zone a word names, None if it names none; DateError for a bad offset or an
    IANA-shaped name that does not exist."""
    fixed = ZONES.get(word.upper())
    if fixed is not None:
        return dt.timezone(fixed)
    offset = _OFFSET.match(word)
    if offset:
        sign, hours, minutes = offset.group(1), int(offset.group(2)), int(offset.group(3) or 0)
        if hours >= 24 or minutes >= 60:
            raise DateError(f"{word} is not a UTC offset: it must be under 24 hours (e.g. +02:00)")
        delta = dt.timedelta(hours=hours, minutes=minutes)
        return dt.timezone(-delta if sign == "-" else delta)
    if _IANA.match(word):
        try:
            return zoneinfo.ZoneInfo(word)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise DateError(f"unknown time zone {word!r}: use an IANA name like America/Chicago, "
                            "an offset like +02:00, or one of " + ", ".join(sorted(ZONES))) from None
    return None


def _parse_iso(text: str) -> dt.datetime:
    reduced = _ISO_YEAR.match(text)
    if reduced:  # ISO 8601 reduced precision: a year, or a year and month
        year, month = int(reduced.group(1)), int(reduced.group(2) or 1)
        return _make(year, month, 1)
    try:
        parsed = dt.datetime.fromisoformat(text.upper())  # 't' and 'z' are valid ISO too
    except ValueError as exc:
        reason = "its UTC offset must be under 24 hours" if "offset" in str(exc) else str(exc)
        raise DateError(f"not a valid ISO 8601 date/time ({reason})") from None
    offset = parsed.utcoffset()
    if offset is not None and (offset.seconds % 60 or offset.microseconds):
        # Python reads "+05:30:15"; ISO 8601 offsets are hours and minutes, and a stored
        # offset with seconds would be shown and compared as nobody wrote it.
        raise DateError("its UTC offset has seconds: an offset is hours and minutes (e.g. +05:30)")
    return parsed


def _parse_words(text: str) -> dt.datetime:
    lowered = text.lower()
    if re.fullmatch(r"[+-]?\d+(?:\.\d+)?", lowered):
        raise DateError("a bare number is not a date: pass an ISO date (2023-05-08), a datetime, "
                        "or epoch seconds as a number rather than text")
    if not re.search(r"\d", lowered):
        raise DateError("it is not a date")
    if not re.search(r"(?<!\d)\d{4}(?!\d)", lowered):
        raise DateError("it names no year: write the year out (e.g. '8 May 2023'); zeromem "
                        "never guesses the year")
    if "年" in lowered:
        return _parse_zh(lowered)
    for form in _FORMS:
        match = form.match(lowered)
        if match:
            return _from_match(match)
    raise DateError("not a form zeromem reads")


def _from_match(match: re.Match[str]) -> dt.datetime:
    parts = match.groupdict()
    month = MONTHS.get(parts["mon"])
    if month is None:
        raise DateError(f"{parts['mon']!r} is not a month name")
    day = int(parts.get("d") or 1)
    hour, minute, second = _clock(parts)
    stamp = _make(int(parts["y"]), month, day, hour, minute, second)
    weekday = parts.get("wd")
    if weekday is not None:
        number = WEEKDAYS.get(weekday)
        if number is None:
            raise DateError(f"{weekday!r} is not a day of the week")
        if number != stamp.weekday():
            raise DateError(f"{stamp:%-d %B %Y} is a {stamp:%A}, not a {weekday.capitalize()}")
    return stamp


def _parse_zh(text: str) -> dt.datetime:
    """A Chinese date with its year (see the module docstring)."""
    match = _ZH_DATE.match(text)
    if match is None:
        raise DateError("not a form zeromem reads (a Chinese date reads like 2024年04月01日 周一 08:39)")
    parts = match.groupdict()
    hour = minute = second = 0
    if parts["h"] is not None:
        hour = int(parts["h"])
        minute = int(parts["mi"] or parts["mi2"] or (30 if parts["half_hour"] is not None else 0))
        second = int(parts["s"] or 0)
        if parts["half"] in _ZH_AFTERNOON and 1 <= hour < 12:
            hour += 12
    stamp = _make(int(parts["y"]), int(parts["mon"]), int(parts["d"] or 1), hour, minute, second)
    weekday = parts["wd"]
    if weekday is not None and ZH_WEEKDAYS[weekday] != stamp.weekday():
        raise DateError(f"{stamp:%Y-%m-%d} is a {stamp:%A}, not 周{weekday}")
    return stamp


def _clock(parts: dict[str, str | None]) -> tuple[int, int, int]:
    """(hour, minute, second) of the matched time, (0, 0, 0) without one."""
    hours = parts.get("h")
    if hours is None:
        return 0, 0, 0
    if parts["mi"] is None and parts["ap"] is None:
        raise DateError(f"{hours!r} is not a time: write 13:00 or 1 pm")
    hour, minute, second = int(hours), int(parts["mi"] or 0), int(parts["s"] or 0)
    if parts["ap"] is not None:
        if not 1 <= hour <= 12:
            raise DateError(f"{hour} {parts['ap']} is not a time: am/pm hours run from 1 to 12")
        hour = hour % 12 + (12 if parts["ap"].startswith("p") else 0)
    return hour, minute, second


def _make(year: int, month: int, day: int, hour: int = 0, minute: int = 0,
          second: int = 0) -> dt.datetime:
    try:
        return dt.datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        raise DateError(f"no such date/time ({exc})") from None


def to_utc(value: dt.datetime) -> dt.datetime:
    """``value`` as a naive UTC datetime; a naive value is taken as UTC already."""
    return value if value.tzinfo is None else value.astimezone(dt.UTC).replace(tzinfo=None)


@functools.lru_cache(maxsize=1 << 16)
def utc_key(value: str) -> str:
    """The stored time ``value`` (ISO 8601, with or without offset) as a naive UTC ISO string.

    Why: stored times keep the caller's offset, so their text does not sort by instant
    ("10:00-07:00" is after "12:00+00:00"). Keys made here compare as text in instant order,
    and a naive key equals ``to_utc(d).isoformat()`` of the same instant (what ``as_of``
    becomes). Session times and batch record times repeat, hence the cache; the two shapes
    zeromem writes most (naive, and UTC record times) skip parsing.
    """
    if len(value) == 19 and value[10] == "T":
        return value
    if len(value) == 32 and value.endswith("+00:00") and value[19] == ".":
        return value[:19] if value[19:26] == ".000000" else value[:26]
    try:
        return to_utc(dt.datetime.fromisoformat(value)).isoformat()
    except (ValueError, OverflowError):
        return value  # not written by zeromem: compared as text, as before
