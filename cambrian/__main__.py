"""``python -m cambrian``: the command line."""

from cambrian.cli import main

main()
