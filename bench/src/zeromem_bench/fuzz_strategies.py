"""Hypothesis strategies for ``zeromem bench fuzz`` (bench/fuzz.py): the values every surface
uses, and the cases of the inner two — Python API calls and importer files (CLI argument lists
and REST requests: bench/fuzz_requests.py).

Each strategy mixes well-formed inputs (so that accepted calls go deep: real ids, sessions and
times of the seeded store) with malformed ones: wrong types, empty / whitespace / NUL /
control-character / lone-surrogate / oversized text, unreadable times (offsets of 24 h or more,
impossible dates, epochs out of range), ints beyond 64 bits, nested / deep / huge / cyclic
metadata, unknown and misshapen ids, bad scopes. Strategies that need the seeded store's ids
take a ``Seeded`` (bench/fuzz.py builds it from the store, so the trace-id format is not
assumed here).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

ESC = "\x1b"
TEXT_LIMIT = 100_000  # Config().max_text_chars
SENTENCES = (
    "I moved to Denver last week with my sister Ana.",
    "Ana loves hiking in the Rockies on weekends.",
    "Remember that I am allergic to peanuts.",
    "Actually, I live in Boulder now, not Denver.",
    "Sure, I'll remind you about the dentist on Friday at 3 pm.",
    "What did Ana say about the trip to Lisbon in May 2023?",
    "我明天去北京开会。",
    "Mi hermana vive en Madrid desde 2019.",
    "I prefer tea over coffee, and I never drink after 6 pm.",
    "My new phone number ends in 4821.",
    "ok",
    "?",
)
WORDS = ("Ana", "Denver", "Boulder", "moved", "sister", "peanuts", "hiking", "May", "2023",
         "北京", "the", "not", "yesterday", "Lisbon", "dentist", "tea")


@dataclass(frozen=True)
class Seeded:
    """What the seeded store holds, for strategies that should hit real rows."""

    ids: tuple[str, ...]  # live traces of the main scope
    deleted_ids: tuple[str, ...]  # deleted traces (history tombstones only)
    other_ids: tuple[str, ...]  # live traces of another scope
    sessions: tuple[str, ...]  # session names of the main scope
    keys: dict[str, str] = field(default_factory=dict)  # REST: role → API key


# Paths the API and CLI surfaces substitute when they run a case (values equal to these,
# exactly): the live store, a path with nothing there, a folder, a file that is not a store, a
# conversation file (the CLI writes the case's own; the API surface a small valid one), a missing file.
DB, MISSING, FOLDER, GARBAGE, FILE, NOFILE = "@DB", "@MISSING", "@DIR", "@GARBAGE", "@FILE", "@NOFILE"
DB_URL = "sqlite:///@DB"
LAST = "@LAST"  # the API surface: the id the case's last add / add_many returned


def weighted(*pairs: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of ``pairs``' strategies, picked with the given integer weights (shrinks to the first)."""
    total = sum(weight for weight, _ in pairs)

    def pick(index: int) -> st.SearchStrategy[Any]:
        for weight, strategy in pairs:
            if index < weight:
                return strategy
            index -= weight
        raise AssertionError(index)

    return st.integers(0, total - 1).flatmap(pick)


class EchoReader:
    """A deterministic reader (no LLM): answers with the first evidence line of the context."""

    def answer(self, question: str, context: Any) -> Any:
        from zeromem.reader.base import ReaderAnswer

        lines = context.text.splitlines()
        first = lines[1] if len(lines) > 1 else ""
        return ReaderAnswer(text=first.split("] ", 1)[-1], prompt_tokens=1, completion_tokens=1,
                            model="echo")

    def __repr__(self) -> str:
        return "EchoReader()"


class OddReader:
    """A reader that breaks the protocol: it answers with a number."""

    def answer(self, question: str, context: Any) -> Any:
        return 42

    def __repr__(self) -> str:
        return "OddReader()"


class Opaque:
    """An object of no type zeromem knows (its repr keeps failure reports readable)."""

    def __repr__(self) -> str:
        return "Opaque()"


class BadOffset(dt.tzinfo):
    """A tzinfo whose UTC offset is 24 hours or more (Python refuses it when it is used)."""

    def __init__(self, hours: float) -> None:
        self.hours = hours

    def utcoffset(self, _: Any) -> dt.timedelta:
        return dt.timedelta(hours=self.hours)

    def dst(self, _: Any) -> dt.timedelta:
        return dt.timedelta(0)

    def tzname(self, _: Any) -> str:
        return "BAD"

    def __repr__(self) -> str:
        return f"BadOffset({self.hours})"


