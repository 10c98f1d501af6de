"""One BLAS thread for a block of work.

numpy's OpenBLAS spreads each product over every core. The products zeromem runs (a query's
arrays, k-means blocks, spaCy's layers) are small, and on a 2-core machine a second BLAS thread
spends more time waking than computing while the other core is busy with an embedder or another
request (measured ~100× slower on a busy machine for a query's arrays; twice the CPU for spaCy).
The limit is process-wide while the block runs (threadpoolctl sets the library's thread count).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["one_blas_thread"]

_controller: Any = None  # scanning the loaded libraries is slow: once per process, when first needed
_controller_lock = threading.Lock()


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS limited to one thread while the block runs."""
    global _controller
    with _controller_lock:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        controller = _controller
    with controller.limit(limits=1, user_api="blas"):
        yield
