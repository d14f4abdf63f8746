"""Small real file systems for fault tests: a tmpfs to fill up, an ext4 image to turn read-only.

Mounting needs root. Under CI (``CI=true``) a test that cannot mount fails, since CI runs as
root and a skip there would hide the faults these tests are for; elsewhere it is skipped with
the reason. Every mount is unmounted when its block ends, after the processes still holding
files in it (a daemon, its supervisor, their jobs: all started by the test) are killed by pid.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

FILLER = "filler"
"""The file :func:`fill` writes to take all the space of a file system."""


def mounting_unavailable(reason: str) -> None:
    """Fail under CI, skip elsewhere: these tests need a machine that lets them mount."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {reason}: fault tests must run under CI")
    pytest.skip(reason)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


@contextlib.contextmanager
def small_tmpfs(folder: Path, size: str = "2m") -> Iterator[Path]:
    """``folder`` as a tmpfs of ``size``, for the duration of the block."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        mounting_unavailable("mounting a tmpfs needs root")
    mounted = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder))
    if mounted.returncode != 0:
        mounting_unavailable(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        unmount(folder)


@contextlib.contextmanager
def ext4_image(folder: Path, image: Path, size_mb: int = 32) -> Iterator[Path]:
    """``folder`` as an ext4 file system in the file ``image`` (through a loop device),
    mounted with ``errors=remount-ro``, so :func:`fail_read_only` can turn it read-only
    under open files, as a disk error does."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        mounting_unavailable("mounting a loop file system needs root")
    with image.open("wb") as made:
        made.truncate(size_mb << 20)
    formatted = _run("mkfs.ext4", "-q", "-F", str(image))
    if formatted.returncode != 0:
        mounting_unavailable(f"cannot make an ext4 image: {formatted.stderr.strip()}")
    mount_ext4(folder, image)
    try:
        yield folder
    finally:
        unmount(folder)


def mount_ext4(folder: Path, image: Path) -> None:
    """Mount the ext4 ``image`` on ``folder`` (again, after :func:`repair`)."""
    mounted = _run("mount", "-o", "loop,errors=remount-ro", str(image), str(folder))
    if mounted.returncode != 0:
        mounting_unavailable(f"cannot mount a loop file system: {mounted.stderr.strip()}")


def fail_read_only(folder: Path) -> None:
    """Make the ext4 file system on ``folder`` hit an error and remount itself read-only,
    open files included: every write there fails with EROFS from now on. The kernel allows
    nothing gentler while files are open for writing (``mount -o remount,ro`` refuses with
    "busy"), and nothing but an unmount ends it."""
    source = _run("findmnt", "-n", "-o", "SOURCE", "--target", str(folder)).stdout.strip()
    trigger = Path("/sys/fs/ext4") / os.path.basename(source) / "trigger_fs_error"
    trigger.write_text("cronduit fault test\n")
    try:
        (folder / ".probe").write_text("x")
    except OSError as error:
        if error.errno != errno.EROFS:
            raise
    else:
        raise AssertionError(f"{folder} is still writable after the error")


def repair(folder: Path, image: Path) -> None:
    """What an operator does after such an error: unmount, check, mount again."""
    unmount(folder)
    checked = _run("e2fsck", "-f", "-y", str(image))
    assert checked.returncode in (0, 1), checked.stdout + checked.stderr
    mount_ext4(folder, image)


def fill(folder: Path) -> Path:
    """Write into ``folder`` until its file system has no space left; the file written."""
    filler = folder / FILLER
    chunk = b"\0" * 65536
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]
    finally:
        os.close(fd)
    return filler


def free(filler: Path) -> None:
    """Give the space :func:`fill` took back."""
    filler.unlink()


def holders(folder: Path) -> list[int]:
    """Pids of the processes with a file, a folder or their working folder in ``folder``."""
    root = str(folder.resolve())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            links = [os.readlink(f"/proc/{entry}/fd/{fd}")
                     for fd in os.listdir(f"/proc/{entry}/fd")]
            links.append(os.readlink(f"/proc/{entry}/cwd"))
        except OSError:  # gone, or a zombie
            continue
        if any(link == root or link.startswith(root + "/") for link in links):
            found.append(int(entry))
    return found


def unmount(folder: Path) -> None:
    """Kill, by pid, the processes the test left holding files in ``folder``, then unmount
    it; lazily if something still holds it after that."""
    for _ in range(50):
        pids = holders(folder)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    if _run("umount", str(folder)).returncode != 0:
        _run("umount", "-l", str(folder))