# -- text ------------------------------------------------------------------------------------
any_char = st.characters(codec="utf-8")  # every character but the lone surrogates
surrogate = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
controls = st.sampled_from(["\x00", "\x07", "\x08", "\r", "\x0b", "\x0c", "\x7f", "\x85", "\x9b",
                            "\u2028", "\u202e", "\u2066", "\ufeff", "\ufffe", "\uffff", ESC + "[2J",
                            ESC + "]0;pwned\x07", ESC + "[31m"])
whitespace = st.text(st.sampled_from(" \t\n\r\x0b\x0c\u00a0\u2002\u3000\u2028\u2029\u0085"),
                     min_size=0, max_size=8)
unicode_digits = st.sampled_from(["١٢", "２０２３", "߂", "𝟐𝟎𝟐𝟑", "²", "Ⅻ"])


def _glue(parts: list[str]) -> str:
    return "".join(parts)


words_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
# Times in text, up to ones no calendar holds ("11000 years ago" once broke a whole scope).
_counts = st.sampled_from([1, 2, 7977, 11000, 10**12])
_units = st.sampled_from(["days", "weeks", "weekends", "months", "years"])
time_phrase = st.one_of(
    st.builds("{} {} ago".format, _counts, _units), st.builds("in {} {}".format, _counts, _units),
    st.sampled_from(["on December 31, 9999", "on January 1, 0001", "0001-01-01", "一万年前", "100000天前",
                     "yesterday", "last weekend", "next year", "上周六", "两周前"]))
timed_text = st.builds("{} {}".format, st.sampled_from(SENTENCES), time_phrase)
plain_text = st.one_of(st.sampled_from(SENTENCES), words_text, timed_text,
                       st.text(any_char, min_size=1, max_size=60).filter(str.strip))
spiced_text = st.lists(st.one_of(plain_text, controls, unicode_digits, whitespace),
                       min_size=1, max_size=5).map(_glue).filter(str.strip)
good_text = weighted((6, plain_text), (3, spiced_text),
                     (1, st.builds(lambda s, n: (s + " ") * n, st.sampled_from(SENTENCES),
                                   st.sampled_from([50, 400]))))


def _huge(char: str, size: int) -> str:
    return char * size


huge_text = st.builds(_huge, st.sampled_from(["x", "é", "新", "😀", " ", "\x00"]),
                      st.sampled_from([TEXT_LIMIT, TEXT_LIMIT + 1, 10_001, 3 * TEXT_LIMIT]))
bad_text = st.one_of(
    st.just(""), whitespace, st.builds(_glue, st.lists(controls, min_size=1, max_size=3)),
    st.builds(lambda a, s, b: a + s + b, plain_text, surrogate, plain_text), surrogate,
    huge_text, st.just("\x00"),
    st.binary(max_size=40),  # bytes: accepted only as strict UTF-8
    st.sampled_from([b"caf\xe9", b"\xff\xfe", bytearray(b"hello"), b"ok"]),
    st.sampled_from([None, 0, -1, 1.5, math.nan, True, [], {}, ["a"], ("a",), {"text": "a"}, Opaque(),
                     np.str_("numpy text"), np.float64(2.5), memoryview(b"mv")]),
)


@dataclass(frozen=True)
class P:
    """One argument: strategies of its well-formed values and of its malformed ones."""

    good: st.SearchStrategy[Any]
    bad: st.SearchStrategy[Any]

    @property
    def any(self) -> st.SearchStrategy[Any]:
        return weighted((6, self.good), (4, self.bad))


def name_arg(known: Sequence[str]) -> P:
    """A session / speaker / source id: None, a known one, new text, or something malformed."""
    return P(weighted((3, st.none()), (4, st.sampled_from(list(known) or ["s1"])), (2, plain_text),
                      (1, st.integers(-10, 10)), (1, spiced_text)),
             st.one_of(bad_text, st.sampled_from([2**63, 10**4000, -(2**70)]),
                       st.builds(_huge, st.just("s"), st.sampled_from([999, 1000, 1001, 5000]))))


# -- numbers ---------------------------------------------------------------------------------
edge_ints = st.sampled_from([0, -1, 1, 2**31, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64,
                             10**30, 10**5000, -(10**5000)])
bad_numbers: st.SearchStrategy[Any] = st.sampled_from([True, False, 1.0, 2.5, -0.0, math.nan, math.inf, -math.inf, "3",
                               "ten", None, [], {}, b"1", np.int64(3), np.float32(1.5), Opaque()])


def count(low: int, high: int) -> P:
    """A count argument (k, limit, budget): in range, else an edge, a wrong type, or far out."""
    return P(st.integers(low, high), st.one_of(edge_ints, bad_numbers, st.integers(-(2**70), 2**70)))


