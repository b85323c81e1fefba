"""Atomic writes: a temporary file beside the target, with the mode the umask gives a plain
write, renamed over the target on success and removed on failure or interruption (lowest layer:
every package's writer uses it)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def current_umask() -> int:
    """The process umask, read without changing it (``/proc``; else a quick set and restore)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode(directory: bool = False) -> int:
    """The mode ``open()`` / ``mkdir()`` would give: 0o666 (0o777 for a folder) & ~umask.

    ``tempfile.mkstemp``/``mkdtemp`` create 0600/0700 whatever the umask; every atomic writer
    sets this mode on its temporary file so that outputs are as readable as plain writes.
    """
    return (0o777 if directory else 0o666) & ~current_umask()


@contextmanager
def atomic_path(path: str | Path, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; write it in the block. On success it replaces
    ``path``; on any exception, Ctrl-C and SIGTERM included, it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    try:
        os.fchmod(fd, file_mode())
        os.close(fd)
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
