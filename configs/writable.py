"""Prove an output folder or file can be written before a command does any work (issue 40,
item 1): a wrong ``--out`` fails at once with one line, not after every file was scored."""

from __future__ import annotations

from pathlib import Path

from fairforensics.configs.loader import ConfigError


def check_writable(folder: str | Path, option: str = "--out") -> None:
    """Create ``folder`` and write (then remove) a probe file in it; a :class:`ConfigError`
    naming the folder when either fails (a file in its place, no permission, ``/proc``)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".write_test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"{folder}: output folder is not writable ({exc.strerror or exc}); "
            f"pass {option} a folder you can write"
        ) from None


def check_writable_file(path: str | Path, option: str = "--out") -> None:
    """``path`` can be written: no folder stands in its place and its folder is writable
    (:func:`check_writable`); an existing file is left as it is."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(
            f"{path}: a folder stands where the output file goes; pass {option} a file path"
        )
    check_writable(path.parent, option)
