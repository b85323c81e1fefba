"""Atomic writers create files and folders as a plain write would under the umask (#14)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import torch
from matplotlib.figure import Figure

from fairforensics.configs.filemode import current_umask, file_mode
from fairforensics.detectors.weights import save_checkpoint
from fairforensics.evaluation.plots import save_figure
from fairforensics.preprocessing.files import atomic_write_text
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, write_index


@pytest.fixture(params=[0o022, 0o027, 0o077])
def umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_file_mode_follows_the_umask(umask):
    assert current_umask() == umask
    assert file_mode() == 0o666 & ~umask and file_mode(directory=True) == 0o777 & ~umask
    assert {0o022: (0o644, 0o755), 0o027: (0o640, 0o750), 0o077: (0o600, 0o700)}[umask] == (
        file_mode(),
        file_mode(directory=True),
    )


def test_every_atomic_writer_honours_the_umask(umask, tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")  # what a plain open() gives, for comparison
    expected = mode(plain)
    text = tmp_path / "new" / "a.json"
    atomic_write_text(text, "{}")
    index = tmp_path / "idx" / "d.json"
    write_index(
        DatasetIndex(
            dataset="d",
            task="deepfake",
            videos=[VideoEntry(id="a", label=0, method="real", split="test", frames=["a.png"])],
            root=index.parent,
        ),
        index,
    )
    ckpt = tmp_path / "run" / "last.pt"
    save_checkpoint(ckpt, {"w": torch.zeros(2)})
    fig = Figure()
    fig.add_subplot().plot([0, 1])
    plots = save_figure(fig, tmp_path / "plots" / "roc", formats=("png",))
    for path in [text, index, ckpt, *plots]:
        assert mode(path) == expected == 0o666 & ~umask, path
        assert mode(path.parent) == 0o777 & ~umask, path.parent
    assert not [p for p in tmp_path.rglob(".*tmp*")]  # no temporary file left behind
