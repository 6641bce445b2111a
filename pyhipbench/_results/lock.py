"""The writer's lock: one sweep at a time writes a results database.

An OS advisory lock (flock, exclusive) on a file beside the database, DB.lock
(beside the file a symbolic link names), taken before the database is opened
and held while the sweep writes. The OS drops it when its process ends,
however it ends (an exception, Ctrl-C, kill -9, a crash), so a lock never
outlives its sweep and there is nothing to clean up; the file itself stays,
empty of meaning once unlocked. It holds the pid of the sweep that holds it,
which the refusal of a second sweep names.
Readers (compare, load_results, export_best, a Store opened to read) take no
lock: SQLite's WAL lets them read while the sweep writes.

Where the lock file cannot be made (a folder that is missing or read-only:
opening the database then fails, saying why) or the file system has no flock
(ENOLCK, EOPNOTSUPP), the sweep goes on unlocked: the database's UNIQUE
candidate ids still refuse a second writer's duplicate rows.
"""
from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from ..errors import BenchError

try:
    import fcntl
except ImportError:  # not POSIX: no advisory locks, as on a file system without them
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriterLock", "lock_path"]

_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}
_PID_WAIT_S = 0.5  # how long to wait for a holder that has just locked the file to write its pid


def lock_path(database: Path) -> Path:
    """The lock file of `database`: its name with ".lock" added, in its folder; a symbolic link's target's (two
    names of one database share a lock)."""
    real = Path(os.path.realpath(database))
    return real.with_name(real.name + ".lock")


class WriterLock:
    """The lock of the results database `database`, taken on construction; BenchError naming the database
    and the holder's pid if another sweep holds it. `release()` (or the process's end) drops it."""

    def __init__(self, database: Path) -> None:
        self.database, self.path = database, lock_path(database)
        self.fd: int | None = None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by child processes
        except OSError:
            try:  # another user's lock file, read-only to this one: flock needs no write access
                fd = os.open(self.path, os.O_RDONLY)
            except OSError:  # a folder that is missing or cannot be written: opening the database says so
                return
        if fcntl is None:
            os.close(fd)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                holder = _holder(fd)
                os.close(fd)
                raise BenchError(f"{database}: another sweep is writing this database ({holder}); wait for it to "
                                 "end, or write to another database (--out, db=)") from None
            os.close(fd)
            if e.errno in _UNSUPPORTED:
                return
            raise BenchError(f"{database}: cannot lock it for this sweep (flock {self.path}: {e.strerror})") from None
        self.fd = fd
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:  # a full disk: the lock holds all the same; a refused sweep then names no pid
            pass

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the file unlocks it
            self.fd = None


def _holder(fd: int) -> str:
    """The holder in words: "pid N" from the lock file, waiting briefly for a holder that has just locked it."""
    deadline = time.monotonic() + _PID_WAIT_S
    while True:
        try:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        except OSError:
            text = ""
        if text.isdigit():
            return f"pid {text}"
        if time.monotonic() > deadline:
            return "its pid unknown"
        time.sleep(0.02)
