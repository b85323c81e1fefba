"""Where the test data lives: ``tests/data`` (in the repository) and ``../shared`` (optional).

``DATA`` is the small, openly licensed set every test may use (see ``tests/data/README.md``).
``shared(...)`` is for the larger sets beside a development checkout; a test that calls it is
marked ``extended`` and skips, naming the missing path, in a clone without ``../shared``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
SHARED = REPO.parent / "shared"

CELEBRITIES = DATA / "faces" / "celebrities"
FACE_RECOGNITION = DATA / "faces" / "face_recognition"
JOHNS = DATA / "faces" / "dlib" / "johns"
SILENT_FACE = DATA / "pad" / "silent_face"
VIDEOS = DATA / "videos"


def shared(*parts: str) -> Path:
    """``../shared/<parts>``; skips the calling test, naming the path, when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        rel = "/".join(("..", "shared", *parts))
        pytest.skip(f"needs {rel} beside the checkout (optional extended data; absent here)")
    return path
