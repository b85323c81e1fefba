"""Online blended-fake generators made from real faces and their 68 dlib landmarks.

Three generators share one mask pipeline (landmark convex hull -> random deformation -> erosion
-> Gaussian smoothing, so a mask is non-zero only inside the face hull):

* ``sbi``: Self-Blended Images (Shiohara & Yamasaki, CVPR 2022, Sec. 3.2-3.3): a copy of the
  face gets the source-target augmentation (colour: RGB shift, hue/saturation/value, brightness
  and contrast; frequency: down-scaling or sharpening; then a slight resize and translation) and
  is blended back into the original with a deformed, blurred hull mask times a random blend
  ratio in {0.25, 0.5, 0.75, 1, 1, 1}.
* ``fwa``: face-warping artifacts (Li & Lyu, CVPRW 2019, Sec. 3): the face is aligned (eyes
  level), shrunk to a random scale in {0.2, ..., 0.8}, Gaussian blurred, resized back, warped to
  the original pose and blended into the landmark hull with a smoothed mask.
* ``xray``: Face X-ray (Li et al., CVPR 2020, Sec. 3.3): a *different* real face with the nearest
  landmarks (:class:`NearestLandmarks`) is warped onto this one, colour corrected inside the mask
  and blended with a randomly deformed convex-hull mask ``M``; the X-ray target is
  ``B = 4 * M * (1 - M)``.
* ``i2g``: PCL-I2G's inconsistency image (:mod:`preprocessing.i2g`, with DeepfakeBench's own
  masks rather than the pipeline above): the nearest-landmark real face of another video pasted,
  unaligned, into a random face-region hull; its soft mask is the consistency target.

* ``sbi_paper``: SBI as its authors' code makes it (:mod:`preprocessing.self_blending`; the ``sbi``
  detector's training data): four hull types, the augmentation on the source or the target,
  affine + elastic mask deformation, and one colour/JPEG transform shared by the pair, whose real
  image (the possibly transformed target) comes back as ``"real"``.

The trainer calls :func:`generate` (and :func:`needs_partner` to know whether to load a partner).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import albumentations as A
import cv2
import numpy as np

from fairforensics.configs.filemode import atomic_path
from fairforensics.preprocessing.albu_seed import seed_pipeline
from fairforensics.preprocessing.index import read_index

log = logging.getLogger(__name__)

GENERATORS = ("sbi", "fwa", "xray", "sbi_paper", "i2g")
SBI_BLEND_RATIOS = (0.25, 0.5, 0.75, 1.0, 1.0, 1.0)
FWA_SCALES = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
_LEFT_EYE = slice(36, 42)
_RIGHT_EYE = slice(42, 48)


class BlendingError(ValueError):
    """Bad input to a blending generator (wrong image or landmark shape, unknown generator)."""


def _check_inputs(image: np.ndarray, landmarks: np.ndarray, what: str = "image") -> np.ndarray:
    if (
        not isinstance(image, np.ndarray)
        or image.dtype != np.uint8
        or image.ndim != 3
        or image.shape[2] != 3
    ):
        got = f"{getattr(image, 'dtype', type(image).__name__)} {getattr(image, 'shape', '')}"
        raise BlendingError(f"{what}: expected a uint8 HxWx3 RGB array, got {got}")
    pts = np.asarray(landmarks, dtype=np.float32)
    if pts.shape != (68, 2) or not np.isfinite(pts).all():
        raise BlendingError(f"{what}: expected finite landmarks of shape (68, 2), got {pts.shape}")
    return pts


def landmark_hull_mask(shape_hw: Sequence[int], landmarks: np.ndarray) -> np.ndarray:
    """Float32 HxW mask, 1 inside the convex hull of ``landmarks`` (pixel x, y) and 0 outside."""
    h, w = int(shape_hw[0]), int(shape_hw[1])
    pts = np.asarray(landmarks, dtype=np.float32).reshape(-1, 2)
    if len(pts) < 3 or not np.isfinite(pts).all():
        raise BlendingError(f"landmark_hull_mask: need >= 3 finite points, got shape {pts.shape}")
    mask = np.zeros((h, w), dtype=np.uint8)
    hull = cv2.convexHull(np.round(pts).astype(np.int32))
    cv2.fillConvexPoly(mask, hull, 1)
    return mask.astype(np.float32)


def _elastic_deform(mask: np.ndarray, rng: np.random.Generator, strength: float) -> np.ndarray:
    """Warp a binary mask with a smooth random displacement field (the random mask deformation)."""
    h, w = mask.shape
    grid = 4
    coarse = rng.uniform(-1.0, 1.0, size=(2, grid, grid)).astype(np.float32) * strength * min(h, w)
    dx = cv2.resize(coarse[0], (w, h), interpolation=cv2.INTER_CUBIC)
    dy = cv2.resize(coarse[1], (w, h), interpolation=cv2.INTER_CUBIC)
    xs, ys = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    warped = cv2.remap(
        mask, xs + dx, ys + dy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
    )
    return (warped > 0.5).astype(np.float32)


def _odd(n: float) -> int:
    n = max(3, int(round(n)))
    return n if n % 2 else n + 1


def random_blend_mask(
    shape_hw: Sequence[int], landmarks: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Deformed, smoothed convex-hull mask in [0, 1], zero outside the landmark hull.

    The hull is deformed (SBI Sec. 3.3 / Face X-ray Sec. 3.3), kept inside the hull, eroded by
    the blur radius and then Gaussian blurred with a random kernel, so the soft edge never leaves
    the hull and the mask still reaches 1 in the face centre.
    """
    hull = landmark_hull_mask(shape_hw, landmarks)
    if hull.sum() == 0:
        raise BlendingError("random_blend_mask: the landmark hull is empty (degenerate landmarks)")
    size = float(np.sqrt(hull.sum()))  # side of a square with the hull's area
    mask = _elastic_deform(hull, rng, strength=float(rng.uniform(0.0, 0.04))) * hull
    if mask.sum() < 0.25 * hull.sum():
        mask = hull
    kernel = _odd(size * rng.uniform(0.08, 0.25))
    eroded = cv2.erode(mask, np.ones((kernel, kernel), np.uint8), borderValue=0)
    if eroded.sum() == 0:  # tiny face: erode less
        kernel = 3
        eroded = cv2.erode(mask, np.ones((kernel, kernel), np.uint8), borderValue=0)
    sigma = kernel / 4.0
    soft = cv2.GaussianBlur(eroded, (kernel, kernel), sigmaX=sigma, borderType=cv2.BORDER_CONSTANT)
    peak = float(soft.max())
    if peak <= 0:
        raise BlendingError("random_blend_mask: the face hull is too small to blend into")
    return np.clip(soft / peak, 0.0, 1.0).astype(np.float32) * hull


