"""The pure core: every decision cronduit makes, from values, with no I/O.

Nothing in this package reads the clock, the environment, files or sockets, and nothing
imports asyncio. The edges (daemon, executor, HTTP, CLI) fetch values, ask the core, and
carry the answer out. ``tests/core/test_layering.py`` enforces the rule.
"""
