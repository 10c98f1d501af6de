"""Hypothesis strategies of ``zeromem bench fuzz`` for the two outer surfaces: CLI argument
lists and REST requests, built from the values of bench/fuzz_strategies.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from .fuzz_strategies import (
    DB,
    DB_URL,
    ESC,
    FILE,
    FOLDER,
    GARBAGE,
    MISSING,
    NOFILE,
    UNSET,
    WRONG,
    FileCase,
    Seeded,
    _json_record,
    bad_scope,
    bad_text,
    filter_key,
    formats,
    good_time,
    import_files,
    iso_text,
    json_text,
    json_time,
    json_value,
    plain_text,
    short,
    spiced_text,
    trace_ids,
    weighted,
    words_date,
)

# -- surface 3: CLI argument lists -------------------------------------------------------------


@dataclass(frozen=True)
class CliCase:
    """``zeromem <argv>``; ``file`` is written to the path that replaces ``@FILE``."""

    argv: tuple[str, ...]
    file: FileCase | None = None

    def __repr__(self) -> str:
        shown = " ".join(short(arg, 120) for arg in self.argv)
        return f"zeromem {shown}" + (f"  with @FILE = {self.file!r}" if self.file else "")


def to_arg(value: Any) -> str:
    """A generated value as one argv string: bytes decoded as the OS does (surrogateescape),
    NUL removed (no real argv can hold one)."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "surrogateescape")
    try:
        text = value if isinstance(value, str) else str(value)
    except ValueError:  # an int of more than 4300 digits
        text = "9" * 5000
    return text.replace("\x00", "")


arg_text = weighted(
    (6, plain_text), (2, spiced_text.map(to_arg)), (1, st.binary(min_size=1, max_size=16).map(to_arg)),
    (1, st.sampled_from(["", " ", "-", "--", "-k", "--json", "x" * 5000, "é" * 10_001,
                         "\udcff\udcfe", ESC + "[2J"])))
arg_int = weighted((6, st.integers(-3, 30).map(str)), (2, st.sampled_from(
    ["0", "-1", "1e3", "abc", "", "99999999999999999999", " 5", "５", "nan", "inf", "0x10", "1_000",
     "9223372036854775808", "-9223372036854775809"])))
arg_float = st.sampled_from(["0", "0.5", "5", "-1", "nan", "inf", "-inf", "1e308", "abc", "", "1e-9"])
arg_time = weighted((4, good_time.filter(lambda v: isinstance(v, str))), (3, iso_text()),
                    (3, words_date()), (1, arg_text))
arg_scope = weighted((4, st.sampled_from(["alice", "bob", "carol"])), (2, bad_scope.map(to_arg)),
                     (1, arg_text))


def _flags(**options: st.SearchStrategy[Any] | None) -> st.SearchStrategy[list[str]]:
    """Each option given or not (half the time); None marks a flag without a value."""
    present = {name.replace("_", "-"): st.just(None) if value is None else value
               for name, value in options.items()}

    def flatten(chosen: dict[str, Any]) -> list[str]:
        out: list[str] = []
        for name, value in chosen.items():
            out += [f"--{name}"] if value is None else [f"--{name}", value]
        return out

    return st.fixed_dictionaries({}, optional=present).map(flatten)