# -- times -----------------------------------------------------------------------------------
MONTH_NAMES = ["May", "may", "June", "Sept", "Febuary", "Mai", "", "Dec.", "Octember"]
ZONE_WORDS = ["UTC", "Z", "PDT", "IST", "CEST", "XYZ", "+02:00", "-0700", "+24:00", "+23:59", "-99",
              "UTC+2", "GMT-13", "+1:30", "America/Chicago", "Europe/Nowhere", "Etc/GMT+14",
              "Mars/Olympus_Mons", "A/B/C", "UTC+25"]
iso_offsets = st.sampled_from(["", "Z", "+00:00", "+05:30", "-07:00", "+23:59", "-23:59", "+24:00",
                               "-24:00", "+99:99", "+14", "+0530", "+05:30:15", "+05:30:15.5", "z"])
aware_datetimes = st.builds(
    lambda d, minutes: d.replace(tzinfo=dt.timezone(dt.timedelta(minutes=minutes))),
    st.datetimes(), st.integers(-(24 * 60 - 1), 24 * 60 - 1))


@st.composite
def iso_text(draw: st.DrawFn) -> str:
    year = draw(st.one_of(st.integers(1, 9999), st.sampled_from([0, 10000, 99999])))
    month, day = draw(st.integers(0, 13)), draw(st.integers(0, 32))
    clock = draw(st.one_of(st.just(""), st.builds(
        lambda h, m, s, sep: f"{sep}{h:02d}:{m:02d}:{s:02d}", st.integers(0, 25),
        st.integers(0, 61), st.integers(0, 61), st.sampled_from(["T", " ", "t"]))))
    return f"{year:04d}-{month:02d}-{day:02d}{clock}{draw(iso_offsets)}"


@st.composite
def words_date(draw: st.DrawFn) -> str:
    day, month = draw(st.integers(0, 40)), draw(st.sampled_from(MONTH_NAMES))
    year = draw(st.sampled_from(["2023", "1999", "0001", "9999", "23", "20233", "２０２３", ""]))
    clock = draw(st.sampled_from(["", "1:56 pm on ", "13:56 ", "0:00 am on ", "12 pm on ", "25:61 on "]))
    zone = draw(st.one_of(st.just(""), st.sampled_from(ZONE_WORDS).map(lambda word: " " + word)))
    shape = draw(st.sampled_from(["{c}{d} {m}, {y}", "{m} {d}, {y}", "{d} {m} {y}", "{m} {y}",
                                  "Monday, {d} {m} {y}", "{d} of {m} {y} at 1:56 pm"]))
    return shape.format(c=clock, d=day, m=month, y=year) + zone


good_time = st.one_of(
    st.none(), st.datetimes(), aware_datetimes, st.dates(),
    st.integers(-(2**31), 2**33), st.floats(-1e9, 4e9),
    st.datetimes().map(dt.datetime.isoformat), aware_datetimes.map(dt.datetime.isoformat),
    st.sampled_from(["2023-05-08", "2023-05-08T13:56:00", "2023-05-08T13:56:00Z",
                     "2023-05-08 13:56:00.5+02:00", "1:56 pm on 8 May, 2023", "8 May 2023",
                     "May 8, 2023 at 1:56 pm", "8 May 2023 13:56 America/Chicago", "2023",
                     "2023-05", "Monday, 8 May 2023", "20230508T1356"]))
bad_time = st.one_of(
    iso_text(), words_date(), plain_text, bad_text,
    st.sampled_from(["2023-02-30", "2023-13-01", "May 32", "5", "tomorrow", "8 May",
                     "2023-05-08T10:00:00+24:00", "2023-05-08T10:00:00+25:00",
                     "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00",
                     "2023-05-08 PDT CET", "UTC", "Monday, 9 May 2023", "+02:00 8 May 2023",
                     "2023-05-08T13:56:00 Europe/Paris", "8 May 2023 ../../etc/passwd"]),
    st.sampled_from([dt.datetime.max.replace(tzinfo=dt.timezone(-dt.timedelta(hours=23))),
                     dt.datetime.min.replace(tzinfo=dt.timezone(dt.timedelta(hours=23))),
                     dt.datetime(2023, 5, 8, tzinfo=dt.timezone(dt.timedelta(seconds=1))),
                     dt.time(12, 0), dt.timedelta(days=1)]),
    # Built when drawn: such a datetime cannot even be hashed (Hypothesis hashes sampled values).
    st.sampled_from([24, -30, 1e6]).map(lambda hours: dt.datetime(2023, 5, 8, tzinfo=BadOffset(hours))),
    edge_ints, bad_numbers, st.floats(allow_nan=True, allow_infinity=True),
)
TIME = P(good_time, bad_time)
any_time = TIME.any


