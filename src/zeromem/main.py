"""The ``zeromem`` program: the memory commands (``interfaces/cli.py``) plus ``zeromem bench``.

The only module that sees both: the benchmark harness drives the command line and the server
(``bench fuzz``, ``bench serve``), so the command line cannot import the harness to offer its
commands; they join here, above both. ``python -m zeromem`` and the ``zeromem`` console script
run :func:`main`.
"""

from __future__ import annotations

from .bench.cli import bench_app
from .interfaces.cli import app

__all__ = ["app", "main"]

app.add_typer(bench_app, name="bench")


def main() -> None:
    """Console entry point (``zeromem``)."""
    app()
