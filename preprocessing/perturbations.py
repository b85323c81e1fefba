"""DeeperForensics-1.0's seven perturbations at five levels (Jiang et al., CVPR 2020), exact.

The arithmetic of the reference code (``perturbation/distortions.py`` and
``add_distortion_to_video.py``, MIT, commit 7589587) is reproduced step for step, quirks
included, on **RGB** uint8 frames (the project's channel order; the reference works on OpenCV's
BGR, and every step here gives the same pixels on the same picture):

- CS and GNC convert to a "YCbCr" through OpenCV's float conversion of the 0-255 values
  (so luma is in about [0, 219] and chroma is centred on 0.5, not 128) and back, truncating to
  uint8 without rounding;
- GNC divides that by 255, adds ``sqrt(variance)`` times standard normal noise to all three
  channels (luma included, although the paper says colour components), and multiplies by 255;
- BW pastes ``min(h, w) // 256 * param`` grey (128) 8x8 blocks at uniform positions whose
  start never reaches the last column/row (the reference's ``randint`` bound), so a frame under
  256 pixels gets no block at all;
- GB is ``cv2.GaussianBlur`` with kernel ``k`` and sigma ``k / 6``; JPEG is not JPEG but
  bilinear down-sampling by the factor and up-sampling back (``cv2.resize`` twice);
- VC (``preprocessing.perturb_video``) re-encodes the whole video with H.264 at the CRF.

Random draws come from an explicit ``numpy.random.Generator`` (no global state): the positions
and the noise are distributed as the reference's (Python ``random``, ``np.random.randn``) but are
not the same numbers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

#: type -> the reference's parameter at levels 1..5 (every list: larger level, worse)
PARAMETERS: dict[str, tuple[float, ...]] = {
    "CS": (0.4, 0.3, 0.2, 0.1, 0.0),  # colour saturation: chroma scale
    "CC": (0.85, 0.725, 0.6, 0.475, 0.35),  # colour contrast: pixel scale
    "BW": (16, 32, 48, 64, 80),  # local block-wise: blocks per 256 pixels of the short side
    "GNC": (0.001, 0.002, 0.005, 0.01, 0.05),  # white Gaussian noise: variance
    "GB": (7, 9, 13, 17, 21),  # Gaussian blur: kernel size (sigma = kernel / 6)
    "JPEG": (2, 3, 4, 5, 6),  # down/up-sampling factor
    "VC": (30, 32, 35, 38, 40),  # video compression: H.264 CRF
}
TYPES: tuple[str, ...] = tuple(PARAMETERS)
FRAME_TYPES: tuple[str, ...] = tuple(t for t in TYPES if t != "VC")  # work frame by frame
LEVELS: tuple[int, ...] = (1, 2, 3, 4, 5)
NAMES = {
    "CS": "colour saturation",
    "CC": "colour contrast",
    "BW": "local block-wise",
    "GNC": "white Gaussian noise in colour",
    "GB": "Gaussian blur",
    "JPEG": "JPEG (down/up-sampling)",
    "VC": "video compression (H.264)",
}
RANDOM = "random"
BLOCK = 8  # BW's block side, pixels


class PerturbationError(ValueError):
    """An unknown type or level, or a perturbation that cannot apply to the input."""


def check_cases(types: Sequence[str], levels: Sequence[int]) -> tuple[list[str], list[int]]:
    """``types`` (upper-cased, blanks dropped) and ``levels`` of a robustness run, checked: a
    :class:`PerturbationError` for an unknown one or an empty list."""
    types = [t.strip().upper() for t in types if t.strip()]
    bad = [t for t in types if t not in TYPES]
    if bad or not types:
        raise PerturbationError(
            f"unknown perturbation types {bad or '(none)'}; allowed: {', '.join(TYPES)}"
        )
    bad_levels = [lv for lv in levels if lv not in LEVELS]
    if bad_levels or not levels:
        raise PerturbationError(
            f"unknown perturbation levels {bad_levels or '(none)'}; allowed: 1-5"
        )
    return types, list(levels)


@dataclass(frozen=True)
class Perturbation:
    """One perturbation: a type of :data:`TYPES` at a level of :data:`LEVELS`."""

    type: str
    level: int

    def __post_init__(self) -> None:
        if self.type not in PARAMETERS:
            raise PerturbationError(
                f"unknown perturbation type {self.type!r}; allowed: {', '.join(TYPES)}, {RANDOM}"
            )
        if self.level not in LEVELS:
            raise PerturbationError(
                f"unknown perturbation level {self.level!r} for {self.type}; allowed: 1-5, {RANDOM}"
            )

    @property
    def param(self) -> float:
        """The reference's parameter of this type at this level."""
        return PARAMETERS[self.type][self.level - 1]

    def __str__(self) -> str:
        return f"{self.type}:{self.level}"


