"""``settings.max_log`` from the config file to the log the job leaves, through the real
daemon and ``cronduit job logs``."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.acceptance.conftest import Deployment

FLOOD = """
settings:
  max_log: 1MiB
jobs:
  flood:
    run: 'echo FIRST; yes | head -c 20000000; echo LAST'
    every: 1h
"""


def test_a_job_writing_twenty_times_its_cap_leaves_a_log_within_it(
    deployment: Deployment,
) -> None:
    """The daemon sends the config's cap with the launch: ``job logs`` shows the first
    line, one marker counting what was cut, the last line, and no more than the cap."""
    deployment.write(FLOOD)
    daemon = deployment.serve()
    deployment.wait_for(lambda: [r.outcome for r in deployment.runs("flood")] == ["success"],
                        timeout=60)
    deployment.kill(daemon)
    shown = subprocess.run(
        [sys.executable, "-m", "cronduit", "job", "logs", "flood", "-c", str(deployment.config)],
        capture_output=True, check=True).stdout
    head, count, tail = re.split(rb"\n\[cronduit: ([0-9]+) bytes cut here; max_log 1MiB\]\n",
                                 shown)
    written = len(b"FIRST\n") + 20_000_000 + len(b"LAST\n")
    marker = len(shown) - len(head) - len(tail)
    assert (True, True, True, written) == (
        head.startswith(b"FIRST\ny\n"), tail.endswith(b"y\ny\nLAST\n"), len(shown) <= 1 << 20,
        len(head) + marker + int(count) + len(tail))
