"""The set of encoders a memory uses, each loaded on first use (CRUD never loads a model).

A component that cannot be loaded, or that raises while encoding, is recorded here as failed
(``fail``) for the life of this object: search then answers from the indexes that still work
and says so (``SearchResult.degraded``, docs/decisions.md "Degraded search"), and the warning
is logged once instead of at every write and search. Reopening the memory tries again.
"""

from __future__ import annotations

import logging
import threading
from functools import cached_property
from typing import Any

from ..config import EncoderConfig
from ..errors import ModelUnavailable

EMBEDDER = "embedder"
NER = "ner"
COMPONENTS = (EMBEDDER, NER)
_NAMES = {EMBEDDER: "embedder", NER: "NER pipeline"}

_log = logging.getLogger("zeromem")


class EncoderFailure(ModelUnavailable):
    """An encoder could not be loaded or failed while encoding.

    ``component`` is ``"embedder"`` or ``"ner"``; ``reason`` says why (for a missing model,
    the ``ModelUnavailable`` message with its install command). Direct indexing
    (``Memory.index``) raises it; search catches it and goes on without the component.
    """

    def __init__(self, component: str, cause: BaseException) -> None:
        self.component = component
        self.reason: str = cause.reason if isinstance(cause, EncoderFailure) else describe_error(cause)
        super().__init__(self.reason)


def describe_error(error: BaseException) -> str:
    """A one-line reason: our own errors already say what is wrong and how to fix it."""
    if isinstance(error, ModelUnavailable):
        return str(error)
    return f"{type(error).__name__}: {error}"


class Encoders:
    """The embedder and the entity extractor ``config`` names, loaded lazily, with a record of
    which of them failed."""

    def __init__(self, config: EncoderConfig) -> None:
        self.config = config
        self._failures: dict[str, str] = {}
        self._lock = threading.Lock()

    @cached_property
    def embedder(self) -> Any:
        from .factory import load_embedder
        return load_embedder(self.config)

    @cached_property
    def extractor(self) -> Any:
        from .factory import load_extractor
        return load_extractor(self.config)

    @cached_property
    def fingerprint(self) -> dict:
        """Which embedder this is (model, dimension, backend, weights hash): stored vectors
        record it, and a store whose vectors came from another embedder is refused."""
        from .fingerprint import embedder_fingerprint
        return embedder_fingerprint(self.embedder, self.config)

    def load(self, component: str) -> Any:
        """The loaded ``component``; any failure to load it is raised as ``EncoderFailure``.

        The embedder counts as loaded once its fingerprint is known too: its vectors can only
        be used after they are checked against the ones a scope stores.
        """
        if component not in COMPONENTS:
            raise ValueError(f"unknown encoder component {component!r}; one of {COMPONENTS}")
        try:
            if component == EMBEDDER:
                _ = self.fingerprint
                return self.embedder
            return self.extractor
        except Exception as exc:  # a bad config, a missing model, a broken install alike
            raise EncoderFailure(component, exc) from exc

    def check(self, component: str) -> str | None:
        """None when ``component`` is usable (loading it if needed), else why not.

        Never raises: a failure is recorded (``fail``), so the next call answers at once.
        """
        with self._lock:
            known = self._failures.get(component)
        if known is not None:
            return known
        try:
            self.load(component)
        except EncoderFailure as exc:
            return self.fail(component, exc)
        return None

    def fail(self, component: str, error: BaseException) -> str:
        """Record that ``component`` failed, log it once, and return the recorded reason."""
        reason = error.reason if isinstance(error, EncoderFailure) else describe_error(error)
        with self._lock:
            if component in self._failures:
                return self._failures[component]
            self._failures[component] = reason
        _log.warning("zeromem: the %s is unavailable; search answers without it (and says so in "
                     "SearchResult.degraded) until the memory is reopened: %s", _NAMES[component], reason)
        return reason

    def failures(self) -> dict[str, str]:
        """Components recorded as failed: name → reason (empty when everything works)."""
        with self._lock:
            return dict(self._failures)
