"""The training augmentation of one image without albumentations' per-call machinery (issue 47).

:class:`FusedAugment` runs a pipeline of :func:`training.augment.build_augment` on one uint8 RGB
image: every transform decides and draws its parameters exactly as albumentations 2.x does (the
same ``should_apply``, ``OneOf`` choice, ``get_params`` and ``get_params_dependent_on_data``
draws), from the generators :func:`preprocessing.albu_seed.seed_pipeline` would give it (made
from :class:`preprocessing.albu_seed.SampleSeeds` only when it draws). The frequent ones then
call OpenCV directly: flip (``cv2.flip``), rotation (one ``cv2.warpAffine`` with
albumentations' matrix), Gaussian blur (``cv2.sepFilter2D`` with its kernel) and JPEG
(``cv2.imencode``/``cv2.imdecode``); a resize or pad that would not change the image is
skipped; hue-saturation-value applies its three channel maps as one lookup table; every other
transform runs through its own ``apply``. The pixels are those of the albumentations pipeline
for every seed (``tests/test_albu_fast.py``), and a pipeline is checked on a few seeds when it
is fused: if another albumentations version draws differently, the fused path is off.
Landmarks, masks, clips, images of another shape or dtype, and pipelines with other transforms
use the albumentations pipeline itself.
"""

from __future__ import annotations

import bisect
import logging
import random
from collections.abc import Callable
from typing import Any

import albumentations as A
import albumentations.augmentations.blur.functional as fblur
import albumentations.augmentations.geometric.functional as fgeometric
import cv2
import numpy as np
from albucore.functions import add_constant
from albucore.utils import get_num_channels

from fairforensics.preprocessing.albu_seed import SampleSeeds, first_uniform, seed_pipeline

log = logging.getLogger(__name__)

#: one transform of the pipeline: (image, the sample's seeds) -> image, drawn as albumentations
Step = Callable[[np.ndarray, SampleSeeds], np.ndarray]
#: a transform applied: (image, its ``py_random``, its seed) -> image
Forced = Callable[[np.ndarray, random.Random, int], np.ndarray]


class FusedAugment:
    """An albumentations ``Compose`` (``pipeline``) with a fast path for one image:
    :func:`preprocessing.frames.apply_augment` takes it where it can (no landmarks, no mask,
    :meth:`accepts` the image) and uses ``pipeline`` elsewhere."""

    def __init__(self, pipeline: A.Compose) -> None:
        self.pipeline = pipeline
        self.size, self.steps = _plan(pipeline)
        if self.steps is not None and not self._agrees():
            log.warning(
                "albumentations %s draws or computes differently from the fused augmentation; "
                "using albumentations' own calls (slower)",
                A.__version__,
            )
            self.steps = None

    def __getstate__(self) -> dict[str, Any]:
        """Only the pipeline (for spawned DataLoader workers); the steps are planned again."""
        return {"pipeline": self.pipeline}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["pipeline"])  # type: ignore[misc]

    def accepts(self, image: np.ndarray) -> bool:
        """Whether :meth:`augment_image` takes ``image``: uint8 ``[s, s, 3]`` at the pipeline's
        size (its resize and pad leave it as it is), and every transform has a fused step."""
        return (
            self.steps is not None
            and image.dtype == np.uint8
            and image.ndim == 3
            and image.shape == (self.size, self.size, 3)
        )

    def augment_image(self, seed: int, image: np.ndarray) -> np.ndarray:
        """The pipeline seeded with ``seed`` on ``image`` (see :meth:`accepts`); the pixels of
        ``seed_pipeline(pipeline, seed); pipeline(image=image)["image"]``."""
        if not self.accepts(image):
            seed_pipeline(self.pipeline, seed)
            return self.pipeline(image=image)["image"]
        seeds = SampleSeeds(seed)
        for step in self.steps or ():
            image = step(image, seeds)
        return image

    def _agrees(self) -> bool:
        """Whether the steps give the pipeline's pixels for :data:`CHECK_SEEDS` seeds on a
        smooth random image (a guard against an albumentations version that draws or computes
        differently from the one the steps follow)."""
        rng = np.random.default_rng(0)
        small = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        image = cv2.resize(small, (self.size, self.size), interpolation=cv2.INTER_CUBIC)
        for seed in range(CHECK_SEEDS):
            seed_pipeline(self.pipeline, seed)
            want = self.pipeline(image=image)["image"]
            if not np.array_equal(self.augment_image(seed, image), want):
                return False
        return True


