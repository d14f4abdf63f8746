"""cronduit's own crash loop: a daemon under mixed load, SIGKILLed again and again, then checked.

``harness.py`` runs the loop, ``deployment.py`` writes the config and its jobs and starts and
finds the processes, ``load.py`` sends the triggers, ``checker.py`` reads what happened.
``bench/chaos.py`` is the command line over it; ``tests/acceptance/test_chaos.py`` runs a
minute of it. Nothing here needs psutil: processes are found through ``/proc``.
"""
