"""Input checks shared by every write path. Each failure raises InvalidInput with a fix."""

from __future__ import annotations

import datetime as dt
import json
import math
import unicodedata
from typing import Any

from ..config import DEFAULT_MAX_TEXT_CHARS as DEFAULT_MAX_TEXT_CHARS  # Config.max_text_chars's default
from ..errors import InvalidInput
from ..types import MAX_TITLE_CHARS, ROLES, TITLE_KEY
from . import dates

# Integers are stored as signed 64-bit values (SQLite INTEGER, PostgreSQL BIGINT); a larger one
# would pass every other check and then fail inside the insert.
MIN_INT = -(2**63)
MAX_INT = 2**63 - 1
# The largest seq a caller may pass: the largest integer a JSON client (JavaScript) reads
# exactly. The room above it, up to MAX_INT, is for the seqs assigned after it, so that one
# trace stored at the top cannot leave its session unable to take another.
MAX_SEQ = 2**53 - 1
# Unicode's Default_Ignorable_Code_Point: code points a renderer shows as nothing unless it
# supports them (zero-width joiners, soft hyphen, bidi controls, variation selectors, tag
# characters, the Hangul fillers, ...). Python's unicodedata has no such property, so the
# ranges are copied here from DerivedCoreProperties.txt of Unicode 14.0.0, the version of
# Python 3.11's unicodedata (`grep '; Default_Ignorable_Code_Point' DerivedCoreProperties.txt`;
# the list is the same in Unicode 15.0 and 15.1). Inclusive ranges, in order.
DEFAULT_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),    # SOFT HYPHEN
    (0x034F, 0x034F),    # COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),    # ARABIC LETTER MARK
    (0x115F, 0x1160),    # HANGUL CHOSEONG FILLER..HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),    # KHMER VOWEL INHERENT AQ..AA
    (0x180B, 0x180F),    # MONGOLIAN FREE VARIATION SELECTORS ONE..THREE, VOWEL SEPARATOR, FOUR
    (0x200B, 0x200F),    # ZERO WIDTH SPACE..RIGHT-TO-LEFT MARK (ZWNJ and ZWJ among them)
    (0x202A, 0x202E),    # LEFT-TO-RIGHT EMBEDDING..RIGHT-TO-LEFT OVERRIDE
    (0x2060, 0x206F),    # WORD JOINER..INVISIBLE PLUS, <reserved-2065>, bidi isolates..NOMINAL DIGIT SHAPES
    (0x3164, 0x3164),    # HANGUL FILLER
    (0xFE00, 0xFE0F),    # VARIATION SELECTOR-1..16
    (0xFEFF, 0xFEFF),    # ZERO WIDTH NO-BREAK SPACE (byte order mark)
    (0xFFA0, 0xFFA0),    # HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),    # <reserved-FFF0>..<reserved-FFF8>
    (0x1BCA0, 0x1BCA3),  # SHORTHAND FORMAT LETTER OVERLAP..UP STEP
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM..END PHRASE
    (0xE0000, 0xE0FFF),  # LANGUAGE TAG, TAG SPACE..CANCEL TAG, VARIATION SELECTOR-17..256, reserved
)
# Not default-ignorable, yet shown as blank space by every font that has it: a name or a text
# made of it reads as nothing.
BLANK_LOOKING = frozenset("\u2800")  # BRAILLE PATTERN BLANK
# What a scope name may not hold, beside control characters: the default-ignorable code points
# and the blank-looking ones; format characters (category Cf) and line/paragraph separators
# are checked by category (``invisible_char``).
INVISIBLE_IN_NAMES = frozenset(
    chr(code) for low, high in DEFAULT_IGNORABLE_RANGES for code in range(low, high + 1)) | BLANK_LOOKING
MAX_METADATA_DEPTH = 64
# A scope part names a user or an agent, not a document; metadata is a side table, not storage
# for payloads (put those in the text or an attachment description).
MAX_SCOPE_CHARS = 200
MAX_METADATA_BYTES = 64 * 1024


