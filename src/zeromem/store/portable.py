"""The export format (``zeromem export`` / ``zeromem import``): a store's traces as JSON lines.

One JSON object per line, UTF-8, keys sorted, no spaces, every line break inside a text escaped
(U+2028, U+2029 and U+0085 too), each with a ``kind``; written in this order and read back in it:

* ``header`` (first line): ``format`` ``"zeromem-export"``, ``version`` (of this format, 1),
  ``zeromem`` (the version that wrote it), ``all_scopes`` and ``scope`` ({user, agent}, or null
  with ``all_scopes``), ``history`` (whether history lines follow), ``id_key`` (the store's
  secret trace id key, store/ids.py, or null: left out, the ids cannot be kept on import) and
  ``last_row`` (the highest row number the store has handed out, null without the key);
* ``trace``: ``id``, ``user``, ``agent``, ``session``, ``session_time``, ``speaker``, ``role``,
  ``event_time``, ``recorded_at``, ``seq``, ``source_id``, ``text``, ``metadata`` (the lifecycle
  flags ``pinned`` / ``archived`` / ``importance`` / ``expires_at`` live there), ``attachments``,
  ``version``;
* with ``history``: after each trace its ``event`` lines (``id``, ``event``, ``at``,
  ``old_text``, ``new_text``, ``old_metadata``, ``new_metadata``), oldest first; and, in row
  order among the traces, a ``deleted`` line (``id``, ``user``, ``agent``) for each deleted
  trace whose history the store keeps (its tombstones, or its text after a delete that kept
  history), followed by its events;
* ``end`` (last line): ``traces``, ``deleted``, ``events``: the counts, so a file cut short at a
  line break is found out too.

Lines come in row-number order (the order traces were added), so the same store gives the
same bytes; nothing in it depends on the clock. With the key, the file holds everything needed
to give every trace its id again: it is as sensitive as the store itself.

``import_export`` reads a file back line by line (constant memory) into ONE transaction of the
store (``Portable.restore``): any bad line (garbled, cut short, a wrong header or version, a
value the store refuses) stops it with InvalidInput naming the line, and nothing is stored.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidInput, NotFound, StoreError
from ..types import Scope
from . import validate
from .base import StoreBase, TraceDraft
from .checks import check_flag, scope_key
from .ids import EXAMPLE, TraceIdCodec
from .roles.portable import ExportRows, Restored, RestoredEvent, RestoredTombstone, RestoredTrace
from .rows import dump_attachments, dump_metadata, load_json, to_trace

FORMAT = "zeromem-export"
VERSION = 1
MEDIA_TYPE = "application/x-ndjson"
# The longest line read: a trace's text and attachments, or an event's two texts and two
# metadata objects, are far below it; a file without line breaks is not read whole.
MAX_LINE_BYTES = 64 << 20
EVENTS = ("add", "update", "delete")
_HEADER = {"kind", "format", "version", "zeromem", "all_scopes", "scope", "history", "id_key", "last_row"}
_TRACE = {"kind", "id", "user", "agent", "session", "session_time", "speaker", "role", "event_time",
          "recorded_at", "seq", "source_id", "text", "metadata", "attachments", "version"}
_EVENT = {"kind", "id", "event", "at", "old_text", "new_text", "old_metadata", "new_metadata"}
_DELETED = {"kind", "id", "user", "agent"}
_END = {"kind", "traces", "deleted", "events"}
_SHAPE_ONLY = TraceIdCodec("00" * 16)  # checks an id's shape where the export has no key


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """What ``Memory.import_export`` (``zeromem import``) stored: ``traces``, ``deleted``
    (deleted traces whose history came along), ``events`` (history events written, one
    ``add`` per trace when the export had no history), the ``scopes`` written (in file order),
    ``ids_kept`` (False with ``new_ids``), ``source`` (the file) and ``written_by`` (the zeromem
    version that exported it)."""

    traces: int
    deleted: int
    events: int
    scopes: tuple[Scope, ...]
    ids_kept: bool
    source: str
    written_by: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: scopes as ``{"user", "agent"}``."""
        out = asdict(self)
        out["scopes"] = [{"user": s.user, "agent": s.agent} for s in self.scopes]
        return out