# -- metadata --------------------------------------------------------------------------------
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                      st.floats(allow_nan=False, allow_infinity=False), st.text(any_char, max_size=20))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(any_char, max_size=8), inner, max_size=4)),
    max_leaves=12)
lifecycle_meta = st.one_of(
    st.fixed_dictionaries({"importance": st.one_of(st.floats(-1, 2), st.sampled_from(
        [0, 1, True, "high", None, math.nan, 10**400]))}),
    st.fixed_dictionaries({"pinned": st.one_of(st.booleans(), st.sampled_from([1, "yes", None]))}),
    st.fixed_dictionaries({"archived": st.one_of(st.booleans(), st.sampled_from([0, "no"]))}),
    st.fixed_dictionaries({"expires_at": any_time}),
)


def _nest(depth: int, leaf: Any, as_dict: bool) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"k": value} if as_dict else [value]
    return value


def _cyclic() -> dict[str, Any]:
    loop: dict[str, Any] = {"a": 1}
    loop["self"] = loop
    return loop


bad_metadata = st.one_of(
    st.sampled_from(["x", 5, ["a"], (), b"{}", Opaque(), {1: "a"}, {None: 1}, {("a",): 1},
                     {"x": math.nan}, {"x": math.inf}, {"n": 2**63}, {"n": -(2**63) - 1},
                     {"\udc00": 1}, {"a": ["x", {"b": "\ud800"}]}, {"s": {1, 2}}, {"b": b"x"},
                     {"o": Opaque()}, {"d": dt.date(2023, 5, 8)}, {"f": np.float64(1.0)},
                     {"blob": "x" * 70_000}, {"n": 10**5000}]),
    st.builds(_nest, st.integers(60, 70), json_leaf, st.booleans()),
    st.builds(_nest, st.sampled_from([500, 5000]), st.just(1), st.booleans()),
    st.builds(_cyclic),
)
good_metadata = st.one_of(st.none(), st.dictionaries(st.text(any_char, max_size=10), json_value, max_size=5),
                          lifecycle_meta, st.just({"topic": "home"}))
METADATA = P(good_metadata, bad_metadata)
filter_key = st.one_of(st.sampled_from(["topic", "importance", "pinned", "_x", "a1"]),
                       st.text(any_char, max_size=8))
FILTERS = P(st.one_of(st.none(), st.dictionaries(
    st.sampled_from(["topic", "importance", "pinned", "_x", "a1"]), json_leaf, max_size=2)),
    st.one_of(st.dictionaries(filter_key, json_value, min_size=1, max_size=3), bad_metadata))


# -- ids, scopes, flags ----------------------------------------------------------------------
def _mangle(tid: str, how: str) -> str:
    return {"upper": tid.upper(), "pad": f" {tid} ", "tail": tid + "0", "cut": tid[:-1],
            "double": tid + tid, "nul": tid + "\x00", "zero": tid[:1] + "0" + tid[1:],
            "neg": tid[:1] + "-" + tid[1:], "plus": tid[:1] + "+" + tid[1:],
            "digits": tid.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))}[how]


def trace_id_arg(seeded: Seeded) -> P:
    """A trace id: a live one of the scope; or deleted, another scope's, mangled, unknown, no string."""
    live = list(seeded.ids)
    mangled = st.builds(_mangle, st.sampled_from(live), st.sampled_from(
        ["upper", "pad", "tail", "cut", "double", "nul", "zero", "neg", "plus", "digits"]))
    return P(weighted((6, st.sampled_from(live)), (1, st.just(LAST))), weighted(
        (1, st.sampled_from(list(seeded.deleted_ids) or live)),
        (1, st.sampled_from(list(seeded.other_ids) or live)), (2, mangled),
        (2, st.one_of(st.sampled_from(["t999999", "t0", "t", "", " ", "t" + "9" * 5000, "t-1",
                                       "banana", "../t1", "t1; DROP TABLE traces"]), plain_text)),
        (1, bad_text)))


def trace_ids(seeded: Seeded) -> st.SearchStrategy[Any]:
    return trace_id_arg(seeded).any


bad_scope = st.sampled_from([5, 1.5, b"alice", ["alice"], " alice", "alice ", "ali\x00ce",
                             "ali" + ESC + "[31mce", "a" * 201, "a\ud800", "", "\t"])