def cli_cases(seeded: Seeded) -> st.SearchStrategy[CliCase]:
    """Argument lists of every command that runs to completion in-process (not serve, mcp,
    demo or bench), with the store, scope and files they name."""
    ids = trace_ids(seeded).map(to_arg)
    session = weighted((4, st.sampled_from(list(seeded.sessions))), (2, arg_text))
    metas = st.lists(weighted((3, st.builds(lambda k, v: f"{k}={v}", st.sampled_from(
        ["topic", "importance", "pinned", "bad key", "", "é"]), st.sampled_from(
        ["home", "1", "true", "null", "[1]", "{", "", "9" * 5000, "[" * 2000, "\udcff"]))), (1, arg_text)),
        max_size=2).map(lambda pairs: [x for pair in pairs for x in ("--filter", pair)])
    json_flag = _flags(json=None)
    inputs = st.lists(weighted((8, st.just(FILE)), (1, st.sampled_from([NOFILE, FOLDER, GARBAGE, DB]))),
                      min_size=1, max_size=2)
    commands = weighted(
        (5, st.tuples(st.just(["list"]), _flags(session=session, since=arg_time, until=arg_time,
                                                 limit=arg_int, offset=arg_int, full=None), metas, json_flag)),
        (3, st.tuples(st.just(["get"]), ids.map(lambda i: [i]), json_flag)),
        (2, st.tuples(st.just(["history"]), ids.map(lambda i: [i]), json_flag)),
        (3, st.tuples(st.just(["delete"]), weighted(
            (4, ids.map(lambda i: [i])), (2, session.map(lambda s: ["--session", s])),
            (1, st.just(["--scope"])), (1, st.just([])), (1, ids.map(lambda i: [i, "--scope"]))),
            _flags(yes=None, keep_history=None, lock_timeout=arg_float), json_flag)),
        (2, st.tuples(st.just(["stats"]), _flags(all_scopes=None), json_flag)),
        (6, st.tuples(st.just(["search"]), arg_text.map(lambda q: [q]), _flags(
            k=arg_int, session=session, as_of=arg_time, why=None, context=None), json_flag)),
        (3, st.tuples(st.just(["active"]), _flags(budget=arg_int, as_of=arg_time, archived=None), json_flag)),
        (2, st.tuples(st.just(["cards"]), _flags(session=session, kind=weighted(
            (2, st.sampled_from(["state", "fact", "preference"])), (1, arg_text)), limit=arg_int), json_flag)),
        (4, st.tuples(st.just(["ingest"]), inputs, _flags(format=weighted(
            (3, st.sampled_from(["auto", "locomo", "openai", "jsonl"])), (1, arg_text)),
            user_per_conversation=None, allow_duplicates=None), json_flag)),
        (1, st.tuples(st.just(["keys", "add"]), _flags(label=arg_text), json_flag)),
        (1, st.tuples(st.just(["keys", "list"]), json_flag)),
        (1, st.tuples(st.just(["keys", "revoke"]), st.sampled_from(
            [seeded.keys.get("alice_id", "00000000"), "00000000", "ZZ", "", "0" * 9]).map(lambda k: [k]))),
        (1, st.tuples(st.just(["reindex"]))),
        (1, st.tuples(st.just(["migrate"]), st.tuples(st.sampled_from([MISSING, FOLDER, GARBAGE]),
                                                      st.sampled_from([MISSING, GARBAGE, FOLDER, "x"]))
                      .map(lambda pair: ["--from", pair[0], "--to", pair[1]]))),
        (1, st.sampled_from([("--version",), ("--help",), ("search", "--help"), (), ("frobnicate",),
                             ("list", "--bogus"), ("keys",), ("search",), ("get",)]).map(lambda t: (list(t),))),
    )
    scope = st.lists(weighted((6, st.just(["--user", "alice"])), (1, arg_scope.map(lambda u: ["--user", u])),
                              (1, arg_scope.map(lambda a: ["--agent", a]))), max_size=2)
    db = weighted((12, st.just(["--db", DB])), (1, st.just([])), (1, st.just(["--db", MISSING])),
                  (2, st.sampled_from([["--db", FOLDER], ["--db", GARBAGE], ["--db", ":memory:"],
                                       ["--db", DB_URL], ["--db", ""], ["--db", "postgresql://127.0.0.1:1/x"]])))
    file = import_files(max_deep=20_000)

    def build(parts: tuple[Any, ...], scope_parts: list[list[str]], db_parts: list[str],
              case_file: FileCase) -> CliCase:
        argv = [arg for part in parts for arg in part]
        if argv and argv[0] not in ("--version", "--help", "frobnicate"):
            argv += [arg for pair in scope_parts for arg in pair] + db_parts
        return CliCase(tuple(argv), case_file if FILE in argv else None)

    return st.builds(build, commands, scope, db, file)


