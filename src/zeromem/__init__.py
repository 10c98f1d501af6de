"""zeromem: a memory layer for LLM agents with zero LLM calls in every memory operation.

Everything public is in ``__all__``; any other name (and every module not re-exported here)
is internal and may change without notice.
"""

from .config import Config, EncoderConfig, RetrievalConfig
from .errors import (
                     EmbedderMismatch,
                     InvalidInput,
                     ModelUnavailable,
                     NotFound,
                     StoreError,
                     ZeromemError,
)
from .indexes.indexer import RefreshReport
from .ingest import ImportResult
from .lifecycle.active import ActiveEntry, ActiveMemory
from .lifecycle.cards import Card
from .lifecycle.survival import SurvivalLaw
from .memory import Memory, ScopedMemory
from .results import (
                     CompactReport,
                     Health,
                     IndexCacheStats,
                     Neighbour,
                     NeighbourEntity,
                     Neighbourhood,
                     NoAnswerSignals,
                     QuerySummary,
                     SearchExplain,
                     SearchResult,
                     SessionInfo,
                     Stats,
)
from .retrieval.answer_calibration import Answer
from .retrieval.reading import HasText, Reader
from .retrieval.render import RenderedContext
from .store.base import DeleteReceipt, TraceDraft
from .store.portable import BackupReport, RestoreReport
from .types import SAME_SCOPE, Evidence, HistoryEvent, Provenance, SameScope, Scope, TimeLike, Trace

__all__ = [
                     "SAME_SCOPE",
                     "ActiveEntry",
                     "ActiveMemory",
                     "Answer",
                     "BackupReport",
                     "Card",
                     "CompactReport",
                     "Config",
                     "DeleteReceipt",
                     "EmbedderMismatch",
                     "EncoderConfig",
                     "Evidence",
                     "HasText",
                     "Health",
                     "HistoryEvent",
                     "ImportResult",
                     "IndexCacheStats",
                     "InvalidInput",
                     "Memory",
                     "ModelUnavailable",
                     "Neighbour",
                     "NeighbourEntity",
                     "Neighbourhood",
                     "NoAnswerSignals",
                     "NotFound",
                     "Provenance",
                     "QuerySummary",
                     "Reader",
                     "RefreshReport",
                     "RenderedContext",
                     "RestoreReport",
                     "RetrievalConfig",
                     "SameScope",
                     "Scope",
                     "ScopedMemory",
                     "SearchExplain",
                     "SearchResult",
                     "SessionInfo",
                     "Stats",
                     "StoreError",
                     "SurvivalLaw",
                     "TimeLike",
                     "Trace",
                     "TraceDraft",
                     "ZeromemError",
]
__version__ = "1.0.0"
