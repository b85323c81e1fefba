"""Landmark-driven digital makeup (paper 000, "makeup" section, Figures 3-5).

Each component's region (see :mod:`fairness.metamorphic.regions`) is filled, softened with a
Gaussian filter, scaled so that its peak is 1 (a thin eyeliner keeps its full opacity along its
centre line instead of fading to a grey line), and alpha-blended over the face with its colour::

    soft   = gaussian_filter(region, sigma = blur * face_width);  soft /= soft.max()
    weight = min(1, alpha * scale * strength[component]) * soft
    out    = (1 - weight) * image + weight * colour

Colour is fixed RGB per component, or adaptive (paper Figure 4): a skin colour and its
intensity set it. The adaptive colour is the component's colour scaled channel by channel by
``skin / reference_skin``, so it follows the face's own tone, and the alpha is scaled by
``scale = reference_intensity / skin_intensity`` (clipped to [0.5, 2]): a face as bright as the
reference skin gets the level's alpha, darker faces stronger makeup and brighter ones lighter.

The skin colour (``skin_source``):

- ``skin`` (default, :func:`skin_statistics`): the per-channel median of the cheek and forehead
  pixels (:func:`regions.skin_regions`) that pass a skin band: YCrCb chroma 133 <= Cr <= 173 and
  77 <= Cb <= 127 (Chai and Ngan's skin cluster), luma 40 <= Y <= 240, and within 2 robust
  standard deviations (1.4826 MAD) of the median luma. Dark pixels (glasses frames, beards,
  shadows), highlights and hair are rejected, so the scale depends on the skin tone alone.
- ``between_brows`` (the paper's Figure 4, :func:`patch_statistics`): the mean of the rectangle
  between the eyebrows. On a face with glasses that box lies on the frame's bridge, and on the
  celebrity photos it gives the two eyeglass wearers the highest multipliers (see
  ``docs/metamorphic.md``); kept for reproducing the paper.

Intensity is a level (light, medium, heavy) or a continuous alpha in [0, 1]. Everything is
deterministic: the same image, landmarks and config give the same output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import cv2
import numpy as np
from scipy.ndimage import gaussian_filter

from fairforensics.fairness.metamorphic.regions import (
    COMPONENTS,
    between_brows_box,
    check_landmarks,
    face_width,
    region_mask,
    skin_regions,
)

INTENSITY_ALPHA: dict[str, float] = {"light": 0.25, "medium": 0.45, "heavy": 0.75}
DEFAULT_COLOURS: dict[str, tuple[int, int, int]] = {
    "eyeliner": (25, 15, 20),
    "eyeshadow": (120, 60, 110),
    "blush": (225, 105, 120),
    "lipstick": (175, 25, 50),
}
DEFAULT_STRENGTH: dict[str, float] = {
    "eyeliner": 2.0,
    "eyeshadow": 0.8,
    "blush": 0.6,
    "lipstick": 1.0,
}
# Paint order: eyeliner goes over eyeshadow.
_ORDER = ("eyeshadow", "eyeliner", "blush", "lipstick")
_LUMA = np.array([0.299, 0.587, 0.114])
_GAUSS_TRUNCATE = 3.0
SKIN_CR = (133, 173)
SKIN_CB = (77, 127)
SKIN_LUMA = (40, 240)
SKIN_MAD_K = 2.0
MIN_SKIN_PIXELS = 30


@dataclass
class MakeupConfig:
    """Parameters of one makeup transform (all sizes are fractions of the face).

    ``components``: any of eyeliner, eyeshadow, blush, lipstick. ``intensity``: light, medium,
    heavy or an alpha in [0, 1]. ``colour``: ``fixed`` (``colours``) or ``adaptive`` (from the
    skin colour, measured as ``skin_source`` says: ``skin`` or ``between_brows``). ``colours`` / ``strength`` override the defaults per component.
    ``blur``: Gaussian sigma as a fraction of the face width (``blush_blur`` for the blush,
    which real blush spreads much further).
    """

    components: list[str] = field(default_factory=lambda: list(COMPONENTS))
    intensity: Literal["light", "medium", "heavy"] | float = "medium"
    colour: Literal["fixed", "adaptive"] = "fixed"
    skin_source: Literal["skin", "between_brows"] = "skin"
    colours: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    strength: dict[str, float] = field(default_factory=dict)
    reference_skin: tuple[float, float, float] = (200.0, 150.0, 130.0)
    blur: float = 0.012
    blush_blur: float = 0.035
    eyeliner_thickness: float = 0.12
    eyeshadow_height: float = 0.55
    blush_size: float = 0.11

    def __post_init__(self) -> None:
        if not self.components:
            raise ValueError("'components' must name at least one of " + ", ".join(COMPONENTS))
        for name in [*self.components, *self.colours, *self.strength]:
            if name not in COMPONENTS:
                raise ValueError(
                    f"unknown makeup component {name!r}; known: {', '.join(COMPONENTS)}"
                )
        if isinstance(self.intensity, float) and not 0.0 <= self.intensity <= 1.0:
            raise ValueError(f"'intensity' as an alpha must be in [0, 1], got {self.intensity}")
        for name, rgb in self.colours.items():
            if not all(0 <= c <= 255 for c in rgb):
                raise ValueError(f"colours.{name} must be RGB values in [0, 255], got {rgb}")
        if any(s < 0 for s in self.strength.values()):
            raise ValueError("'strength' values must be non-negative")
        if min(self.reference_skin) <= 0:
            raise ValueError("'reference_skin' must be positive RGB values")
        for name in ("blur", "blush_blur", "eyeliner_thickness", "eyeshadow_height", "blush_size"):
            if getattr(self, name) < 0:
                raise ValueError(f"'{name}' must be non-negative, got {getattr(self, name)}")

    @property
    def alpha(self) -> float:
        """The blending alpha of the intensity level (or the continuous alpha itself)."""
        if isinstance(self.intensity, str):
            return INTENSITY_ALPHA[self.intensity]
        return float(self.intensity)

    def colour_of(self, component: str) -> np.ndarray:
        """The fixed RGB colour of ``component`` (user value or default), float64."""
        return np.asarray(self.colours.get(component, DEFAULT_COLOURS[component]), dtype=np.float64)

    def strength_of(self, component: str) -> float:
        return float(self.strength.get(component, DEFAULT_STRENGTH[component]))


def patch_statistics(image: np.ndarray, landmarks: np.ndarray) -> tuple[np.ndarray, float]:
    """Mean RGB and mean intensity (luma / 255) of the between-eyebrows rectangle (Figure 4)."""
    x0, y0, x1, y1 = between_brows_box(landmarks, image.shape[:2])
    patch = image[y0:y1, x0:x1].reshape(-1, 3).astype(np.float64)
    mean_rgb = patch.mean(axis=0)
    return mean_rgb, float(mean_rgb @ _LUMA / 255.0)


def skin_pixels(image: np.ndarray, landmarks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(all cheek and forehead pixels, boolean mask of those in the skin band), RGB float64."""
    inside = np.any(skin_regions(landmarks, image.shape[:2]), axis=0)
    pixels = image[inside]
    if len(pixels) == 0:  # the regions fall outside the image
        return pixels.astype(np.float64).reshape(0, 3), np.zeros(0, dtype=bool)
    ycc = cv2.cvtColor(pixels.reshape(-1, 1, 3), cv2.COLOR_RGB2YCrCb).reshape(-1, 3)
    y, cr, cb = (ycc[:, i].astype(np.float64) for i in range(3))
    keep = (SKIN_CR[0] <= cr) & (cr <= SKIN_CR[1]) & (SKIN_CB[0] <= cb) & (cb <= SKIN_CB[1])
    keep &= (SKIN_LUMA[0] <= y) & (y <= SKIN_LUMA[1])
    if keep.any():
        median = np.median(y[keep])
        mad = 1.4826 * np.median(np.abs(y[keep] - median))
        keep &= np.abs(y - median) <= SKIN_MAD_K * max(mad, 1.0)
    return pixels.astype(np.float64), keep