@dataclass(frozen=True, slots=True)
class BackupReport:
    """What ``Memory.backup`` (``zeromem backup``) wrote: the ``store`` copied, the ``backup``
    file, its ``bytes`` and the ``traces`` it holds."""

    store: str
    backup: str
    bytes: int
    traces: int


def producer_version() -> str:
    """The zeromem version writing an export: the package's ``__version__`` (looked up, not
    imported: the store sits below the package root), else its installed metadata."""
    version = getattr(sys.modules.get("zeromem"), "__version__", None)
    if isinstance(version, str):
        return version
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("zeromem")
    except PackageNotFoundError:
        return "unknown"


# Characters str.splitlines() (and old JavaScript) break lines at that JSON leaves raw: escaped
# too, so a line is one line for every reader. They can only stand inside JSON strings.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def dump_line(record: dict[str, Any]) -> str:
    """One line of the format: sorted keys, no spaces, UTF-8 as is but every line break escaped."""
    text = json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return text.translate(_LINE_BREAKS) + "\n"


# -- export ------------------------------------------------------------------------------------
def export_lines(store: StoreBase, scope: Scope | None, *, history: bool = False,
                 include_id_key: bool = True) -> Iterator[str]:
    """The export of ``scope`` (every scope when None) as lines, each ending in ``\\n``.

    Arguments are checked now; the store is read when the first line is asked for, in one
    consistent read held until the last line (or until the iterator is closed: close it, or
    read it to the end, to release the read). ``include_id_key=False`` leaves the store's
    secret key out (what the service gives a client): ids are then new on import.
    """
    history = check_flag(history, "history")
    include_id_key = check_flag(include_id_key, "include_id_key")
    if scope is not None:
        scope_key(scope)
    return _export(store, scope, history, include_id_key, producer_version())


def _export(store: StoreBase, scope: Scope | None, history: bool, include_key: bool,
            producer: str) -> Iterator[str]:
    with store.export_rows(scope, history=history) as rows:
        codec = TraceIdCodec(rows.id_key)
        yield dump_line({
            "kind": "header", "format": FORMAT, "version": VERSION, "zeromem": producer,
            "all_scopes": scope is None,
            "scope": None if scope is None else {"user": scope.user, "agent": scope.agent},
            "history": history, "id_key": rows.id_key if include_key else None,
            "last_row": rows.last_row if include_key else None})
        counts = {"traces": 0, "deleted": 0, "events": 0}
        for record in _records(rows, codec):
            counts[{"trace": "traces", "deleted": "deleted", "event": "events"}[record["kind"]]] += 1
            yield dump_line(record)
        yield dump_line({"kind": "end", **counts})


def _records(rows: ExportRows, codec: TraceIdCodec) -> Iterator[dict[str, Any]]:
    """Trace, deleted and event records: the two row streams merged by row number."""
    traces, events = rows.traces, rows.history
    trace, event = next(traces, None), next(events, None)
    while trace is not None or event is not None:
        if trace is not None and (event is None or trace[0] <= event[0]):
            rowid = int(trace[0])
            yield _trace_record(trace, codec)
            trace = next(traces, None)
        else:
            assert event is not None
            rowid = int(event[0])
            yield {"kind": "deleted", "id": codec.format(rowid), "user": event[1] or None, "agent": event[2] or None}
        tid = codec.format(rowid)
        while event is not None and int(event[0]) == rowid:
            yield {"kind": "event", "id": tid, "event": event[3], "at": event[4], "old_text": event[5],
                   "new_text": event[6], "old_metadata": load_json(event[7]), "new_metadata": load_json(event[8])}
            event = next(events, None)