@dataclass(frozen=True)
class PerturbationSpec:
    """One step of a chain as written: a type and a level, either of which may be ``random``."""

    type: str
    level: str

    def draw(self, rng: np.random.Generator, video: bool = True) -> Perturbation:
        """The step with its random parts drawn as the reference does (type uniform over the
        seven, or over the six frame types for an image; level uniform over 1-5)."""
        kind = self.type
        if kind == RANDOM:
            choices = TYPES if video else FRAME_TYPES
            kind = choices[int(rng.integers(len(choices)))]
        level = int(rng.integers(1, 6)) if self.level == RANDOM else int(self.level)
        return Perturbation(kind, level)


def parse_chain(text: str, level: str | int | None = None) -> list[PerturbationSpec]:
    """Steps of ``TYPE:LEVEL+TYPE:LEVEL...`` (``GB:2+VC:3``), in order; a step without a level
    takes ``level``. Types and levels may be ``random``; errors name the allowed values."""
    steps = []
    for part in str(text).split("+"):
        kind, sep, lev = part.strip().partition(":")
        kind = kind.strip()
        lev = lev.strip() if sep else ("" if level is None else str(level).strip())
        kind = RANDOM if kind.lower() == RANDOM else kind.upper()
        if kind != RANDOM and kind not in PARAMETERS:
            raise PerturbationError(
                f"unknown perturbation type {kind or part!r}; allowed: {', '.join(TYPES)}, {RANDOM}"
            )
        if not lev:
            raise PerturbationError(f"perturbation {part.strip()!r} has no level; give TYPE:LEVEL")
        if lev.lower() == RANDOM:
            lev = RANDOM
        elif lev not in {str(n) for n in LEVELS}:
            raise PerturbationError(
                f"unknown perturbation level {lev!r} for {kind}; allowed: 1-5, {RANDOM}"
            )
        steps.append(PerturbationSpec(kind, lev))
    return steps


def chain_name(chain: Sequence[Perturbation]) -> str:
    """``GB:2+VC:3``."""
    return "+".join(str(p) for p in chain)


def perturbation_rng(seed: int, *keys: object) -> np.random.Generator:
    """A generator for one case: the seed and keys (a video id, a type, a level) mixed through
    SHA-256, so a case's draws do not depend on which other cases run or in what order."""
    words = [int(seed) & 0xFFFFFFFF]
    for key in keys:
        digest = hashlib.sha256(str(key).encode()).digest()
        words.append(int.from_bytes(digest[:4], "little"))
    return np.random.default_rng(words)


def _check_rgb(rgb: np.ndarray) -> np.ndarray:
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise PerturbationError(
            f"a perturbation takes an RGB uint8 frame [H, W, 3]; got {rgb.dtype} {rgb.shape}"
        )
    return rgb


def _to_uint8(values: np.ndarray) -> np.ndarray:
    """The reference's ``astype(np.uint8)`` (truncation); clipping first only fixes the values
    outside [0, 256) whose cast is undefined in C."""
    return np.clip(values, 0, 255, out=values).astype(np.uint8)


def _ycbcr_planes(rgb: np.ndarray) -> list[np.ndarray]:
    """The reference's ``bgr2ycbcr`` as float32 planes Y, Cb, Cr: OpenCV's float YCrCb of the
    0-255 values (through BGR: OpenCV's vectorised RGB and BGR paths differ in the last bit on
    some pixels), luma mapped by ``(y * 219 + 16) / 255``, chroma by ``(c * 224 + 16) / 255``.
    Planes instead of the reference's interleaved array: the same float32 operations, faster."""
    bgr = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR).astype(np.float32)
    y, cr, cb = cv2.split(cv2.cvtColor(bgr, cv2.COLOR_BGR2YCrCb))
    return [
        (y * (235 - 16) + 16) / 255.0,
        (cb * (240 - 16) + 16) / 255.0,
        (cr * (240 - 16) + 16) / 255.0,
    ]


def _rgb_from_planes(planes: Sequence[np.ndarray]) -> np.ndarray:
    """The reference's ``ycbcr2bgr`` of Y, Cb, Cr planes (cast to float32 first), float32 RGB."""
    y, cb, cr = (p.astype(np.float32, copy=False) for p in planes)
    y = (y * 255.0 - 16) / (235 - 16)
    cb = (cb * 255.0 - 16) / (240 - 16)
    cr = (cr * 255.0 - 16) / (240 - 16)
    bgr = cv2.cvtColor(cv2.merge([y, cr, cb]), cv2.COLOR_YCrCb2BGR)
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def rgb_to_ycbcr(rgb: np.ndarray) -> np.ndarray:
    """The reference's ``bgr2ycbcr`` on an RGB frame, as an HxWx3 float32 Y, Cb, Cr array."""
    return np.dstack(_ycbcr_planes(_check_rgb(rgb)))


