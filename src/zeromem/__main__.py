"""``python -m zeromem``: the command line."""

from .main import main

main()
