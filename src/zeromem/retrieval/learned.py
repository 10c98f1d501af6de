"""A learned ranking stage: gradient-boosted trees over the candidate features, scored with numpy.

The model is a JSON file of regression trees (exported from LightGBM's boosted trees by
``zeromem bench train-ranker``); scoring needs numpy only, so the core install stays free of
LightGBM and scikit-learn. A tree is stored as parallel node arrays: ``feature`` (-1 at a
leaf), ``threshold`` (go left when the value is ≤ it), ``left``, ``right`` and ``value`` (a
leaf's output). All trees are walked at once, one depth level per step. An optional ``linear``
map (feature → weight) is the score the trees start from (the trainer's initial score).

The shipped model is checked against :data:`SHIPPED_SHA256` when it is loaded: a file that
does not match is an error, never a silently different ranking.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

FORMAT = "zeromem-ranker/1"
SHIPPED = "ranker.json"
SHIPPED_SHA256 = ""


@dataclass(frozen=True, slots=True)
class TreeModel:
    """Trees padded to one width: row t holds tree t's nodes."""

    features: tuple[str, ...]
    feature: np.ndarray  # (trees, nodes) int64, -1 at a leaf
    threshold: np.ndarray  # (trees, nodes) float64
    left: np.ndarray  # (trees, nodes) int64
    right: np.ndarray  # (trees, nodes) int64
    value: np.ndarray  # (trees, nodes) float64
    depth: int
    linear: np.ndarray  # (features,) a linear term added to the trees' sum (the start they refine)

    def score(self, matrix: np.ndarray) -> np.ndarray:
        """One score per row of ``matrix`` (columns in ``features`` order)."""
        matrix = np.asarray(matrix, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[1] != len(self.features):
            raise ValueError(f"expected a (n, {len(self.features)}) feature matrix, got {matrix.shape}")
        n, trees = matrix.shape[0], self.feature.shape[0]
        start: np.ndarray = matrix @ self.linear
        if n == 0 or trees == 0:
            return start
        rows = np.arange(trees)[:, None]
        cols = np.arange(n)[None, :]
        node = np.zeros((trees, n), dtype=np.int64)
        for _ in range(self.depth):
            feature = self.feature[rows, node]
            inner = feature >= 0
            value = matrix[cols, np.maximum(feature, 0)]
            step = np.where(value <= self.threshold[rows, node], self.left[rows, node], self.right[rows, node])
            node = np.where(inner, step, node)
        total: np.ndarray = start + self.value[rows, node].sum(axis=0)
        return total


def from_document(document: dict) -> TreeModel:
    """A model from its JSON document (see the module docstring)."""
    if document.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} model (format {document.get('format')!r})")
    trees = document["trees"]
    width = max((len(t["feature"]) for t in trees), default=1)

    def padded(key: str, dtype: type, fill: float) -> np.ndarray:
        out: np.ndarray = np.full((len(trees), width), fill, dtype=dtype)
        for i, tree in enumerate(trees):
            out[i, :len(tree[key])] = tree[key]
        return out

    feature = padded("feature", np.int64, -1)
    names = tuple(document["features"])
    weights = document.get("linear") or {}
    unknown = set(weights) - set(names)
    if unknown:
        raise ValueError(f"linear weights for unknown features {sorted(unknown)}")
    linear = np.array([float(weights.get(name, 0.0)) for name in names])
    return TreeModel(names, feature, padded("threshold", np.float64, 0.0),
                     padded("left", np.int64, 0), padded("right", np.int64, 0),
                     padded("value", np.float64, 0.0), int(document.get("depth", width)), linear)


def load(path: str | Path, sha256: str | None = None) -> TreeModel:
    """The model in ``path``; with ``sha256``, a file of other content raises ``ValueError``."""
    data = Path(path).read_bytes()
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"{path}: sha256 {hashlib.sha256(data).hexdigest()} is not the expected {sha256}")
    return from_document(json.loads(data))


@cache
def shipped() -> TreeModel:
    """The model shipped in the package (checked against ``SHIPPED_SHA256``)."""
    path = Path(str(resources.files(__package__).joinpath(SHIPPED)))
    if not path.is_file() or not SHIPPED_SHA256:
        raise FileNotFoundError(
            f"no learned ranker is shipped ({path}): RetrievalConfig.learned_ranker needs one; "
            "`zeromem bench train-ranker` writes it (docs/decisions.md#d-041)")
    return load(path, SHIPPED_SHA256)
