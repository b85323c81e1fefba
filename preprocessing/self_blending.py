"""Self-blended images as the SBI authors make them (Shiohara & Yamasaki, CVPR 2022, Sec. 3).

This is the recipe of their code (``src/utils/sbi.py`` and ``src/utils/blend.py``), which
DeepfakeBench v2 trains its ``sbi`` detector with (``training/dataset/sbi_api.py``). From one real
face and its 68 landmarks:

1. **Mask**: one of four landmark masks, drawn uniformly: DeepFaceLab's full-face mask, the
   component mask (eight convex parts), the extended mask (the component mask with the brows
   raised halfway again towards the forehead) and the convex hull of all points.
2. **Source-target augmentation** (Sec. 3.2): either the source copy or the target (the real image
   itself), with p 0.5 each, gets a colour transform (RGB shift +-20 with p 0.3, hue/saturation/
   value, brightness and contrast +-0.1) and then one frequency transform: down-scaling by 2 or 4
   (nearest down, linear up) or sharpening (alpha 0.2-0.5, lightness 0.5-1).
3. **Mask and source deformation** (Sec. 3.3): the source and the mask get a random affine
   (translation +-3 % in x and +-1.5 % in y, scale 0.95 to 1/0.95); the mask an elastic warp
   (alpha 50, sigma 7).
4. **Blend mask**: resized to a random 192-256 px side, blurred (odd kernel 5-25), cut to where
   the blur reaches its maximum (an erosion), blurred again (kernel 5-25, sigma 5-45), normalised,
   resized back, times a blend ratio from {0.25, 0.5, 0.75, 1, 1, 1}.
5. ``fake = source * M + target * (1 - M)`` (truncated to uint8), and the pair (fake, target) gets
   one shared transform: RGB shift (p 0.3), hue/saturation/value (p 0.3), brightness and contrast
   +-0.3 (p 0.3), JPEG quality 40-100 (p 0.5).

The real sample of the pair is the (possibly transformed) target, so both classes carry global
colour and frequency changes and only the blending boundary tells them apart. Differences from
the authors: their landmarks have 81 points (68 + 13 forehead points, dropped for 25 % of the
faces); dlib's 68 are used here, so the masks stop at the brows.
"""

from __future__ import annotations

from functools import cache

import albumentations as A
import cv2
import numpy as np

from fairforensics.preprocessing.albu_seed import seed_pipeline
from fairforensics.preprocessing.blending import BlendingError, _check_inputs

BLEND_RATIOS = (0.25, 0.5, 0.75, 1.0, 1.0, 1.0)
HULL_TYPES = ("dfl_full", "extended", "components", "facehull")
_COMPONENTS = (  # (point slices) of the eight convex parts of the component mask
    ((0, 9), (17, 18)),
    ((8, 17), (26, 27)),
    ((17, 20), (8, 9)),
    ((24, 27), (8, 9)),
    ((19, 25), (8, 9)),
    ((17, 22), (27, 28), (31, 36), (8, 9)),
    ((22, 27), (27, 28), (31, 36), (8, 9)),
    ((27, 31), (31, 36)),
)
_DFL_FULL = (
    ((0, 17), (48, 68), (0, 1), (8, 9), (16, 17)),
    ((27, 31), (33, 34)),
    ((17, 27), (0, 1), (27, 28), (16, 17), (33, 34)),
)


def _fill_parts(shape_hw: tuple[int, int], pts: np.ndarray, parts: tuple) -> np.ndarray:
    mask = np.zeros(shape_hw, np.float32)
    for part in parts:
        merged = np.concatenate([pts[a:b] for a, b in part])
        cv2.fillConvexPoly(mask, cv2.convexHull(merged), 1.0)
    return mask


def _raised_brows(pts: np.ndarray) -> np.ndarray:
    """The extended mask's landmarks: each brow moved up by half its distance to the eye."""
    pts = pts.copy()
    ml, mr = (pts[36] + pts[0]) // 2, (pts[16] + pts[45]) // 2
    ql, qr = (pts[36] + ml) // 2, (pts[45] + mr) // 2
    bot_l = np.stack([ql, pts[36], pts[37], pts[38], pts[39]])
    bot_r = np.stack([pts[42], pts[43], pts[44], pts[45], qr])
    top_l, top_r = pts[17:22].copy(), pts[22:27].copy()
    pts[17:22] = top_l + (top_l - bot_l) // 2
    pts[22:27] = top_r + (top_r - bot_r) // 2
    return pts


def hull_mask(shape_hw: tuple[int, int], landmarks: np.ndarray, kind: str) -> np.ndarray:
    """Float32 mask in [0, 1] of one of :data:`HULL_TYPES` from 68 landmarks (pixel x, y)."""
    pts = np.asarray(landmarks).astype(np.int32)
    if kind == "dfl_full":
        return _fill_parts(shape_hw, pts, _DFL_FULL)
    if kind == "components":
        return _fill_parts(shape_hw, pts, _COMPONENTS)
    if kind == "extended":
        return _fill_parts(shape_hw, _raised_brows(pts), _COMPONENTS)
    if kind == "facehull":
        mask = np.zeros(shape_hw, np.float32)
        cv2.fillConvexPoly(mask, cv2.convexHull(pts), 255.0, lineType=cv2.LINE_AA)
        return mask / 255.0
    raise BlendingError(f"unknown hull type {kind!r}; known: {', '.join(HULL_TYPES)}")


