"""FaceForensics++ c23-like benchmark videos rendered from real face photographs.

FF++ c23 videos are YouTube clips re-encoded with x264 at CRF 23 (default GOP and B-frames):
hundreds of frames each, 480p to 1080p. Each video here films one photo with the demo
dataset's virtual camera (``preprocessing.demo_dataset``: smooth head motion, lighting flicker)
on a blurred copy of the photo as the scene, plus light sensor noise, and is encoded with PyAV/libx264 the same way. Videos are cached by
their settings, so a benchmark renders them once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np

from fairforensics.preprocessing.demo_dataset import (
    FacePhoto,
    _camera_path,
    _frame_matrix,
    load_face_photos,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VideoSpec:
    """One benchmark video: number of frames and frame height (16:9)."""

    frames: int
    height: int

    @property
    def width(self) -> int:
        return int(round(self.height * 16 / 9 / 2)) * 2


# 7 videos, 3,107 frames, 480p-1080p: the sizes of the FF++ c23 sample of issue 18
FF_LIKE = (
    VideoSpec(309, 480),
    VideoSpec(352, 720),
    VideoSpec(398, 480),
    VideoSpec(436, 1080),
    VideoSpec(480, 720),
    VideoSpec(381, 480),
    VideoSpec(751, 1080),
)
CRF = 23
NOISE_SIGMA = 2.0


def _photos(faces_dir: Path | None, n: int) -> list[FacePhoto]:
    """The ``n`` largest photos of ``faces_dir`` with a face (else scikit-image's astronaut)."""
    if faces_dir is None:
        return load_face_photos()
    files = sorted(
        (p for p in faces_dir.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")),
        key=lambda p: (-p.stat().st_size, p.name),
    )
    with tempfile.TemporaryDirectory() as tmp:
        for p in files[: 2 * n]:  # spares for photos without a detectable face
            os.symlink(p.resolve(), Path(tmp) / p.name)
        return load_face_photos(tmp)[:n]


def _encode(path: Path, photo: FacePhoto, spec: VideoSpec, seed: int) -> None:
    """Render and encode one video frame by frame (x264 CRF 23, default GOP and B-frames)."""
    import av

    rng = np.random.default_rng(seed)
    noise = [rng.normal(0, NOISE_SIGMA, (spec.height, spec.width, 3)) for _ in range(4)]
    gain = rng.uniform(0.8, 1.1)
    # the scene around the photo: the photo itself, blurred (no mirrored second face)
    size = (spec.width, spec.height)
    scene = cv2.GaussianBlur(cv2.resize(photo.image, size), (0, 0), spec.height / 40)
    tmp = path.with_name(f".{path.name}.tmp")
    with av.open(str(tmp), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=Fraction(30000, 1001))
        stream.width, stream.height, stream.pix_fmt = spec.width, spec.height, "yuv420p"
        stream.options = {"crf": str(CRF)}
        for t, motion in enumerate(_camera_path(spec.frames, rng)):
            m = _frame_matrix(photo, spec.width, spec.height, motion)
            frame = cv2.warpAffine(
                photo.image, m, size, dst=scene.copy(), borderMode=cv2.BORDER_TRANSPARENT
            ).astype(np.float32)
            frame = frame * (gain * rng.uniform(0.98, 1.02)) + np.roll(noise[t % 4], t, axis=1)
            rgb = np.clip(frame, 0, 255).astype(np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    tmp.replace(path)


def ff_like_videos(
    cache_dir: Path | None = None,
    specs: tuple[VideoSpec, ...] = FF_LIKE,
    faces_dir: Path | None = None,
    seed: int = 0,
) -> list[Path]:
    """Paths of the rendered videos, rendering those not cached yet."""
    key = json.dumps(
        [
            [asdict(s) for s in specs],
            str(faces_dir and faces_dir.resolve()),
            seed,
            CRF,
            NOISE_SIGMA,
        ],
        sort_keys=True,
    )
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    folder = (cache_dir or Path(tempfile.gettempdir()) / "fairforensics_bench") / digest
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{i:03d}_{s.height}p_{s.frames}.mp4" for i, s in enumerate(specs)]
    missing = [i for i, p in enumerate(paths) if not p.is_file()]
    if missing:
        photos = _photos(faces_dir, len(specs))
        for i in missing:
            log.info("rendering %s", paths[i].name)
            _encode(paths[i], photos[i % len(photos)], specs[i], seed + i)
    return paths