# The seeded scope is (alice, None); others are mostly empty.
USER = P(weighted((6, st.just("alice")), (1, st.none()), (1, st.just("bob")), (1, plain_text)), bad_scope)
AGENT = P(weighted((6, st.none()), (1, st.just("bot")), (1, plain_text)), bad_scope)
FLAG = P(st.booleans(), st.sampled_from([None, 0, 1, "yes", "no", [], math.nan, "true"]))
flag = FLAG.any
formats = st.sampled_from([None, "auto", "locomo", "openai", "jsonl", "csv", "", "LOCOMO", 5, b"jsonl"])


ROLE = P(st.sampled_from([None, "user", "assistant", "tool", "system", "USER"]),
         st.sampled_from(["robot", "", " user", "developer", 1, ["user"], b"user"]))
ATTACHMENTS = P(weighted((2, st.none()), (3, st.lists(good_text, max_size=3)), (1, good_text)),
                st.one_of(st.lists(bad_text, min_size=1, max_size=2),
                          st.sampled_from([5, {"a": 1}, [None], b"cap"])))
TEXT = P(good_text, bad_text)


# -- surface 1: Python API calls ----------------------------------------------------------------
class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()  # an argument left out of the call


@dataclass(frozen=True)
class Call:
    """One ``Memory`` method call: ``getattr(memory, op)(*args, **kwargs)`` (UNSET left out)."""

    op: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def arguments(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return self.args, {k: v for k, v in self.kwargs.items() if v is not UNSET}

    def __repr__(self) -> str:
        args, kwargs = self.arguments()
        shown = [short(a) for a in args] + [f"{k}={short(v)}" for k, v in kwargs.items()]
        return f"mem.{self.op}({', '.join(shown)})"


def short(value: Any, limit: int = 300) -> str:
    """``repr(value)`` cut to ``limit`` characters (huge texts, deep metadata), never failing."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # deep nesting; ints past 4300 digits
        text = f"<{type(value).__name__} too deep or too long to show>"
    return text if len(text) <= limit else f"{text[:limit]}…<{len(text)} chars>"


@st.composite
def arguments(draw: st.DrawFn, params: dict[str, P], required: Sequence[str] = (),
              mode: str | None = None) -> dict[str, Any]:
    """Values for ``params`` (UNSET: left out). Half the cases are all well-formed; most others
    have exactly one malformed argument, so that the call gets as far as that argument; the
    rest mix both freely. Optional arguments are left out half the time (never the malformed one)."""
    names = list(params)
    mode = mode or draw(weighted((5, st.just("valid")), (4, st.just("one")), (1, st.just("any"))))
    bad = draw(st.sampled_from(names)) if mode == "one" and names else None
    out: dict[str, Any] = {}
    for name in names:
        if name == bad:
            out[name] = draw(params[name].bad)
        elif name not in required and not draw(st.booleans()):
            out[name] = UNSET
        else:
            out[name] = draw(params[name].any if mode == "any" else params[name].good)
    return out


def _call(op: str, positional: Sequence[P] = (), **keywords: P) -> st.SearchStrategy[Call]:
    """A call of ``Memory.<op>``, in the caller's scope or (user=, agent=) another one."""
    params = {f"#{i}": p for i, p in enumerate(positional)} | keywords | {"user": USER, "agent": AGENT}
    required = [f"#{i}" for i in range(len(positional))]

    def build(values: dict[str, Any]) -> Call:
        return Call(op, tuple(values[name] for name in required),
                    {k: v for k, v in values.items() if not k.startswith("#")})

    return arguments(params, required).map(build)


def _strip(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not UNSET}


def draft_fields(seeded: Seeded) -> dict[str, P]:
    return {"text": TEXT, "session": name_arg(seeded.sessions), "speaker": name_arg(["Ana", "Priya"]),
            "role": ROLE, "session_time": TIME, "event_time": TIME, "seq": count(0, 50),
            "source_id": name_arg(["D1:1"]), "metadata": METADATA, "attachments": ATTACHMENTS}


def batches(seeded: Seeded) -> P:
    """``add_many``'s argument: a list of drafts; or one bad draft in it, or no list at all."""
    fields = draft_fields(seeded)
    good_draft = arguments(fields, ["text"], mode="valid").map(_strip)
    bad_draft = st.one_of(arguments(fields, ["text"], mode="one").map(_strip),
                          arguments(fields, [], mode="valid").map(lambda d: _strip({**d, "text": UNSET})),
                          good_draft.map(lambda d: {**d, "colour": 1}),
                          st.sampled_from(["hello", 5, None, ["text"], Opaque()]))
    bad_batch = st.builds(lambda head, item, tail: [*head, item, *tail], st.lists(good_draft, max_size=2),
                          bad_draft, st.lists(good_draft, max_size=1))
    return P(st.lists(good_draft, max_size=4), st.one_of(bad_batch, st.sampled_from(
        ["not a list", b"bytes", {"text": "a dict"}, None, 5, Opaque(), [[]]])))


def api_calls(seeded: Seeded) -> st.SearchStrategy[Steps]:
    """Every ``Memory`` method of the public API, with arguments from the strategies above."""
    tid, session = trace_id_arg(seeded), name_arg(seeded.sessions)
    search_args = {"k": count(1, 20), "session": session, "as_of": TIME, "filters": FILTERS}
    budget = count(1, 400)
    kind = P(st.sampled_from([None, "constraint", "preference", "state", "event", "relation", "fact"]),
             st.one_of(plain_text, bad_text))
    share = P(st.floats(0, 1), st.one_of(st.floats(), bad_numbers))
    fields = draft_fields(seeded)
    writes = [
        (6, _call("add", [TEXT], **{k: v for k, v in fields.items() if k != "text"})),
        (3, _call("add_many", [batches(seeded)])),
        (4, _call("update", [tid], text=TEXT, metadata=METADATA, keep_history=FLAG)),
        (2, _call("delete", [tid], keep_history=FLAG)),
        (1, _call("delete_session", [session], keep_history=FLAG)),
        (2, _call("pin", [tid])), (2, _call("archive", [tid])),
    ]
    reads = [
        (3, _call("get", [tid])), (2, _call("history", [tid])),
        (4, _call("list", session=session, since=TIME, until=TIME, filters=FILTERS,
                  limit=count(0, 20), offset=count(0, 20))),
        (5, _call("search", [TEXT], **search_args)),
        (3, _call("search_detailed", [TEXT], **search_args)),
        (4, _call("render_context", [TEXT], **search_args, budget_tokens=budget, include_active=FLAG,
                  active_share=share)),
        (3, _call("active", budget_tokens=budget, as_of=TIME, now=TIME)),
        (2, _call("cards", session=session, kind=kind, since=TIME, until=TIME, limit=count(1, 10))),
        (1, _call("neighbourhood", [tid], limit=count(0, 20))),
        (1, _call("sessions")), (1, _call("stats", all_scopes=FLAG)),
        (2, _call("answer", [TEXT, P(st.just(EchoReader()), st.sampled_from([None, 5, Opaque(), OddReader()]))],
                  k=count(1, 20), budget_tokens=budget, calibrate=FLAG)),
        (1, _call("render", [P(st.just([]), st.sampled_from([[5], 5, "abc", [None], [{"text": "x"}], Opaque()]))],
                  budget_tokens=budget)),
    ]
    paths = P(st.sampled_from([FILE, FILE, NOFILE]), st.sampled_from(
        [5, None, b"/x.json", Opaque(), "", FOLDER, DB, GARBAGE, "a\x00.json", "a\udcff.json", ["x.json"]]))
    others = [
        (2, _call("import_file", [paths], format=P(st.sampled_from([None, "auto", "jsonl"]), formats),
                  allow_duplicates=FLAG)),
        (1, _call("delete_scope")),
        # The constructor: another Memory on the same store (or a new one) must open cleanly.
        (2, _call("Memory", [P(st.sampled_from([DB, DB_URL, ":memory:"]), st.sampled_from(
            [5, b"x.db", "", FOLDER, GARBAGE, "a\x00b.db", "sqlite:///a%00b.db", "sqlite://host/x.db",
             "mysql://x/y", "\udcff.db", "postgresql://127.0.0.1:1/x\x00"]))],
            config=P(st.sampled_from([None, "default"]), st.sampled_from(["x", 5, {"index_on_write": False}])))),
    ]
    one = weighted(*writes, *reads, *others)
    # Most cases are one call; some are a few in a row (an add, then an update of @LAST, then
    # active...), for what only a sequence reaches. Each case starts from the seeded store.
    return weighted((4, one.map(lambda call: Steps((call,)))),
                    (1, st.lists(one, min_size=2, max_size=3).map(lambda calls: Steps(tuple(calls)))))


@dataclass(frozen=True)
class Steps:
    """The calls of one API case, run in order on the same store."""

    calls: tuple[Call, ...]

    def __repr__(self) -> str:
        return "; ".join(repr(call) for call in self.calls)


READ_OPS = frozenset({"get", "history", "list", "search", "search_detailed", "render_context",
                      "active", "cards", "neighbourhood", "sessions", "stats", "answer", "render",
                      "Memory"})


# -- surface 2: importer files ------------------------------------------------------------------
@dataclass(frozen=True)
class FileCase:
    """A file to import: its name (the suffix picks the format), its bytes, and the arguments."""

    name: str
    data: bytes
    format: Any = None
    allow_duplicates: Any = False

    def __repr__(self) -> str:
        return (f"FileCase(name={self.name!r}, data={short(self.data, 400)}, "
                f"format={self.format!r}, allow_duplicates={self.allow_duplicates!r})")


json_text = weighted((6, good_text.filter(lambda t: isinstance(t, str))), (1, plain_text.map(
    lambda t: t + "\ud800")), (1, st.sampled_from(["", "   ", "\x00", ESC + "[2J"])))
json_time = weighted((5, st.sampled_from(["1:56 pm on 8 May, 2023", "8:00 am on 9 May, 2023",
                                          "2023-05-08T13:56:00Z", "2023-06-01"])),
                     (3, st.one_of(iso_text(), words_date())), (1, st.sampled_from([None, 5, [], {}])))
speakers = st.sampled_from(["Ana", "Priya", "assistant", "Li 李", "Eve" + ESC + "[31m"])


def _locomo_turn(session: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"speaker": speakers, "dia_id": st.integers(1, 30).map(lambda i: f"D{session}:{i}"),
         "text": json_text},
        optional={"img_url": st.one_of(st.just("https://x.test/a.jpg"), st.lists(
            st.just("https://x.test/b.png"), max_size=2)), "blip_caption": json_text,
            "query": plain_text})


