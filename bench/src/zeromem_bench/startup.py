"""``zeromem bench startup``: what the first moments cost, and what the install weighs.

Each measurement starts a new Python process, as a user, a CLI call or an MCP host does:

* ``import zeromem`` and ``zeromem --help``: CPU seconds of the whole process (user + system,
  from the kernel's accounting of the finished child) and wall seconds.
* ``zeromem mcp``: spawned and driven through the ``mcp`` SDK's stdio client, as an MCP host
  drives it. ``initialize`` is timed from the spawn to the answer; then the first ``recall`` on
  the shipped example (stored beforehand, not timed). The server's CPU seconds are read from
  ``/proc/<pid>/stat`` at each answer (Linux; None elsewhere).
* the first search on a new store: a process opens a new store, adds one trace, searches
  once (models load then); the search call and the whole process are timed.
* installed size: the core (zeromem and its dependency closure) and what each extra adds on
  top, summed from the installed files of each distribution (``importlib.metadata``). An
  extra whose distributions are not all installed (or that the installed zeromem does not
  declare) is reported as not installed.

Every process measurement is the median of ``repeat`` runs. CPU seconds are the number to
compare across machines: wall time on a shared machine depends on its other load.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zeromem.interfaces.extras import EXTRAS

# the question of the shipped example that the first recall asks
QUESTION = "Where did Priya live before she moved to Denver?"
USER = "startup"
TIMEOUT_S = 300.0
_SEARCH_SCRIPT = """
import json, resource, sys, time
from zeromem import Memory
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
with Memory(sys.argv[1], user="startup") as mem:
    mem.add("I moved to Denver in May and started a new job at the hospital.", session="s1")
    c0, t0 = cpu(), time.perf_counter()
    mem.search("Where did I move?", k=5)
    print(json.dumps({"search_cpu_s": cpu() - c0, "search_wall_s": time.perf_counter() - t0}))
"""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_process(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(CPU s, wall s, stdout) of one finished child process."""
    cpu0, wall0 = _children_cpu(), time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    wall, cpu = time.perf_counter() - wall0, _children_cpu() - cpu0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])} … failed ({done.returncode}): {done.stderr[-800:]}")
    return cpu, wall, done.stdout


def _median(rows: list[dict[str, float | None]]) -> dict[str, float | None]:
    keys = rows[0].keys()
    out: dict[str, float | None] = {}
    for key in keys:
        values = [value for row in rows if (value := row[key]) is not None]
        out[key] = round(statistics.median(values), 3) if values else None
    return out


def _process(args: list[str], env: dict[str, str], repeat: int) -> dict[str, float | None]:
    rows: list[dict[str, float | None]] = []
    for _ in range(repeat):
        cpu, wall, _out = _run_process(args, env)
        rows.append({"cpu_s": cpu, "wall_s": wall})
    return _median(rows)


def _first_search(env: dict[str, str], repeat: int) -> dict[str, float | None]:
    rows: list[dict[str, float | None]] = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as folder:
            cpu, wall, out = _run_process([sys.executable, "-c", _SEARCH_SCRIPT, str(Path(folder) / "new.db")], env)
        inner = json.loads(out.strip().splitlines()[-1])
        rows.append({"process_cpu_s": cpu, "process_wall_s": wall, **inner})
    return _median(rows)


def _proc_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) of a running process, from /proc (Linux only)."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_pid(marker: str) -> int | None:
    """The pid of this process's child whose command line holds ``marker``."""
    mine = os.getpid()
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == mine and marker in command:
            return int(entry.name)
    return None


async def _mcp_once(db: Path, env: dict[str, str]) -> dict[str, float | None]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    marker = str(db)
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "zeromem", "mcp", "--db", marker, "--user", USER], env=env)
    start = time.perf_counter()
    async with Client(params, read_timeout_seconds=TIMEOUT_S, cache=None) as client:
        initialized = time.perf_counter() - start
        pid = _server_pid(marker)
        init_cpu = _proc_cpu(pid)
        result = await client.call_tool("recall", {"query": QUESTION, "k": 5})
        recalled = time.perf_counter() - start
        recall_cpu = _proc_cpu(pid)
        if result.is_error:
            raise RuntimeError(f"recall failed: {result.content}")
    return {"initialize_wall_s": initialized, "initialize_cpu_s": init_cpu,
            "first_recall_wall_s": recalled, "first_recall_cpu_s": recall_cpu}


def _mcp(env: dict[str, str], example: Path, repeat: int) -> dict[str, float | None]:
    from zeromem.memory import Memory

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "example.db"
        with Memory(db, user=USER) as mem:  # stored (and indexed) beforehand: not timed
            mem.import_file(example, user=USER)
        return _median([asyncio.run(_mcp_once(db, env)) for _ in range(repeat)])