def _trace_record(row: tuple[Any, ...], codec: TraceIdCodec) -> dict[str, Any]:
    trace = to_trace(row, codec)
    return {"kind": "trace", "id": trace.id, "user": trace.user, "agent": trace.agent, "session": trace.session,
            "session_time": trace.session_time, "speaker": trace.speaker, "role": trace.role,
            "event_time": trace.event_time, "recorded_at": trace.recorded_at, "seq": int(trace.seq),
            "source_id": trace.source_id, "text": trace.text, "metadata": trace.metadata,
            "attachments": list(trace.attachments), "version": int(trace.version)}


def write_export(lines: Iterable[str], path: str | Path) -> dict[str, Any]:
    """Write export ``lines`` to the file ``path``: beside it under a temporary name with
    owner-only permissions (an export is as sensitive as the store), then moved into place,
    so the file is a whole export or is not touched. Returns the end line's counts."""
    target = Path(path).expanduser()
    part = target.with_name(f".{target.name}.partial-{os.getpid()}")
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as exc:
        raise InvalidInput(f"cannot write the export to {target}: {exc}") from None
    last = ""
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            for line in lines:
                out.write(line)
                last = line
        os.replace(part, target)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return end_counts(last)


def end_counts(line: str) -> dict[str, Any]:
    """The counts of an export's end line (empty when ``line`` is not one)."""
    try:
        record = json.loads(line)
    except ValueError:
        return {}
    if not isinstance(record, dict) or record.get("kind") != "end":
        return {}
    return {k: record[k] for k in ("traces", "deleted", "events") if k in record}


# -- import ------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Header:
    scope: tuple[str, str] | None
    history: bool
    codec: TraceIdCodec | None
    id_key: str | None
    last_row: int
    written_by: str


def import_export(store: StoreBase, source: str | Path | Iterable[str | bytes], *, new_ids: bool = False,
                  check_metadata: Callable[[dict[str, Any]], None] | None = None) -> RestoreReport:
    """Restore an export (a file path, or its lines) into ``store`` in one transaction.

    Ids are kept (the export's key and row numbers; see ``Portable.restore`` for where that
    is possible) unless ``new_ids``. ``check_metadata`` checks each trace's metadata further
    (the lifecycle's fields). InvalidInput names the first bad line; nothing is stored then.
    """
    new_ids = check_flag(new_ids, "new_ids")
    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        raise InvalidInput("import_export takes a file path or the export's lines: for an export held in "
                           "a string, pass text.splitlines()")
    if isinstance(source, (str, os.PathLike)):
        name = str(source)
        try:
            handle: IO[bytes] = open(source, "rb")  # noqa: SIM115 - closed below, after the transaction
        except OSError as exc:
            raise InvalidInput(f"cannot read the export {name}: {exc.strerror or exc}") from None
        with handle:
            return _import(store, file_lines(handle, name), name, new_ids, check_metadata)
    if isinstance(source, (bytes, dict)) or not isinstance(source, Iterable):
        raise InvalidInput("import_export takes a file path or the export's lines (an iterable of str or bytes)")
    return _import(store, iter(source), "the export", new_ids, check_metadata)


def file_lines(handle: IO[bytes], name: str) -> Iterator[bytes]:
    """The lines of a binary stream as they come, none over ``MAX_LINE_BYTES``."""
    while True:
        try:
            line = handle.readline(MAX_LINE_BYTES + 1)
        except OSError as exc:
            raise InvalidInput(f"cannot read the export {name}: {exc.strerror or exc}; nothing was imported") from None
        if not line:
            return
        if len(line) > MAX_LINE_BYTES:
            raise InvalidInput(f"{name} has a line over {MAX_LINE_BYTES >> 20} MiB: it is not a zeromem "
                               "export (or it is damaged); nothing was imported")
        yield line


