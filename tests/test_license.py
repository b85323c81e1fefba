"""The licence the package declares is at the root (MIT, ``LICENSE``), the third-party files it
ships are listed with their licences (``THIRD_PARTY_LICENSES.md``), and the wheel carries them."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = (REPO / "pyproject.toml").read_text(encoding="utf-8")
LICENSE_FILES = re.findall(
    r'"([^"]+)"', re.search(r"^license-files = \[(.*?)\]", PYPROJECT, re.M | re.S)[1]
)
MTCNN = REPO / "preprocessing" / "models" / "mtcnn"
FF_SPLITS = REPO / "preprocessing" / "datasets" / "faceforensics_splits"


def _body(text: str) -> str:
    """An MIT licence's text after its copyright line, whitespace normalised."""
    return " ".join(text.split("Copyright", 1)[1].split("\n", 1)[1].split())


def test_the_root_licence_is_the_mit_text_the_package_declares() -> None:
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert re.search(r'^license = "MIT"$', PYPROJECT, re.M)
    assert text.splitlines()[:3] == [
        "MIT License",
        "",
        "Copyright (c) 2026 the FairForensics authors",
    ]
    # the MIT permission notice and disclaimer, word for word as in another MIT copy shipped here
    assert _body(text) == _body((MTCNN / "LICENSE").read_text(encoding="utf-8"))
    assert "Permission is hereby granted, free of charge" in text and "AS IS" in text


def test_every_shipped_third_party_file_is_listed_with_its_licence() -> None:
    """Each licence file the package or its test data carry exists and is named in
    THIRD_PARTY_LICENSES.md, beside the files it covers; the wheel's licence files exist."""
    listing = (REPO / "THIRD_PARTY_LICENSES.md").read_text(encoding="utf-8")
    assert LICENSE_FILES[:2] == ["LICENSE", "THIRD_PARTY_LICENSES.md"]
    for name in LICENSE_FILES:
        assert (REPO / name).is_file(), name
    shipped = [MTCNN / n for n in ("pnet.pt", "rnet.pt", "onet.pt")]
    shipped += sorted(FF_SPLITS.glob("*.json"))
    for path in shipped:
        assert path.name in listing, path
    licences = [MTCNN / "LICENSE", FF_SPLITS / "LICENSE"]
    licences += sorted(p for p in (REPO / "tests" / "data").rglob("LICENSE*"))
    for path in licences:
        assert f"`{path.relative_to(REPO).as_posix()}`" in listing, path
    for named in re.findall(r"`([\w./-]+/LICENSE[\w.]*)`", listing):
        assert (REPO / named).is_file(), named


@pytest.mark.slow
def test_the_wheel_carries_the_licences(wheel: Path) -> None:
    """The wheel's metadata declares MIT and its .dist-info/licenses/ holds the root licence, the
    third-party list and the licences of the MTCNN weights and FF++ split files it ships."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = zf.read(meta).decode()
        info = meta.rsplit("/", 1)[0]
        for name in LICENSE_FILES:
            assert f"License-File: {name}" in metadata
            assert zf.read(f"{info}/licenses/{name}") == (REPO / name).read_bytes(), name
    assert "License-Expression: MIT" in metadata
    assert "fairforensics/preprocessing/models/mtcnn/LICENSE" in names
    assert "fairforensics/preprocessing/datasets/faceforensics_splits/LICENSE" in names