def _normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _dist_size_mb(dist: Any) -> float:
    total = 0
    for file in dist.files or ():
        path = Path(str(dist.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    if _normalize(dist.metadata["Name"]) == "zeromem":  # an editable install lists no sources
        import zeromem

        package = Path(zeromem.__file__).parent
        recorded = any(str(f).startswith("zeromem/") for f in dist.files or ())
        if not recorded:
            total += sum(p.stat().st_size for p in package.rglob("*") if p.is_file()
                         and "__pycache__" not in p.parts)
    return total / 1e6


def installed_sizes() -> dict[str, Any]:
    """MB on disk of the core install and of what each extra adds (None: not installed)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    dists: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():  # the first on sys.path wins, as for an import
        dists.setdefault(_normalize(dist.metadata["Name"]), dist)

    def closure(extras: frozenset[str]) -> tuple[set[str], set[str]]:
        """The distributions ``zeromem[extras]`` installs, following extras all the way
        (``uvicorn[standard]``, ``zeromem[server,mcp]`` inside ``[bench]``)."""
        seen: set[tuple[str, frozenset[str]]] = set()
        names, missing = set(), set()
        todo = [("zeromem", extras)]
        while todo:
            name, wanted_extras = todo.pop()
            name = _normalize(name)
            if (name, wanted_extras) in seen:
                continue
            seen.add((name, wanted_extras))
            dist = dists.get(name)
            if dist is None:
                missing.add(name)
                continue
            names.add(name)
            for text in dist.requires or ():
                req = Requirement(text)
                if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in {"", *wanted_extras}):
                    todo.append((req.name, frozenset(req.extras)))
        return names, missing

    core, core_missing = closure(frozenset())
    out: dict[str, Any] = {"core_mb": round(sum(_dist_size_mb(dists[n]) for n in core), 1),
                           "core_distributions": len(core), "core_missing": sorted(core_missing)}
    declared = set(dists["zeromem"].metadata.get_all("Provides-Extra") or ())
    for extra in (*EXTRAS, "all"):
        names, missing = closure(frozenset({extra}))
        added = names - core
        known = extra in declared and not missing
        out[f"{extra}_mb"] = round(sum(_dist_size_mb(dists[n]) for n in added), 1) if known else None
    return out


def run(example: Path, *, repeat: int = 3, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every measurement, as one JSON-ready document."""
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    say = progress or (lambda _message: None)
    say("import zeromem")
    imported = _process([sys.executable, "-c", "import zeromem"], env, repeat)
    say("zeromem --help")
    helped = _process([sys.executable, "-m", "zeromem", "--help"], env, repeat)
    say("zeromem mcp: initialize, first recall")
    mcp = _mcp(env, example, repeat)
    say("first search on a new store")
    search = _first_search(env, repeat)
    say("installed sizes")
    from .report import git_commit, machine, versions

    return {"benchmark": "startup", "repeat": repeat, "example": str(example), "question": QUESTION,
            "import_zeromem": imported, "cli_help": helped, "mcp": mcp, "first_search_new_store": search,
            "installed": installed_sizes(), "machine": machine(), "versions": versions(),
            "git": git_commit()}


def print_table(document: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"zeromem bench startup (median of {document['repeat']} new processes)")
    for column in ("", "CPU s", "wall s"):
        table.add_column(column, justify="right")
    mcp, search = document["mcp"], document["first_search_new_store"]
    rows = [("import zeromem", document["import_zeromem"]["cpu_s"], document["import_zeromem"]["wall_s"]),
            ("zeromem --help", document["cli_help"]["cpu_s"], document["cli_help"]["wall_s"]),
            ("zeromem mcp: initialize", mcp["initialize_cpu_s"], mcp["initialize_wall_s"]),
            ("zeromem mcp: first recall (example)", mcp["first_recall_cpu_s"], mcp["first_recall_wall_s"]),
            ("new store: first search", search["search_cpu_s"], search["search_wall_s"]),
            ("new store: whole process", search["process_cpu_s"], search["process_wall_s"])]
    for name, cpu, wall in rows:
        table.add_row(name, "n/a" if cpu is None else f"{cpu:.2f}", "n/a" if wall is None else f"{wall:.2f}")
    console.print(table)
    sizes = Table(title="installed MB (an extra: + core)")
    sizes.add_column("")
    sizes.add_column("MB", justify="right")
    installed = document["installed"]
    for key, value in installed.items():
        if key.endswith("_mb"):
            sizes.add_row(key[:-3], "not installed" if value is None else f"{value:.0f}")
    console.print(sizes)
