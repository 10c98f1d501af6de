"""Evidence → the prompt block, with the image captions the prepared index holds (render glue).

``render.render`` lays out evidence within a token budget; a turn's attached image
descriptions live beside its trace, not in the evidence text, so they are looked up here in
the scope's prepared index (when it is in memory) by the evidence's trace id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import InvalidInput, NotFound
from ..types import Evidence
from .prepared import PreparedScope
from .render import RenderedContext, render


def render_evidence(evidence: Sequence[Evidence], budget_tokens: int | None, prep: PreparedScope | None,
                    parse_id: Callable[[str], int]) -> RenderedContext:
    """``evidence`` rendered, with the captions of its traces from ``prep`` (if any);
    ``parse_id`` is the store's id parser (``store.ids.parse``). Evidence whose id is not one
    of this store's renders without captions."""
    captions: dict[str, tuple[str, ...]] = {}
    if prep is not None:
        for ev in evidence:
            try:
                rowid = parse_id(ev.trace_id)
            except (InvalidInput, NotFound, IndexError):
                continue
            slot = prep.index.slot_of_rowid.get(rowid)
            trace = prep.index.traces[slot] if slot is not None else None
            if trace is not None and trace.attachments:
                captions[trace.id] = trace.attachments
    return render(list(evidence), budget_tokens=budget_tokens, captions=captions)
