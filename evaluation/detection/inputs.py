"""What ``detect`` is given: image and video files, folders (searched recursively) and text
files that list paths (one per line, relative to the list's folder; blank lines and lines
starting with ``#`` are ignored)."""

from __future__ import annotations

from collections import Counter
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


def expand_inputs(paths: list[str | Path]) -> tuple[list[InputFile], list[Path]]:
    """Every file ``paths`` name, in order, each once, and the other files the folders hold.

    A folder gives every image and video under it (sorted; hidden ones left out); its other
    files (a dataset's ``metadata.json``, a README) are returned second, to be counted, not
    scored. A ``.txt``/``.lst`` file on the command line gives the paths it lists. A missing
    path, an unsupported file named on the command line or in a list, and a list that cannot be
    read become entries with a ``problem``, so that each is reported and the others are
    scored."""
    out: list[InputFile] = []
    others: list[Path] = []
    seen: set[Path] = set()

    def add(entry: InputFile) -> None:
        key = entry.path.resolve() if entry.path.exists() else entry.path
        if key not in seen:
            seen.add(key)
            out.append(entry)

    def skip(other: Path) -> None:
        if other.resolve() not in seen:
            seen.add(other.resolve())
            others.append(other)

    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                if any(part.startswith(".") for part in file.relative_to(path).parts):
                    continue
                if supported(file):
                    add(InputFile(file))
                else:
                    skip(file)
        elif path.suffix.lower() in LIST_SUFFIXES and path.is_file():
            entries, skipped = _listed(path)
            for entry in entries:
                add(entry)
            for other in skipped:
                skip(other)
        elif not path.exists():
            add(InputFile(path, "file not found"))
        else:
            add(_checked(path))
    return out, others


def other_files_note(others: list[str] | list[Path]) -> str:
    """``3 other files in the folders (.json 2, .md 1): neither images nor videos``."""
    suffixes = Counter(Path(p).suffix.lower() or "(none)" for p in others)
    kinds = ", ".join(f"{s} {n}" for s, n in sorted(suffixes.items(), key=lambda x: (-x[1], x[0])))
    s = "" if len(others) == 1 else "s"
    return f"{len(others)} other file{s} in the folders ({kinds}): neither images nor videos"


def _checked(path: Path) -> InputFile:
    if supported(path):
        return InputFile(path)
    allowed = " ".join(sorted(IMAGE_SUFFIXES | VIDEO_SUFFIXES))
    return InputFile(path, f"unsupported file type {path.suffix or '(none)'!r}; images and "
                           f"videos are {allowed}")  # fmt: skip


def _listed(list_file: Path) -> tuple[list[InputFile], list[Path]]:
    """The entries of a list file (a line naming a folder gives the files under it), and the
    other files of the folders it names."""
    try:
        lines = list_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return [InputFile(list_file, f"cannot read the list: {exc}")], []
    names = [s.strip() for s in lines if s.strip() and not s.strip().startswith("#")]
    out: list[InputFile] = []
    others: list[Path] = []
    for name in names:
        path = Path(name).expanduser()
        path = path if path.is_absolute() else list_file.parent / path
        if path.suffix.lower() in LIST_SUFFIXES and path.is_file():
            out.append(InputFile(path, "a list inside a list is not read"))
        else:
            entries, skipped = expand_inputs([path])
            out += entries
            others += skipped
    return out, others
