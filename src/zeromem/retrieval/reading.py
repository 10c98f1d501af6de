"""What ``Memory.answer`` needs of a reader: the contract, with no LLM client behind it.

The reader itself (``zeromem.reader``) is the one place an LLM may be called; this module only
says what shape it has, so the memory layers can type ``answer(reader)`` without importing it.
``zeromem.reader.Reader`` is this same protocol.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .render import RenderedContext


@runtime_checkable
class HasText(Protocol):
    """A reader's reply that carries more than the text (e.g. ``zeromem.reader.ReaderAnswer``)."""

    @property
    def text(self) -> str:
        """The answer's text."""
        ...


@runtime_checkable
class Reader(Protocol):
    """Answers a question from a rendered memory context with one LLM call."""

    def answer(self, question: str, context: RenderedContext) -> str | HasText:
        """Return the short answer to ``question`` given ``context`` (the rendered memory
        block; ``context.text`` is the prompt block): text, or an object with a ``.text``."""
        ...
