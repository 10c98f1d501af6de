"""The optional parts of the install (pyproject.toml's extras) and what a command needs of them.

A command whose extra is missing fails before it starts, with ``error: ...`` naming the extra
and the command that installs it (exit code 2 through ``cli_common.friendly``), never with an
ImportError traceback from deep inside a module. Checking costs a ``find_spec`` per module:
nothing is imported.
"""

from __future__ import annotations

import importlib.util

from ..errors import ZeromemError

# extra → (the modules it provides, what it is for). The distributions are in pyproject.toml.
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "server": (("fastapi", "uvicorn", "multipart"), "the REST server and web inspector"),
    "mcp": (("mcp",), "the MCP server"),
    "postgres": (("psycopg", "psycopg_pool", "pgvector"), "the PostgreSQL store"),
    "reader": (("httpx",), "the OpenAI-compatible reader (Memory.answer, the agent loop)"),
    "ann": (("usearch",), "approximate nearest-neighbour search (DenseIndex.search at >= ann_threshold vectors)"),
    "torch": (("torch", "sentence_transformers"), "sentence-transformers models on torch"),
    "langgraph": (("langgraph",), "the LangGraph store (zeromem.integrations.langgraph)"),
    "agents": (("agents",), "the OpenAI Agents SDK session and recall tool (zeromem.integrations.openai_agents)"),
    "llamaindex": (("llama_index.core",), "the LlamaIndex memory block (zeromem.integrations.llamaindex)"),
    "otel": (("opentelemetry", "prometheus_client"), "OpenTelemetry spans and the server's /metrics"),
}


class MissingExtra(ZeromemError):
    """A command needs an extra that is not installed."""


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (empty when it is installed)."""
    modules, _ = EXTRAS[extra]
    return [name for name in modules if not _findable(name)]


def _findable(name: str) -> bool:
    try:  # a dotted name imports its parent package first, which may itself be missing
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def require(extra: str, command: str) -> None:
    """Raise MissingExtra unless every module of ``extra`` is installed."""
    missing = missing_modules(extra)
    if missing:
        purpose = EXTRAS[extra][1]
        raise MissingExtra(f"`{command}` needs the {extra} extra ({purpose}), which is not installed "
                           f"(missing: {', '.join(missing)}): pip install 'zeromem[{extra}]'")
