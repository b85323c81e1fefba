"""SLADD's forgery synthesis on images (Chen et al., CVPR 2022; DeepfakeBench v2
``training/detectors/utils/sladd_api.py``): paste a region of a fake face into a real one, as the
adversarial synthesiser chose it.

The synthesiser picks, per real/fake pair:

* a **region** (10): left eye, right eye, both eyes, nose, mouth, nose + left eye, nose + right eye,
  nose + both eyes, nose + mouth, eyes + nose + mouth. Each is a thick line between the five key
  points (eye centres and corners, nose tip, mouth corners) of the *fake* face, dilated by a
  quarter (eyes alone: the whole; mouth: a third) of the key-point distance, then deformed by a
  random piecewise-linear warp of a 5 x 5 grid (std 10 pixels at 256 x 256);
* a **blending type** (4): 0 feathered alpha blending (feather 0-20% of the region's size),
  1 Poisson blending (``cv2.seamlessClone``), 2 copying with the magnitude ``mag``
  (``fake * mag + real * (1 - mag)`` inside the region), 3 no blending (the real face stays real);
* a **magnitude** ``mag`` in (0, 1) for type 2.

Before blending the region mask is eroded or dilated (p 0.3 each, kernel 3-19) and blurred
(p 0.9, kernel 1-17), and the fake's colours are matched to the real face by one of four
transfers chosen at random: Reinhard in Lab over the masked images (``rct-m``), a shift of the
masked means (``rct-fs``), a shift of the mean of the whole masked image (``avg-align``), and
faceswap's blur-ratio correction scaled by the eye distance (``faceswap``). Sizes are
DeepfakeBench's at 256 x 256 and scale with the image.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
from scipy.ndimage import binary_dilation

REGIONS = 10
TYPES = ("alpha", "poisson", "copy", "none")
COLOUR_MODES = ("rct-m", "rct-fs", "avg-align", "faceswap")
REFERENCE_SIZE = 256


def five_keypoints(landmarks: np.ndarray) -> np.ndarray:
    """Int [9, 2]: eye centres, nose tip, mouth corners, then the four eye corners (dlib 68)."""
    p = np.asarray(landmarks, dtype=np.float64)
    points = [
        (p[36] + p[39]) / 2,
        (p[42] + p[45]) / 2,
        p[33],
        p[48],
        p[54],
        p[36],
        p[39],
        p[42],
        p[45],
    ]
    return np.stack(points).astype(np.int32)


def _line(shape: tuple[int, int], a: np.ndarray, b: np.ndarray, dilation: int) -> np.ndarray:
    mask = np.zeros(shape, dtype=np.uint8)
    cv2.line(mask, (int(a[0]), int(a[1])), (int(b[0]), int(b[1])), 1, thickness=2)
    if dilation > 0:
        return binary_dilation(mask, iterations=dilation).astype(np.float32)
    return mask.astype(np.float32)


def _eyes(shape: tuple[int, int], k: np.ndarray, which: str) -> np.ndarray:
    a, b = {"l": (k[5], k[6]), "r": (k[7], k[8]), "b": (k[0], k[1])}[which]
    dilation = int(math.dist(a, b) // 4)
    return _line(shape, a, b, dilation if which == "b" else dilation * 4)


def _nose(shape: tuple[int, int], k: np.ndarray) -> np.ndarray:
    between = ((k[0] + k[1]) / 2).astype(np.int32)
    return _line(shape, k[2], between, int(math.dist(k[0], k[1]) // 4))


def _mouth(shape: tuple[int, int], k: np.ndarray) -> np.ndarray:
    return _line(shape, k[3], k[4], int(math.dist(k[3], k[4]) // 3))


def region_mask(shape: tuple[int, int], landmarks: np.ndarray, region: int) -> np.ndarray:
    """Binary-valued float mask (sums of parts may reach 2 or 3) of ``region`` 0..9."""
    k = five_keypoints(landmarks)
    parts = {
        0: lambda: _eyes(shape, k, "l"),
        1: lambda: _eyes(shape, k, "r"),
        2: lambda: _eyes(shape, k, "b"),
        3: lambda: _nose(shape, k),
        4: lambda: _mouth(shape, k),
        5: lambda: _nose(shape, k) + _eyes(shape, k, "l"),
        6: lambda: _nose(shape, k) + _eyes(shape, k, "r"),
        7: lambda: _nose(shape, k) + _eyes(shape, k, "b"),
        8: lambda: _nose(shape, k) + _mouth(shape, k),
        9: lambda: _eyes(shape, k, "b") + _nose(shape, k) + _mouth(shape, k),
    }
    if region not in parts:
        raise ValueError(f"region must be in 0..{REGIONS - 1}, got {region}")
    return parts[region]()


def random_deform(
    mask: np.ndarray, rng: np.random.Generator, grid: int = 5, std: float = 10.0
) -> np.ndarray:
    """The mask warped by random offsets (std ``std`` pixels) of a ``grid`` x ``grid`` lattice,
    linearly interpolated in between, and kept inside the original mask."""
    h, w = mask.shape
    offsets = rng.normal(0.0, std * h / REFERENCE_SIZE, size=(2, grid, grid)).astype(np.float32)
    dx = cv2.resize(offsets[0], (w, h), interpolation=cv2.INTER_LINEAR)
    dy = cv2.resize(offsets[1], (w, h), interpolation=cv2.INTER_LINEAR)
    xs, ys = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    warped = cv2.remap(mask.astype(np.float32), xs + dx, ys + dy, cv2.INTER_LINEAR)
    return cv2.GaussianBlur(warped * mask, (5, 5), 3)


def postprocess_mask(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """0/1 uint8 mask randomly eroded or dilated (p 0.3 each) and blurred (p 0.9)."""
    mask = (mask > 0).astype(np.uint8)
    k = mask.shape[0] / REFERENCE_SIZE
    p = rng.random()
    if p < 0.6:
        size = max(1, int(round((2 * rng.integers(1, 10) + 1) * k)) | 1)
        op = cv2.erode if p < 0.3 else cv2.dilate
        mask = op(mask, np.ones((size, size), np.uint8))
    if rng.random() < 0.9:
        size = max(1, int(round((2 * rng.integers(1, 10) - 1) * k)) | 1)
        mask = cv2.GaussianBlur(mask, (size, size), 0)
    return mask


def _scale_lab(channel: np.ndarray) -> np.ndarray:
    lo, hi = float(channel.min()), float(channel.max())
    low, high = max(lo, 0.0), min(hi, 255.0)
    if lo < low or hi > high:
        return (high - low) * (channel - lo) / max(hi - lo, 1e-6) + low
    return channel


def transfer_colours(
    mode: str, fake: np.ndarray, real: np.ndarray, mask: np.ndarray, landmarks: np.ndarray
) -> np.ndarray:
    """``fake`` (uint8 RGB) with the colours of ``real`` by ``mode`` (:data:`COLOUR_MODES`);
    ``mask`` is 0/1, ``landmarks`` the real face's 68 points (for ``faceswap``)."""
    m = (mask > 0).astype(np.float32)[..., None]
    if mode == "rct-m":
        src = cv2.cvtColor(real, cv2.COLOR_RGB2LAB).astype(np.float32)
        tgt = cv2.cvtColor(fake, cv2.COLOR_RGB2LAB).astype(np.float32)
        s_mean, s_std = (src * m).reshape(-1, 3).mean(0), (src * m).reshape(-1, 3).std(0)
        t_mean, t_std = (tgt * m).reshape(-1, 3).mean(0), (tgt * m).reshape(-1, 3).std(0)
        out = (tgt - t_mean) * (s_std / np.maximum(t_std, 1e-6)) + s_mean
        out = np.stack([_scale_lab(out[..., c]) for c in range(3)], axis=-1)
        return cv2.cvtColor(out.astype(np.uint8), cv2.COLOR_LAB2RGB)
    if mode == "rct-fs":
        inside = mask > 0
        out = fake.copy()
        if inside.any():
            shift = real[inside].mean(0) - fake[inside].astype(np.float64).mean(0)
            out[inside] = np.clip(fake[inside] + shift, 0, 255).astype(np.uint8)
        return out
    if mode == "avg-align":
        new, old = fake.astype(np.float32) / 255 * m, real.astype(np.float32) / 255 * m
        shift = old.reshape(-1, 3).mean(0) - new.reshape(-1, 3).mean(0)
        return (np.clip(new + shift, 0, 1) * 255).astype(np.uint8)
    if mode == "faceswap":
        cut = (mask > 0).astype(np.uint8)
        real_m, fake_m = real * cut[..., None], fake * cut[..., None]
        p = np.asarray(landmarks, dtype=np.float64)
        blur = int(0.75 * np.linalg.norm(p[42:48].mean(0) - p[36:42].mean(0))) | 1
        real_b = cv2.GaussianBlur(real_m, (blur, blur), 0).astype(np.float64)
        fake_b = cv2.GaussianBlur(fake_m, (blur, blur), 0).astype(np.float64)
        fake_b += 128 * (fake_b <= 1)
        return np.clip(fake_m * real_b / fake_b, 0, 255).astype(np.uint8)
    raise ValueError(f"unknown colour transfer {mode!r}; known: {', '.join(COLOUR_MODES)}")


