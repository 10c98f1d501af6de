"""zeromem: a memory layer for LLM agents with zero LLM calls in every memory operation."""

from .config import Config, EncoderConfig, RetrievalConfig
from .errors import (
                     EmbedderMismatch,
                     InvalidInput,
                     ModelUnavailable,
                     NotFound,
                     StoreError,
                     ZeromemError,
)
from .lifecycle.active import ActiveEntry, ActiveMemory
from .lifecycle.cards import Card
from .lifecycle.survival import SurvivalLaw
from .memory import Memory
from .retrieval.answer_calibration import Answer
from .types import Evidence, HistoryEvent, Provenance, Scope, Trace

__all__ = [
                     "ActiveEntry",
                     "ActiveMemory",
                     "Answer",
                     "Card",
                     "Config",
                     "EmbedderMismatch",
                     "EncoderConfig",
                     "Evidence",
                     "HistoryEvent",
                     "InvalidInput",
                     "Memory",
                     "ModelUnavailable",
                     "NotFound",
                     "Provenance",
                     "RetrievalConfig",
                     "Scope",
                     "StoreError",
                     "SurvivalLaw",
                     "Trace",
                     "ZeromemError",
]
__version__ = "0.1.0"
