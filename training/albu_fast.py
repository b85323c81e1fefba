"""The training augmentation of one image without albumentations' per-call machinery (issue 47).

:class:`FusedAugment` runs a pipeline of :func:`training.augment.build_augment` on one uint8 RGB
image: every transform decides and draws its parameters from its own generators exactly as
albumentations 2.x does (the same ``should_apply``, ``OneOf`` choice, ``get_params`` and
``get_params_dependent_on_data`` draws, seeded by :func:`preprocessing.albu_seed.seed_pipeline`),
and the frequent ones then call OpenCV directly: flip (``cv2.flip``), rotation (one
``cv2.warpAffine`` with albumentations' matrix), Gaussian blur (``cv2.sepFilter2D`` with its
kernel) and JPEG (``cv2.imencode``/``cv2.imdecode``); a resize or pad that would not change the
image is skipped. Every other transform is run through its own ``apply``. The pixels are those
of the albumentations pipeline for every seed (``tests/test_albu_fast.py``). Landmarks, masks,
clips, images of another shape or dtype, and pipelines with transforms of other kinds use the
albumentations pipeline itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import albumentations as A
import albumentations.augmentations.blur.functional as fblur
import albumentations.augmentations.geometric.functional as fgeometric
import cv2
import numpy as np
from albucore.utils import get_num_channels

from fairforensics.preprocessing.albu_seed import seed_pipeline

#: one transform of the pipeline: (its node, image) -> image, the draws made as albumentations
Step = Callable[[np.ndarray], np.ndarray]

_NO_SHIFT = {"x": 0, "y": 0}
_NO_SCALE = {"x": 1, "y": 1}


class FusedAugment:
    """An albumentations ``Compose`` (``pipeline``) with a fast path for one image:
    :func:`preprocessing.frames.apply_augment` takes it where it can (no landmarks, no mask,
    :meth:`accepts` the image) and uses ``pipeline`` elsewhere."""

    def __init__(self, pipeline: A.Compose) -> None:
        self.pipeline = pipeline
        self.size, self.steps = _plan(pipeline)

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
        seed_pipeline(self.pipeline, seed)
        if not self.accepts(image):
            return self.pipeline(image=image)["image"]
        for step in self.steps or ():
            image = step(image)
        return image


def _plan(pipeline: A.Compose) -> tuple[int, list[Step] | None]:
    """(the image side the pipeline resizes and pads to, its steps); steps ``None`` when a
    transform has no fused step or the resize and pad are not of ``build_augment``'s kind."""
    size = 0
    steps: list[Step] = []
    for node in pipeline.transforms:
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
        step = _step(node)
        if step is None:
            return 0, None
        steps.append(step)
    return (size, steps) if size else (0, None)


def _step(node: Any) -> Step | None:
    """The fused step of one transform or ``OneOf``, ``None`` for any other kind."""
    if isinstance(node, A.OneOf):
        children = [_step_forced(t) for t in node.transforms]
        if any(c is None for c in children):
            return None
        return _one_of(node, children)  # type: ignore[arg-type]
    forced = _step_forced(node)
    return None if forced is None else _maybe(node, forced)


def _maybe(node: Any, forced: Step) -> Step:
    """``forced`` when the transform's ``should_apply`` draw says so (albumentations 2.x)."""

    def step(image: np.ndarray) -> np.ndarray:
        if node.p <= 0.0:
            return image
        if node.p >= 1.0 or node.py_random.random() < node.p:
            return forced(image)
        return image

    return step


def _one_of(node: A.OneOf, children: list[Step]) -> Step:
    """``OneOf.__call__``: its own draw against ``p``, then the child chosen by its numpy
    generator with the normalised probabilities, applied without its own draw."""

    def step(image: np.ndarray) -> np.ndarray:
        if node.transforms_ps and node.py_random.random() < node.p:
            idx = int(node.random_generator.choice(len(children), p=node.transforms_ps))
            if node.transforms[idx].p > 0.0:  # should_apply(force_apply=True)
                return children[idx](image)
        return image

    return step


def _step_forced(node: Any) -> Step | None:
    """The transform applied (its parameters drawn), OpenCV directly for the frequent ones."""
    kind = type(node)
    if kind is A.HorizontalFlip:
        return lambda image: cv2.flip(image, 1)
    if kind is A.Rotate and not node.crop_border:
        return lambda image: _rotate(node, image)
    if kind is A.GaussianBlur:
        return lambda image: _blur(node, image)
    if kind is A.ImageCompression:
        return lambda image: _compress(node, image)
    if isinstance(node, A.ImageOnlyTransform) and not isinstance(node, A.BaseCompose):
        return lambda image: _generic(node, image)
    return None


def _rotate(node: A.Rotate, image: np.ndarray) -> np.ndarray:
    """``Rotate``: the angle drawn, albumentations' matrix, one ``warpAffine``."""
    angle = node.py_random.uniform(*node.limit)
    height, width = image.shape[:2]
    matrix = fgeometric.create_affine_transformation_matrix(
        _NO_SHIFT, _NO_SHIFT, _NO_SCALE, angle, fgeometric.center((height, width))
    )
    if fgeometric.is_identity_matrix(matrix):
        return image
    value = fgeometric.extend_value(node.fill, get_num_channels(image))
    return cv2.warpAffine(
        image,
        matrix[:2, :],
        (width, height),
        flags=node.interpolation,
        borderMode=node.border_mode,
        borderValue=value,
    )


def _blur(node: A.GaussianBlur, image: np.ndarray) -> np.ndarray:
    """``GaussianBlur``: sigma and kernel size drawn, its separable kernel."""
    sigma = node.py_random.uniform(*node.sigma_limit)
    ksize = node.py_random.randint(*node.blur_limit)
    kernel = fblur.create_gaussian_kernel_1d(sigma, ksize)
    return cv2.sepFilter2D(image, -1, kernel, kernel)


def _compress(node: A.ImageCompression, image: np.ndarray) -> np.ndarray:
    """``ImageCompression``: the quality drawn, an encode and a decode of the image."""
    quality = node.py_random.randint(*node.quality_range)
    if node.compression_type == "jpeg":
        ext, flag = ".jpg", cv2.IMWRITE_JPEG_QUALITY
    else:
        ext, flag = ".webp", cv2.IMWRITE_WEBP_QUALITY
    _, encoded = cv2.imencode(ext, image, (int(flag), quality))
    return cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED)


def _generic(node: Any, image: np.ndarray) -> np.ndarray:
    """Any image-only transform: its parameters as ``BasicTransform.__call__`` makes them,
    then its own ``apply``."""
    data = {"image": image}
    params = node.update_transform_params(params=node.get_params(), data=data)
    params.update(node.get_params_dependent_on_data(params=params, data=data))
    return np.ascontiguousarray(node.apply(image, **params))