def _blend(source: np.ndarray, target: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``source * M + target * (1 - M)``; pixels with ``M == 0`` are exactly ``target``."""
    m = mask[..., None]
    out = source.astype(np.float32) * m + target.astype(np.float32) * (1.0 - m)
    out = np.clip(np.round(out), 0, 255).astype(np.uint8)
    out[mask == 0] = target[mask == 0]
    return out


@cache
def _sbi_source_transform() -> A.Compose:
    """SBI source-target augmentation (Sec. 3.2, official hyper-parameters)."""
    return A.Compose(
        [
            A.Compose(
                [
                    A.RGBShift((-20, 20), (-20, 20), (-20, 20), p=0.3),
                    A.HueSaturationValue((-0.3, 0.3), (-0.3, 0.3), (-0.3, 0.3), p=1.0),
                    A.RandomBrightnessContrast((-0.1, 0.1), (-0.1, 0.1), p=1.0),
                ],
                p=1.0,
            ),
            A.OneOf(
                [
                    A.Downscale(scale_range=(0.25, 0.5), p=1.0),
                    A.Sharpen((0.2, 0.5), (0.5, 1.0), p=1.0),
                ],
                p=1.0,
            ),
        ]
    )


def _sbi_resize_translate(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """SBI's slight resize (scale in [0.95, 1/0.95]) and translation (3% x, 1.5% y)."""
    h, w = image.shape[:2]
    s = float(rng.uniform(0.95, 1 / 0.95))
    tx = float(rng.uniform(-0.03, 0.03)) * w
    ty = float(rng.uniform(-0.015, 0.015)) * h
    cx, cy = w / 2.0, h / 2.0
    matrix = np.array([[s, 0, (1 - s) * cx + tx], [0, s, (1 - s) * cy + ty]], dtype=np.float32)
    return cv2.warpAffine(
        image, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
    )


def self_blend(
    image: np.ndarray, landmarks: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Self-Blended Image of a real face (SBI, CVPR 2022): ``(blended uint8 image, float32 mask)``.

    The returned mask already includes the blend ratio, so ``blended = src * M + img * (1 - M)``.
    """
    pts = _check_inputs(image, landmarks)
    transform = _sbi_source_transform()
    seed_pipeline(transform, int(rng.integers(2**31 - 1)))
    source = transform(image=image)["image"]
    source = _sbi_resize_translate(source, rng)
    mask = random_blend_mask(image.shape[:2], pts, rng) * float(rng.choice(SBI_BLEND_RATIOS))
    return _blend(source, image, mask), mask.astype(np.float32)


def _eye_level_matrix(landmarks: np.ndarray) -> np.ndarray:
    """2x3 rotation about the face centre that makes the eye line horizontal (FWA alignment)."""
    left, right = landmarks[_LEFT_EYE].mean(0), landmarks[_RIGHT_EYE].mean(0)
    angle = float(np.degrees(np.arctan2(right[1] - left[1], right[0] - left[0])))
    centre = landmarks.mean(0)
    return cv2.getRotationMatrix2D((float(centre[0]), float(centre[1])), angle, 1.0)


def face_warp(
    image: np.ndarray, landmarks: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """FWA fake of a real face (Li & Lyu 2019, Sec. 3): ``(uint8 image, float32 mask)``."""
    pts = _check_inputs(image, landmarks)
    h, w = image.shape[:2]
    rot = _eye_level_matrix(pts)
    aligned = cv2.warpAffine(
        image, rot, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
    )
    aligned_pts = pts @ rot[:, :2].T + rot[:, 2]
    x0, y0 = np.floor(aligned_pts.min(0)).astype(int)
    x1, y1 = np.ceil(aligned_pts.max(0)).astype(int) + 1
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
    if x1 - x0 < 4 or y1 - y0 < 4:
        raise BlendingError(f"face_warp: face box {x1 - x0}x{y1 - y0} px is too small")
    face = aligned[y0:y1, x0:x1]
    scale = float(rng.choice(FWA_SCALES))
    small = cv2.resize(
        face,
        (max(1, round(face.shape[1] * scale)), max(1, round(face.shape[0] * scale))),
        interpolation=cv2.INTER_AREA,
    )
    small = cv2.GaussianBlur(small, (_odd(rng.choice((3, 5, 7))), _odd(rng.choice((3, 5, 7)))), 0)
    warped = aligned.copy()
    warped[y0:y1, x0:x1] = cv2.resize(
        small, (face.shape[1], face.shape[0]), interpolation=cv2.INTER_LINEAR
    )
    back = cv2.invertAffineTransform(rot)
    source = cv2.warpAffine(
        warped, back, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
    )
    mask = random_blend_mask((h, w), pts, rng)
    return _blend(source, image, mask), mask


def color_transfer(source: np.ndarray, target: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Match the per-channel Lab mean/std of ``source`` to ``target`` inside ``mask`` (Face X-ray)."""
    region = mask > 0
    if region.sum() < 2:
        return source
    src = cv2.cvtColor(source, cv2.COLOR_RGB2LAB).astype(np.float32)
    tgt = cv2.cvtColor(target, cv2.COLOR_RGB2LAB).astype(np.float32)
    s_mean, s_std = src[region].mean(0), src[region].std(0) + 1e-6
    t_mean, t_std = tgt[region].mean(0), tgt[region].std(0)
    out = (src - s_mean) / s_std * t_std + t_mean
    return cv2.cvtColor(np.clip(out, 0, 255).astype(np.uint8), cv2.COLOR_LAB2RGB)


def xray_blend(
    image: np.ndarray,
    landmarks: np.ndarray,
    partner: tuple[np.ndarray, np.ndarray],
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Face X-ray blended image (Li et al. 2020, Sec. 3.3): ``(uint8 image, mask M, x-ray B)``.

    ``partner`` is ``(image, landmarks)`` of a different real face with similar landmarks; it is
    warped onto ``image`` by the similarity transform between the two landmark sets.
    """
    pts = _check_inputs(image, landmarks)
    if partner is None or len(partner) != 2:
        raise BlendingError("xray: needs partner=(image, landmarks) of a different real face")
    p_img, p_pts = partner
    p_pts = _check_inputs(p_img, p_pts, what="xray partner")
    h, w = image.shape[:2]
    matrix, _ = cv2.estimateAffinePartial2D(p_pts, pts, method=cv2.LMEDS)
    if matrix is None:
        raise BlendingError("xray: cannot align the partner face (degenerate landmarks)")
    source = cv2.warpAffine(
        p_img, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT_101
    )
    mask = random_blend_mask((h, w), pts, rng)
    source = color_transfer(source, image, mask)
    blended = _blend(source, image, mask)
    return blended, mask, (4.0 * mask * (1.0 - mask)).astype(np.float32)


def needs_partner(name: str) -> bool:
    """Whether generator ``name`` needs a second real face (``partner``)."""
    if name not in GENERATORS:
        raise BlendingError(f"unknown blending generator {name!r}; known: {', '.join(GENERATORS)}")
    return name in ("xray", "i2g")


def generate(
    name: str,
    image: np.ndarray,
    landmarks: np.ndarray,
    rng: np.random.Generator,
    partner: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """One blended fake: ``{"image": uint8, "mask": float32 HxW}`` plus ``"xray"`` for ``xray``
    and ``"real"`` (the real image of the pair, to use instead of ``image``) for ``sbi_paper`` and
    ``i2g``."""
    if name == "sbi_paper":
        from fairforensics.preprocessing.self_blending import self_blend_pair

        return self_blend_pair(image, landmarks, rng)
    if name == "i2g":
        from fairforensics.preprocessing.i2g import i2g_pair  # it imports this module

        if partner is None or len(partner) != 2:
            raise BlendingError("i2g: needs partner=(image, landmarks) of a different real face")
        return i2g_pair(image, landmarks, partner, rng)
    if needs_partner(name):
        blended, mask, xray = xray_blend(image, landmarks, partner, rng)  # type: ignore[arg-type]
        return {"image": blended, "mask": mask, "xray": xray}
    fn = self_blend if name == "sbi" else face_warp
    blended, mask = fn(image, landmarks, rng)
    return {"image": blended, "mask": mask}


# ----------------------------------------------------------------------------- partner table


@dataclass(frozen=True)
class Partner:
    """A candidate partner frame: its video key and the frame/landmark paths (absolute)."""

    video: str
    frame: Path
    landmarks: Path


def _normalise(landmarks: np.ndarray) -> np.ndarray:
    """Landmarks centred and scaled to unit RMS radius, flattened (pose-shape descriptor)."""
    pts = landmarks.reshape(-1, 68, 2).astype(np.float64)
    pts = pts - pts.mean(1, keepdims=True)
    scale = np.sqrt((pts**2).sum(2).mean(1))[:, None, None] + 1e-9
    return (pts / scale).reshape(len(pts), -1)


class NearestLandmarks:
    """Face X-ray partner table: for each real training frame, its k nearest-landmark frames of
    *other* videos (Li et al. 2020, Sec. 3.3: "search ... the one with the nearest landmarks,
    then randomly pick one of the 100 nearest"). Built once from an index, cached on disk.
    """

    def __init__(self, entries: list[Partner], landmarks: np.ndarray, table: np.ndarray) -> None:
        if len(entries) != len(landmarks) or len(entries) != len(table):
            raise BlendingError("NearestLandmarks: entries, landmarks and table lengths differ")
        self.entries = entries
        self.landmarks = landmarks
        self.table = table
        self._by_frame = {str(e.frame): i for i, e in enumerate(entries)}

    @classmethod
    def build(cls, entries: list[Partner], landmarks: np.ndarray, k: int = 100) -> NearestLandmarks:
        """Compute the k-nearest table (Euclidean on normalised landmarks), excluding same video."""
        from sklearn.neighbors import NearestNeighbors

        videos = np.array([e.video for e in entries])
        n_videos = len(set(videos.tolist()))
        if n_videos < 2:
            raise BlendingError("NearestLandmarks: needs real frames from at least 2 videos")
        feats = _normalise(landmarks)
        per_video = max(np.unique(videos, return_counts=True)[1])
        n_query = min(len(entries), k + int(per_video))
        _, idx = NearestNeighbors(n_neighbors=n_query).fit(feats).kneighbors(feats)
        k_eff = min(k, len(entries) - int(per_video))
        table = np.full((len(entries), max(k_eff, 1)), -1, dtype=np.int64)
        for i, row in enumerate(idx):
            others = row[videos[row] != videos[i]][: table.shape[1]]
            table[i, : len(others)] = others
        return cls(entries, landmarks.astype(np.float32), table)

    @classmethod
    def from_index(
        cls, index: Any, split: str = "train", k: int = 100, cache_dir: str | Path | None = None
    ) -> NearestLandmarks:
        """Table over the real videos of ``split`` of a DatasetIndex (or index path), cached.

        The cache file ``<cache_dir or index folder>/.nearest_landmarks_<hash>.npz`` is keyed by
        the landmark paths, their sizes and mtimes, and ``k``; unreadable landmark files are logged
        and skipped.
        """
        if not hasattr(index, "videos"):
            index = read_index(index)
        entries: list[Partner] = []
        for video in index.split(split):
            if video.label != 0:
                continue
            if not video.landmarks:
                log.warning("NearestLandmarks: video %s has no landmarks; skipped", video.id)
                continue
            for frame, lm in zip(video.frames, video.landmarks, strict=True):
                entries.append(
                    Partner(f"{video.method}/{video.id}", index.resolve(frame), index.resolve(lm))
                )
        stamp = hashlib.sha256(
            json.dumps([k, *[_file_stamp(e.landmarks) for e in entries]]).encode()
        ).hexdigest()[:16]
        cache_root = Path(cache_dir) if cache_dir is not None else Path(index.root)
        cache_file = cache_root / f".nearest_landmarks_{stamp}.npz"
        if cache_file.is_file():
            try:
                data = np.load(cache_file, allow_pickle=False)
                keep = data["keep"]
                return cls([entries[i] for i in keep], data["landmarks"], data["table"])
            except (OSError, KeyError, ValueError) as exc:
                log.warning(
                    "NearestLandmarks: cache %s unreadable (%s); rebuilding", cache_file, exc
                )
        points, keep = [], []
        for i, entry in enumerate(entries):
            try:
                pts = np.load(entry.landmarks, allow_pickle=False).astype(np.float32)
            except (OSError, ValueError) as exc:
                log.warning("NearestLandmarks: cannot read %s (%s); skipped", entry.landmarks, exc)
                continue
            if pts.shape != (68, 2) or not np.isfinite(pts).all():
                log.warning(
                    "NearestLandmarks: %s has shape %s, not (68, 2); skipped",
                    entry.landmarks,
                    pts.shape,
                )
                continue
            points.append(pts)
            keep.append(i)
        if not points:
            raise BlendingError(
                f"NearestLandmarks: no readable landmarks in split {split!r} of {index.dataset}"
            )
        table = cls.build([entries[i] for i in keep], np.stack(points), k=k)
        try:
            with atomic_path(cache_file, suffix=".npz") as tmp:
                np.savez(
                    tmp,
                    keep=np.asarray(keep, dtype=np.int64),
                    landmarks=table.landmarks,
                    table=table.table,
                )
        except OSError as exc:  # e.g. a read-only dataset folder: keep the table in memory
            log.warning("NearestLandmarks: cannot write cache %s (%s); not cached", cache_file, exc)
        return table

    def __len__(self) -> int:
        return len(self.entries)

    def sample(self, frame: str | Path, rng: np.random.Generator) -> Partner:
        """A random partner among the k nearest of a table frame (by its absolute frame path)."""
        i = self._by_frame.get(str(frame))
        if i is None:
            raise KeyError(
                f"NearestLandmarks: frame {frame} is not a real training frame of the table"
            )
        row = self.table[i][self.table[i] >= 0]
        if len(row) == 0:
            raise BlendingError(
                f"NearestLandmarks: frame {frame} has no partner from another video"
            )
        return self.entries[int(rng.choice(row))]

    def query(
        self,
        landmarks: np.ndarray,
        rng: np.random.Generator,
        k: int = 100,
        exclude_video: str | None = None,
    ) -> Partner:
        """A random partner among the k frames nearest to arbitrary ``landmarks``."""
        feats = _normalise(self.landmarks)
        dist = np.linalg.norm(feats - _normalise(np.asarray(landmarks))[0], axis=1)
        order = [i for i in np.argsort(dist) if self.entries[i].video != exclude_video][:k]
        if not order:
            raise BlendingError("NearestLandmarks: no partner outside the excluded video")
        return self.entries[int(rng.choice(order))]


def _file_stamp(path: Path) -> list[Any]:
    try:
        st = path.stat()
        return [str(path), st.st_size, st.st_mtime_ns]
    except OSError:
        return [str(path), -1, -1]
