"""How many bytes of memory an in-memory index holds: the measure the index cache budgets by.

``deep_nbytes`` walks an object graph once and adds up what each object holds: numpy buffers by
their ``nbytes`` (a view counts its base buffer once), strings, containers and zeromem's own
objects by ``sys.getsizeof``, plus what an object reports from its ``native_nbytes()`` (memory
a native library holds for it, e.g. ONNX Runtime's packed blocks: indexes/packed_blocks.py).
Functions, modules, classes and locks are not followed: they are shared by the whole process,
not owned by the index. The walk is linear in the number of objects, so the cache measures a
scope when it is built and re-measures only after it grew (cache.py).
"""

from __future__ import annotations

import gc
import sys
import types
from typing import Any

import numpy as np

_NEVER = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
          types.CodeType, types.FrameType, types.GeneratorType)
_OWNED_PACKAGES = frozenset({"builtins", "zeromem", "numpy", "scipy", "collections", "datetime"})


# A list, tuple, dict or object array longer than SAMPLED_ABOVE is measured on SAMPLE evenly
# spaced items and scaled. Walking costs ~1 µs per object (pointer chasing): 256 / 128 measure a
# 400-700-turn scope in ~6-8 ms instead of 14-40, 1-3 % above the full walk (shared objects met
# in the sample are scaled up too), which errs on the side of the memory budget.
SAMPLED_ABOVE = 256
SAMPLE = 128


def deep_nbytes(root: Any) -> int:
    """Bytes held by ``root`` and everything it references (each object counted once).

    Breadth first, a whole level per ``gc.get_referents`` call: the per-object work stays in C
    except for one type check. The items of a container longer than ``SAMPLED_ABOVE`` (a
    scope's per-turn texts and rows, its vocabulary) are measured on an evenly spaced sample and
    scaled, so a scope of 100 000 turns is measured in tens of milliseconds, not seconds, and a
    cold open of a 500-turn scope spends ~6 ms here.
    """
    return _walk([root], set())


def _walk(level: list[Any], seen: set[int]) -> int:
    owned: dict[type, bool] = {}
    natives: dict[type, bool] = {}
    total = 0
    getsizeof = sys.getsizeof
    while level:
        batch = []
        extra = []
        for obj in level:
            key = id(obj)
            if key in seen:
                continue
            cls = type(obj)
            keep = owned.get(cls)
            if keep is None:
                keep = owned[cls] = _owned_class(cls)
            if not keep:
                continue
            seen.add(key)
            native = natives.get(cls)
            if native is None:
                native = natives[cls] = callable(getattr(cls, "native_nbytes", None))
            if native:
                total += int(obj.native_nbytes())
            if cls is np.ndarray:
                total += getsizeof(obj)
                if obj.base is not None:
                    extra.append(obj.base)  # a view: its buffer belongs to the base (counted once)
                if obj.dtype.hasobject:  # its items are not visible to the garbage collector
                    total += _sampled(obj.ravel().tolist(), seen)
                continue
            if cls in (list, tuple, dict) and len(obj) > SAMPLED_ABOVE:
                total += getsizeof(obj)
                items = [*obj.keys(), *obj.values()] if cls is dict else obj
                total += _sampled(items, seen)
                continue
            batch.append(obj)
        total += sum(map(getsizeof, batch))
        level = gc.get_referents(*batch) + extra
    return total


def _sampled(items: Any, seen: set[int]) -> int:
    """The deep size of ``items`` (a sequence), from an evenly spaced sample when it is long."""
    n = len(items)
    if n <= SAMPLED_ABOVE:
        return _walk(list(items), seen)
    step = n / SAMPLE
    return _walk([items[int(i * step)] for i in range(SAMPLE)], seen) * n // SAMPLE


def _owned_class(cls: type) -> bool:
    """Instances of builtin containers and values, zeromem's classes and numpy/scipy arrays are
    walked; code, types and anything else (a lock, a database connection, an encoder) is shared
    by the process, not part of an index."""
    if issubclass(cls, _NEVER):
        return False
    return (cls.__module__ or "").split(".")[0] in _OWNED_PACKAGES
