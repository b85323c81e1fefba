"""File modes that honour the umask, for writers that go through temporary files (lowest layer:
every package's atomic writer uses it)."""

from __future__ import annotations

import os
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