def feather_blend(src: np.ndarray, dst: np.ndarray, mask: np.ndarray, feather: float) -> np.ndarray:
    """faceswap's ``blendImages``: inside the mask, ``src`` weighted by the distance to the mask's
    hull over ``feather`` times its size (clipped to 1)."""
    ys, xs = np.nonzero(mask)
    points = np.stack([xs, ys], axis=1).astype(np.int32)
    size = float(np.max(points.max(0) - points.min(0)))
    amount = max(feather * size, 1e-6)
    hull = cv2.convexHull(points)
    dist = np.array([cv2.pointPolygonTest(hull, (float(x), float(y)), True) for x, y in points])
    weight = np.clip(dist / amount, 0, 1)[:, None]
    out = dst.copy()
    out[ys, xs] = (weight * src[ys, xs] + (1 - weight) * dst[ys, xs]).astype(np.uint8)
    return out


def synthesize(
    real: np.ndarray,
    real_landmarks: np.ndarray,
    fake: np.ndarray,
    fake_landmarks: np.ndarray,
    region: int,
    kind: int,
    mag: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """The real face with a region of the fake pasted in: ``(uint8 image, 0/1 uint8 mask)``;
    ``kind`` is 0-2 (:data:`TYPES`). A region too small to blend leaves the real face as it is."""
    h, w = real.shape[:2]
    region_m = random_deform(region_mask((h, w), fake_landmarks, region), rng)
    mask = postprocess_mask(region_m, rng)
    mode = COLOUR_MODES[int(rng.integers(len(COLOUR_MODES)))]
    source = transfer_colours(mode, fake, real, mask, real_landmarks)
    if mask.mean() < 0.005 or source.max() == 0:
        return real.copy(), mask
    if kind == 0:
        return feather_blend(source, real, mask, 0.2 * float(rng.random())), mask
    if kind == 1:
        x, y, bw, bh = cv2.boundingRect(mask * 255)
        try:
            return cv2.seamlessClone(
                source, real, mask * 255, (x + bw // 2, y + bh // 2), cv2.NORMAL_CLONE
            ), mask
        except cv2.error:  # a region touching the border: OpenCV cannot clone it
            return feather_blend(source, real, mask, 0.0), mask
    m = mask.astype(np.float32)[..., None]
    out = source * m * mag + real * (1 - m) + real * m * (1 - mag)
    return np.clip(out, 0, 255).astype(np.uint8), mask
