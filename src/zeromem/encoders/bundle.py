"""The set of encoders a memory uses, each loaded on first use (CRUD never loads a model)."""

from __future__ import annotations

from functools import cached_property

from ..config import EncoderConfig


class Encoders:
    def __init__(self, config: EncoderConfig) -> None:
        self.config = config

    @cached_property
    def embedder(self):
        from .factory import load_embedder
        return load_embedder(self.config)

    @cached_property
    def extractor(self):
        from .factory import load_extractor
        return load_extractor(self.config)

    @cached_property
    def fingerprint(self) -> dict:
        """Which embedder this is (model, dimension, backend, weights hash): stored vectors
        record it, and a store whose vectors came from another embedder is refused."""
        from .fingerprint import embedder_fingerprint
        return embedder_fingerprint(self.embedder, self.config)
