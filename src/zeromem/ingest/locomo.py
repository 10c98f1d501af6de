"""LoCoMo conversations: the per-file dict layout and the original list-of-samples layout.

A conversation has ``speaker_a``/``speaker_b`` and sessions ``session_N`` (a list of turns
``{speaker, dia_id, text, [img_url, blip_caption, query]}``) dated by ``session_N_date_time``
("1:56 pm on 8 May, 2023"). Date keys without a turn list are ignored: LoCoMo ships dates for
sessions that were never written. Each turn becomes one trace, kept verbatim:
``dia_id`` → source_id, ``blip_caption`` → an attachment (never merged into the utterance),
session id ``"session_N"``, seq = the turn's position in its session, role ``"user"`` (both
speakers are people).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..store.validate import check_unicode, printable
from .base import ImportedConversation, bad, parse_time

FORMAT = "locomo"
_SESSION_RE = re.compile(r"^session_(\d+)$")
MAX_SESSION_DIGITS = 18


def looks_like(data: Any) -> bool:
    """True for a LoCoMo conversation dict, a sample dict, or a list of samples."""
    if isinstance(data, list):
        return bool(data) and all(isinstance(s, dict) and "conversation" in s for s in data)
    if not isinstance(data, dict):
        return False
    if isinstance(data.get("conversation"), dict):
        return True
    return "speaker_a" in data and any(_SESSION_RE.match(key) for key in data)


def parse(data: Any, *, source: str, stem: str) -> list[ImportedConversation]:
    """Read every conversation of a LoCoMo document (see the module docstring)."""
    if isinstance(data, list):
        return [_parse_sample(sample, source, stem, index) for index, sample in enumerate(data)]
    if isinstance(data, dict) and "conversation" in data:
        return [_parse_sample(data, source, stem, None)]
    if isinstance(data, dict):
        name = _name(data.get("sample_id"), stem, source, "sample_id")
        return [_parse_conversation(data, data.get("qa"), name, source, "")]
    raise bad(source, "", "a LoCoMo file holds a conversation dict or a list of samples")


def _parse_sample(sample: Any, source: str, stem: str, index: int | None) -> ImportedConversation:
    where = f"[{index}]" if index is not None else ""
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        raise bad(source, where or "top level",
                  "a LoCoMo sample must be a dict with a 'conversation' dict")
    fallback = stem if index is None else f"{stem}#{index}"
    name = _name(sample.get("sample_id"), fallback, source,
                 f"{where}.sample_id" if where else "sample_id")
    return _parse_conversation(sample["conversation"], sample.get("qa"), name, source,
                               f"{where}.conversation." if where else "conversation.")


def _parse_conversation(conv: dict[str, Any], qa: Any, name: str, source: str,
                        prefix: str) -> ImportedConversation:
    numbered = [(m.group(1), key) for key in conv if (m := _SESSION_RE.match(key))]
    for number, key in numbered:
        if len(number) > MAX_SESSION_DIGITS:  # int() refuses more than 4300 digits anyway
            raise bad(source, f"{prefix}{key[:30]}…", f"a session number of {len(number)} digits: "
                      f"LoCoMo numbers its sessions 1, 2, 3...")
    sessions = sorted((int(number), key) for number, key in numbered)
    if not sessions:
        raise bad(source, prefix.rstrip(".") or "top level",
                  "no 'session_N' keys: a LoCoMo conversation has session_1, session_2, ...")
    if qa is not None and not (isinstance(qa, list) and all(isinstance(q, dict) for q in qa)):
        raise bad(source, prefix.replace("conversation.", "") + "qa",
                  "'qa' must be a list of question dicts")
    drafts: list[dict[str, Any]] = []
    locations: list[str] = []
    speakers = [s for s in (conv.get("speaker_a"), conv.get("speaker_b")) if isinstance(s, str)]
    for _, key in sessions:
        turns = conv[key]
        if not isinstance(turns, list):
            raise bad(source, prefix + key, f"must be a list of turns, got {type(turns).__name__}")
        date_key = f"{key}_date_time"
        session_time = parse_time(conv.get(date_key), source, prefix + date_key)
        for seq, turn in enumerate(turns):
            where = f"{prefix}{key}[{seq}]"
            drafts.append(_turn_draft(turn, key, seq, session_time, source, where))
            locations.append(f"{where} ({printable(turn['dia_id'])})" if turn.get("dia_id") else where)
            speaker = turn.get("speaker")
            if isinstance(speaker, str) and speaker not in speakers:
                speakers.append(speaker)
    return ImportedConversation(name=name, source=source, format=FORMAT, drafts=drafts,
                                locations=locations, qa=qa, speakers=tuple(speakers))


def _turn_draft(turn: Any, session: str, seq: int, session_time: str | None, source: str,
                where: str) -> dict[str, Any]:
    if not isinstance(turn, dict):
        raise bad(source, where, "a turn must be a dict with 'speaker', 'dia_id' and 'text'")
    text = turn.get("text")
    if not isinstance(text, str):
        raise bad(source, where, f"'text' must be a string, got {type(text).__name__}")
    for key in ("speaker", "dia_id", "blip_caption"):
        if turn.get(key) is not None and not isinstance(turn[key], str):
            raise bad(source, f"{where}.{key}", f"must be a string, got {type(turn[key]).__name__}")
    draft: dict[str, Any] = {
        "text": text,
        "session": session,
        "session_time": session_time,
        "speaker": turn.get("speaker"),
        "role": "user",
        "seq": seq,
        "source_id": turn.get("dia_id"),
    }
    if turn.get("blip_caption"):
        draft["attachments"] = [turn["blip_caption"]]
    img_url = turn.get("img_url")
    if img_url is not None and not (isinstance(img_url, str) or (
            isinstance(img_url, list) and all(isinstance(url, str) for url in img_url))):
        raise bad(source, f"{where}.img_url",
                  f"must be a URL string or a list of URL strings, got {_shape(img_url)}")
    if img_url:
        draft["metadata"] = {"img_url": img_url}
    return draft


def _name(value: Any, fallback: str, source: str, where: str) -> str:
    """The conversation's name: its ``sample_id`` (a string or an integer) or ``fallback``."""
    if value is None:
        return fallback
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise bad(source, where, f"must be a string or an integer, got {_shape(value)}")
    try:
        check_unicode(str(value), "sample_id")
    except InvalidInput as exc:
        raise bad(source, where, str(exc)) from None
    return str(value).strip() or fallback


