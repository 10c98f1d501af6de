"""Dense sentence embeddings behind one small interface, with two real backends.

* ``SentenceTransformerEmbedder`` runs the model through PyTorch (sentence-transformers).
* ``OnnxEmbedder`` runs the same model through ONNX Runtime, without torch. The graph is built
  once from the local model's weights (no network; ``onnx_export.py``) and cached; with
  ``quantize=True`` its MatMul weights are dynamically quantized to int8 (per channel).
  Measured on a 2-core EPYC: a query encodes in ~9 ms instead of ~25-55 ms through torch,
  at mean cosine 0.991 to the torch vectors and equal dense recall on LoCoMo (fp32 export:
  cosine 1.0000, ~13 ms). See docs/decisions/0003-onnx-int8-embeddings.md.

Every backend returns float32 rows with unit L2 norm, so a dot product is the cosine.

Threads: both runtimes are pinned to ``threads`` (default 1). On these 2-core machines a second
intra-op thread contends with the rest of the process (and with other processes); one thread is
the predictable choice. Note that ``torch.set_num_threads`` is process-wide.

Switching to a stronger model: pass its Hugging Face id (``BAAI/bge-small-en-v1.5``,
``BAAI/bge-base-en-v1.5``, ``BAAI/bge-m3``) or a local directory as ``model``; download it once
with network access, then run offline with ``HF_HUB_OFFLINE=1``.
"""

from __future__ import annotations

import logging
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelUnavailable
from .models import DEFAULT_MODEL, load_sentence_transformer, model_unavailable, resolve_model
from .tokenizer_file import load_tokenizer

_log = logging.getLogger(__name__)
# Texts of one token length that run together (int8, batch-exact graph). Fewer run alone: a write
# of a few turns never builds the batch graph (~45 MB), a bulk import does.
BATCH_MIN = 4
# Texts the batch-exact graph is checked on when it is built (one token length after truncation).
_BATCH_PROBES = ("I went hiking with my sister last weekend near the lake.",
                 "The museum opened a new exhibit on ancient maps in March 2023!",
                 "Can you remind me what time the dentist appointment is tomorrow?")

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
    ``quantize=True`` uses the int8 graph (fastest single queries). Its dynamic quantization
    scales activations per input tensor, so in a plain batch a text's vector would depend on its
    neighbours: a lone text runs alone, and texts of the same token length run together through
    the graph's batch-exact twin (``onnx_batch.py``: quantized and pooled per text), whose vectors
    equal the lone runs' bit for bit — checked on probe texts when the twin is built, one text
    per run if the check fails. The twin is built at the first such batch (~0.2 s, ~45 MB: a
    process that only searches, or writes a few turns at a time, never builds it).
    ``quantize=False`` uses the fp32 graph in length-sorted batches (vectors equal to torch up to
    float rounding).
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
        self._options = options
        self._batch_session: Any = None  # (session, tables); False once it is known there is none
        self._batch_lock = threading.Lock()
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
        if self.quantized:
            self._encode_exact(encodings, lengths, out)
            return normalize_rows(out)
        # Length-sorted batches waste the least compute on padding; stable for determinism.
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            out[rows] = self._run([encodings[i] for i in rows], int(lengths[rows].max()))
        return normalize_rows(out)

    def _encode_exact(self, encodings: list[list[int]], lengths: np.ndarray, out: np.ndarray) -> None:
        """int8: texts of one token length in batches through the batch-exact graph, others
        alone — every vector equal to the text's lone run."""
        order = np.argsort(lengths, kind="stable")
        bounds = np.flatnonzero(np.diff(lengths[order])) + 1
        for rows in np.split(order, bounds):
            batched = self._batched() if len(rows) >= BATCH_MIN else None
            step = self.batch_size if batched is not None else 1
            for start in range(0, len(rows), step):
                chunk = rows[start:start + step]
                out[chunk] = self._run([encodings[i] for i in chunk], int(lengths[chunk[0]]),
                                       batched if len(chunk) > 1 else None)

    def _batched(self) -> tuple[Any, dict[str, Any]] | None:
        """The batch-exact session and its fed tables, built once (None when the graph has no
        twin or the twin's vectors differ from the lone runs')."""
        with self._batch_lock:
            if self._batch_session is None:
                self._batch_session = _batch_exact_session(self) or False
            return self._batch_session or None

    def _run(self, encodings: list[list[int]], width: int,
             batched: tuple[Any, dict[str, Any]] | None = None) -> np.ndarray:
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, tokens in enumerate(encodings):
            ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1
        # one sequence per text: every token type is 0
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {name: feeds[name] for name in self._inputs}
        if batched is None:
            return self._session.run(None, feeds)[0]
        session, tables = batched
        return session.run(None, feeds | tables)[0]


def _batch_exact_session(embedder: OnnxEmbedder) -> tuple[Any, dict[str, Any]] | None:
    """An ONNX Runtime session of ``embedder``'s batch-exact graph (``onnx_batch.py``) and the
    tables it is fed, if its vectors equal the lone runs' on the probe texts; else None (logged)."""
    import onnxruntime as ort

    from .onnx_batch import batch_graph

    try:
        data = Path(embedder.graph_path).read_bytes()
        twin = batch_graph(data)
        if twin is None:
            return None
        session = ort.InferenceSession(twin.model, embedder._options, providers=["CPUExecutionProvider"])
        start = np.frombuffer(data, dtype=np.uint8).ctypes.data
        # Read-only maps of the tables' bytes in the graph file: shared, paged in as rows are used.
        tables = {name: np.memmap(embedder.graph_path, dtype=table.dtype, mode="r", shape=table.shape,
                                  offset=table.ctypes.data - start)
                  for name, table in twin.tables.items()}
        del twin, data
        probes = embedder._tokenizer.encode_batch(list(_BATCH_PROBES))
        width = min(len(ids) for ids in probes)
        probes = [ids[:width] for ids in probes]
        together = embedder._run(probes, width, (session, tables))
        alone = np.concatenate([embedder._run([ids], width) for ids in probes])
    except Exception as exc:  # noqa: BLE001 - a runtime that rejects the twin: one text per run
        _log.warning("zeromem: int8 embeddings run one text at a time (batch-exact graph "
                     "unavailable: %s)", exc)
        return None
    if not np.array_equal(together, alone):
        _log.warning("zeromem: int8 embeddings run one text at a time (this ONNX Runtime's batched "
                     "vectors differ from its single-text vectors)")
        return None
    return session, tables
