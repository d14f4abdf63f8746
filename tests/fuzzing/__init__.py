"""Fuzzing cronduit's inputs from outside: the config loader, the HTTP app, cron expressions.

Shared by the test suite (``tests/core/test_fuzz_*.py``, ``tests/http/test_fuzz_http.py``,
a few hundred cases each) and by ``bench/fuzz.py`` (100,000 cases and more). Each target is
a Hypothesis strategy of cases and a check that raises on a failure:

- :mod:`.config`: any text or document shape loads, or fails with located one-line errors;
  a config that loads computes in the engine's pure functions without overflow;
- :mod:`.http`: webhook, GitHub and API requests of any body and headers never get a 500
  and never raise out of the app;
- :mod:`.cron`: an expression parses or is refused cleanly, and every accepted one has a
  next slot from any start, zone and DST policy (cronsim agreeing where it applies).

:data:`SUITE` is the Hypothesis profile (``fuzz-suite``) the suite's fuzz tests and
``bench/fuzz.py`` start from: no deadline, and quiet about large or slow examples, which
fuzzing makes on purpose. Each test sets its own ``max_examples``; ``bench/fuzz.py`` its
``--cases``.
"""