def _import(store: StoreBase, lines: Iterator[str | bytes], name: str, new_ids: bool,
            check_metadata: Callable[[dict[str, Any]], None] | None) -> RestoreReport:
    first = next(lines, None)
    if first is None:
        raise InvalidInput(f"{name} is empty: it is not a zeromem export (write one with `zeromem export`)")
    header = _read_header(_parse(first, 1, name), name)
    if header.codec is None and not new_ids:
        raise InvalidInput(f"{name} carries no trace id key (exported without it, e.g. through the REST "
                           "API's GET /v1/export, which never hands out the store's secret), so its ids "
                           "cannot be kept: import it with --new-ids (new_ids=True); its traces get new ids")
    reader = _Reader(store, header, lines, name, check_metadata)
    store.restore(reader.items(), id_key=None if new_ids else header.id_key,
                  last_row=0 if new_ids else header.last_row)
    return RestoreReport(traces=reader.counts["traces"], deleted=reader.counts["deleted"],
                        events=reader.written_events, scopes=tuple(reader.scopes), ids_kept=not new_ids,
                        source=name, written_by=header.written_by)


def _parse(raw: str | bytes, number: int, name: str) -> dict[str, Any]:
    where = f"{name}, line {number}"
    if isinstance(raw, (bytes, bytearray)):
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"{where} is not UTF-8 text (byte {exc.start}): the export is damaged; "
                               "nothing was imported") from None
    elif isinstance(raw, str):
        text = raw
    else:
        raise InvalidInput(f"{where} is a {type(raw).__name__}: the lines of an export are str or bytes")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{where} is not a JSON object ({exc.msg} at column {exc.colno}): the export is "
                           "damaged or cut short; nothing was imported") from None
    except (ValueError, RecursionError):
        raise InvalidInput(f"{where} cannot be read as JSON (nested too deeply or a number too long): "
                           "the export is damaged; nothing was imported") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{where} is a JSON {type(value).__name__}, not an object: the export is damaged; "
                           "nothing was imported")
    return value


def _fields(record: dict[str, Any], expected: set[str], where: str) -> None:
    if set(record) != expected:
        missing, extra = sorted(expected - set(record)), sorted(set(record) - expected)
        said = "; ".join(part for part in (f"missing {missing}" if missing else "",
                                           f"unknown {extra}" if extra else "") if part)
        raise InvalidInput(f"{where}: a {record.get('kind')} line with the wrong fields ({said}): the export is "
                           "damaged or not of this format version; nothing was imported")


