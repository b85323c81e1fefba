"""Tiny dataset indexes of real faces for the trainer tests (and tests of the helpers)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, read_index, write_index
from tests.testdata import JOHNS as JOHNS_DIR

JOHNS = sorted(JOHNS_DIR.rglob("*.jpg"))

# dlib's 68-point layout on a 150x150 aligned crop, a coarse template (jaw, brows, nose, eyes, mouth)
_T = np.concatenate(
    [
        np.stack([np.linspace(20, 130, 17), 60 + 60 * np.sin(np.linspace(0, np.pi, 17))], 1),
        np.stack([np.linspace(35, 70, 5), np.full(5, 45)], 1),
        np.stack([np.linspace(80, 115, 5), np.full(5, 45)], 1),
        np.stack([np.full(4, 75), np.linspace(55, 85, 4)], 1),
        np.stack([np.linspace(62, 88, 5), np.full(5, 92)], 1),
        np.stack([np.linspace(42, 64, 6), 60 + 3 * np.sin(np.linspace(0, 2 * np.pi, 6))], 1),
        np.stack([np.linspace(86, 108, 6), 60 + 3 * np.sin(np.linspace(0, 2 * np.pi, 6))], 1),
        np.stack(
            [55 + 40 * np.linspace(0, 1, 20), 112 + 6 * np.sin(np.linspace(0, 2 * np.pi, 20))], 1
        ),
    ]
).astype(np.float32)


def face(i: int, size: int) -> np.ndarray:
    """Real face crop ``i`` (dlib's johns set) as uint8 RGB size x size."""
    img = cv2.cvtColor(cv2.imread(str(JOHNS[i % len(JOHNS)])), cv2.COLOR_BGR2RGB)
    return cv2.resize(img, (size, size), interpolation=cv2.INTER_AREA)


def make_index(
    root: Path,
    name: str = "tiny",
    *,
    n_real: int = 4,
    n_fake: int = 4,
    frames: int = 3,
    size: int = 64,
    splits: tuple[str, ...] = ("train", "val", "test"),
    methods: tuple[str, ...] = ("Patch",),
) -> Path:
    """Write ``<root>/<name>.json`` with real videos and fakes (a bright blended patch + mask)."""
    videos: list[VideoEntry] = []
    k = 0
    for split in splits:
        for label, count in ((0, n_real), (1, n_fake)):
            for v in range(count):
                method = "real" if label == 0 else methods[v % len(methods)]
                vid = f"{split}{v:03d}" if label == 0 else f"{split}{v:03d}_{(v + 1) % count:03d}"
                rel = Path(name) / method / vid
                (root / rel / "frames").mkdir(parents=True, exist_ok=True)
                (root / rel / "landmarks").mkdir(parents=True, exist_ok=True)
                (root / rel / "masks").mkdir(parents=True, exist_ok=True)
                fr, lm, mk = [], [], []
                for f in range(frames):
                    img = face(k, size)
                    k += 1
                    mask = np.zeros((size, size), np.uint8)
                    if label == 1:
                        s = size // 4
                        mask[s : 3 * s, s : 3 * s] = 255
                        img = img.copy()
                        img[mask > 0] = (0.3 * img[mask > 0] + 0.7 * 255).astype(np.uint8)
                    cv2.imwrite(
                        str(root / rel / "frames" / f"{f:03d}.png"),
                        cv2.cvtColor(img, cv2.COLOR_RGB2BGR),
                    )
                    cv2.imwrite(str(root / rel / "masks" / f"{f:03d}.png"), mask)
                    np.save(root / rel / "landmarks" / f"{f:03d}.npy", _T * (size / 150.0))
                    fr.append(f"{rel.as_posix()}/frames/{f:03d}.png")
                    lm.append(f"{rel.as_posix()}/landmarks/{f:03d}.npy")
                    mk.append(f"{rel.as_posix()}/masks/{f:03d}.png")
                videos.append(
                    VideoEntry(
                        id=vid,
                        label=label,
                        method=method,
                        split=split,
                        frames=fr,
                        landmarks=lm,
                        masks=mk if label == 1 else None,
                        attributes={"gender": "female" if v % 2 else "male"},
                        identity=vid.split("_")[0],
                    )
                )
    path = root / f"{name}.json"
    write_index(DatasetIndex(dataset=name, task="deepfake", videos=videos, root=root), path)
    return path


def test_make_index_is_valid(tmp_path: Path) -> None:
    index = read_index(make_index(tmp_path, n_real=2, n_fake=2, frames=2), check_files=True)
    assert len(index.videos) == 12
    assert index.method_names == ["real", "Patch"]
    assert len(JOHNS) == 55
