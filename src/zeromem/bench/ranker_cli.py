"""``zeromem bench ranker-data | ranker-eval | train-ranker``: the learned ranker's commands.

    zeromem bench ranker-data --data $DATA --cache /tmp/ranker-cache
    zeromem bench ranker-eval --data $DATA --cache /tmp/ranker-cache --json out/ranker.json
    zeromem bench train-ranker --data $DATA --cache /tmp/ranker-cache

Pools are exported once per benchmark into the cache (ranker_data.py); ``train-ranker`` trains
on all four and writes the model file with its sha256 (by default over the shipped one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .ranker_data import BENCHMARKS, Pools, export, load_or_export, pools_path

Data = Annotated[Path, typer.Option("--data", help="the shared data folder (locomo/, hotpotqa/, …)")]
Cache = Annotated[Path, typer.Option("--cache", help="where memories and exported pools are kept")]
Benchmarks = Annotated[str, typer.Option("--benchmarks", help="comma-separated: " + ", ".join(BENCHMARKS))]
ALL = ",".join(BENCHMARKS)
Progress = Annotated[bool, typer.Option("--progress/--no-progress", help="show a progress bar")]


def _names(benchmarks: str) -> list[str]:
    names = [b.strip() for b in benchmarks.split(",") if b.strip()]
    unknown = [b for b in names if b not in BENCHMARKS]
    if unknown or not names:
        typer.echo(f"error: unknown benchmark(s) {unknown}; known: {', '.join(BENCHMARKS)}", err=True)
        raise typer.Exit(2)
    return names


def data_command(data: Data, cache: Cache, benchmarks: Benchmarks = ALL,
                 fresh: Annotated[bool, typer.Option("--fresh", help="export again even if cached")] = False,
                 progress: Progress = True) -> None:
    """Export each benchmark's labelled candidate pools (features, gold labels, hand order)."""
    for name in _names(benchmarks):
        path = pools_path(cache, name)
        if fresh or not path.exists():
            export(name, data, cache, progress=progress).save(path)
        pools = Pools.load(path)
        typer.echo(f"{name}: {len(pools.qid)} questions, {len(pools.label)} candidates, "
                   f"{int(pools.label.sum())} gold → {path}")


def eval_command(data: Data, cache: Cache, benchmarks: Benchmarks = ALL,
                 json_out: Annotated[Path | None, typer.Option("--json", metavar="OUT.json")] = None,
                 progress: Progress = True) -> None:
    """Hand-tuned vs learned order of the same pools: 2-fold in each benchmark and
    leave-one-benchmark-out. Numbers on the shared data are dev numbers."""
    from .ranker_train import evaluate

    report = evaluate(load_or_export(_names(benchmarks), data, cache, progress=progress))
    _print(report)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps({"note": "dev numbers (shared dev data)", **report}, indent=2) + "\n")
        typer.echo(f"wrote {json_out}")


def train_command(data: Data, cache: Cache, benchmarks: Benchmarks = ALL,
                  out: Annotated[Path | None, typer.Option(
                      "--out", help="model file (default: the shipped one)")] = None,
                  progress: Progress = True) -> None:
    """Train on the benchmarks' pools and write the model file; prints its sha256 (the
    shipped file is used only when retrieval/learned.py's SHIPPED_SHA256 names it)."""
    from ..retrieval import learned
    from .ranker_train import concat, model_bytes, sha256, train

    names = _names(benchmarks)
    pools = load_or_export(names, data, cache, progress=progress)
    document = train(concat([pools[name] for name in names]))
    target = out or Path(str(learned.__file__)).with_name(learned.SHIPPED)
    content = model_bytes(document)
    target.write_bytes(content)
    typer.echo(f"wrote {target} ({len(content)} bytes) sha256 {sha256(content)}")


def _print(report: dict) -> None:
    typer.echo(f"{'benchmark':<12} {'metric':<18} {'hand':>6} {'2-fold':>7} {'LOBO':>6}   (dev numbers)")
    for benchmark, block in report.items():
        for metric, value in block["hand_tuned"].items():
            two = block["two_fold"].get(metric, float("nan"))
            lobo = block["leave_one_benchmark_out"].get(metric, float("nan"))
            typer.echo(f"{benchmark:<12} {metric:<18} {value:>6.1f} {two:>7.1f} {lobo:>6.1f}")