def _int(value: Any, field: str, where: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= validate.MAX_INT:
        raise InvalidInput(f"{where}: {field} must be a whole number of at least {low}, got {value!r}")
    return value


def _scope_of(user: Any, agent: Any, where: str) -> tuple[str, str]:
    try:
        return scope_key(Scope(user, agent))
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None


def _read_header(record: dict[str, Any], name: str) -> _Header:
    where = f"{name}, line 1"
    if record.get("format") != FORMAT or record.get("kind") != "header":
        raise InvalidInput(f"{name} is not a zeromem export: its first line must be the header "
                           f'{{"format": "{FORMAT}", ...}} (write one with `zeromem export`; conversation '
                           "files are read by `zeromem ingest`)")
    version = record.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise InvalidInput(f"{name} is in export format version {version}, newer than this zeromem reads "
                           f"({VERSION}): upgrade zeromem to import it")
    if version != VERSION or isinstance(version, bool):
        raise InvalidInput(f"{name} has export format version {version!r}; this zeromem reads version "
                           f"{VERSION}")
    _fields(record, _HEADER, where)
    written_by, all_scopes, history = record["zeromem"], record["all_scopes"], record["history"]
    if not isinstance(written_by, str) or not isinstance(all_scopes, bool) or not isinstance(history, bool):
        raise InvalidInput(f"{where}: zeromem must be text, all_scopes and history true or false")
    scope = None
    if not all_scopes:
        shown = record["scope"]
        if not isinstance(shown, dict) or set(shown) != {"user", "agent"}:
            raise InvalidInput(f"{where}: scope must be {{\"user\": ..., \"agent\": ...}} (or all_scopes true)")
        scope = _scope_of(shown["user"], shown["agent"], where)
    elif record["scope"] is not None:
        raise InvalidInput(f"{where}: an export of all scopes has scope null")
    key, last_row = record["id_key"], record["last_row"]
    codec = None
    if key is not None:
        try:
            codec = TraceIdCodec(key) if isinstance(key, str) else None
        except StoreError:
            codec = None
        if codec is None:
            raise InvalidInput(f"{where}: id_key must be 32 to 128 hex digits (the store's key) or null")
        last_row = _int(last_row, "last_row", where)
    elif last_row is not None:
        raise InvalidInput(f"{where}: last_row comes with id_key; without the key it is null")
    return _Header(scope, history, codec, key, last_row or 0, written_by)


class _Reader:
    """The lines after the header, checked one by one, as the store's restore items."""

    def __init__(self, store: StoreBase, header: _Header, lines: Iterator[str | bytes], name: str,
                 check_metadata: Callable[[dict[str, Any]], None] | None) -> None:
        self.store, self.header, self.lines, self.name = store, header, lines, name
        self.check_metadata = check_metadata
        self.counts = {"traces": 0, "deleted": 0, "events": 0}
        self.written_events = 0
        self.scopes: dict[Scope, None] = {}

    def items(self) -> Iterator[Restored]:
        header, name = self.header, self.name
        owner: str | None = None  # the id whose events may follow
        owner_events = -1  # events of a deleted trace so far (-1: the owner is a trace)
        last_rowid = -1
        number, ended = 1, False
        for raw in self.lines:
            number += 1
            where = f"{name}, line {number}"
            if ended:
                if not isinstance(raw, (str, bytes)) or raw.strip():
                    raise InvalidInput(f"{where} comes after the end line: the export is damaged; nothing was imported")
                continue
            record = _parse(raw, number, name)
            kind = record.get("kind")
            if kind != "event" and owner_events == 0:
                raise InvalidInput(f"{where}: the deleted trace {owner} before it has no history events")
            if kind == "trace":
                _fields(record, _TRACE, where)
                trace = self._trace(record, where)
                last_rowid = self._order(trace.rowid, last_rowid, where)
                owner, owner_events = record["id"], -1
                self.counts["traces"] += 1
                self.scopes.setdefault(Scope(trace.user or None, trace.agent or None))
                yield trace
                if not header.history:  # the history starts with the state the export holds
                    self.written_events += 1
                    yield RestoredEvent("add", trace.recorded_at, None, trace.text, None, trace.metadata)
            elif kind == "event" and header.history:
                _fields(record, _EVENT, where)
                if owner is None or record["id"] != owner:
                    raise InvalidInput(f"{where}: an event of trace {record['id']!r} that does not follow "
                                       "that trace's line: the export is damaged; nothing was imported")
                self.counts["events"] += 1
                self.written_events += 1
                if owner_events >= 0:
                    owner_events += 1
                yield self._event(record, where)
            elif kind == "deleted" and header.history:
                _fields(record, _DELETED, where)
                rowid = self._rowid(record["id"], where)
                user, agent = self._scope(record, where)
                last_rowid = self._order(rowid, last_rowid, where)
                owner, owner_events = record["id"], 0
                self.counts["deleted"] += 1
                self.scopes.setdefault(Scope(user or None, agent or None))
                yield RestoredTombstone(rowid, user, agent)
            elif kind == "end":
                _fields(record, _END, where)
                found = {k: record[k] for k in ("traces", "deleted", "events")}
                if found != self.counts:
                    raise InvalidInput(f"{where}: the end line counts {found}, the file holds {self.counts}: "
                                       "the export is damaged; nothing was imported")
                ended = True
            else:
                extra = "" if kind not in ("event", "deleted") else " (the header says the export has no history)"
                raise InvalidInput(f"{where}: unexpected line kind {kind!r}{extra}: the export is damaged; "
                                   "nothing was imported")
        if not ended:
            raise InvalidInput(f"{name} ends at line {number} without its end line: it was cut short "
                               "(export it again); nothing was imported")

    def _order(self, rowid: int, last: int, where: str) -> int:
        """Row numbers only grow through an export (none twice, none above last_row)."""
        if self.header.codec is None:
            return last
        if rowid <= last or rowid > self.header.last_row:
            raise InvalidInput(f"{where}: trace {self.header.codec.format(rowid)} is out of row order "
                               "(or beyond the header's last_row): the export is damaged; nothing was imported")
        return rowid

    def _rowid(self, value: Any, where: str) -> int:
        codec = self.header.codec or _SHAPE_ONLY
        try:
            if not isinstance(value, str):
                raise NotFound("not a string")
            return codec.parse(value)
        except NotFound:
            raise InvalidInput(f"{where}: id {value!r} is not a trace id (they look like {EXAMPLE!r}): the "
                               "export is damaged; nothing was imported") from None

    def _scope(self, record: dict[str, Any], where: str) -> tuple[str, str]:
        scope = _scope_of(record["user"], record["agent"], where)
        if self.header.scope is not None and scope != self.header.scope:
            raise InvalidInput(f"{where}: a trace of user={record['user']!r}, agent={record['agent']!r} in an "
                               "export of one other scope: the export is damaged; nothing was imported")
        return scope

    def _trace(self, record: dict[str, Any], where: str) -> RestoredTrace:
        rowid = self._rowid(record["id"], where)
        user, agent = self._scope(record, where)
        session = record["session"]
        seq = _int(record["seq"], "seq", where)
        version = _int(record["version"], "version", where, low=1)
        times = {field: self._time(record[field], field, where, required=field == "recorded_at")
                 for field in ("session_time", "event_time", "recorded_at")}
        try:
            if not isinstance(record["attachments"], list):
                raise InvalidInput("attachments must be a list of texts")
            # An empty session name with has_session was possible once: kept as it is.
            clean = self.store.clean(TraceDraft(
                text=record["text"], session=None if session == "" else session, speaker=record["speaker"],
                role=record["role"], seq=seq, source_id=record["source_id"], metadata=record["metadata"],
                attachments=record["attachments"]))
            if self.check_metadata is not None:
                self.check_metadata(clean.metadata)
        except InvalidInput as exc:
            raise InvalidInput(f"{where} (trace {record['id']}): {exc}; nothing was imported") from None
        return RestoredTrace(
            rowid=rowid, user=user, agent=agent, session="" if session == "" else clean.session,
            has_session=session == "" or clean.has_session, seq=seq, text=clean.text, speaker=clean.speaker,
            role=clean.role, session_time=times["session_time"], event_time=times["event_time"],
            recorded_at=times["recorded_at"] or "", source_id=clean.source_id,
            metadata=dump_metadata(clean.metadata), attachments=dump_attachments(clean.attachments),
            version=version)

    def _time(self, value: Any, field: str, where: str, *, required: bool = False) -> str | None:
        """A stored time, checked; kept as written (its form is the store's already)."""
        if value is None and not required:
            return None
        if not isinstance(value, str):
            raise InvalidInput(f"{where}: {field} must be an ISO 8601 time, got {value!r}")
        try:
            if validate.clean_time(value, field) is None:
                raise InvalidInput(f"{field} is empty")
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}; nothing was imported") from None
        return value

    def _event(self, record: dict[str, Any], where: str) -> RestoredEvent:
        if record["event"] not in EVENTS:
            raise InvalidInput(f"{where}: event must be one of {', '.join(EVENTS)}, got {record['event']!r}")
        at = self._time(record["at"], "at", where, required=True) or ""
        texts, metas = [], []
        try:
            for field in ("old_text", "new_text"):
                value = record[field]
                texts.append(None if value is None else validate.clean_text(
                    value, field=field, max_chars=self.store.max_text_chars))
            for field in ("old_metadata", "new_metadata"):
                value = record[field]
                metas.append(None if value is None else dump_metadata(validate.clean_metadata(value, field)))
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}; nothing was imported") from None
        return RestoredEvent(record["event"], at, texts[0], texts[1], metas[0], metas[1])