def ycbcr_to_rgb(ycbcr: np.ndarray) -> np.ndarray:
    """The inverse of :func:`rgb_to_ycbcr` (the reference's ``ycbcr2bgr``), float32 RGB."""
    return _rgb_from_planes([ycbcr[:, :, k] for k in range(3)])


def color_saturation(rgb: np.ndarray, param: float) -> np.ndarray:
    """CS: both chroma channels pulled towards 0.5 by ``param`` (0: grey)."""
    y, cb, cr = _ycbcr_planes(_check_rgb(rgb))
    cb = 0.5 + (cb - 0.5) * param
    cr = 0.5 + (cr - 0.5) * param
    return _to_uint8(_rgb_from_planes([y, cb, cr]))


def color_contrast(rgb: np.ndarray, param: float) -> np.ndarray:
    """CC: every value times ``param`` (float32), truncated."""
    return _to_uint8(_check_rgb(rgb).astype(np.float32) * param)


def block_wise(
    rgb: np.ndarray,
    param: int,
    rng: np.random.Generator,
    frame_shape: tuple[int, int] | None = None,
    origin: tuple[int, int] = (0, 0),
) -> np.ndarray:
    """BW: ``min(h, w) // 256 * param`` grey 8x8 blocks at uniform positions (a copy).

    ``frame_shape`` and ``origin`` (x, y): ``rgb`` is that part of a larger frame; the blocks
    are drawn over the whole frame (the same draws) and the parts inside ``rgb`` pasted."""
    out = _check_rgb(rgb).copy()
    h, w = frame_shape or out.shape[:2]
    n = min(h, w) // 256 * int(param)
    if n == 0:
        return out
    # randint(0, side - 1 - BLOCK) of the reference: the bound is inclusive there
    starts = rng.integers(0, [w - BLOCK, h - BLOCK], size=(n, 2))
    ox, oy = origin
    for x, y in starts:
        x0, y0 = max(x - ox, 0), max(y - oy, 0)
        out[y0 : max(y - oy + BLOCK, 0), x0 : max(x - ox + BLOCK, 0), :] = 128
    return out


def block_count(height: int, width: int, param: int) -> int:
    """How many blocks BW pastes on a frame of this size."""
    return min(height, width) // 256 * int(param)


def gaussian_noise_color(rgb: np.ndarray, param: float, rng: np.random.Generator) -> np.ndarray:
    """GNC: standard normal noise times ``sqrt(param)`` added to the YCbCr values divided by 255
    (float64 noise on float32 values, as the reference's ``np.random.randn``), then times 255."""
    sigma = np.sqrt(param)
    noisy = [
        (p / 255 + sigma * rng.standard_normal(p.shape)) * 255
        for p in _ycbcr_planes(_check_rgb(rgb))
    ]
    return _to_uint8(_rgb_from_planes(noisy))


def gaussian_blur(rgb: np.ndarray, param: int) -> np.ndarray:
    """GB: ``cv2.GaussianBlur`` with a ``param`` x ``param`` kernel and sigma ``param / 6``."""
    k = int(param)
    return cv2.GaussianBlur(_check_rgb(rgb), (k, k), k * 1.0 / 6)


def jpeg_resample(rgb: np.ndarray, param: int) -> np.ndarray:
    """The reference's "JPEG compression": bilinear resize to ``1 / param`` and back."""
    h, w = _check_rgb(rgb).shape[:2]
    small_h, small_w = h // int(param), w // int(param)
    if small_h == 0 or small_w == 0:
        raise PerturbationError(f"JPEG at factor {param} needs a frame of at least {param} pixels")
    return cv2.resize(cv2.resize(rgb, (small_w, small_h)), (w, h))


def perturb_frame(
    rgb: np.ndarray, perturbation: Perturbation, rng: np.random.Generator | None = None
) -> np.ndarray:
    """One frame-level perturbation (every type but VC) of an RGB uint8 frame; a new array.
    BW and GNC draw from ``rng`` (required for them)."""
    kind, param = perturbation.type, perturbation.param
    if kind in ("BW", "GNC") and rng is None:
        raise PerturbationError(f"{kind} draws random numbers: pass a numpy Generator")
    if kind == "CS":
        return color_saturation(rgb, param)
    if kind == "CC":
        return color_contrast(rgb, param)
    if kind == "BW":
        return block_wise(rgb, int(param), rng)
    if kind == "GNC":
        return gaussian_noise_color(rgb, param, rng)
    if kind == "GB":
        return gaussian_blur(rgb, int(param))
    if kind == "JPEG":
        return jpeg_resample(rgb, int(param))
    raise PerturbationError(
        f"{perturbation} re-encodes a whole video; it does not apply to one frame or an image"
    )