@st.composite
def locomo_document(draw: st.DrawFn) -> Any:
    conv: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Priya"}
    for number in draw(st.lists(st.integers(1, 12), min_size=1, max_size=3, unique=True)):
        conv[f"session_{number}"] = draw(st.lists(_locomo_turn(number), min_size=1, max_size=4))
        if draw(st.booleans()):
            conv[f"session_{number}_date_time"] = draw(json_time)
    qa = st.lists(st.fixed_dictionaries({"question": plain_text}, optional={
        "answer": plain_text, "evidence": st.lists(st.just("D1:1")), "category": st.integers(1, 5)}),
        max_size=2)
    sample = {"sample_id": draw(st.one_of(st.just("conv-1"), st.integers(0, 9), plain_text)),
              "conversation": conv, "qa": draw(qa)}
    return draw(st.sampled_from([conv, sample, [sample], [sample, sample]]))


_part = st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": json_text}),
                  st.fixed_dictionaries({"type": st.sampled_from(["image_url", "input_image"]),
                                         "image_url": st.one_of(st.just("https://x.test/i.png"),
                                                                st.just({"url": "https://x.test/j.png"}))}),
                  st.fixed_dictionaries({"type": st.just("refusal"), "refusal": json_text}))
_call_json = st.fixed_dictionaries({"id": st.just("call_1"), "type": st.just("function"),
                                    "function": st.fixed_dictionaries({"name": st.just("lookup"),
                                                                       "arguments": st.just('{"q": 1}')})})
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool", "developer", "function"]),
     "content": st.one_of(json_text, st.lists(_part, max_size=3), st.none())},
    optional={"name": speakers, "tool_calls": st.lists(_call_json, max_size=2),
              "tool_call_id": st.just("call_1"), "timestamp": json_time})