def _shape(value: Any) -> str:
    """A value's type for an error message, with the element types of a list."""
    if isinstance(value, list):
        kinds = sorted({type(item).__name__ for item in value})
        return f"a list of {'/'.join(kinds)}" if kinds else "an empty list"
    return type(value).__name__


@dataclass(frozen=True)
class LocomoQuestion:
    """One question of a LoCoMo file: its text, what answers it, the turns that hold that."""

    text: str
    answer: str | None  # None for an adversarial question: the conversation never answers it
    tempting: str | None  # an adversarial question's plausible wrong answer
    evidence: tuple[str, ...]  # dia_ids (source ids) of the turns the answer comes from


def locomo_questions(conversation: ImportedConversation) -> list[LocomoQuestion]:
    """The conversation's questions (its LoCoMo 'qa' list), or InvalidInput saying why
    ``zeromem demo`` cannot use the file: the importer is the one place that knows the format."""
    if not conversation.qa:
        raise InvalidInput(
            f"{conversation.source} has no questions: `zeromem demo` needs a LoCoMo conversation "
            "with a 'qa' list (question, answer, evidence); run `zeromem demo` alone for the "
            "shipped example, or store this file with `zeromem ingest`")
    out = []
    for index, qa in enumerate(conversation.qa):
        question = qa.get("question")
        if not isinstance(question, str) or not question.strip():
            raise InvalidInput(f"{conversation.source}: qa[{index}] has no 'question' text")
        evidence = qa.get("evidence") or []
        if isinstance(evidence, str):
            evidence = [evidence]
        ids = tuple(part for item in evidence if isinstance(item, str)
                    for part in re.split(r"[;,\s]+", item) if part)  # LoCoMo has "D8:6; D9:17"
        adversarial = "answer" not in qa and "adversarial_answer" in qa
        out.append(LocomoQuestion(
            question, None if adversarial else _text(qa.get("answer")),
            _text(qa.get("adversarial_answer")) if adversarial else None, ids))
    return out


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
