"""What a search has to do without while an encoder is down, and the readiness report.

Degraded search (docs/design.md#degraded-search): a failed embedder takes the dense channel out (BM25 alone
scores every level); a failed NER pipeline takes the graph view out, but only while some
sessions wait for their entity mentions (the stored sessions keep theirs). Each skipped channel
comes with one line saying which component failed, why, and what answers instead.
"""

from __future__ import annotations

from typing import Any

from ..encoders.bundle import EMBEDDER, NER
from ..results import Health, IndexCacheStats
from ..store.base import StoreBase
from ..types import Scope
from .engine import DENSE, GRAPH

_SKIPPED = {EMBEDDER: ("dense similarity (no query or unit vectors)", "BM25 alone scores each level"),
            NER: ("graph view", "the hierarchy view answers")}


def note(component: str, reason: str, detail: str = "") -> str:
    """``"<component>: <why>; skipped: <channel><detail>; <what answers instead>"``."""
    channel, instead = _SKIPPED[component]
    return f"{component}: {reason.rstrip('. ')}; skipped: {channel}{detail}; {instead}"


def degraded(failed: dict[str, str], waiting_for_ner: int) -> tuple[set[str], list[str]]:
    """(channels a search skips now, one line per failed component saying why and what it
    skips), given the failed components and how many sessions of the scope are held in memory
    without entity mentions. Empty when every encoder works, or when the one that failed is not
    needed: NER is only needed for sessions not yet stored with their mentions."""
    skip: set[str] = set()
    notes: list[str] = []
    if EMBEDDER in failed:
        skip.add(DENSE)
        notes.append(note(EMBEDDER, failed[EMBEDDER]))
    if NER in failed and waiting_for_ner:
        skip.add(GRAPH)
        notes.append(note(NER, failed[NER], f" ({waiting_for_ner} session(s) have no entity mentions yet)"))
    return skip, notes


def health(store: StoreBase, encoders: Any, scope: Scope, index_cache: IndexCacheStats,
           snapshots_discarded: int = 0) -> Health:
    """See ``Memory.health``."""
    try:
        store.scope_version(scope)
        status = "ok"
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        status = f"error: {exc}"
    models: dict[str, str] = {}
    for component in (EMBEDDER, NER):
        reason = encoders.check(component)
        models[component] = "ok" if reason is None else f"unavailable: {reason}"
    failed = encoders.failures()
    degraded = tuple(note(c, failed[c], "" if c == EMBEDDER else " (for as long as sessions "
                          "written without it wait for entity mentions)")
                     for c in (EMBEDDER, NER) if c in failed)
    placement = None
    if status == "ok" and callable(getattr(store, "placement", None)):
        try:
            placement = store.placement()
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            placement = {"error": str(exc)}
    return Health(ready=status == "ok", store=status, embedder=models[EMBEDDER], ner=models[NER],
                  degraded=degraded, index_cache=index_cache, snapshots_discarded=snapshots_discarded,
                  placement=placement)