def skin_statistics(image: np.ndarray, landmarks: np.ndarray) -> tuple[np.ndarray, float]:
    """Median RGB and its intensity (luma / 255) of the cheek and forehead skin (module doc).

    Fewer than ``MIN_SKIN_PIXELS`` skin pixels (a face covered, cropped or far off any skin
    colour) is a ``ValueError``: the adaptive colour is then undefined, and the runner skips
    the face with that reason.
    """
    pixels, keep = skin_pixels(_check_image(image), check_landmarks(landmarks))
    if keep.sum() < MIN_SKIN_PIXELS:
        raise ValueError(
            f"adaptive makeup: only {int(keep.sum())} of {len(pixels)} cheek/forehead pixels "
            f"look like skin (need {MIN_SKIN_PIXELS}); use colour: fixed for this face"
        )
    median = np.median(pixels[keep], axis=0)
    return median, float(median @ _LUMA / 255.0)


def adaptive_colours(
    image: np.ndarray, landmarks: np.ndarray, cfg: MakeupConfig
) -> tuple[dict[str, np.ndarray], float]:
    """Per-component adaptive colours and the alpha scale, from the skin (``cfg.skin_source``)."""
    if cfg.skin_source == "between_brows":
        mean_rgb, intensity = patch_statistics(image, landmarks)
    else:
        mean_rgb, intensity = skin_statistics(image, landmarks)
    reference = np.asarray(cfg.reference_skin, dtype=np.float64)
    ratio = mean_rgb / reference
    colours = {c: np.clip(cfg.colour_of(c) * ratio, 0.0, 255.0) for c in COMPONENTS}
    reference_intensity = float(reference @ _LUMA / 255.0)
    scale = float(np.clip(reference_intensity / max(intensity, 1e-3), 0.5, 2.0))
    return colours, scale


