"""Training augmentations with albumentations 2.x (DeepfakeBench, paper 002 Appendix A.3).

The pipeline and its defaults are DeepfakeBench's: horizontal flip p 0.5, rotation +-10 deg
p 0.5, Gaussian blur (kernel 3-7) p 0.5, isotropic resize with a random interpolation, one of
brightness/contrast (+-0.1), FancyPCA, hue-saturation-value with p 0.5, and JPEG compression
quality 40-100 p 0.5. Off by default and used by LSDA's recipe (DeepfakeBench's
``augmentation_methods2``): down-scaling by 2 or 4 (:class:`RandomDownScale`) and sharpening, each
with its own ``p``; ``color.kinds`` narrows the one-of colour transform. Landmarks (68 ``xy`` keypoints) and masks are transformed with the image.
Every call is seeded, so a sample's augmentation depends only on (seed, epoch, index); all frames
of a clip get the same seed and therefore the same augmentation.
"""

from __future__ import annotations

from typing import Any

import albumentations as A
import cv2
import numpy as np

from fairforensics.training.config import AugmentConfig


class FancyPCA(A.FancyPCA):
    """PCA colour augmentation of Krizhevsky et al. (NeurIPS 2012, Sec. 4.1), one shift per image.

    Adds ``[p1 p2 p3] [a1 l1, a2 l2, a3 l3]^T`` to every pixel, with ``p_i``/``l_i`` the
    eigenvectors/eigenvalues of the RGB covariance of the image in [0, 1] and ``a_i ~ N(0, alpha)``
    (drawn by albumentations, so seeding works as for every transform). This is the augmentation
    DeepfakeBench used through albumentations 1.x; albumentations 2.x's FancyPCA instead adds
    per-pixel noise and costs about 10 ms per 256x256 image. The covariance comes from the
    channel sums and cross products, which OpenCV sums in integers (0.15 ms at 256x256, against
    about 2 ms for the float32 mean and product this had before; their covariances agree to
    float32 precision; ``tests/test_train_input_speed.py`` bounds the change of the output).
    """

    def apply(self, img: np.ndarray, alpha_vector: np.ndarray, **params: Any) -> np.ndarray:
        if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
            return super().apply(img, alpha_vector, **params)
        vals, vecs = np.linalg.eigh(rgb_covariance(img))
        shift = vecs @ (np.asarray(alpha_vector, np.float64) * vals)
        # OpenCV's saturating uint8 + float add, done once per value and channel on a ramp and
        # then looked up (0.13 ms at 256x256 against 0.39 ms for the add on every pixel)
        table = cv2.add(_RAMP, (*(255.0 * shift).tolist(), 0.0))
        return cv2.LUT(img, table)


_RAMP = np.repeat(np.arange(256, dtype=np.uint8).reshape(1, 256, 1), 3, axis=2)


def rgb_covariance(img: np.ndarray) -> np.ndarray:
    """3x3 covariance (float64, ``n - 1`` denominator) of the pixels of a uint8 RGB image in
    [0, 1], from integer sums: ``(sum x_i x_j - sum x_i sum x_j / n) / (n - 1) / 255^2``."""
    chans = cv2.split(img)
    n = img.shape[0] * img.shape[1]
    sums = np.array([cv2.sumElems(c)[0] for c in chans])
    squares = [cv2.norm(c, cv2.NORM_L2SQR) for c in chans]
    moments = np.diag(squares)
    for i, j in ((0, 1), (0, 2), (1, 2)):  # 2 x_i x_j = x_i^2 + x_j^2 - (x_i - x_j)^2
        cross = cv2.norm(chans[i], chans[j], cv2.NORM_L2SQR)
        moments[i, j] = moments[j, i] = (squares[i] + squares[j] - cross) / 2
    return (moments - np.outer(sums, sums) / n) / (max(n - 1, 1) * 255.0**2)


class RandomDownScale(A.ImageOnlyTransform):
    """Down-scale by a ratio drawn from ``ratios`` (nearest neighbour) and resize back (linear):
    DeepfakeBench's ``RandomDownScale`` (LSDA's and SBI's augmentation)."""

    def __init__(self, ratios: tuple[int, ...] = (2, 4), p: float = 0.5) -> None:
        super().__init__(p=p)
        self.ratios = tuple(int(r) for r in ratios)

    def get_params(self) -> dict[str, Any]:
        return {"ratio": self.py_random.choice(self.ratios)}

    def apply(self, img: np.ndarray, ratio: int = 2, **params: Any) -> np.ndarray:
        h, w = img.shape[:2]
        small = cv2.resize(img, (int(w / ratio), int(h / ratio)), interpolation=cv2.INTER_NEAREST)
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)

    def get_transform_init_args_names(self) -> tuple[str, ...]:
        return ("ratios",)


def build_augment(cfg: AugmentConfig, resolution: int, keypoints: bool = False) -> A.Compose | None:
    """The albumentations pipeline for ``cfg``; ``None`` when augmentation is disabled.

    With ``keypoints`` the pipeline also moves 68 landmarks; rotation then fills the corners
    with black instead of reflecting (albumentations 2.x copies keypoints into reflected
    borders, which would break the 68-point layout).
    """
    if not cfg.enabled:
        return None
    iso = [
        A.LongestMaxSize(max_size=resolution, interpolation=interp)
        for interp in (cv2.INTER_CUBIC, cv2.INTER_LINEAR, cv2.INTER_AREA)
    ]
    color = cfg.color
    colors = {
        "brightness_contrast": A.RandomBrightnessContrast(
            color.brightness_limit, color.contrast_limit
        ),
        "fancy_pca": FancyPCA(alpha=color.fancy_pca_alpha),
        "hsv": A.HueSaturationValue(
            color.hue_shift_limit, color.sat_shift_limit, color.val_shift_limit
        ),
    }
    transforms = [
        A.HorizontalFlip(p=cfg.hflip.p),
        A.Rotate(
            limit=cfg.rotate.limit,
            border_mode=cv2.BORDER_CONSTANT if keypoints else cv2.BORDER_REFLECT_101,
            p=cfg.rotate.p,
        ),
        A.GaussianBlur(blur_limit=cfg.blur.blur_limit, p=cfg.blur.p),
        A.OneOf(iso, p=cfg.isotropic_resize.p),
        A.PadIfNeeded(resolution, resolution, border_mode=cv2.BORDER_CONSTANT),
        A.OneOf([colors[kind] for kind in color.kinds], p=color.p),
    ]
    # added only when on, so that the default pipeline (and its seeds) stays as it was
    if cfg.downscale.p > 0:
        transforms.append(RandomDownScale(cfg.downscale.ratios, p=cfg.downscale.p))
    if cfg.sharpen.p > 0:
        transforms.append(A.Sharpen(cfg.sharpen.alpha, cfg.sharpen.lightness, p=cfg.sharpen.p))
    transforms.append(A.ImageCompression(quality_range=cfg.jpeg.quality, p=cfg.jpeg.p))
    return A.Compose(
        transforms,
        keypoint_params=A.KeypointParams(format="xy", remove_invisible=False)
        if keypoints
        else None,
        seed=0,
    )
