"""Makeup regions drawn from dlib's 68 facial landmarks.

Paper 000 (metamorphic fairness testing), section "makeup" / Figure 5: the landmark coordinates
of a face region are taken by their indices, the discrete points are interpolated into a smooth
boundary line, and the interior of the boundary is filled. Here the boundaries are cubic
B-splines through the landmarks (``scipy.interpolate.splprep`` with ``s=0``: the curve passes
through every point), and the interior is rasterised with ``skimage.draw.polygon`` (pixel centres inside).

Regions (image coordinates; dlib's indices, "right" is the subject's right = image left):

- ``eyeliner``: a band along the upper eyelid (36-39 and 42-45), as thick as a fraction of the
  eye's width, ending in a small wing past the outer corner;
- ``eyeshadow``: between the upper eyelid and a curve part of the way up to the eyebrow
  (17-21 over the right eye, 22-26 over the left);
- ``blush``: an ellipse on each cheek, centred between the outer lower eyelid (41 / 46), the
  nose wing (31 / 35) and the jaw (2 / 14), sized by the face width (0-16);
- ``lipstick``: the outer lip polygon (48-59) minus the inner mouth (60-67).

Sizes scale with the face (inter-ocular and jaw width), so the same parameters fit any crop.

Skin sample regions (:func:`skin_regions`, for the adaptive colour): each cheek is the polygon
through jaw points 1-4 (15-12), the mouth corner 48 (54) and the nose wing 31 (35), shrunk to
60 % about its centroid (off the jaw line, the nostrils and the lips, and below where glasses
sit); the forehead is the band 6-22 % of the face width above the highest eyebrow point,
between points 19 and 24.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import interpolate
from skimage.draw import polygon as fill_polygon

COMPONENTS = ("eyeliner", "eyeshadow", "blush", "lipstick")

RIGHT_EYE_UPPER = (36, 37, 38, 39)
LEFT_EYE_UPPER = (42, 43, 44, 45)
RIGHT_BROW = (17, 18, 19, 20, 21)
LEFT_BROW = (22, 23, 24, 25, 26)
OUTER_LIP = tuple(range(48, 60))
INNER_LIP = tuple(range(60, 68))


class LandmarkError(ValueError):
    """Landmarks are missing or not a finite 68x2 array."""


def check_landmarks(landmarks: np.ndarray | None, source: str = "landmarks") -> np.ndarray:
    """A float64 (68, 2) copy of ``landmarks``; a clear error naming ``source`` otherwise."""
    if landmarks is None:
        raise LandmarkError(f"{source}: no landmarks (no face found)")
    arr = np.asarray(landmarks, dtype=np.float64)
    if arr.shape != (68, 2):
        raise LandmarkError(f"{source}: expected 68x2 dlib landmarks, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise LandmarkError(f"{source}: landmarks contain NaN or infinite values")
    return arr


def face_width(landmarks: np.ndarray) -> float:
    """Jaw width (points 0 to 16), the unit that every region size is scaled by."""
    return float(max(np.linalg.norm(landmarks[16] - landmarks[0]), 1.0))


def _dedupe(points: np.ndarray, closed: bool) -> np.ndarray:
    """Drop consecutive (and, for closed curves, first/last) duplicate points."""
    keep = np.ones(len(points), dtype=bool)
    keep[1:] = np.linalg.norm(np.diff(points, axis=0), axis=1) > 1e-6
    points = points[keep]
    if closed and len(points) > 1 and np.linalg.norm(points[0] - points[-1]) <= 1e-6:
        points = points[:-1]
    return points


def curve_samples(points: np.ndarray, closed: bool) -> int:
    """How many points to sample a spline through ``points`` at: one per 1.5 pixels, >= 16."""
    pts = np.asarray(points, dtype=np.float64)
    if closed:
        pts = np.vstack([pts, pts[:1]])
    length = float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())
    return max(16, int(np.ceil(length / 1.5)))


def spline_curve(points: np.ndarray, closed: bool, samples: int | None = None) -> np.ndarray:
    """Cubic B-spline through ``points`` sampled at ``samples`` points (``s=0``: interpolating).

    ``samples`` defaults to :func:`curve_samples` (dense enough for a smooth outline, sparse
    enough for fast filling).

    Closed curves are periodic. Fewer points than a cubic needs lower the degree; a curve
    through fewer than two distinct points is returned as those points.
    """
    pts = _dedupe(np.asarray(points, dtype=np.float64), closed)
    if len(pts) < 2:
        return pts
    if closed:
        pts = np.vstack([pts, pts[:1]])
    degree = min(3, len(pts) - 1 - int(closed))
    if degree < 1:
        return pts
    try:
        tck, _ = interpolate.splprep(pts.T, s=0, k=degree, per=int(closed))
    except (ValueError, TypeError):  # collinear or otherwise degenerate control points
        return pts
    if samples is None:
        samples = curve_samples(pts, closed=False)
    u = np.linspace(0.0, 1.0, samples, endpoint=not closed)
    return np.stack(interpolate.splev(u, tck), axis=1)


def fill_curve(shape_hw: tuple[int, int], curve: np.ndarray) -> np.ndarray:
    """Boolean mask of the interior of the closed polygon ``curve`` (x, y) in an HxW image."""
    mask = np.zeros(shape_hw, dtype=bool)
    if len(curve) >= 3:
        rr, cc = fill_polygon(curve[:, 1], curve[:, 0], shape=shape_hw)
        mask[rr, cc] = True
    return mask


def _band(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Closed outline of the area between two open curves running the same way."""
    return np.vstack([lower, upper[::-1]])


