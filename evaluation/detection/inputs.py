"""What ``detect`` is given: image and video files, folders (searched recursively) and text
files that list paths (one per line, relative to the list's folder; blank lines and lines
starting with ``#`` are ignored)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fairforensics.preprocessing.video import IMAGE_SUFFIXES, VIDEO_SUFFIXES

LIST_SUFFIXES = frozenset({".txt", ".lst"})


@dataclass(frozen=True)
class InputFile:
    """One file to score, or a path that cannot be (``problem`` says why)."""

    path: Path
    problem: str | None = None

    @property
    def kind(self) -> str:
        """``image``, ``video`` or ``other``."""
        suffix = self.path.suffix.lower()
        if suffix in IMAGE_SUFFIXES:
            return "image"
        return "video" if suffix in VIDEO_SUFFIXES else "other"


def supported(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES | VIDEO_SUFFIXES


def expand_inputs(paths: list[str | Path]) -> list[InputFile]:
    """Every file ``paths`` name, in order, each once. A folder gives every file under it (sorted;
    hidden ones left out), a ``.txt``/``.lst`` file on the command line the paths it lists. A
    missing path, an unsupported file found in a folder and a list that cannot be read become
    entries with a ``problem``, so that each is reported and the others are scored."""
    out: list[InputFile] = []
    seen: set[Path] = set()

    def add(entry: InputFile) -> None:
        key = entry.path.resolve() if entry.path.exists() else entry.path
        if key not in seen:
            seen.add(key)
            out.append(entry)

    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                if not any(part.startswith(".") for part in file.relative_to(path).parts):
                    add(_checked(file))
        elif path.suffix.lower() in LIST_SUFFIXES and path.is_file():
            for entry in _listed(path):
                add(entry)
        elif not path.exists():
            add(InputFile(path, "file not found"))
        else:
            add(_checked(path))
    return out


def _checked(path: Path) -> InputFile:
    if supported(path):
        return InputFile(path)
    allowed = " ".join(sorted(IMAGE_SUFFIXES | VIDEO_SUFFIXES))
    return InputFile(path, f"unsupported file type {path.suffix or '(none)'!r}; images and "
                           f"videos are {allowed}")  # fmt: skip


def _listed(list_file: Path) -> list[InputFile]:
    """The entries of a list file (a line naming a folder gives the files under it)."""
    try:
        lines = list_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return [InputFile(list_file, f"cannot read the list: {exc}")]
    names = [s.strip() for s in lines if s.strip() and not s.strip().startswith("#")]
    out: list[InputFile] = []
    for name in names:
        path = Path(name).expanduser()
        path = path if path.is_absolute() else list_file.parent / path
        if path.suffix.lower() in LIST_SUFFIXES and path.is_file():
            out.append(InputFile(path, "a list inside a list is not read"))
        else:
            out.extend(expand_inputs([path]))
    return out
