"""The MemDaily benchmark (MemSim, Zhang et al., 2024): Chinese personal-assistant memory.

Each data file is a JSON list of *trajectories* ``{tid, message_list, question_list}``; a
message is ``{mid, message, time, place}`` with times written "2024年04月01日 周一 08:39"; a
question is ``{question, answer, target_step_id, choices, ground_truth, time}``. The question
type is the file name's: ``01_simple_events.json`` → ``simple`` (simple, conditional,
comparative, aggregative, post-processing, noisy).

How it is stored: every trajectory is its own memory; every message one user trace whose
source id is its ``mid``, with its own time (``event_time``; the session is the calendar day,
its ``session_time`` the day's first message) and its place in ``metadata``. Gold evidence is
``target_step_id``. Questions are asked after every message of their trajectory; their
``time`` is the question's ``asked_at`` (zeromem searches with ``now=`` it, so the 今天 / 昨天 /
下周一 … that 220 of the 1 503 dev questions name resolve to days; measured on each half of the
dev trajectories: recall@1 35.8 → 35.9 and 35.9 → 36.0, no question type lower) and is also
kept in the query's ``extra``.

Metrics: ``recall@1``, ``recall@3`` (share of the gold messages among the top j), ``all@5``
(every gold message among the top 5), plus hit@j and MRR, overall and by question type; and
the same on two halves of the trajectories (``A``: even positions within their file, ``B``:
odd), so a change tuned on one half is reported on the other.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import summary
from .baselines import format_turn
from .records import Corpus, Query, QuestionRun, SystemRun, Unit

KS = (1, 3, 5)
HALVES = ("A", "B")
_TIME = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日(?:\s*(?:周|星期)[一二三四五六日天])?"
                   r"(?:\s*(\d{1,2})[:：](\d{2}))?")
TYPES = ("simple", "conditional", "comparative", "aggregative", "post_processing", "noisy")


@dataclass(slots=True)
class MemDailyData:
    corpora: list[Corpus]
    files: list[str]
    messages: int = 0
    types: dict[str, int] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        return {"files": self.files, "questions": self.types, "messages": self.messages,
                "trajectories": len(self.corpora)}


def iso_time(text: str) -> str:
    """MemDaily's "2024年04月01日 周一 08:39" as ISO 8601 ("2024-04-01T08:39:00")."""
    m = _TIME.search(str(text))
    if m is None:
        raise ValueError(f"not a MemDaily time: {text!r} (expected like 2024年04月01日 周一 08:39)")
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    hour, minute = int(m.group(4) or 0), int(m.group(5) or 0)
    return dt.datetime(year, month, day, hour, minute).isoformat()


def question_type(path: str | Path) -> str:
    """The question type a file holds, from its name: ``05_post_processing_roles`` →
    ``post-processing``."""
    stem = re.sub(r"^\d+_", "", Path(path).name.split(".")[0])
    kind = next((t for t in TYPES if stem == t or stem.startswith(t + "_")), None)
    if kind is None:  # another type: the name without its last part (the domain)
        kind = stem.rsplit("_", 1)[0] if "_" in stem else stem
    return kind.replace("_", "-")


def data_files(paths: Iterable[str | Path]) -> list[Path]:
    """The JSON files named, folders expanded (sorted), duplicates dropped."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                raise FileNotFoundError(f"{path}: no MemDaily .json files in this folder")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    return list(dict.fromkeys(out))


def trajectory_units(trajectory: dict[str, Any]) -> list[Unit]:
    """A trajectory's messages as trace drafts (see the module docstring)."""
    units: list[Unit] = []
    first_of_day: dict[str, str] = {}
    for seq, message in enumerate(trajectory.get("message_list") or ()):
        text = str(message.get("message") or "").strip()
        if not text:
            continue
        when = iso_time(message["time"])
        day = when[:10]
        first_of_day.setdefault(day, when)
        draft: dict[str, Any] = {
            "text": text, "role": "user", "speaker": "user", "session": day,
            "session_time": first_of_day[day], "event_time": when, "seq": seq,
            "source_id": str(message["mid"])}
        if message.get("place"):
            draft["metadata"] = {"place": str(message["place"])}
        units.append(Unit(str(message["mid"]), draft, format_turn(text, session_time=str(message["time"]))))
    return units


def load_memdaily(paths: Iterable[str | Path], limit: int | None = None) -> MemDailyData:
    """Every trajectory of the files (``limit``: the first N trajectories of each file)."""
    files = data_files(paths)
    data = MemDailyData([], [str(f) for f in files])
    for path in files:
        with open(path, encoding="utf-8") as handle:
            trajectories = json.load(handle)
        if not isinstance(trajectories, list):
            raise ValueError(f"{path}: expected a JSON list of MemDaily trajectories")
        kind = question_type(path)
        for position, trajectory in enumerate(trajectories[:limit] if limit else trajectories):
            units = trajectory_units(trajectory)
            valid = {u.key for u in units}
            name = f"{Path(path).stem}#{trajectory.get('tid', position)}"
            queries = []
            for index, item in enumerate(trajectory.get("question_list") or ()):
                gold = tuple(dict.fromkeys(str(g) for g in item.get("target_step_id") or ()
                                           if str(g) in valid))
                asked = iso_time(item["time"]) if item.get("time") else None
                queries.append(Query(f"{name}:{item.get('qid', index)}", str(item["question"]), kind,
                                     gold, item.get("answer"), bool(gold),
                                     {"half": HALVES[position % 2], "time": asked}, asked))
                data.types[kind] = data.types.get(kind, 0) + 1
            data.corpora.append(Corpus(name, units, queries))
            data.messages += len(units)
    return data


def _block(runs: Sequence[QuestionRun], k: int) -> dict[str, Any]:
    return summary.retrieval_block(runs, tuple(sorted({*KS, k})), k)


def system_report(result: SystemRun, k: int, reader_model: str | None = None) -> dict[str, Any]:
    """Overall and by question type, on all trajectories and on each half."""
    scored = [r for r in result.runs if r.query.scored]
    overall = _block(scored, k)
    overall.update(summary.cost_block(result))
    kinds = list(dict.fromkeys(r.query.category for r in scored))
    by_category = {kind: _block([r for r in scored if r.query.category == kind], k) for kind in kinds}
    by_half: dict[str, Any] = {}
    by_half_category: dict[str, Any] = {}
    for half in HALVES:
        runs = [r for r in scored if r.query.extra.get("half") == half]
        by_half[half] = _block(runs, k)
        by_half_category[half] = {kind: _block([r for r in runs if r.query.category == kind], k)
                                  for kind in kinds}
    return {"overall": overall, "by_category": by_category, "by_half": by_half,
            "by_half_category": by_half_category}
