"""A dataclass of numpy arrays kept as one ``.npz`` file, with the column names it was written with."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


def save_arrays(rows: Any, path: Path, names: tuple[str, ...]) -> None:
    """Write every field of the dataclass ``rows`` and ``names`` (what its columns mean) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, names=np.array(names),
                        **{f.name: getattr(rows, f.name) for f in dataclasses.fields(rows)})


def load_arrays(cls: type[T], path: Path, names: tuple[str, ...], stale: str) -> T:
    """The dataclass ``cls`` read from ``path``; ``ValueError`` with ``stale`` (what to do) when
    the file was written with other column ``names``."""
    with np.load(path, allow_pickle=False) as data:
        if tuple(data["names"].tolist()) != names:
            raise ValueError(f"{path}: {stale}")
        return cls(*(data[f.name] for f in dataclasses.fields(cls)))  # type: ignore[arg-type]
