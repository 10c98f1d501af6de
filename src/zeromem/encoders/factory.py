"""The one place that knows every encoder backend: ``EncoderConfig`` → loaded encoder.

Loaded encoders are cached per process and configuration, so several ``Memory`` objects (or a
``reindex`` after a search) share one model instead of loading it again. A missing package or
model raises ``ModelUnavailable`` naming the install command; nothing falls back silently.

Embedding backends (``EncoderConfig.embedding_backend``):

* ``"torch"`` — sentence-transformers on PyTorch.
* ``"onnx"`` — ONNX Runtime, int8 MatMul weights (fastest queries; cosine ~0.99 to torch).
* ``"onnx-fp32"`` — ONNX Runtime, fp32 (vectors equal to torch up to rounding).
"""

from __future__ import annotations

import threading
from typing import Any

from ..config import EncoderConfig
from ..errors import InvalidInput
from .embed import Embedder, OnnxEmbedder, SentenceTransformerEmbedder
from .entities import EntityExtractor

BACKENDS = ("torch", "onnx", "onnx-fp32")

_lock = threading.Lock()
_embedders: dict[tuple[Any, ...], Embedder] = {}
_extractors: dict[tuple[Any, ...], EntityExtractor] = {}


def _embedder_key(config: EncoderConfig) -> tuple[Any, ...]:
    return (config.embedding_model, config.embedding_backend, config.torch_threads, config.batch_size)


def load_embedder(config: EncoderConfig) -> Embedder:
    """The embedder ``config`` names, loaded once per process."""
    backend = config.embedding_backend
    if backend not in BACKENDS:
        raise InvalidInput(f"unknown embedding_backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    key = _embedder_key(config)
    with _lock:
        if key not in _embedders:
            if backend == "torch":
                _embedders[key] = SentenceTransformerEmbedder(
                    config.embedding_model, threads=config.torch_threads,
                    batch_size=config.batch_size)
            else:
                _embedders[key] = OnnxEmbedder(
                    config.embedding_model, threads=config.torch_threads,
                    batch_size=min(config.batch_size, 16), quantize=backend == "onnx")
        return _embedders[key]


def load_extractor(config: EncoderConfig) -> EntityExtractor:
    """The entity extractor ``config`` names (spaCy pipeline + deterministic extractors)."""
    key = (config.spacy_pipeline, config.batch_size)
    with _lock:
        if key not in _extractors:
            _extractors[key] = EntityExtractor(config.spacy_pipeline, batch_size=config.batch_size)
        return _extractors[key]