@st.composite
def openai_document(draw: st.DrawFn) -> Any:
    messages = draw(st.lists(_message, min_size=1, max_size=5))
    chat = {"messages": messages, **draw(st.fixed_dictionaries({}, optional={
        "id": st.one_of(plain_text, st.integers()), "title": plain_text}))}
    return draw(st.sampled_from([messages, chat, [chat, chat]]))


WRONG: list[Any] = [None, 0, -1, 1.5, "", "x", [], {}, True, 2**64, [[[[]]]], {"text": 1}, "\ud800"]


def _json_record() -> st.SearchStrategy[dict[str, Any]]:
    odd = st.sampled_from(WRONG)
    return st.fixed_dictionaries({"text": json_text}, optional={
        "session": weighted((8, st.sampled_from(["s1", "s2"])), (1, odd)),
        "speaker": weighted((8, speakers), (1, odd)),
        "role": st.sampled_from(["user", "assistant", "robot"]), "session_time": json_time,
        "event_time": json_time, "seq": st.integers(-2, 2**64), "source_id": plain_text,
        "metadata": st.one_of(json_value, st.dictionaries(st.text(max_size=5), json_value, max_size=3)),
        "attachments": st.lists(json_text, max_size=2)})


records_document = st.lists(_json_record(), min_size=1, max_size=5)


