"""``zeromem bench fuzz``: generated inputs on every input surface, checked for two properties.

    zeromem bench fuzz --cases 10000 --json out/fuzz.json
    zeromem bench fuzz --surfaces api,rest --cases 500 --seed 7

Surfaces (bench/fuzz_surfaces.py; strategies in bench/fuzz_strategies.py): ``api`` (every
public ``Memory`` method and its constructor; a fifth of the cases are two or three calls in a
row), ``importers`` (LoCoMo / OpenAI-chat / JSONL files, generated and mutated, through
``load_file`` + ``summarize`` and ``Memory.import_file``), ``cli`` (argument lists through the
typer app in-process) and ``rest`` (requests through FastAPI's TestClient with real API keys);
opt-in, ``snapshots`` (bench/fuzz_snapshots.py: damaged and forged persisted indexes, searched
in a child process so that a crash is counted, judged against an index rebuilt from the traces)
and ``names`` (bench/fuzz_names.py: invisible, default-ignorable and non-NFKC user, agent and
session names and invisible-only texts through the library, the CLI, REST and MCP: each refused).
Each case runs against a small seeded store (a few traces in two scopes, an edited and a
deleted trace, one with terminal escapes) with the real models, and passes when

* the call succeeds, or fails the documented way: one of zeromem's errors (``zeromem.errors``)
  / exit code 2 with one ``error: ...`` line and no traceback (or click's own usage error) /
  a 4xx answer with a ``{"error": {"type", "message"}}`` body — anything else (another
  exception, a traceback, a 5xx, another exit code) is a failure;
* after a rejected input, and after any read, every table of the store is exactly as before
  (``snapshot``; a first search may record its scope's embedder fingerprint, by design), and
  a refused command creates no store file;
* plus cheap postconditions of accepted calls: an added or imported trace reads back verbatim,
  importing a file twice stores it once, update accepts no metadata that add refuses, a
  search returns at most k items, a rendered context stays within its budget, searches are
  not degraded, CLI output holds no raw terminal control characters and ``--json`` prints JSON.

Every case starts from the same store (it is copied back from a template after any case that
changed it), so cases are independent and Hypothesis can shrink a failure to a minimal example.
Runs are reproducible: a fixed seed (``--seed``), no example database. Exit code 1 on any
failure, with the minimal failing example printed (``--keep-going``: every failure counted,
one unshrunk example per kind).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from . import fuzz_names, fuzz_snapshots, fuzz_surfaces
from .fuzz_strategies import short
from .fuzz_surfaces import Failure, StoreFixture, Surface, snapshot, unexpected

__all__ = ["Failure", "StoreFixture", "Surface", "failed", "print_table", "run", "run_surface",
           "snapshot"]

SURFACES = ("api", "importers", "cli", "rest")  # the default run (the CLI's --surfaces default)
OPT_IN_SURFACES = ("snapshots", "names")  # run only when --surfaces names them
DEFAULT_CASES = 10_000
MAX_EXAMPLES_SHOWN = 20  # distinct failures (kind and source line) kept per surface
PROGRESS_EVERY = 1000  # cases between two progress lines (stderr)


# -- running a surface ----------------------------------------------------------------------
@dataclass
class SurfaceReport:
    name: str
    cases: int = 0
    accepted: int = 0
    rejected: int = 0
    failures: int = 0
    seconds: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)  # e.g. "rejected:InvalidInput"
    examples: list[dict[str, str]] = field(default_factory=list)  # failures: kind, case, detail
    failure_kinds: dict[str, int] = field(default_factory=dict)  # kind (and source line) → count

    def as_dict(self) -> dict[str, Any]:
        return {"cases": self.cases, "accepted": self.accepted, "rejected": self.rejected,
                "failures": self.failures, "seconds": round(self.seconds, 2),
                "outcomes": dict(sorted(self.outcomes.items())), "failure_kinds": self.failure_kinds,
                "failure_examples": self.examples}


def run_surface(surface: Surface, cases: int, seed: int, *, keep_going: bool = False,
                progress: Callable[[int], None] | None = None) -> SurfaceReport:
    """Run ``cases`` generated cases on an opened ``surface``.

    By default the first failure stops the surface and Hypothesis shrinks it: the report holds
    the minimal failing example. ``keep_going`` records every failure (unshrunk, one example
    per kind) and runs all the cases.
    """
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis.errors import HypothesisException

    report = SurfaceReport(surface.name)
    state: dict[str, Any] = {"failing": False, "last": None}
    kinds = report.failure_kinds

    def record(failure: Failure, case: Any) -> None:
        report.failures += 1
        kinds[failure.signature] = kinds.get(failure.signature, 0) + 1
        if kinds[failure.signature] == 1 and len(report.examples) < MAX_EXAMPLES_SHOWN:
            report.examples.append({"kind": failure.signature, "case": short(case, 2000),
                                    "detail": failure.detail[-4000:]})

    @settings(max_examples=cases, database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
              phases=[Phase.generate] if keep_going else [Phase.generate, Phase.shrink],
              report_multiple_bugs=False, print_blob=False)
    @hypothesis_seed(seed)
    @given(surface.strategy())
    def one(case: Any) -> None:
        state["last"] = case
        try:
            outcome, label = surface.check(case)
        except Exception as exc:  # noqa: BLE001 - a Failure, or a bug of the harness itself (reported alike)
            failure = exc if isinstance(exc, Failure) else unexpected(exc)
            if keep_going:
                record(failure, case)
                report.cases += 1
                return
            if not state["failing"]:
                report.cases += 1
            state["failing"] = True
            raise failure from None
        if state["failing"]:
            return  # Hypothesis is shrinking: only the failure's own cases count
        report.cases += 1
        setattr(report, outcome, getattr(report, outcome) + 1)
        report.outcomes[label] = report.outcomes.get(label, 0) + 1
        if progress is not None:
            progress(report.cases)

    started = time.perf_counter()
    try:
        one()
    except Failure as failure:  # the minimal example: the last case Hypothesis ran
        record(failure, state["last"])
    except (HypothesisException, ExceptionGroup) as exc:  # e.g. a failure that did not replay
        record(unexpected(exc), state["last"])
    report.seconds = time.perf_counter() - started
    return report


def make_surface(name: str) -> Surface:
    return {"api": fuzz_surfaces.ApiSurface, "importers": fuzz_surfaces.ImporterSurface,
            "cli": fuzz_surfaces.CliSurface, "rest": fuzz_surfaces.RestSurface,
            "snapshots": fuzz_snapshots.SnapshotSurface, "names": fuzz_names.NamesSurface}[name]()


def parse_surfaces(text: str) -> list[str]:
    from zeromem.errors import InvalidInput

    names = [part.strip() for part in text.split(",") if part.strip()]
    known = SURFACES + OPT_IN_SURFACES
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise InvalidInput(f"--surfaces takes a comma-separated list of {', '.join(known)}, "
                           f"got {text!r}")
    return list(dict.fromkeys(names))


def run(surfaces: Sequence[str], cases: int, *, seed: int = 0, keep_going: bool = False,
        json_out: Path | None = None, console: Console | None = None,
        folder: Path | None = None) -> dict[str, Any]:
    """Fuzz every surface in ``surfaces`` with ``cases`` cases each; returns the document
    (written to ``json_out`` when given) and prints the table."""
    console = console or Console(width=None if sys.stdout.isatty() else 120, stderr=False)
    progress_console = Console(stderr=True)
    reports = []
    with tempfile.TemporaryDirectory(prefix="zeromem-fuzz-") as tmp:
        for name in surfaces:
            surface = make_surface(name)
            where = Path(folder or tmp) / name
            where.mkdir(parents=True, exist_ok=True)
            opened = time.perf_counter()
            surface.open(where, seed)
            setup = time.perf_counter() - opened
            started = time.perf_counter()

            def tick(done: int, name: str = name, started: float = started) -> None:
                if done % PROGRESS_EVERY == 0 and done < cases:
                    progress_console.print(f"fuzz {name}: {done}/{cases} cases, "
                                           f"{time.perf_counter() - started:.0f} s", highlight=False)

            try:
                report = run_surface(surface, cases, seed, keep_going=keep_going, progress=tick)
            finally:
                surface.close()
            report.outcomes["setup_seconds"] = round(setup)
            reports.append(report)
            console.print(f"fuzz {name}: {report.cases} cases, {report.failures} failure(s), "
                          f"{report.seconds:.1f} s", highlight=False)
    document = {
        "benchmark": "fuzz", "seed": seed, "cases_per_surface": cases, "keep_going": keep_going,
        "argv": sys.argv, "surfaces": {r.name: r.as_dict() for r in reports},
        "failures": sum(r.failures for r in reports),
        "complete": all(r.cases >= cases for r in reports) and not any(r.failures for r in reports),
    }
    print_table(document, console)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return document


def print_table(document: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console(width=None if sys.stdout.isatty() else 120)
    table = Table(title=f"bench fuzz: {document['cases_per_surface']} cases per surface, "
                        f"seed {document['seed']}")
    for column in ("surface", "cases", "accepted", "rejected", "failures", "seconds"):
        table.add_column(column, justify="left" if column == "surface" else "right")
    for name, row in document["surfaces"].items():
        table.add_row(name, str(row["cases"]), str(row["accepted"]), str(row["rejected"]),
                      str(row["failures"]), f"{row['seconds']:.1f}")
    console.print(table)
    for name, row in document["surfaces"].items():
        for example in row["failure_examples"]:
            console.print(f"[bold red]{name}: {example['kind']}[/]", highlight=False)
            console.print(f"minimal failing example: {example['case']}", markup=False, highlight=False)
            console.print(example["detail"], markup=False, highlight=False)


def failed(document: dict[str, Any]) -> bool:
    return bool(document["failures"])
