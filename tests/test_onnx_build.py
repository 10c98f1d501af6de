"""The torch-free ONNX graph of the default embedder against the torch-traced export it replaces.

Both ways are run on the same weights in fresh cache folders: the traced one (torch, the
``[torch]`` extra) is what the ONNX backend served before, the built one (``onnx_build.py``) is
what it serves now. Their int8 vectors must agree on 1,000 texts (cosine ≥ 0.999 each).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from zeromem.encoders.models import DEFAULT_MODEL, resolve_model
from zeromem.encoders.onnx_build import bert_spec, read_safetensors

REPO = Path(__file__).resolve().parents[1]
N_TEXTS = 1000


def _texts(n: int) -> list[str]:
    """``n`` distinct sentences from the repository's prose (docs, docstrings, comments), in a
    fixed file order: English, some Chinese, code words, short and long."""
    files = sorted(REPO.glob("*.md")) + sorted((REPO / "docs").glob("*.md"))
    files += sorted((REPO / "src" / "zeromem").rglob("*.py")) + sorted((REPO / "tests").glob("test_*.py"))
    seen: dict[str, None] = {}
    for path in files:
        for part in re.split(r"(?<=[.!?。])\s+|\n\s*\n", path.read_text(encoding="utf-8")):
            text = " ".join(part.replace("#", " ").replace('"""', " ").split())
            if 3 <= len(text) <= 800:
                seen.setdefault(text, None)
            if len(seen) == n:
                return list(seen)
    return list(seen)


def test_the_text_sample_is_a_thousand_texts_with_some_chinese():
    texts = _texts(N_TEXTS)
    assert len(texts) == N_TEXTS
    assert any(re.search("[\u4e00-\u9fff]", t) for t in texts)


def test_the_default_model_is_a_bert_the_builder_reads():
    spec = bert_spec(Path(resolve_model(DEFAULT_MODEL)))
    assert spec is not None
    assert (spec.layers, spec.heads, spec.hidden, spec.pooling, spec.max_length) == (6, 12, 384, "mean", 256)


def test_safetensors_are_read_without_the_safetensors_package():
    weights = read_safetensors(Path(resolve_model(DEFAULT_MODEL)) / "model.safetensors")
    table = weights["embeddings.word_embeddings.weight"]
    assert table.shape == (30522, 384) and table.dtype == np.float32
    assert np.isfinite(table).all() and float(np.abs(table).max()) > 0


def test_a_folder_that_is_not_a_bert_is_left_to_the_torch_export(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "xlm-roberta"}')
    assert bert_spec(tmp_path) is None
    assert bert_spec(tmp_path / "missing") is None


@pytest.mark.slow
def test_the_built_graph_needs_no_torch_and_matches_the_traced_int8_vectors(tmp_path):
    pytest.importorskip("torch")  # the reference: the traced export (the [torch] extra)
    from zeromem.encoders import onnx_export
    from zeromem.encoders.embed import OnnxEmbedder

    traced_cache, built_cache = tmp_path / "traced", tmp_path / "built"
    onnx_export._export(DEFAULT_MODEL, onnx_export.export_dir(DEFAULT_MODEL, traced_cache),
                        quantize=True, trace=True)
    before = set(sys.modules)
    built = OnnxEmbedder(cache_dir=built_cache)
    assert not any(name == "torch" or name.startswith("torch.") for name in set(sys.modules) - before)
    traced = OnnxEmbedder(cache_dir=traced_cache)
    assert built.graph_path != traced.graph_path and built.dim == traced.dim == 384

    texts = _texts(N_TEXTS)
    cosines = (built.encode(texts) * traced.encode(texts)).sum(axis=1)
    print(f"cosine min {cosines.min():.6f} mean {cosines.mean():.6f}")
    assert cosines.min() >= 0.999, f"min cosine {cosines.min():.5f} on {texts[int(cosines.argmin())]!r}"


@pytest.mark.slow
def test_the_built_fp32_graph_pads_a_batch_without_changing_a_vector(tmp_path):
    from zeromem.encoders.embed import OnnxEmbedder

    fp32 = OnnxEmbedder(quantize=False, cache_dir=tmp_path)
    texts = ["x", "I went to a pottery class last Saturday and made a bowl.", "我昨天去了北京大学。"]
    batch = fp32.encode(texts)
    alone = np.stack([fp32.encode_query(t) for t in texts])
    assert (batch * alone).sum(axis=1).min() > 0.99999
