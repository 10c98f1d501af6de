"""What every ``zeromem`` command module shares: the app, the common options, safe output.

``cli.py`` (the core commands and the entry point) and the ``cli_*`` modules (one group of
commands each) register on ``app`` here, so none of them imports another back.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from ..config import Config, default_db_path, parse_setting
from ..errors import InvalidInput, NotFound, ZeromemError
from ..memory import Memory

app = typer.Typer(
    name="zeromem",
    help="zeromem: agent memory where every memory operation is deterministic code "
         "(zero LLM calls). Traces are stored verbatim in one SQLite file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DbOption = Annotated[str | None, typer.Option(
    "--db", metavar="PATH", show_default=False,
    help="store file or URL [default: $ZEROMEM_DB or ~/.zeromem/memory.db]")]
UserOption = Annotated[str | None, typer.Option(
    "--user", help="user id of the scope (namespace) to use; scopes never see each other")]
AgentOption = Annotated[str | None, typer.Option(
    "--agent", help="agent id of the scope (namespace) to use, alone or with --user")]
JsonOption = Annotated[bool, typer.Option("--json", help="print JSON instead of text")]
ConfigFileOption = Annotated[Path | None, typer.Option(
    "--config", envvar="ZEROMEM_CONFIG", metavar="FILE", show_default=False,
    help="a TOML or JSON file of Config fields (top-level fields, then encoders and retrieval "
         "tables); ZEROMEM_<FIELD> variables override it, flags override both")]
SetOption = Annotated[list[str] | None, typer.Option(
    "--set", metavar="FIELD=VALUE", show_default=False,
    help="set one Config field, e.g. --set index_cache_mb=512 --set retrieval.ppr_damping=0.5 "
         "(repeatable; overrides ZEROMEM_<FIELD> and --config)")]

F = TypeVar("F", bound=Callable[..., Any])


# What a terminal would act on instead of showing: C0 controls but tab and newline (ESC starts
# every ANSI sequence, CR and backspace overwrite), DEL, the C1 range (U+009B is a one-character
# CSI) and the bidirectional overrides that reorder what is shown ("Trojan source").
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe(value: Any) -> str:
    """``value`` as text a terminal shows as it is: control characters become visible
    escapes (``\\x1b``). Stored text is kept verbatim, so it may hold ANSI codes that would
    recolour, hide or rewrite what the CLI prints; every output of stored text goes through
    here (``print_json`` escapes them the JSON way)."""
    return _UNSAFE.sub(_escape, str(value))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def fail(message: str) -> NoReturn:
    """Print ``error: message`` to stderr and exit with code 2."""
    typer.echo(f"error: {safe(message)}", err=True)
    raise typer.Exit(2)


def friendly(func: F) -> F:
    """Turn a ZeromemError raised by a command into ``error: ...`` and exit code 2."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ZeromemError as exc:
            fail(str(exc))
    return wrapper  # type: ignore[return-value]


def open_memory(db: str | Path | None, user: str | None, agent: str | None, *,
                create: bool = False, lock_timeout_s: float | None = None,
                config: Config | None = None) -> Memory:
    """The Memory a command works on: ``--db`` (or the default path) in one scope.

    Only writing commands pass ``create=True``: a mistyped --db on a read must not leave an
    empty store behind. ``lock_timeout_s`` (``--lock-timeout``) replaces Config's default;
    ``config`` (``load_config``) is the whole Config of a command that takes one.
    """
    path = db if db is not None else default_db_path()
    local = str(path)  # a URL (sqlite:///…) is checked by the store itself
    if "://" not in local and not create and local != ":memory:" and not Path(local).expanduser().exists():
        raise NotFound(f"no zeromem store at {path}: check --db / $ZEROMEM_DB, "
                       "or create one with `zeromem ingest FILE`")
    if lock_timeout_s is not None:
        config = Config(lock_timeout_s=lock_timeout_s)
    return Memory(path, user=user, agent=agent, config=config)


def load_config(file: Path | None, settings: list[str] | None, **flags: Any) -> Config:
    """The Config of a long-running command (``serve``, ``mcp``), by precedence: its flags
    (``--set FIELD=VALUE``, then named ones such as ``--index-cache-mb``: ``flags``, None
    where not given) over ``ZEROMEM_<FIELD>`` variables over ``--config FILE`` over the
    defaults. Every value is checked once, by ``Config``."""
    given = dict(parse_setting(text) for text in settings or ())
    given.update({name: value for name, value in flags.items() if value is not None})
    return Config.load(file=file, settings=given)


def parse_key_values(pairs: list[str] | None, flag: str) -> dict[str, Any]:
    """Repeated ``KEY=VALUE`` options (``--filter``, ``--metadata``) as a dict; VALUE is read
    as JSON when it parses (so ``n=3`` and ``flag=true`` give a number and a boolean), else
    kept as text."""
    out: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"{flag} takes KEY=VALUE, got {pair[:100]!r}")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
        except (RecursionError, ValueError):  # nested past the parser's depth; huge numbers
            raise InvalidInput(f"{flag} {key[:100]!r}: the value cannot be read as JSON (nested "
                               "too deeply or a number too long); give plain values such as "
                               "text, numbers and true/false") from None
    return out


def print_json(value: Any) -> None:
    """Print dataclasses, tuples and dicts as indented UTF-8 JSON."""
    def convert(item: Any) -> Any:
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return dataclasses.asdict(item)
        raise TypeError(f"cannot print {type(item).__name__} as JSON")
    text = json.dumps(value, default=convert, ensure_ascii=False, indent=2)
    # json escapes C0 controls itself; DEL, C1 and bidi controls it leaves raw (they can only
    # sit inside strings, where \\uXXXX means the same character).
    typer.echo(_UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text))
