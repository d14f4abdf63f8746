"""Helpers that tests share: code the product itself has no use for, kept out of ``src/``."""
