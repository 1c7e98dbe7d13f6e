"""How many times each benchmark job ran, in a memory-mapped file that a server subprocess shares."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

PATH_VARIABLE = "CRONTICK_BENCH_SEEN_FILE"


class Seen:
    """One byte per job number: every handler of every system adds one when it runs job i."""

    def __init__(self, path: Path, jobs: int | None = None) -> None:
        if jobs is not None:
            path.write_bytes(bytes(jobs))
        self.path = path
        self._file = path.open("r+b")
        self._map = mmap.mmap(self._file.fileno(), 0)

    def mark(self, i: int) -> None:
        self._map[i] = min(self._map[i] + 1, 255)

    def count(self) -> int:
        """How many jobs have run at least once."""
        return len(self._map) - bytes(self._map).count(0)

    def reset(self) -> None:
        self._map[:] = bytes(len(self._map))

    def check(self) -> str | None:
        """None when every job ran exactly once, else what went wrong."""
        counts = bytes(self._map)
        missing = counts.count(0)
        twice = len(counts) - missing - counts.count(1)
        if missing or twice:
            return f"expected each of {len(counts)} jobs to run once, got {missing} never run and {twice} run more than once"
        return None


_shared: Seen | None = None


def shared() -> Seen:
    """The Seen file named by CRONTICK_BENCH_SEEN_FILE, opened once per process."""
    global _shared
    if _shared is None:
        _shared = Seen(Path(os.environ[PATH_VARIABLE]))
    return _shared


def share(seen: Seen) -> None:
    """Make `seen` the file this process's handlers mark from now on (and its subprocesses': the variable)."""
    global _shared
    _shared = seen
    os.environ[PATH_VARIABLE] = str(seen.path)
