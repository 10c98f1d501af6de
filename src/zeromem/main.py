"""The ``zeromem`` program: the memory commands (``interfaces/cli.py``) plus the command groups
other installed distributions offer through the ``zeromem.cli`` entry points.

The benchmark lab (the ``zeromem-bench`` distribution, bench/ in the repository) adds
``zeromem bench`` this way: the lab drives the product, so the product never imports it, and
without it ``zeromem bench`` says how to install it instead of failing on an import.
``python -m zeromem`` and the ``zeromem`` console script run :func:`main`.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

import typer

from .interfaces.cli import app
from .interfaces.cli_common import fail

__all__ = ["ENTRY_POINTS", "LAB_INSTALL", "app", "main", "plug_in"]

ENTRY_POINTS = "zeromem.cli"  # name = a typer.Typer, added as `zeromem <name> …`
LAB = "bench"
LAB_INSTALL = ("`zeromem bench` is the benchmark lab, the zeromem-bench distribution in the zeromem "
               "repository's bench/ folder, which is not installed here: pip install -e ./bench "
               "(in a checkout; `make bench` does it)")


def plug_in(target: typer.Typer, plugins: Iterable[EntryPoint]) -> None:
    """Add each plugin's command group to ``target`` under its entry point's name; a plugin
    that cannot be imported, and the lab when it is absent, become a command that says why."""
    added: set[str] = set()
    for plugin in plugins:
        if plugin.name in added:  # the same distribution seen twice on sys.path: the first wins
            continue
        added.add(plugin.name)
        try:
            group = plugin.load()
        except ImportError as exc:  # a missing dependency of the plugin must not stop the memory commands
            _unavailable(target, plugin.name, f"`zeromem {plugin.name}` could not be loaded from "
                                              f"{plugin.value} ({type(exc).__name__}: {exc})",
                         "could not be loaded: run it to see why")
            continue
        target.add_typer(group, name=plugin.name)
    if LAB not in added:
        _unavailable(target, LAB, LAB_INSTALL, "The benchmark lab: not installed (pip install -e ./bench)")


def _unavailable(target: typer.Typer, name: str, why: str, listed: str) -> None:
    """``zeromem <name> …`` (any arguments, --help included) prints ``error: why``, exit code 2;
    ``zeromem --help`` lists it as ``listed``."""
    @target.command(name, help=why, short_help=listed, add_help_option=False,
                    context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def unavailable() -> None:
        fail(why)


plug_in(app, entry_points(group=ENTRY_POINTS))


def main() -> None:
    """Console entry point (``zeromem``)."""
    app()
