"""A small FaceForensics++-like video dataset rendered from real face photographs.

Real videos: a face photograph (by default scikit-image's ``astronaut.png``; any folder of
photos with ``faces_dir``) filmed by a virtual camera: per-frame head motion (a smooth random
walk of rotation, scale and translation), a lighting condition (``bright`` or ``dim``) with
small flicker, and a JPEG quality that changes from frame to frame. Fake videos are made from
the real ones with self-blended images (Shiohara & Yamasaki, CVPR 2022; ``preprocessing.blending``):
a colour- and scale-jittered copy of the face blended back inside the landmark hull.

The layout is FaceForensics++'s: ``original_sequences/youtube/c23/videos/NNN.mp4``,
``manipulated_sequences/<method>/c23/videos/NNN_MMM.mp4`` (fake of target ``NNN``),
``splits/{train,val,test}.json`` (lists of ``[a, b]`` id pairs) and ``attributes.csv`` keyed by
``identity`` (the target id) with ``lighting`` plus the photos' own attribute columns.
Everything is deterministic given the seed.
"""

from __future__ import annotations

import csv
import io
import logging
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from fairforensics.preprocessing.files import atomic_write_text, write_json

log = logging.getLogger(__name__)

PHOTO_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")
LIGHTING = {"bright": (1.0, 1.12), "dim": (0.42, 0.55)}


class DemoDataError(RuntimeError):
    """The demo dataset cannot be made (no usable face photo, unwritable output...)."""


@dataclass(frozen=True)
class FacePhoto:
    """A photograph with its face landmarks and attributes."""

    name: str
    image: np.ndarray  # RGB uint8
    landmarks: np.ndarray  # (68, 2) float32, photo pixels
    attributes: dict[str, str]


def load_face_photos(
    faces_dir: str | Path | None = None, attributes_csv: str | Path | None = None
) -> list[FacePhoto]:
    """Photos with a detectable face; photos without one are logged and skipped.

    ``attributes_csv`` has a ``file`` column (photo file name) and attribute columns; the
    ``identity`` column, if any, is kept as the attribute ``subject``.
    """
    from fairforensics.preprocessing.faces import FaceAnalyzer

    if faces_dir is None:
        from skimage import data

        sources = [("astronaut.png", data.astronaut())]
    else:
        folder = Path(faces_dir)
        if not folder.is_dir():
            raise DemoDataError(f"{folder}: faces folder not found")
        files = sorted(p for p in folder.iterdir() if p.suffix.lower() in PHOTO_SUFFIXES)
        sources = []
        for path in files:
            bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if bgr is None:
                log.warning("skipping %s: not a readable image", path)
                continue
            sources.append((path.name, cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)))
    table = _read_attributes(attributes_csv) if attributes_csv else {}
    analyzer = FaceAnalyzer()
    photos = []
    for name, rgb in sources:
        faces = analyzer.analyze(rgb)
        if not faces:
            log.warning("skipping %s: no face found by dlib", name)
            continue
        if attributes_csv and name not in table:
            log.warning("%s has no row in %s; its attributes are left empty", name, attributes_csv)
        photos.append(FacePhoto(name, rgb, faces[0][1].astype(np.float32), table.get(name, {})))
    if not photos:
        raise DemoDataError(f"no photo with a detectable face in {faces_dir or 'astronaut.png'}")
    return photos


def _read_attributes(path: str | Path) -> dict[str, dict[str, str]]:
    path = Path(path)
    if not path.is_file():
        raise DemoDataError(f"{path}: attributes CSV not found")
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or "file" not in reader.fieldnames:
            raise DemoDataError(f"{path}: needs a 'file' column naming each photo")
        rows = {}
        for row in reader:
            attrs = {
                k: v for k, v in row.items() if k not in ("file", "identity") and v is not None
            }
            if row.get("identity"):
                attrs["subject"] = row["identity"]
            rows[row["file"]] = attrs
    return rows


def _camera_path(n_frames: int, rng: np.random.Generator) -> np.ndarray:
    """Smooth per-frame (angle deg, scale, dx, dy) head motion: a damped random walk."""
    steps = rng.normal(0.0, [0.6, 0.006, 1.2, 1.2], size=(n_frames, 4))
    path = np.zeros((n_frames, 4))
    for t in range(1, n_frames):
        path[t] = 0.85 * path[t - 1] + steps[t]
    path[:, 1] += 1.0
    return path


def _frame_matrix(photo: FacePhoto, width: int, height: int, motion: np.ndarray) -> np.ndarray:
    """Affine map from the photo to an output frame that films the face with ``motion``."""
    lm = photo.landmarks
    centre = lm.mean(axis=0)
    face_width = float(np.ptp(lm[:, 0]))
    base_scale = 0.42 * height / max(face_width, 1.0)
    angle, scale, dx, dy = motion
    m = cv2.getRotationMatrix2D(
        (float(centre[0]), float(centre[1])), float(angle), base_scale * scale
    )
    m[:, 2] += np.array([width / 2 + dx, height / 2 + dy]) - centre
    return m