#: seeds the fused steps are checked on against albumentations when they are planned
CHECK_SEEDS = 32


def _plan(pipeline: A.Compose) -> tuple[int, list[Step] | None]:
    """(the image side the pipeline resizes and pads to, its steps); steps ``None`` when a
    transform has no fused step, the resize and pad are not of ``build_augment``'s kind, or the
    ``Compose`` itself runs only sometimes."""
    if pipeline.p < 1.0:
        return 0, None
    size = 0
    steps: list[Step] = []
    for j, node in enumerate(pipeline.transforms):
        if isinstance(node, A.OneOf) and all(
            isinstance(t, A.LongestMaxSize) for t in node.transforms
        ):
            sizes = {t.max_size for t in node.transforms}
            if len(sizes) != 1 or not isinstance(next(iter(sizes)), int):
                return 0, None
            size = int(next(iter(sizes)))  # the image has that size: every choice keeps it
            continue
        if isinstance(node, A.PadIfNeeded):
            if node.min_height is None or node.min_width is None or size == 0:
                return 0, None
            if max(node.min_height, node.min_width) > size:
                return 0, None
            continue  # an image at ``size`` already has the minimum size
        step = _step(node, (j,))
        if step is None:
            return 0, None
        steps.append(step)
    return (size, steps) if size else (0, None)


def _step(node: Any, key: tuple[int, ...]) -> Step | None:
    """The fused step of the transform or ``OneOf`` at ``key``, ``None`` for other kinds."""
    if isinstance(node, A.OneOf):
        children = [_forced(t) for t in node.transforms]
        if any(c is None for c in children):
            return None
        return _one_of(node, key, children)  # type: ignore[arg-type]
    forced = _forced(node)
    return None if forced is None else _maybe(node, key, forced)


def _maybe(node: Any, key: tuple[int, ...], forced: Forced) -> Step:
    """``forced`` when the transform's ``should_apply`` draw says so (albumentations 2.x)."""

    def step(image: np.ndarray, seeds: SampleSeeds) -> np.ndarray:
        if node.p <= 0.0:
            return image
        seed = seeds.of(key)
        rng = random.Random(seed)
        if node.p >= 1.0 or rng.random() < node.p:
            return forced(image, rng, seed)
        return image

    return step


def _one_of(node: A.OneOf, key: tuple[int, ...], children: list[Forced]) -> Step:
    """``OneOf.__call__``: its own draw against ``p``, then the child chosen by its numpy
    generator with the normalised probabilities, applied without its own draw.

    The choice is numpy's ``Generator.choice(n, p=ps)`` without its checks: the first uniform
    draw of the generator (:func:`preprocessing.albu_seed.first_uniform`) located in the
    cumulative probabilities numpy computes (``cdf = ps.cumsum(); cdf /= cdf[-1]``,
    ``searchsorted(u, side="right")``)."""
    cdf = np.cumsum(np.asarray(node.transforms_ps, np.float64)) if node.transforms_ps else None
    if cdf is not None:
        cdf /= cdf[-1]
    bounds = cdf.tolist() if cdf is not None else []

    def step(image: np.ndarray, seeds: SampleSeeds) -> np.ndarray:
        seed = seeds.of(key)
        if node.transforms_ps and random.Random(seed).random() < node.p:
            idx = bisect.bisect_right(bounds, first_uniform(seed))
            if node.transforms[idx].p > 0.0:  # should_apply(force_apply=True)
                child = seeds.of((*key, idx))
                return children[idx](image, random.Random(child), child)
        return image

    return step


def _forced(node: Any) -> Forced | None:
    """The transform applied (its parameters drawn from ``rng``, its ``py_random``), OpenCV
    directly for the frequent ones; ``None`` for a kind without a fused step."""
    kind = type(node)
    if kind is A.HorizontalFlip:
        return lambda image, rng, seed: cv2.flip(image, 1)
    if kind is A.Rotate and not node.crop_border:
        return lambda image, rng, seed: _rotate(node, image, rng)
    if kind is A.GaussianBlur:
        return lambda image, rng, seed: _blur(node, image, rng)
    if kind is A.ImageCompression:
        return lambda image, rng, seed: _compress(node, image, rng)
    if kind is A.HueSaturationValue:
        return lambda image, rng, seed: _hsv(node, image, rng)
    if isinstance(node, A.ImageOnlyTransform) and not isinstance(node, A.BaseCompose):
        return lambda image, rng, seed: _generic(node, image, rng, seed)
    return None


