"""Tests of accepting triggers from outside the loop (``cronduit.intake``)."""