def _eyeliner(
    lm: np.ndarray, eye: Sequence[int], outer_first: bool, thickness: float
) -> np.ndarray:
    lid = spline_curve(lm[list(eye)], closed=False)
    width = np.linalg.norm(lm[eye[-1]] - lm[eye[0]])
    outer, inner = (lm[eye[0]], lm[eye[-1]]) if outer_first else (lm[eye[-1]], lm[eye[0]])
    # thickest in the middle of the lid, tapering to the corners
    t = np.linspace(0.0, 1.0, len(lid))
    taper = 0.35 + 0.65 * np.sin(np.pi * t)
    upper = lid.copy()
    upper[:, 1] -= thickness * width * taper
    direction = (outer - inner) / max(np.linalg.norm(outer - inner), 1e-6)
    wing = outer + 0.25 * width * direction + np.array([0.0, -0.12 * width])
    if outer_first:
        return np.vstack([wing, lid, upper[::-1]])
    return np.vstack([lid, wing, upper[::-1]])


def _eyeshadow(
    lm: np.ndarray, eye: Sequence[int], brow: Sequence[int], height: float
) -> np.ndarray:
    n = curve_samples(lm[list(brow)], closed=False)  # the same count pairs lid and brow points
    lid = spline_curve(lm[list(eye)], closed=False, samples=n)
    brow_curve = spline_curve(lm[list(brow)], closed=False, samples=n)
    # brows run outer->inner on the right and inner->outer on the left, like the eyes' indices
    upper = lid + height * (brow_curve - lid)
    return _band(lid, upper)


def _blush(lm: np.ndarray, eye: int, nose: int, jaw: int, mouth: int, size: float) -> np.ndarray:
    centre = (lm[eye] + lm[nose] + lm[jaw]) / 3.0
    axis = lm[eye] - lm[mouth]  # the cheek's long axis, from the mouth corner up to the eye
    axis = axis / max(np.linalg.norm(axis), 1e-6)
    normal = np.array([-axis[1], axis[0]])
    fw = face_width(lm)
    a, b = size * fw, 0.7 * size * fw
    angles = np.linspace(0.0, 2.0 * np.pi, 8, endpoint=False)
    controls = centre + np.outer(a * np.cos(angles), axis) + np.outer(b * np.sin(angles), normal)
    return spline_curve(controls, closed=True)


