"""``python -m zeromem``: the command line."""

from .interfaces.cli import main

main()
