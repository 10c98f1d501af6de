"""Request lanes: a search that must first load a large scope runs beside the request threads.

A worker serves requests on a few threads (``zeromem serve --threads``). Loading the index of a
20 000-turn scope takes seconds; while two or three such loads hold those threads, every small
tenant's request waits behind them (measured with ``zeromem bench tenants --rate``: client p95
of seconds for searches whose own work took ~100 ms). So a search whose scope is not held in
memory and has at least ``LARGE_LOAD_TURNS`` traces is handed to the large-load lane: its own
thread(s) (``LARGE_LOAD_THREADS``), outside the request threads' limit, so those keep serving
everyone else and large loads wait for each other instead.

Deciding costs nothing for a scope held in memory and one indexed count the first time a
process meets a scope that is not (``ScopeIndexes.load_turns``). The decision is made in the
request thread that would otherwise run the search, so a small request makes one thread hop,
as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from starlette.requests import Request

from ..._internals import retriever_of
from ...types import Scope

T = TypeVar("T")

LARGE_LOAD_TURNS = 2_000  # a cold load from ~0.2 s of CPU up (a 20 000-turn scope: ~0.7 s)
LARGE_LOAD_THREADS = 1  # large loads at a time per worker, beside the request threads
_DEFERRED = object()


def _large_loads(request: Request) -> anyio.CapacityLimiter:
    """The app's large-load limiter, made on first use (inside the event loop, as anyio needs)."""
    state = request.app.state
    lane = getattr(state, "large_loads", None)
    if lane is None:
        lane = state.large_loads = anyio.CapacityLimiter(LARGE_LOAD_THREADS)
    return lane


def _load_turns(memory: Any, scope: Scope) -> int:
    scopes = getattr(retriever_of(memory), "scopes", None)
    return 0 if scopes is None else int(scopes.load_turns(scope))


async def run_search(request: Request, memory: Any, scope: Scope, work: Callable[[], T]) -> T:
    """``work()`` (a search or a context render in ``scope``) on a request thread, or in the
    large-load lane when it would first load a large scope."""
    def here_unless_large() -> Any:
        if _load_turns(memory, scope) >= LARGE_LOAD_TURNS:
            return _DEFERRED
        return work()

    done = await anyio.to_thread.run_sync(here_unless_large)
    if done is _DEFERRED:
        return await anyio.to_thread.run_sync(work, limiter=_large_loads(request))
    result: T = done
    return result