def clean_text(value: Any, *, field: str = "text", max_chars: int = DEFAULT_MAX_TEXT_CHARS) -> str:
    """Return ``value`` as a storable string or raise InvalidInput.

    Bytes are accepted only as strict UTF-8; lone surrogates are refused because SQLite and
    every encoder downstream would mangle them.
    """
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"{field} is not valid UTF-8 (byte {exc.start}): decode it with the right "
                "encoding before storing it"
            ) from None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, got {type(value).__name__}")
    if not value.strip() or shows_nothing(value):
        raise InvalidInput(f"{field} is empty, or only whitespace, control or zero-width "
                           "characters: " + ("ask with some words" if field == "query"
                                             else "store a non-empty message"))
    if len(value) > max_chars:
        raise InvalidInput(
            f"{field} has {len(value)} characters, over the limit of {max_chars}: split it "
            "into several traces or raise max_text_chars"
        )
    check_unicode(value, field)
    return value


def shows_nothing(value: str) -> bool:
    """Whether ``value`` shows nothing: only whitespace, control characters (NUL among them),
    format characters such as zero-width spaces and joiners, default-ignorable code points
    (Hangul fillers, variation selectors, tag characters) and blank-looking ones (U+2800)."""
    return all(char.isspace() or unicodedata.category(char) in ("Cc", "Cf")
               or char in INVISIBLE_IN_NAMES for char in value)


def invisible_char(value: str) -> str | None:
    """The first character of ``value`` that shows nothing or changes how the rest shows:
    default-ignorable or blank-looking (``INVISIBLE_IN_NAMES``), a format character (Cf) or a
    line / paragraph separator; None when there is none."""
    return next((char for char in value if char in INVISIBLE_IN_NAMES
                 or unicodedata.category(char) in ("Cf", "Zl", "Zp")), None)


def char_label(char: str) -> str:
    """``U+200D (ZERO WIDTH JOINER)``: a character named for an error message."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" ({name})" if name else "")


def check_unicode(value: str, field: str) -> None:
    """Raise InvalidInput if ``value`` holds a lone surrogate (it cannot be encoded as UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{field} contains a lone surrogate at position {exc.start}: it is not valid "
            "Unicode text; fix the decoding that produced it"
        ) from None


def printable(value: str) -> str:
    """``value`` with lone surrogates escaped (``\\ud800``), safe to put in an error message."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def clean_seq(value: Any) -> int | None:
    """A trace's position in its session: None (assigned on insert) or an int in 0..2**63-1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"seq must be a non-negative int, got "
                           f"{int_text(value) if isinstance(value, int) else repr(value)}")
    if value > MAX_SEQ:
        raise InvalidInput(f"seq {int_text(value)} is too large: it must be at most 2**53-1 ({MAX_SEQ}), "
                           "the largest integer every JSON client reads exactly")
    return int(value)


def clean_budget(value: Any, field: str = "budget_tokens") -> int | None:
    """A token budget: None (no limit) or an int of at least 1.

    0 used to render an empty context without a word, which reads as "nothing was found";
    a budget that can hold nothing is a mistake worth saying so.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an int ≥ 1 (or None for no limit), got "
                           f"{type(value).__name__}")
    if value < 1:
        raise InvalidInput(f"{field} must be ≥ 1 (or None for no limit), got {int_text(value)}")
    return min(value, MAX_INT)


def clean_int(value: Any, field: str) -> int:
    """An int that fits a signed 64-bit column, or InvalidInput naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an int, got {type(value).__name__}")
    if not MIN_INT <= value <= MAX_INT:
        raise InvalidInput(f"{field} = {int_text(value)} is outside the 64-bit integer range "
                           f"({MIN_INT}..{MAX_INT}): store such a number as a string")
    return int(value)


def int_text(value: int) -> str:
    """An int for an error message: its digits, or its size when it is very long (Python
    refuses to print ints of more than 4300 digits)."""
    return str(value) if value.bit_length() <= 256 else f"(an int of {value.bit_length()} bits)"


