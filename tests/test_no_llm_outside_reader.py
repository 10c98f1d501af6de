"""Memory operations spend zero LLM calls: checked in the source and at run time.

Statically: no module of ``src/zeromem`` outside ``reader/`` imports an LLM client or an HTTP
client. The memory-operation layers (everything but the reader and its consumers) do not
import the reader at all — only the read-only counter (``usage``, ``LLMUsage``,
``assert_no_llm_calls``) may be used to *check* that nothing was spent. The consumers that sit
above memory — the command line / server (``interfaces/``) and the agent loop — may drive the
reader as the final answering step, and so may the lab (bench/, outside the package), which is
not scanned here.
At run time, ingest and search on a real memory leave the reader's call counter at zero and
open no network connection.
"""

from __future__ import annotations

import ast
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from import_statements import import_statements
from zeromem import Memory
from zeromem.reader import usage

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "zeromem"
# Modules that reach a language model, or carry the HTTP a client would use to reach one.
LLM_CLIENTS = ("openai", "anthropic", "litellm", "ollama", "cohere", "mistralai", "groq",
               "together", "google.generativeai", "google.genai", "vertexai",
               "transformers.pipelines", "httpx", "requests", "aiohttp", "urllib.request",
               "urllib3", "http.client")
READER = "zeromem.reader"
COUNTER_NAMES = ("usage", "LLMUsage", "assert_no_llm_calls")
# Packages above the memory layers that may call the reader after memory has answered.
CONSUMERS = ("interfaces", "agent.py")


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, root: Path = PACKAGE) -> list[tuple[int, str]]:
    """Every module an ``import`` statement of ``path`` names, relative imports resolved."""
    package = _module_name(path, root)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for line, module, names, node in import_statements(path, package):
        found.append((line, module))
        if isinstance(node, ast.ImportFrom):
            found += [(line, f"{module}.{name}") for name in names]
    return found


def _is_under(module: str, names: tuple[str, ...]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in names)


def _violation(module: str, top: str) -> bool:
    """Whether importing ``module`` from package ``top`` can reach an LLM."""
    if _is_under(module, LLM_CLIENTS):
        return True
    if top in CONSUMERS or not _is_under(module, (READER,)):
        return False
    if module in (READER, f"{READER}.base"):
        return False  # the package itself: what matters is the names taken from it (below)
    return module.rpartition(".")[2] not in COUNTER_NAMES


def test_no_module_outside_the_reader_imports_an_llm_client_or_the_reader():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        top = path.relative_to(PACKAGE).parts[0]
        if top == "reader":
            continue
        for line, module in _imported_modules(path):
            if _violation(module, top):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    assert not offenders, "memory operations must not reach an LLM:\n" + "\n".join(offenders)


def test_the_import_scanner_catches_relative_dynamic_and_reader_imports(tmp_path):
    fake = tmp_path / "zeromem" / "retrieval" / "sneaky.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("from ..reader import OpenAICompatReader\nimport importlib\n"
                    "importlib.import_module('openai')\nimport httpx as h\n"
                    "from ..reader.base import usage\nfrom ..reader import record_call\n")
    found = {m for _, m in _imported_modules(fake, tmp_path / "zeromem")
             if _violation(m, "retrieval")}
    assert {"zeromem.reader.OpenAICompatReader", "openai", "httpx",
            "zeromem.reader.record_call"} <= found
    assert "zeromem.reader.base.usage" not in found
    assert not _violation("zeromem.reader.OpenAICompatReader", "interfaces")
    assert _violation("httpx", "interfaces")


def test_importing_the_memory_layers_does_not_load_the_reader_or_a_client():
    code = ("import sys, zeromem, zeromem.memory\n"
            "import pkgutil, importlib\n"
            "for sub in ('retrieval', 'views', 'indexes', 'encoders', 'lifecycle', 'store'):\n"
            "    try:\n"
            "        pkg = importlib.import_module('zeromem.' + sub)\n"
            "    except ImportError:\n"
            "        continue\n"
            "    for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + '.'):\n"
            "        try:\n"
            "            importlib.import_module(info.name)\n"
            "        except ImportError:\n"
            "            pass  # an optional backend whose package is absent\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            f"{['openai', 'anthropic', 'litellm', 'httpx', 'requests']!r}"
            " or m.startswith('zeromem.reader')]\n"
            "print(','.join(sorted(bad)))\n")
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", f"memory layers loaded: {done.stdout.strip()}"


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(Memory, "search"), reason="Memory.search is not built yet")
def test_ingest_and_search_spend_zero_llm_calls_and_open_no_connection(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"a memory operation opened a network connection to {args[1:]}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    before = usage()
    with Memory(tmp_path / "m.db", user="u") as mem:
        mem.add_many([
            {"text": "I moved to Denver last week.", "speaker": "Ana", "session": "s1",
             "session_time": "2023-05-08T10:00:00", "seq": 0, "source_id": "D1:1"},
            {"text": "Nice! I adopted a cat named Miso.", "speaker": "Ben", "session": "s1",
             "session_time": "2023-05-08T10:00:00", "seq": 1, "source_id": "D1:2"},
        ])
        if hasattr(mem, "index"):
            mem.index()
        evidence = mem.search("Where does Ana live?", k=2)
        if hasattr(mem, "render_context"):
            mem.render_context("What is the cat called?", k=2)
    assert evidence
    spent = usage() - before
    assert (spent.calls, spent.tokens) == (0, 0)
