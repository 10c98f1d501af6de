"""The digest of a model's files: which files decide its vectors, and one sha256 over them.

The embedder's fingerprint (fingerprint.py) records it, and the shipped int8 graph (shipped.py)
carries the digest of the weights it was made from; both come from here, so they agree.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

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

_lock = threading.Lock()
_file_digests: dict[tuple[str, int, int], str] = {}


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
    with resolved.open("rb") as handle:
        value = hashlib.file_digest(handle, "sha256").hexdigest()
    with _lock:
        _file_digests[key] = value
    return value
