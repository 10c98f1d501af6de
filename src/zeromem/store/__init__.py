"""The source of record: verbatim traces, their history, and the derived tables' storage."""

from .sqlite import TraceStore, TraceDraft

__all__ = ["TraceStore", "TraceDraft"]