# -- surface 4: REST requests ------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    """One HTTP request; ``auth`` names a seeded key ("alice", "bob", "revoked"), is a raw
    Authorization header (``{alice}`` becomes alice's key), or None for no header."""

    method: str
    path: str
    auth: str | None = "alice"
    params: tuple[tuple[str, str], ...] = ()
    json: Any = UNSET
    body: bytes | None = None
    content_type: str | None = None
    file: FileCase | None = None
    form: tuple[tuple[str, str], ...] = ()
    origin: str | None = None  # an Origin header (a web page's), None: none sent
    host: str | None = None  # a Host header other than the client's own, None: the own
    chunked: bool = False  # send ``body`` in chunks, without a Content-Length

    def __repr__(self) -> str:
        parts = [f"{self.method} {short(self.path, 200)}", f"auth={self.auth!r}"]
        for name in ("origin", "host"):
            if getattr(self, name) is not None:
                parts.append(f"{name}={short(getattr(self, name), 100)!r}")
        if self.chunked:
            parts.append("chunked")
        if self.params:
            parts.append(f"params={short(self.params, 300)}")
        if self.json is not UNSET:
            parts.append(f"json={short(self.json, 600)}")
        if self.body is not None:
            parts.append(f"body={short(self.body, 300)} ({self.content_type})")
        if self.file is not None:
            parts.append(f"file={self.file!r} form={self.form!r}")
        return "Request(" + ", ".join(parts) + ")"


def _segment(value: Any) -> str:
    from urllib.parse import quote

    raw = value if isinstance(value, (bytes, bytearray)) else to_arg(value).encode("utf-8", "surrogatepass")
    return quote(bytes(raw)[:8000], safe="")  # longer URLs are refused by the HTTP client itself


json_bad = st.sampled_from(WRONG)
json_int = weighted((5, st.integers(-2, 30)), (2, st.sampled_from([0, 101, 1_000_001, 2**63, 2**70, -(2**64)])),
                    (2, json_bad))
json_any_time = weighted((5, json_time), (2, st.one_of(iso_text(), words_date())), (1, st.sampled_from(
    [10**20, -(10**20), 1e300, 1.5, True])))
json_filters = weighted((3, st.dictionaries(filter_key, json_value, max_size=3)), (1, json_bad))


upload_names = st.sampled_from(["../../evil.jsonl", "a/b.jsonl", "", ".jsonl", "x" * 300 + ".jsonl",
                                "é" * 110 + ".jsonl", "x" * 200 + ".json", "\x00.jsonl", "a\\b.json",
                                "..", "/", "C:\\conv.json", "conv.JSONL", "conv.txt"])


# Origins and Hosts a browser page could send: the server's own, loopback names,
# foreign ones and rebound names. OWN_ORIGIN and LOOPBACK_HOSTS are what the fuzzed app must
# serve; anything else must be refused (403 / 421) and change nothing.
OWN_ORIGIN = "http://127.0.0.1"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "127.0.0.1:80", "localhost:8420",
                            "LOCALHOST"})
origins = st.sampled_from([OWN_ORIGIN, "http://evil.example", "null", "http://127.0.0.1:9999",
                           "https://127.0.0.1", "http://localhost", "file://", "", " ",
                           "http://127.0.0.1.evil.example", "http://" + "a" * 300])
hosts = st.sampled_from([
    *sorted(LOOPBACK_HOSTS), "attacker.example:8420", "attacker.example", "127.0.0.1.evil:8420", "0.0.0.0", "[::2]:80",
    "127.0.0.2", "evil.example:80@127.0.0.1", "a" * 300, "localhost."])


def foreign(request: Request) -> int | None:
    """The status a request must get for its Host or Origin alone: 421, 403, or None."""
    if request.host is not None and request.host not in LOOPBACK_HOSTS:
        return 421
    if request.origin is None:
        return None
    host = (request.host or "127.0.0.1").lower()
    wanted = request.origin.strip().rstrip("/").lower()
    return None if wanted in (f"http://{host}", f"https://{host}") else 403


def _nested(depth: int, leaf: str = "1") -> str:
    return '{"a": ' * depth + leaf + "}" * depth


deep_depths = st.sampled_from([10, 64, 65, 500, 1000, 3000, 20_000])
# In a query string, at most the depth whose percent-encoded URL the HTTP client still sends.
deep_url_depths = st.sampled_from([10, 64, 65, 500, 1000, 3000])
# Bodies around the fuzzed server's limit (fuzz_surfaces.REST_MAX_BODY_BYTES), sent in chunks.
chunk_sizes = st.sampled_from([1, 1000, 64 * 1024, 1024 * 1024 - 1, 1024 * 1024, 1024 * 1024 + 1,
                               3 * 1024 * 1024])