def clean_scope_part(value: Any, name: str) -> str | None:
    """A scope's ``user`` or ``agent``: None or a name of at most MAX_SCOPE_CHARS characters,
    without control characters or surrounding spaces, without characters that show nothing
    (``invisible_char``), and in Unicode NFKC form. Every path that takes a scope comes here
    (``store.checks.scope_key``: the library, the CLI, the REST API and its keys, MCP).

    A scope is an identity: one name must be one scope. " priya" silently trimmed to "priya"
    in the store but not in the caller's own keys would be two names for one scope, so such a
    name is refused with the fix rather than rewritten. The same holds for "alice" followed by
    a zero-width joiner (it displays as "alice") and for "ｆｉｌｅ" (NFKC: "file"): refused with
    the name to pass instead. Refusing, not normalizing, keeps every stored scope where it is:
    a name normalized silently would start reading another (possibly existing) scope;
    ``zeromem check-names`` lists the stored scopes these rules now refuse. Control
    characters would reach terminals and logs verbatim.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string or None, got {type(value).__name__}")
    check_unicode(value, name)
    if not value:
        raise InvalidInput(f"{name} is an empty string: pass None (or leave --{name} out) for no "
                           f"{name}; an empty name would silently mean the scope without a {name}")
    if len(value) > MAX_SCOPE_CHARS:
        raise InvalidInput(f"{name} has {len(value)} characters, over the limit of "
                           f"{MAX_SCOPE_CHARS}: use a shorter id (e.g. a hash of it)")
    if not value.strip():
        raise InvalidInput(f"{name} {value!r} is only whitespace: name the {name}, or pass None "
                           f"(leave --{name} out) for no {name}")
    if value != value.strip():
        raise InvalidInput(f"{name} {value!r} has spaces at its start or end: pass "
                           f"{value.strip()!r} (or None for no {name})")
    bad = next((char for char in value if _is_control(char)), None)
    if bad is not None:
        label = f"U+{ord(bad):04X}" + (" (NUL)" if bad == "\x00" else " (ESC)" if bad == "\x1b" else "")
        raise InvalidInput(f"{name} {value!r} contains the control character {label} at "
                           f"position {value.index(bad)}: scope names are plain text")
    hidden = invisible_char(value)
    if hidden is not None:
        shown = "".join(char for char in value if invisible_char(char) is None).strip()
        fix = f"pass {shown!r}" if shown else f"name the {name} with visible characters"
        raise InvalidInput(f"{name} {value!r} contains {char_label(hidden)}, an invisible or "
                           f"direction-changing character, at position {value.index(hidden)}: "
                           f"scope names must read as what they are; {fix}")
    normal = unicodedata.normalize("NFKC", value)
    if normal != value:
        raise InvalidInput(f"{name} {value!r} is not in Unicode NFKC form, so it would be a second "
                           f"scope for a name that reads the same: pass {normal!r}")
    return value


def name_problem(value: str, name: str = "user") -> str | None:
    """Why ``value`` is refused as a scope name (the InvalidInput message), or None if it is
    accepted: for listing the stored names the rules refuse (``zeromem check-names``)."""
    try:
        clean_scope_part(value, name)
    except InvalidInput as exc:
        return str(exc)
    return None


def _is_control(char: str) -> bool:
    """C0/C1 control characters and DEL: never part of a name, dangerous on a terminal."""
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F


def clean_optional_str(value: Any, field: str, *, max_chars: int = 1000) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int,)) and not isinstance(value, bool) and field in {"session", "source_id"}:
        if value.bit_length() > 4 * max_chars:  # str() refuses ints over 4300 digits
            raise InvalidInput(f"{field} {int_text(value)} is too long: at most {max_chars} characters")
        value = str(value)
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string or None, got {type(value).__name__}")
    value = value.strip()
    if not value:
        return None
    return clean_text(value, field=field, max_chars=max_chars)


def clean_session(value: Any) -> str | None:
    """A trace's session: None (no session) or a name. An empty or blank string is refused: it
    used to mean "no session" without a word, which a caller who meant a name would not see.

    A session name that holds a character that shows nothing (``invisible_char``) is refused
    as a user's is: "s1" and "s1" + U+200D would be two sessions that display alike. Unlike a
    user or agent it need not be in NFKC form: a session name is often the title of imported
    data ("№ 5", half-width katakana), and sessions do not separate tenants.
    """
    if isinstance(value, str) and not value.strip():
        raise InvalidInput(f"session {value!r} is empty: pass None (or leave it out) for a trace "
                           "without a session, or name the session")
    session = clean_optional_str(value, "session")
    hidden = None if session is None else invisible_char(session)
    if session is not None and hidden is not None:
        raise InvalidInput(f"session {session!r} contains {char_label(hidden)}, an invisible or "
                           f"direction-changing character, at position {session.index(hidden)}: "
                           "session names must read as what they are")
    return session


def clean_role(value: Any) -> str:
    if value is None:
        return "user"
    if not isinstance(value, str) or value.lower() not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}, got {value!r}")
    return value.lower()


def clean_time(value: Any, field: str) -> str | None:
    """A timestamp as ISO 8601 text, keeping the caller's UTC offset when one was given.

    Accepts a datetime or date, epoch seconds (int/float, stored in UTC) or text in one of the
    forms ``store.dates`` reads exactly (ISO 8601, or a date with its year written out, with an
    optional zone: abbreviation, offset or IANA name). Anything else — "May 32", "5", a date
    without a year, an offset of 24 h or more — is refused, never guessed. Comparisons (since,
    until, as_of) go through ``dates.utc_key``, so the offset kept here is only shown.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInput(f"{field} must be a date/time, got a bool")
    if isinstance(value, dt.datetime):
        return _iso(value, field, repr(value))
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day).isoformat(timespec="seconds")
    if isinstance(value, (int, float)):
        try:
            stamp = dt.datetime.fromtimestamp(value, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            shown = int_text(value) if isinstance(value, int) else repr(value)
            raise InvalidInput(f"{field} {shown} is not a usable epoch time in seconds") from None
        return stamp.isoformat(timespec="seconds")
    if isinstance(value, str):
        check_unicode(value, field)
        if not value.strip():
            return None
        shown = repr(value[:200])
        try:
            parsed = dates.parse(value)
        except dates.DateError as exc:
            raise InvalidInput(f"{field} {shown} is not a date/time zeromem can read: {exc}; "
                               f"{dates.ACCEPTED}") from None
        return _iso(parsed, field, shown)
    raise InvalidInput(f"{field} must be a datetime or a string, got {type(value).__name__}")


def _iso(value: dt.datetime, field: str, shown: str) -> str:
    """``value`` as stored: ISO 8601 to the second (to the microsecond when it has a fraction:
    dropping it would store another instant than the one given), with its offset if any."""
    try:
        if value.tzinfo is not None:
            value.astimezone(dt.UTC)  # its UTC instant must exist for comparisons
        return value.isoformat(timespec="microseconds" if value.microsecond else "seconds")
    except (OverflowError, ValueError) as exc:
        raise InvalidInput(f"{field} {shown} cannot be stored: {exc}") from None


def clean_metadata(value: Any, field: str = "metadata") -> dict[str, Any]:
    """A JSON object every backend can store and give back unchanged.

    Checked at every depth: keys are strings, strings hold no lone surrogate, ints fit in 64
    bits, floats are finite, and values are only None, bool, int, float, str, list or dict.
    The first offending place is named in the error, e.g. ``metadata['tags'][2]``.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be a dict, got {type(value).__name__}")
    _check_json(value, field, 0)
    if field == "metadata" and TITLE_KEY in value:
        _check_title(value[TITLE_KEY])
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"{field} must be JSON-serializable: {exc}") from None
    size = len(encoded.encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise InvalidInput(f"{field} is {size} bytes as JSON, over the limit of "
                           f"{MAX_METADATA_BYTES} (64 KiB): keep metadata small and put long "
                           "content in the trace text or an attachment")
    return value


def _check_title(title: Any) -> None:
    """A title is a short line of text: the engine matches it against queries."""
    where = f"metadata[{TITLE_KEY!r}]"
    if not isinstance(title, str):
        raise InvalidInput(f"{where} is a {type(title).__name__}: a title must be a string")
    if not title.strip():
        raise InvalidInput(f"{where} is empty: leave the key out for a trace without a title")
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidInput(f"{where} has {len(title)} characters, over the limit of "
                           f"{MAX_TITLE_CHARS}: a title names the trace, its content goes in the text")
    if any(ord(ch) < 32 or 127 <= ord(ch) < 160 for ch in title):
        raise InvalidInput(f"{where} contains a line break or control character: a title is one line")


def _check_json(value: Any, where: str, depth: int) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise InvalidInput(f"{where} is nested more than {MAX_METADATA_DEPTH} levels deep (or "
                           "contains itself): metadata must be a plain JSON-serializable tree")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int):
        clean_int(value, where)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{where} is {value!r}: metadata must be JSON-serializable, "
                               "and JSON has no NaN or infinity")
    elif isinstance(value, str):
        check_unicode(value, where)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"metadata keys must be strings: {where} has the "
                                   f"{type(key).__name__} key {key!r}")
            check_unicode(key, f"the key {key!r} of {where}")
            _check_json(item, f"{where}[{key!r}]", depth + 1)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]", depth + 1)
    else:
        raise InvalidInput(f"{where} is a {type(value).__name__}: metadata must be "
                           "JSON-serializable (str, int, float, bool, None, list, dict)")


def clean_attachments(value: Any, *, max_chars: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise InvalidInput("attachments must be a list of text descriptions (e.g. image captions)")
    return tuple(clean_text(item, field="attachment", max_chars=max_chars) for item in value)