@cache
def _colour() -> A.Compose:
    """The colour part of the source-target augmentation."""
    return A.Compose(
        [
            A.RGBShift((-20, 20), (-20, 20), (-20, 20), p=0.3),
            A.HueSaturationValue((-0.3, 0.3), (-0.3, 0.3), (-0.3, 0.3), p=1.0),
            A.RandomBrightnessContrast((-0.1, 0.1), (-0.1, 0.1), p=1.0),
        ]
    )


@cache
def _sharpen() -> A.Compose:
    return A.Compose([A.Sharpen(alpha=(0.2, 0.5), lightness=(0.5, 1.0), p=1.0)])


@cache
def _affine() -> A.Compose:
    return A.Compose(
        [
            A.Affine(
                translate_percent={"x": (-0.03, 0.03), "y": (-0.015, 0.015)},
                scale=(0.95, 1 / 0.95),
                fit_output=False,
                p=1.0,
            )
        ]
    )


@cache
def _elastic() -> A.Compose:
    return A.Compose(
        [A.ElasticTransform(alpha=50, sigma=7, border_mode=cv2.BORDER_REFLECT_101, p=1.0)]
    )


@cache
def _pair_transform() -> A.Compose:
    """The transform shared by the fake and its real image."""
    return A.Compose(
        [
            A.RGBShift((-20, 20), (-20, 20), (-20, 20), p=0.3),
            A.HueSaturationValue((-0.3, 0.3), (-0.3, 0.3), (-0.3, 0.3), p=0.3),
            A.RandomBrightnessContrast((-0.3, 0.3), (-0.3, 0.3), p=0.3),
            A.ImageCompression(quality_range=(40, 100), p=0.5),
        ],
        additional_targets={"real": "image"},
    )


def _seeded(pipeline: A.Compose, rng: np.random.Generator) -> A.Compose:
    seed_pipeline(pipeline, int(rng.integers(2**31 - 1)))
    return pipeline


def source_target_augment(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Colour transform, then down-scaling by 2 or 4 or sharpening (p 0.5 each)."""
    out = _seeded(_colour(), rng)(image=image)["image"]
    if rng.random() < 0.5:
        h, w = out.shape[:2]
        r = int(rng.choice((2, 4)))
        small = cv2.resize(out, (int(w / r), int(h / r)), interpolation=cv2.INTER_NEAREST)
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)
    return _seeded(_sharpen(), rng)(image=out)["image"]


def blend_mask(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The authors' ``get_blend_mask``: resize, blur, cut below the maximum, blur, resize back."""
    h, w = mask.shape
    size_h, size_w = (int(v) for v in rng.integers(192, 257, size=2))
    m = cv2.resize(mask, (size_w, size_h))
    k1, k2 = (int(v) for v in rng.choice(np.arange(5, 26, 2), size=2))
    m = cv2.GaussianBlur(m, (k1, k1), 0)
    if m.max() <= 0:
        raise BlendingError("sbi_paper: the face mask is empty (landmarks outside the image?)")
    m = m / m.max()
    m[m < 1] = 0
    m = cv2.GaussianBlur(m, (k2, k2), int(rng.integers(5, 46)))
    m = m / m.max()
    return cv2.resize(m, (w, h)).astype(np.float32)


def deform_source(
    source: np.ndarray, mask: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Step 3: one random affine of the source and the mask, then an elastic warp of the mask."""
    moved = _seeded(_affine(), rng)(image=source, mask=mask)
    source = moved["image"]
    return source, _seeded(_elastic(), rng)(image=source, mask=moved["mask"])["mask"]


def pair_transform(
    fake: np.ndarray, real: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Step 5's transform, shared by the fake and its real image: (fake, real)."""
    pair = _seeded(_pair_transform(), rng)(image=fake, real=real)
    return pair["image"], pair["real"]


def self_blend_pair(
    image: np.ndarray, landmarks: np.ndarray, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """One SBI pair from a real face: ``{"image": fake, "mask": M, "real": target}`` (uint8 RGB
    images of the input's size, float32 mask in [0, 1] including the blend ratio)."""
    pts = _check_inputs(image, landmarks)
    mask = hull_mask(image.shape[:2], pts, str(rng.choice(HULL_TYPES)))
    source, target = image.copy(), image.copy()
    if rng.random() < 0.5:
        source = source_target_augment(source, rng)
    else:
        target = source_target_augment(target, rng)
    source, mask = deform_source(source, mask, rng)
    m = blend_mask(mask, rng) * float(rng.choice(BLEND_RATIOS))
    blended = m[..., None] * source.astype(np.float64) + (1 - m[..., None]) * target
    fake, real = pair_transform(blended.astype(np.uint8), target, rng)
    return {"image": fake, "mask": m, "real": real}
