"""spaCy's dense layers on numpy's BLAS, one thread.

thinc's ``NumpyOps`` multiplies matrices with blis by default. The layers of the small English
pipeline (its two tok2vec CNNs: (tokens × 288) · (288 × 288) maxout products) take ~47 % of
the pipeline's time in batches, and on the CPUs measured here numpy's OpenBLAS does them in
about half blis' time: LoCoMo turns in batches of 64, 5.5 → 3.6 CPU-ms a turn, every entity
span and tag of 1 200 turns equal (docs/decisions/0049-spacy-blas.md). thinc supports this switch itself
(``NumpyOps(use_blis=False)`` delegates ``gemm`` to ``numpy.dot``); the parser's own C loop
keeps its blis routines (``ops.cblas()``).

OpenBLAS would spread each product over every core: on a 2-core machine that doubled the CPU
for a 10 % shorter wall time while the embedder needs the other core, so the pipeline runs
under ``zeromem.blas.one_blas_thread`` (as the retrieval engine's search).
"""

from __future__ import annotations

from typing import Any

__all__ = ["gemm_through_numpy"]


def gemm_through_numpy(nlp: Any) -> int:
    """Make every thinc layer of ``nlp`` that runs on blis-backed ``NumpyOps`` use numpy's
    ``dot`` instead; returns how many layers moved (0 when thinc is not the one expected)."""
    try:
        from thinc.api import NumpyOps
    except ImportError:  # pragma: no cover - spaCy always brings thinc
        return 0
    ops = NumpyOps(use_blis=False)
    moved = 0
    for _, component in nlp.pipeline:
        model = getattr(component, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for node in model.walk():
            if type(node.ops) is NumpyOps and getattr(node.ops, "use_blis", False):
                node.ops = ops
                moved += 1
    return moved