@st.composite
def mutated(draw: st.DrawFn, document: Any) -> Any:
    """``document`` with one node given a wrong type, one key dropped or added, or wrapped."""
    paths: list[tuple[Any, Any]] = []  # (container, key) of every node below the top

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in items:
            paths.append((node, key))
            walk(child)

    document = json.loads(json.dumps(document))  # a private copy (and JSON's own types)
    walk(document)
    how = draw(st.sampled_from(["retype", "drop", "add", "wrap", "none"]))
    if how == "wrap":
        return draw(st.sampled_from([[document], {"messages": document}, {"conversation": document},
                                     {"text": document}]))
    if not paths or how == "none":
        return document
    container, key = paths[draw(st.integers(0, len(paths) - 1))]
    if how == "retype":
        container[key] = draw(st.sampled_from(WRONG))
    elif how == "drop" and isinstance(container, dict):
        del container[key]
    elif how == "drop":
        container.pop(key)
    elif isinstance(container, dict):
        container[draw(st.sampled_from(["colour", "text", "session_99", "role", "messages", "session_٣",
                                        "session_" + "9" * 5000, "session_1_date_time"]))] = draw(
            st.sampled_from(WRONG))
    return document


def _encode(document: Any, ensure_ascii: bool, jsonl: bool) -> bytes:
    if jsonl and isinstance(document, list):
        lines = [json.dumps(item, ensure_ascii=ensure_ascii) for item in document]
        return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    return json.dumps(document, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")


@st.composite
def byte_mutation(draw: st.DrawFn, data: bytes) -> bytes:
    how = draw(st.sampled_from(["none"] * 4 + ["truncate", "insert", "utf16", "latin1", "bom",
                                                "crlf", "nul", "tail"]))
    at = draw(st.integers(0, len(data)))
    if how == "truncate":
        return data[:at]
    if how == "insert":
        return data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80", b"{", b"]",
                                                 b"\n", b"\\u", b'"'])) + data[at:]
    if how == "utf16":
        return data.decode("utf-8", "replace").encode("utf-16")
    if how == "latin1":
        return data.decode("utf-8", "replace").encode("latin-1", "replace")
    if how == "bom":
        return b"\xef\xbb\xbf" + data
    if how == "crlf":
        return data.replace(b"\n", b"\r\n")
    if how == "nul":
        return data[:at] + b"\x00" + data[at:]
    if how == "tail":
        return data + draw(st.sampled_from([b"\n{", b"\n\n", b" 1", b"\n" + data]))
    return data


def _deep(depth: int, jsonl: bool) -> bytes:
    body = "[" * depth + "]" * depth
    return (('{"text": "x", "metadata": {"a": ' + body + "}}\n") if jsonl else body).encode()


@st.composite
def import_files(draw: st.DrawFn, max_deep: int = 100_000) -> FileCase:
    """A conversation file: a generated LoCoMo / OpenAI / JSONL document, often mutated, or a
    pathological one (deep nesting, huge numbers, binary, empty)."""
    kind = draw(st.sampled_from(["locomo", "openai", "jsonl", "array", "special"]))
    suffix = draw(st.sampled_from({"jsonl": [".jsonl", ".ndjson", ".jsonl", ".json", ".txt"]}.get(
        kind, [".json", ".json", ".jsonl", ".JSON", ""])))
    stem = draw(st.sampled_from(["chat", "conv-26", "notes", "李", "a b", "x" * 120, "bad" + ESC + "[1m"]))
    if kind == "special":
        data = draw(st.one_of(
            st.builds(_deep, st.sampled_from([2, 63, 65, 900, 5000, max_deep]), st.booleans()),
            st.sampled_from([b"", b" \n", b"\xef\xbb\xbf", b"null", b"[]", b"{}", b"1", b'"text"',
                             b'{"text": ' + b"9" * 5000 + b"}", b'[{"text": "a"}] [1]',
                             b'{"text": "a"}\n{"text": "b"}', b'{"text": "a", "text": "b"}',
                             b'{"text": "\\ud800"}', b"NaN", b'{"messages": []}', b"\xff\xfe\x00"]),
            st.binary(max_size=200)))
    else:
        document = draw({"locomo": locomo_document(), "openai": openai_document(),
                         "jsonl": records_document, "array": records_document}[kind])
        if draw(st.integers(0, 9)) < 4:
            document = draw(mutated(document))
        data = draw(byte_mutation(_encode(document, draw(st.booleans()), kind == "jsonl")))
    fmt = draw(weighted((8, st.none()), (2, formats)))
    return FileCase(stem + suffix, data, fmt, draw(weighted((8, st.just(False)), (1, flag))))
