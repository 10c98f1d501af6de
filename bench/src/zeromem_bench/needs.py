"""What the lab needs beyond zeromem's core install, and the one message when some is missing.

The lab's dependencies are bench/pyproject.toml's; an install that skipped them (``pip install
--no-deps``) fails here, before a command starts, with ``error: ...`` naming the modules and
the command that installs them, never with an ImportError from deep inside a benchmark.
Checking costs a ``find_spec`` per module: nothing is imported.
"""

from __future__ import annotations

import importlib.util

# Tables (rich), plots (matplotlib), `bench fuzz` (hypothesis), the load tests' client (httpx),
# the dense baselines' HNSW (usearch), and the served surfaces `bench serve` and `bench startup`
# drive (fastapi, uvicorn, mcp).
MODULES: tuple[str, ...] = ("rich", "matplotlib", "hypothesis", "httpx", "usearch", "fastapi", "uvicorn", "mcp")
INSTALL = "pip install -e ./bench (in a zeromem checkout; `make bench` does it into .venv)"


def missing_modules() -> list[str]:
    """The modules of ``MODULES`` that cannot be imported here (empty when all are installed)."""
    return [name for name in MODULES if not _findable(name)]


def _findable(name: str) -> bool:
    try:  # a dotted name imports its parent package first, which may itself be missing
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def missing_message(command: str, modules: list[str]) -> str:
    """``command`` cannot run without ``modules``: what to install."""
    return f"`{command}` needs {', '.join(modules)}, which the lab declares but is not installed: {INSTALL}"