def _jpeg(rgb: np.ndarray, quality: int) -> np.ndarray:
    ok, buf = cv2.imencode(
        ".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality]
    )
    if not ok:
        raise DemoDataError("JPEG encoding failed")
    return cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def render_video(
    photo: FacePhoto,
    lighting: str,
    n_frames: int,
    size: int,
    rng: np.random.Generator,
    width: int | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Frames (RGB uint8, ``size`` high, ``width`` or ``size`` wide) and their 68 landmarks."""
    width = width or size
    low, high = LIGHTING[lighting]
    gain = rng.uniform(low, high)
    frames, landmarks = [], []
    for motion in _camera_path(n_frames, rng):
        m = _frame_matrix(photo, width, size, motion)
        frame = cv2.warpAffine(
            photo.image, m, (width, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT
        )
        flicker = gain * rng.uniform(0.97, 1.03)
        frame = np.clip(frame.astype(np.float32) * flicker, 0, 255).astype(np.uint8)
        frames.append(frame)
        landmarks.append(photo.landmarks @ m[:, :2].T + m[:, 2])
    return frames, landmarks


def write_video(path: Path, frames: list[np.ndarray], qualities: np.ndarray, fps: int = 25) -> None:
    """Write RGB frames as an mp4, each JPEG-degraded at its quality first (atomic rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.mp4")
    h, w = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(tmp), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    if not writer.isOpened():
        raise DemoDataError(f"{path}: cannot open a video writer (mp4v)")
    for frame, quality in zip(frames, qualities, strict=True):
        writer.write(cv2.cvtColor(_jpeg(frame, int(quality)), cv2.COLOR_RGB2BGR))
    writer.release()
    tmp.replace(path)


def make_demo_dataset(
    out: str | Path,
    n_videos: int = 40,
    n_frames: int = 8,
    size: int = 320,
    width: int | None = None,
    method: str = "SelfBlended",
    faces_dir: str | Path | None = None,
    attributes_csv: str | Path | None = None,
    seed: int = 0,
) -> Path:
    """Write the demo dataset under ``out`` and return ``out``; see the module docstring.

    ``n_videos`` real videos (an even number) in pairs split 60/20/20 into train/val/test,
    and one self-blended fake per real video.
    """
    from fairforensics.preprocessing.blending import self_blend

    if n_videos < 10 or n_videos % 2:
        raise DemoDataError("n_videos must be an even number >= 10 (pairs for train, val and test)")
    out = Path(out)
    photos = load_face_photos(faces_dir, attributes_csv)
    rng = np.random.default_rng(seed)
    real_dir = out / "original_sequences" / "youtube" / "c23" / "videos"
    fake_dir = out / "manipulated_sequences" / method / "c23" / "videos"
    ids = [f"{i:03d}" for i in range(n_videos)]
    lightings = ["bright" if i % 2 == 0 else "dim" for i in range(n_videos)]
    rows = []
    for i, vid in enumerate(ids):
        photo = photos[(i // 2) % len(photos)]
        video_rng = np.random.default_rng([seed, i])
        frames, landmarks = render_video(photo, lightings[i], n_frames, size, video_rng, width)
        qualities = video_rng.integers(60, 96, size=n_frames)
        write_video(real_dir / f"{vid}.mp4", frames, qualities)
        partner = ids[i ^ 1]
        fakes = [self_blend(f, lm, video_rng)[0] for f, lm in zip(frames, landmarks, strict=True)]
        write_video(
            fake_dir / f"{vid}_{partner}.mp4", fakes, video_rng.integers(60, 96, size=n_frames)
        )
        rows.append(
            {"identity": vid, "lighting": lightings[i], "photo": photo.name, **photo.attributes}
        )
        log.info("demo video %s (%s, %s) written", vid, photo.name, lightings[i])
    pairs = [[ids[i], ids[i + 1]] for i in range(0, n_videos, 2)]
    order = rng.permutation(len(pairs))
    n_test = max(1, round(0.2 * len(pairs)))
    n_val = max(1, round(0.2 * len(pairs)))
    splits = {
        "test": [pairs[k] for k in order[:n_test]],
        "val": [pairs[k] for k in order[n_test : n_test + n_val]],
        "train": [pairs[k] for k in order[n_test + n_val :]],
    }
    for name, split in splits.items():
        write_json(out / "splits" / f"{name}.json", split, indent=None)
    columns = ["identity", *sorted({k for r in rows for k in r} - {"identity"})]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(out / "attributes.csv", buffer.getvalue())
    return out
