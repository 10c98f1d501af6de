"""Dense sentence embeddings behind one small interface, with two real backends.

* ``SentenceTransformerEmbedder`` runs the model through PyTorch (sentence-transformers).
* ``OnnxEmbedder`` runs the same model through ONNX Runtime, without torch. The graph is built
  once from the local model's weights (no network; ``onnx_export.py``) and cached; with
  ``quantize=True`` its MatMul weights are dynamically quantized to int8 (per channel).
  Measured on a 2-core EPYC: a query encodes in ~9 ms instead of ~25-55 ms through torch,
  at mean cosine 0.991 to the torch vectors and equal dense recall on LoCoMo (fp32 export:
  cosine 1.0000, ~13 ms). See docs/decisions.md#d-003.

Every backend returns float32 rows with unit L2 norm, so a dot product is the cosine.

Threads: both runtimes are pinned to ``threads`` (default 1). On these 2-core machines a second
intra-op thread contends with the rest of the process (and with other processes); one thread is
the predictable choice. Note that ``torch.set_num_threads`` is process-wide.

Switching to a stronger model: pass its Hugging Face id (``BAAI/bge-small-en-v1.5``,
``BAAI/bge-base-en-v1.5``, ``BAAI/bge-m3``) or a local directory as ``model``; download it once
with network access, then run offline with ``HF_HUB_OFFLINE=1``.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ModelUnavailable
from .models import DEFAULT_MODEL, load_sentence_transformer, model_unavailable, resolve_model
from .tokenizer_file import load_tokenizer

__all__ = ["DEFAULT_MODEL", "Embedder", "OnnxEmbedder", "SentenceTransformerEmbedder", "default_cache_dir",
           "load_sentence_transformer", "model_unavailable", "normalize_rows", "resolve_model"]

class Embedder(ABC):
    """Maps texts to unit-length float32 vectors of a fixed dimension."""

    name: str
    dim: int

    @abstractmethod
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Encode a batch: float32 array of shape ``(len(texts), dim)`` with L2-normalized rows."""

    def encode_query(self, text: str) -> np.ndarray:
        """Encode one query: float32 array of shape ``(dim,)``."""
        return self.encode([text])[0]


def check_run_options(threads: int, batch_size: int) -> None:
    """Every embedder runs on at least one thread, in batches of at least one text."""
    if threads < 1 or batch_size < 1:
        raise ValueError("threads and batch_size must be >= 1")


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalize each row as float32; an all-zero row stays zero instead of becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class SentenceTransformerEmbedder(Embedder):
    """The PyTorch backend (sentence-transformers), batched, normalized, on CPU."""

    def __init__(self, model: str = DEFAULT_MODEL, *, threads: int = 1, batch_size: int = 64) -> None:
        check_run_options(threads, batch_size)
        try:
            import torch
        except ImportError as err:
            raise ModelUnavailable("embedding_backend='torch' needs the torch extra: "
                                   "`pip install 'zeromem[torch]'` (pin the CPU build of torch "
                                   "first to avoid its CUDA libraries)") from err

        torch.set_num_threads(threads)
        self._model = load_sentence_transformer(model)
        self.name = model
        dim = getattr(self._model, "get_embedding_dimension", None)  # renamed in ST 5
        if not callable(dim):
            dim = self._model.get_sentence_embedding_dimension
        self.dim = int(dim())
        self.batch_size = batch_size
        self.threads = threads

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts; use encode_query for one text")
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(list(texts), batch_size=self.batch_size,
                                     convert_to_numpy=True, normalize_embeddings=True,
                                     show_progress_bar=False)
        return normalize_rows(vectors)


def default_cache_dir() -> Path:
    """``$ZEROMEM_CACHE`` if set, else ``~/.cache/zeromem``."""
    env = os.environ.get("ZEROMEM_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "zeromem"


class OnnxEmbedder(Embedder):
    """The ONNX Runtime backend: same model, exported once to ``cache_dir/onnx/...``.

    The default model's int8 graph ships inside zeromem (``shipped.py``); other graphs are
    built or exported once into ``cache_dir`` (an explicit ``cache_dir`` always uses it). Either
    loads without importing torch (0.3 s instead of ~3-20 s).
    ``quantize=True`` uses the int8 graph (fastest single queries) and runs one text at a time,
    because dynamic quantization scales activations per input tensor: in a batch a text's
    vector would depend on its neighbours. ``quantize=False`` uses the fp32 graph in
    length-sorted batches (vectors equal to torch up to float rounding).
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, threads: int = 1, batch_size: int = 16,
                 quantize: bool = True, cache_dir: str | Path | None = None) -> None:
        check_run_options(threads, batch_size)
        try:
            import onnxruntime as ort
        except ImportError as err:
            raise ModelUnavailable("the ONNX backend needs onnxruntime (a core dependency of "
                                   "zeromem): `pip install onnxruntime`") from err
        from .onnx_export import ensure_export
        from .shipped import shipped_export

        # The default model's int8 graph ships with zeromem (shipped.py); anything else is
        # exported once into the cache.
        export = shipped_export(model) if quantize and cache_dir is None else None
        if export is None:
            export = ensure_export(model, Path(cache_dir) if cache_dir else default_cache_dir(),
                                   quantize=quantize)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Idle worker threads would otherwise spin and steal the second core.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(export.graph), options,
                                             providers=["CPUExecutionProvider"])
        self._tokenizer = load_tokenizer(export.tokenizer, export.max_length)
        self._inputs = export.input_names
        self._pad_id = export.pad_id
        self.name = model
        self.dim = export.dim
        self.batch_size = batch_size
        self.threads = threads
        self.quantized = quantize
        self.graph_path = export.graph
        self.weights_sha256 = export.weights_sha256  # set for the shipped graph (fingerprint.py)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts; use encode_query for one text")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if len(texts) == 0:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = np.array([len(ids) for ids in encodings])
        # Length-sorted batches waste the least compute on padding; stable for determinism.
        order = np.argsort(lengths, kind="stable")
        # Dynamic int8 quantization scales activations per input tensor, so in a batch a text's
        # vector would depend on its neighbours; one text per run keeps vectors a pure function
        # of the text (measured: batching gains nothing on 2 cores anyway).
        step = 1 if self.quantized else self.batch_size
        for start in range(0, len(order), step):
            rows = order[start:start + step]
            out[rows] = self._run([encodings[i] for i in rows], int(lengths[rows].max()))
        return normalize_rows(out)

    def _run(self, encodings: list[list[int]], width: int) -> np.ndarray:
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, tokens in enumerate(encodings):
            ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1
        # one sequence per text: every token type is 0
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return self._session.run(None, {name: feeds[name] for name in self._inputs})[0]
