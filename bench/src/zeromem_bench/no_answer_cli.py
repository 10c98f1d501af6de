"""``zeromem bench fit-no-answer``: refit the no-answer model and measure it out of sample.

    zeromem bench fit-no-answer --data $DATA --cache /tmp/no-answer --json out/no-answer.json

Rows are collected once per benchmark into the cache (no_answer_fit.py; the memories are kept
there too), so refitting after a change to the fit alone costs seconds. A ranking change moves
the inputs: collect again with ``--fresh``. The command prints the constants for
retrieval/calibrate.py and whether the shipped ones are this fit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from .no_answer_fit import L2, QUESTIONS, Rows, collect, evaluate

Data = Annotated[Path, typer.Option("--data", help="the shared data folder (locomo/, longmemeval/, …)")]
Cache = Annotated[Path, typer.Option("--cache", help="where memories and collected rows are kept")]


def fit_command(data: Data, cache: Cache,
                benchmarks: Annotated[str, typer.Option(
                    "--benchmarks", help="comma-separated: " + ", ".join(QUESTIONS))] = ",".join(QUESTIONS),
                l2: Annotated[float, typer.Option("--l2", min=0.0, help="L2 penalty on the weights")] = L2,
                fresh: Annotated[bool, typer.Option("--fresh", help="search again even if rows are cached")] = False,
                json_out: Annotated[Path | None, typer.Option("--json", metavar="OUT.json")] = None,
                progress: Annotated[bool, typer.Option("--progress/--no-progress")] = True) -> None:
    """Fit the no-answer model on the benchmarks' dev questions; AUROC left out by memory
    group and by benchmark, against the shipped constants. Numbers are dev numbers."""
    names = [b.strip() for b in benchmarks.split(",") if b.strip()]
    unknown = [b for b in names if b not in QUESTIONS]
    if unknown or not names:
        typer.echo(f"error: unknown benchmark(s) {unknown}; known: {', '.join(QUESTIONS)}", err=True)
        raise typer.Exit(2)
    parts = []
    for name in names:
        path = cache / f"no-answer-{name}.npz"
        if fresh or not path.exists():
            collect(name, data, cache, progress=progress).save(path)
        parts.append(Rows.load(path))
    report = evaluate(Rows.concat(parts), l2)
    _print(report)
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps({"note": "dev numbers (shared dev data)", **report}, indent=2) + "\n")
        typer.echo(f"wrote {json_out}")


def _print(report: dict[str, Any]) -> None:
    def cell(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f}"

    typer.echo(f"no-answer AUROC (dev numbers; unanswerable questions as positives), L2 {report['l2']}")
    typer.echo(f"{'benchmark / group':<24} {'rows':>5} {'pos':>4} {'shipped':>8} {'left out':>9} {'LOBO':>6}")
    for benchmark, block in report["auroc"].items():
        rows = report["rows"][benchmark]
        typer.echo(f"{benchmark:<24} {rows['questions']:>5} {rows['unanswerable']:>4} {cell(block['shipped']):>8} "
                   f"{cell(block['leave_one_group_out']):>9} {cell(block.get('leave_one_benchmark_out')):>6}")
        for group, values in block["groups"].items():
            typer.echo(f"  {group:<22} {'':>5} {'':>4} {cell(values['shipped']):>8} {cell(values['left_out']):>9}")
    typer.echo("fitted on every row (retrieval/calibrate.py):")
    for name, value in report["model"].items():
        typer.echo(f"  {name} = {value}")
    at = report["at_threshold"]
    typer.echo(f"  at the threshold: {at['flagged']} flagged, precision {at['precision']} %, recall {at['recall']} %")
    typer.echo("the shipped constants are this fit" if report["reproduces_shipped"]
               else "the shipped constants differ from this fit")