def _rotate(node: A.Rotate, image: np.ndarray, rng: random.Random) -> np.ndarray:
    """``Rotate``: the angle drawn, albumentations' matrix, one ``warpAffine``."""
    angle = rng.uniform(*node.limit)
    height, width = image.shape[:2]
    matrix = rotation_matrix(angle, fgeometric.center((height, width)))
    if _is_identity(matrix):
        return image
    return cv2.warpAffine(
        image,
        matrix[:2],
        (width, height),
        flags=node.interpolation,
        borderMode=node.border_mode,
        borderValue=fgeometric.extend_value(node.fill, get_num_channels(image)),
    )


def _is_identity(matrix: np.ndarray) -> bool:
    """``fgeometric.is_identity_matrix`` (``np.allclose`` to the identity, whose last row the
    matrix has) on Python floats, without numpy's per-call cost."""
    eye = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0)
    got = matrix[:2].ravel().tolist()
    return all(abs(a - b) <= 1e-8 + 1e-5 * abs(b) for a, b in zip(got, eye, strict=True))


def rotation_matrix(angle: float, center: tuple[float, float]) -> np.ndarray:
    """albumentations' ``create_affine_transformation_matrix`` for a rotation alone, bit for
    bit: its products with the identity translation, shear and scale are exact, which leaves
    (shift back to the centre @ rotation) and the one product with the shift to the corner."""
    rad = np.deg2rad(angle % 360)
    cos, sin = np.cos(rad), np.sin(rad)
    cx, cy = center
    rotated = np.array([[cos, sin, cx], [-sin, cos, cy], [0.0, 0.0, 1.0]])
    matrix = rotated @ np.array([[1.0, 0.0, -cx], [0.0, 1.0, -cy], [0.0, 0.0, 1.0]])
    matrix[2] = [0, 0, 1]
    return matrix


def _blur(node: A.GaussianBlur, image: np.ndarray, rng: random.Random) -> np.ndarray:
    """``GaussianBlur``: sigma and kernel size drawn, its separable kernel."""
    sigma = rng.uniform(*node.sigma_limit)
    ksize = rng.randint(*node.blur_limit)
    kernel = fblur.create_gaussian_kernel_1d(sigma, ksize)
    return cv2.sepFilter2D(image, -1, kernel, kernel)


def _compress(node: A.ImageCompression, image: np.ndarray, rng: random.Random) -> np.ndarray:
    """``ImageCompression``: the quality drawn, an encode and a decode of the image."""
    quality = rng.randint(*node.quality_range)
    if node.compression_type == "jpeg":
        ext, flag = ".jpg", cv2.IMWRITE_JPEG_QUALITY
    else:
        ext, flag = ".webp", cv2.IMWRITE_WEBP_QUALITY
    _, encoded = cv2.imencode(ext, image, (int(flag), quality))
    return cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED)


def _hsv(node: A.HueSaturationValue, image: np.ndarray, rng: random.Random) -> np.ndarray:
    """``HueSaturationValue``: the three shifts drawn, then albumentations' per-channel value
    maps (hue mod 180; saturation kept at 0 where it is 0) as one lookup table between the two
    colour conversions instead of a split, three maps, a mask and a merge."""
    hue = rng.uniform(*node.hue_shift_limit)
    sat = rng.uniform(*node.sat_shift_limit)
    val = rng.uniform(*node.val_shift_limit)
    if hue == 0 and sat == 0 and val == 0:
        return image
    table = np.repeat(_RAMP[..., None], 3, axis=2)
    if hue != 0:
        table[0, :, 0] = np.mod(np.arange(256, dtype=np.int16) + hue, 180).astype(np.uint8)
    if sat != 0:
        table[0, 1:, 1] = add_constant(_RAMP, sat)[0, 1:]
    if val != 0:
        table[0, :, 2] = add_constant(_RAMP, val)[0]
    hsv = cv2.LUT(cv2.cvtColor(image, cv2.COLOR_RGB2HSV), table)
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)


_RAMP = np.arange(256, dtype=np.uint8).reshape(1, 256)


def _generic(node: Any, image: np.ndarray, rng: random.Random, seed: int) -> np.ndarray:
    """Any image-only transform: its generators (``py_random`` = ``rng``, numpy's of the same
    seed) and parameters as albumentations makes them, then its own ``apply``."""
    node.py_random, node.random_generator = rng, np.random.default_rng(seed)
    data = {"image": image}
    params = node.update_transform_params(params=node.get_params(), data=data)
    params.update(node.get_params_dependent_on_data(params=params, data=data))
    return np.ascontiguousarray(node.apply(image, **params))
