"""A run's log under its cap (``settings.max_log``): how far past the cap a fast writer gets.

A job runs ``yes`` (as fast as the machine writes a file) for a few seconds through the
executor, as the daemon launches it, with the log's cap set; meanwhile this process reads the
log's size on disk (``st_blocks``: a punched hole takes none) every millisecond. Printed per
file system and cap: the job's write rate (the bytes it wrote, cut ones included, over the
time), the log's size on disk at the median sample, the 99th percentile and the largest, the
largest as a multiple of the cap, and the log left once the job has ended.

Each row is measured on a state folder in that file system: a temporary folder under /tmp
(the project's VM: ext4), and under /dev/shm (tmpfs) where it exists.

Run:  python bench/log_cap.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from _helpers import read_log
from cronduit.executor import LaunchSpec, launch, wait
from cronduit.executor.states import Attempt

MiB = 1 << 20
CAPS = (MiB, 64 * MiB)
_MARKER = re.compile(rb"\[cronduit: ([0-9]+) bytes cut here")


def file_system(folder: Path) -> str:
    """The type of the file system ``folder`` is on, from ``/proc/self/mounts``."""
    best, kind = "", "?"
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, mount, fs_type, *_ = line.split()
        if str(folder.resolve()).startswith(mount) and len(mount) > len(best):
            best, kind = mount, fs_type
    return kind


async def _sample(log: Path, attempt: Attempt) -> list[int]:
    """The log's size on disk every millisecond until the attempt ends."""
    sizes = []
    ended = asyncio.ensure_future(wait(attempt))
    while not ended.done():
        with contextlib.suppress(FileNotFoundError):  # not made yet
            sizes.append(os.stat(log).st_blocks * 512)
        await asyncio.sleep(0.001)
    await ended
    return sizes


def measure(root: Path, cap: int, seconds: float) -> str:
    """One row: ``yes`` for ``seconds`` into a log capped at ``cap``."""
    folder = Path(tempfile.mkdtemp(prefix="cronduit-log-cap-", dir=root))
    try:
        spec = LaunchSpec(run_id="r", attempt=1, argv=("timeout", str(seconds), "yes"),
                          shell=None, cwd=folder, env={"PATH": os.defpath},
                          attempt_file=folder / "r" / "attempt-1", log_path=folder / "r" / "log",
                          max_log=cap)
        started = time.monotonic()
        sizes = sorted(asyncio.run(_sample(spec.log_path, launch(spec))))
        took = time.monotonic() - started
        left = read_log(spec.log_path)
        found = _MARKER.search(left)
        written = len(left) + (int(found[1]) if found else 0)
    finally:
        shutil.rmtree(folder)

    def at(share: float) -> float:
        return sizes[round(share * (len(sizes) - 1))] / MiB

    return (f"{file_system(root):<8} {cap // MiB:>5} MiB {written / took / 1e6:>7,.0f} MB/s "
            f"{at(0.5):>8.1f} {at(0.99):>8.1f} {at(1):>8.1f} {at(1) * MiB / cap:>7.2f} "
            f"{len(left) / MiB:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    seconds = parser.parse_args().seconds
    roots = [Path(tempfile.gettempdir())] + [Path("/dev/shm")] * os.path.isdir("/dev/shm")
    print("fs          cap     write rate   p50 MiB  p99 MiB  max MiB  max/cap  left MiB")
    print("-" * 80)
    for root in roots:
        for cap in CAPS:
            print(measure(root, cap, seconds), flush=True)


if __name__ == "__main__":
    main()