def region_outlines(
    landmarks: np.ndarray,
    component: str,
    *,
    eyeliner_thickness: float = 0.12,
    eyeshadow_height: float = 0.55,
    blush_size: float = 0.11,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Closed outlines (x, y) to fill, and outlines to cut out, for one makeup component.

    ``eyeliner_thickness`` is a fraction of the eye width, ``eyeshadow_height`` the fraction of
    the lid-to-brow distance covered, ``blush_size`` the ellipse's half-length as a fraction of
    the face width.
    """
    lm = check_landmarks(landmarks)
    if component == "eyeliner":
        return [
            _eyeliner(lm, RIGHT_EYE_UPPER, True, eyeliner_thickness),
            _eyeliner(lm, LEFT_EYE_UPPER, False, eyeliner_thickness),
        ], []
    if component == "eyeshadow":
        return [
            _eyeshadow(lm, RIGHT_EYE_UPPER, RIGHT_BROW, eyeshadow_height),
            _eyeshadow(lm, LEFT_EYE_UPPER, LEFT_BROW, eyeshadow_height),
        ], []
    if component == "blush":
        return [
            _blush(lm, 41, 31, 2, 48, blush_size),
            _blush(lm, 46, 35, 14, 54, blush_size),
        ], []
    if component == "lipstick":
        outer = spline_curve(lm[list(OUTER_LIP)], closed=True)
        inner = spline_curve(lm[list(INNER_LIP)], closed=True)
        return [outer], [inner]
    raise ValueError(f"unknown makeup component {component!r}; known: {', '.join(COMPONENTS)}")


def region_mask(
    shape_hw: tuple[int, int], landmarks: np.ndarray, component: str, **sizes: float
) -> np.ndarray:
    """Boolean HxW mask of one makeup component's region."""
    fill, cut = region_outlines(landmarks, component, **sizes)
    mask = np.zeros(shape_hw, dtype=bool)
    for curve in fill:
        mask |= fill_curve(shape_hw, curve)
    for curve in cut:
        mask &= ~fill_curve(shape_hw, curve)
    return mask


RIGHT_CHEEK = (1, 2, 3, 4, 48, 31)
LEFT_CHEEK = (15, 14, 13, 12, 54, 35)
CHEEK_SHRINK = 0.6
FOREHEAD_BAND = (0.06, 0.22)


def skin_regions(landmarks: np.ndarray, shape_hw: tuple[int, int]) -> list[np.ndarray]:
    """Boolean masks of the right cheek, the left cheek and the forehead (see the module doc)."""
    lm = check_landmarks(landmarks)
    masks = []
    for idx in (RIGHT_CHEEK, LEFT_CHEEK):
        pts = lm[list(idx)]
        centre = pts.mean(axis=0)
        masks.append(fill_curve(shape_hw, centre + CHEEK_SHRINK * (pts - centre)))
    fw = face_width(lm)
    top = lm[17:27, 1].min()
    x0, x1 = lm[19, 0], lm[24, 0]
    y0, y1 = top - FOREHEAD_BAND[1] * fw, top - FOREHEAD_BAND[0] * fw
    masks.append(fill_curve(shape_hw, np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])))
    return masks


def between_brows_box(
    landmarks: np.ndarray, shape_hw: tuple[int, int]
) -> tuple[int, int, int, int]:
    """The rectangle (x0, y0, x1, y1), end-exclusive, between the eyebrows (paper Figure 4).

    Horizontally between the inner brow ends (21, 22), vertically from the lower of the two
    inner brow points down to the top of the nose bridge (27); clipped to the image and at
    least one pixel in each direction.
    """
    lm = check_landmarks(landmarks)
    h, w = shape_hw
    x0, x1 = sorted((lm[21, 0], lm[22, 0]))
    y0 = max(lm[21, 1], lm[22, 1])
    y1 = lm[27, 1]
    if y1 <= y0:
        y1 = y0 + 0.25 * (x1 - x0)
    ix0, iy0 = int(np.clip(np.floor(x0), 0, w - 1)), int(np.clip(np.floor(y0), 0, h - 1))
    ix1 = int(np.clip(np.ceil(x1), ix0 + 1, w))
    iy1 = int(np.clip(np.ceil(y1), iy0 + 1, h))
    return ix0, iy0, ix1, iy1
