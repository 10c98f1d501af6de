"""What every importer returns, and the checks they share.

An importer turns one file into ``ImportedConversation`` objects: plain trace dicts ready for
``Memory.add_many`` plus, for each dict, a human label of where it came from in the file
("line 7", "session_3[4] (D3:5)") so that an error can point at the exact spot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInput
from ..store import validate
from ..store.base import TraceDraft, TraceStoreBase

DRAFT_FIELDS = frozenset(TraceDraft.__slots__)
# json.loads raises RecursionError past about a thousand levels; no conversation is that deep.
TOO_DEEP = ("nested too deeply to be read (JSON arrays or objects inside each other more than "
            "about a thousand levels deep): no conversation file looks like that")


@dataclass(frozen=True, slots=True)
class ImportedConversation:
    """One conversation read from a file.

    ``drafts`` are dicts with ``Memory.add`` fields; ``locations[i]`` says where ``drafts[i]``
    sits in the file; ``qa`` is the file's raw question list (LoCoMo) or None.
    """

    name: str
    source: str
    format: str
    drafts: list[dict[str, Any]]
    locations: list[str]
    qa: list[dict[str, Any]] | None = None
    speakers: tuple[str, ...] = field(default=())

    def where(self, index: int) -> str:
        """The file location of draft ``index``, for error messages."""
        return self.locations[index] if 0 <= index < len(self.locations) else f"trace #{index}"


def bad(source: str, where: str, problem: str) -> InvalidInput:
    """An InvalidInput that names the file, the place in it, and what was expected."""
    place = f"{source}: {where}: " if where else f"{source}: "
    return InvalidInput(place + problem)


def parse_time(value: Any, source: str, where: str) -> str | None:
    """Normalize a timestamp found in a file, naming the file and key when it is unreadable."""
    try:
        return validate.clean_time(value, where or "time")
    except InvalidInput as exc:
        raise bad(source, where, str(exc)) from None


def check_conversations(conversations: Sequence[ImportedConversation],
                        store: TraceStoreBase, *, names_as_scopes: bool = True) -> int:
    """Check every draft exactly as ``add_many`` will, before anything is written.

    Raises InvalidInput naming the file and location of the first bad trace; returns the
    number of traces checked. Running this first is what makes a multi-conversation import
    all-or-nothing with respect to bad input. With ``names_as_scopes`` each conversation's
    name is checked as a scope's user too (``--user-per-conversation`` stores it as one); a
    caller that stores every conversation in one scope passes False, so that a long chat
    title does not fail an import that never uses it as a scope.
    """
    count = 0
    for conv in conversations:
        try:
            validate.check_unicode(conv.name, "the conversation name")  # shown in every report
            if names_as_scopes:
                validate.clean_scope_part(conv.name, "the conversation name")
        except InvalidInput as exc:
            raise bad(conv.source, f"conversation {conv.name!r}",
                      str(exc)) from None
        for index, item in enumerate(conv.drafts):
            unknown = set(item) - DRAFT_FIELDS
            if unknown:
                raise bad(conv.source, conv.where(index),
                          f"unknown fields {sorted(unknown)}; allowed: {sorted(DRAFT_FIELDS)}")
            if "text" not in item:
                raise bad(conv.source, conv.where(index), "no 'text' field: every trace needs text")
            try:
                store.clean(TraceDraft(**item))
            except InvalidInput as exc:
                raise bad(conv.source, conv.where(index), str(exc)) from None
            count += 1
    return count


def unique_names(conversations: list[ImportedConversation]) -> list[ImportedConversation]:
    """Suffix repeated conversation names with '#2', '#3'... so results can be keyed by name."""
    seen: dict[str, int] = {}
    out = []
    for conv in conversations:
        n = seen.get(conv.name, 0) + 1
        seen[conv.name] = n
        if n > 1:
            conv = ImportedConversation(f"{conv.name}#{n}", conv.source, conv.format, conv.drafts,
                                        conv.locations, conv.qa, conv.speakers)
        out.append(conv)
    return out