def _check_image(image: np.ndarray) -> np.ndarray:
    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected an HxWx3 RGB image, got shape {getattr(image, 'shape', None)}")
    if image.dtype != np.uint8:
        raise ValueError(f"expected a uint8 image, got dtype {image.dtype}")
    return image


def blur_sigma(landmarks: np.ndarray, cfg: MakeupConfig, component: str) -> float:
    """Gaussian sigma in pixels of one component's softening."""
    fraction = cfg.blush_blur if component == "blush" else cfg.blur
    return fraction * face_width(check_landmarks(landmarks))


def blur_radius(landmarks: np.ndarray, cfg: MakeupConfig, component: str) -> int:
    """Pixels by which a softened component can reach past its region (scipy's kernel radius)."""
    sigma = blur_sigma(landmarks, cfg, component)
    return int(_GAUSS_TRUNCATE * sigma + 0.5) if sigma > 0 else 0


def _bbox(mask: np.ndarray, margin: int = 0) -> tuple[slice, slice] | None:
    """Row and column slices around the non-zero pixels of ``mask``, grown by ``margin``."""
    rows, cols = np.any(mask, axis=1), np.any(mask, axis=0)
    if not rows.any():
        return None
    r0, r1 = np.argmax(rows), len(rows) - np.argmax(rows[::-1])
    c0, c1 = np.argmax(cols), len(cols) - np.argmax(cols[::-1])
    h, w = mask.shape
    return (
        slice(max(r0 - margin, 0), min(r1 + margin, h)),
        slice(max(c0 - margin, 0), min(c1 + margin, w)),
    )


def _soften(region: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian-filtered float32 copy of a boolean region, scaled to a peak of 1.

    The filter runs on the region's bounding box only, grown by more than the kernel radius, so
    the result equals filtering the whole image (scipy's ``reflect`` border mirrors only zeros,
    or the image's own border).
    """
    out = region.astype(np.float32)
    if sigma <= 0:
        return out
    box = _bbox(region, int(_GAUSS_TRUNCATE * sigma + 0.5) + 2)
    if box is not None:
        out[box] = gaussian_filter(out[box], sigma, truncate=_GAUSS_TRUNCATE)
        peak = float(out.max())
        if peak > 0:
            out /= peak
    return out


def makeup_weights(
    image: np.ndarray, landmarks: np.ndarray, cfg: MakeupConfig
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(colour RGB, float32 HxW weight map) per component, in paint order."""
    image = _check_image(image)
    lm = check_landmarks(landmarks)
    shape = image.shape[:2]
    if cfg.colour == "adaptive":
        colours, scale = adaptive_colours(image, lm, cfg)
    else:
        colours, scale = {c: cfg.colour_of(c) for c in COMPONENTS}, 1.0
    sizes = {
        "eyeliner_thickness": cfg.eyeliner_thickness,
        "eyeshadow_height": cfg.eyeshadow_height,
        "blush_size": cfg.blush_size,
    }
    layers = []
    for component in _ORDER:
        if component not in cfg.components:
            continue
        region = _soften(region_mask(shape, lm, component, **sizes), blur_sigma(lm, cfg, component))
        alpha = min(1.0, cfg.alpha * scale * cfg.strength_of(component))
        layers.append((colours[component], (alpha * region).astype(np.float32)))
    return layers


def apply_makeup(
    image: np.ndarray, landmarks: np.ndarray, cfg: MakeupConfig | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Apply makeup to an RGB uint8 face; returns (new image, float32 HxW mask of the change).

    The mask is the combined blending weight in [0, 1]: pixels where it is 0 are unchanged.
    """
    cfg = cfg or MakeupConfig()
    layers = makeup_weights(image, landmarks, cfg)
    result = image.copy()
    changed = np.zeros(image.shape[:2], dtype=np.float32)
    box = _bbox(np.any([w > 0 for _, w in layers], axis=0)) if layers else None
    if box is None:
        return result, changed
    out = image[box].astype(np.float64)
    untouched = np.ones(out.shape[:2], dtype=np.float64)
    for colour, weight in layers:
        w = weight[box].astype(np.float64)
        out = (1.0 - w[..., None]) * out + w[..., None] * colour
        untouched *= 1.0 - w
    result[box] = np.clip(np.rint(out), 0, 255).astype(np.uint8)
    changed[box] = 1.0 - untouched
    return result, changed