def _chunked_body(size: int) -> bytes:
    """``size`` bytes: a trace's JSON when that fits, else a broken start of one."""
    return b'{"text": "' + b"y" * (size - 12) + b'"}' if size >= 13 else b"{" * size


def _renamed(case: FileCase, name: str | None) -> FileCase:
    return case if name is None else FileCase(name, case.data, case.format, case.allow_duplicates)


def rest_requests(seeded: Seeded) -> st.SearchStrategy[Request]:
    """Requests to every /v1 route (plus health, docs and unknown paths), well-formed and not."""
    tid = trace_ids(seeded).map(_segment)
    session = weighted((4, st.sampled_from(list(seeded.sessions))), (2, plain_text), (1, bad_text))
    param = weighted((4, plain_text), (1, st.sampled_from(["", " ", "\udcff", "%", "&x=1", "9" * 5000])))
    auth = weighted((12, st.just("alice")), (1, st.sampled_from(["bob", "revoked", None])), (1, st.sampled_from(
        ["Bearer", "Bearer ", "Basic YWxpY2U6", "Bearer zm_00000000_" + "x" * 43, "bearer {alice}",
         "Bearer  {alice} ", "Bearer {alice}x", "Bearer " + "a" * 10_000, "{alice}"])))

    def params(**values: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[tuple[str, str], ...]]:
        # Cut to 1000 characters (up to 9 KB percent-encoded): the HTTP client itself refuses
        # URLs over 64 KB.
        return st.fixed_dictionaries({}, optional=values).map(
            lambda d: tuple((k, to_arg(v)[:1000]) for k, v in d.items()))

    def body(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[Any]:
        shaped = st.fixed_dictionaries(required, optional={**optional, "colour": st.just(1)})
        return weighted((12, shaped), (1, json_bad), (1, st.fixed_dictionaries({}, optional=optional)))

    trace_body = weighted((6, _json_record()), (2, st.lists(_json_record(), min_size=0, max_size=4).map(
        lambda items: {"traces": items})), (1, st.just({"traces": [{"text": "x"}] * 1001})),  # over MAX_BATCH
        (1, json_bad))
    query = weighted((8, json_text), (1, json_bad))
    search = {"k": json_int, "session": weighted((3, st.sampled_from(list(seeded.sessions))), (1, json_bad)),
              "as_of": json_any_time, "filters": json_filters, "why": weighted((3, st.booleans()), (1, json_bad))}
    budget = {"budget_tokens": weighted((4, st.integers(1, 500)), (1, json_int))}
    raw = st.sampled_from([b"[" * 100_000 + b"]" * 100_000, b"{", b"", b"\xff\xfe", b"null",
                           b'{"text": "\\ud800"}', b'{"text": NaN}', b'{"text": 1e999}',
                           b'{"text": "a", "text": "b"}', b'{"query": "' + b"9" * 20 + b'"}'])
    rt = st.builds
    routes = weighted(
        (6, rt(Request, st.just("POST"), st.just("/v1/traces"), auth, json=trace_body)),
        (1, rt(Request, st.just("POST"), st.sampled_from(["/v1/traces", "/v1/search", "/v1/context"]), auth,
               body=raw, content_type=st.sampled_from(["application/json", "text/plain", None]))),
        (4, rt(Request, st.just("GET"), st.just("/v1/traces"), auth, params=params(
            session=session, since=json_any_time, until=json_any_time, limit=json_int, offset=json_int,
            filters=weighted((2, json_filters.map(lambda f: json.dumps(f))), (1, param))))),
        (3, rt(Request, st.just("GET"), tid.map("/v1/traces/{}".format), auth)),
        (2, rt(Request, st.just("PATCH"), tid.map("/v1/traces/{}".format), auth,
               json=body({}, {"text": json_text, "metadata": weighted((3, json_value), (1, json_bad))}))),
        (2, rt(Request, st.just("DELETE"), tid.map("/v1/traces/{}".format), auth,
               params=params(keep_history=st.sampled_from(["true", "false", "1", "maybe", ""])))),
        (2, rt(Request, st.just("GET"), tid.map("/v1/traces/{}/history".format), auth)),
        (1, rt(Request, st.just("GET"), tid.map("/v1/traces/{}/graph".format), auth, params=params(limit=json_int))),
        (2, rt(Request, st.just("POST"), st.tuples(tid, st.sampled_from(["pin", "archive"])).map(
            lambda p: f"/v1/traces/{p[0]}/{p[1]}"), auth)),
        (1, rt(Request, st.just("GET"), st.just("/v1/sessions"), auth)),
        (1, rt(Request, st.just("DELETE"), session.map(lambda s: "/v1/sessions/" + _segment(s)), auth)),
        (3, rt(Request, st.just("POST"), st.just("/v1/import"), auth, file=st.builds(
            _renamed, import_files(max_deep=20_000), weighted((6, st.none()), (1, upload_names))),
               form=weighted((4, st.just(())), (1, formats.map(lambda f: (("format", to_arg(f)),)))))),
        (6, rt(Request, st.just("POST"), st.just("/v1/search"), auth, json=body({"query": query}, search))),
        (4, rt(Request, st.just("POST"), st.just("/v1/context"), auth, json=body({"query": query}, {
            **search, **budget, "include_active": weighted((3, st.booleans()), (1, json_bad))}))),
        (2, rt(Request, st.just("POST"), st.just("/v1/answer"), auth, json=body({"query": query}, {
            "k": json_int, **budget, "calibrate": weighted((3, st.booleans()), (1, json_bad))}))),
        (3, rt(Request, st.just("GET"), st.just("/v1/active"), auth, params=params(
            budget_tokens=json_int, as_of=json_any_time))),
        (2, rt(Request, st.just("GET"), st.just("/v1/cards"), auth, params=params(
            session=session, kind=st.sampled_from(["state", "fact", "x", ""]), limit=json_int))),
        (2, rt(Request, st.sampled_from(["GET", "POST"]), st.sampled_from(
            ["/v1/stats", "/v1/whoami", "/v1/nope", "/v1/traces/", "/healthz", "/readyz", "/",
             "/v1/../v1/stats", "/v1/traces/%ZZ", "/v1/sessions/"]), auth)),
        (1, rt(Request, st.sampled_from(["PUT", "DELETE", "HEAD", "OPTIONS"]), st.sampled_from(
            ["/v1/traces", "/v1/search", "/v1/stats"]), auth)),
        (1, rt(Request, st.sampled_from(["POST", "DELETE"]), st.sampled_from(["/v1/reindex", "/v1/scope"]), auth)),
        # deep filters, chunked bodies, extreme seqs
        (2, rt(Request, st.just("GET"), st.just("/v1/traces"), auth,
               params=deep_url_depths.map(lambda d: (("metadata", _nested(d)),)))),
        (1, rt(Request, st.just("POST"), st.sampled_from(["/v1/search", "/v1/context"]), auth,
               body=deep_depths.map(lambda d: ('{"query": "x", "filters": ' + _nested(d) + "}").encode()),
               content_type=st.just("application/json"))),
        (2, rt(Request, st.just("POST"), st.sampled_from(["/v1/traces", "/v1/search"]), auth,
               body=chunk_sizes.map(_chunked_body), content_type=st.just("application/json"),
               chunked=st.just(True))),
        (2, rt(Request, st.just("POST"), st.just("/v1/traces"), auth, json=st.fixed_dictionaries(
            {"text": st.just("a fact at the top"), "session": st.sampled_from(["s1", "top"]),
             "seq": st.sampled_from([2**53 - 1, 2**53, 2**62, 2**63 - 1, 2**63, 2**64, -1])}))),
    )
    # Any request may come from a web page: an Origin, or a Host other than the server's.
    return st.builds(_from_page, routes, weighted((10, st.none()), (1, origins)),
                     weighted((10, st.none()), (1, hosts)))


def _from_page(request: Request, origin: str | None, host: str | None) -> Request:
    if origin is None and host is None:
        return request
    from dataclasses import replace

    return replace(request, origin=origin, host=host)


READ_REQUESTS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_POSTS = frozenset({"/v1/search", "/v1/context", "/v1/answer"})
