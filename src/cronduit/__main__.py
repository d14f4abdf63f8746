"""Lets ``python -m cronduit`` behave exactly like the ``cronduit`` command."""

from cronduit.cli import main

main()
