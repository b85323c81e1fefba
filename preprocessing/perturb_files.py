"""Perturb an image or a video file (what ``fairforensics perturb`` runs), and the reference's
meta file that lists what each output got.

An image is written without further loss in PNG, BMP, TIFF and WebP (lossless WebP); a JPEG
output adds its own compression at quality 100 (logged). Videos: ``preprocessing.perturb_video``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from fairforensics.configs.filemode import atomic_path
from fairforensics.preprocessing.files import atomic_write_text
from fairforensics.preprocessing.perturb_video import perturb_video_file
from fairforensics.preprocessing.perturbations import (
    Perturbation,
    PerturbationError,
    parse_chain,
    perturb_frame,
)
from fairforensics.preprocessing.video import IMAGE_SUFFIXES, is_image, read_image

logger = logging.getLogger(__name__)

LOSSY_IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg"})


def perturb_image(
    rgb: np.ndarray, chain: Sequence[Perturbation], rng: np.random.Generator
) -> np.ndarray:
    """An RGB uint8 image through every step of ``chain`` (no VC: it needs a video)."""
    for step in chain:
        if step.type == "VC":
            raise PerturbationError(f"{step} re-encodes a video; it does not apply to an image")
        rgb = perturb_frame(rgb, step, rng)
    return rgb


def write_image(path: str | Path, rgb: np.ndarray) -> None:
    """Write an RGB image atomically, lossless unless the suffix is JPEG (quality 100, logged)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in IMAGE_SUFFIXES:
        raise PerturbationError(
            f"{path}: an image output needs an image suffix ({', '.join(sorted(IMAGE_SUFFIXES))})"
        )
    params: list[int] = []
    if suffix == ".webp":
        params = [cv2.IMWRITE_WEBP_QUALITY, 101]  # above 100: lossless
    elif suffix in LOSSY_IMAGE_SUFFIXES:
        params = [cv2.IMWRITE_JPEG_QUALITY, 100]
        logger.warning("%s: a JPEG output adds its own compression (quality 100)", path)
    ok, data = cv2.imencode(suffix, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), params)
    if not ok:
        raise PerturbationError(f"{path}: OpenCV cannot write this image format")
    with atomic_path(path, suffix) as tmp:
        tmp.write_bytes(data.tobytes())


def perturb_file(
    input_path: str | Path,
    output_path: str | Path,
    spec: str,
    level: str | int | None = None,
    seed: int = 0,
    meta_path: str | Path | None = None,
) -> list[Perturbation]:
    """Perturb an image or a video with the chain ``spec`` (``GB``, ``GB:2+VC:3``, ``random``;
    ``level`` for steps without one), random parts drawn from ``seed``; returns the chain
    applied. ``meta_path``: add the output's line to the reference's meta file."""
    input_path, output_path = Path(input_path), Path(output_path)
    if not input_path.is_file():
        raise FileNotFoundError(2, "No such file", str(input_path))
    if input_path.resolve() == output_path.resolve():
        raise PerturbationError(f"{output_path}: the output must not overwrite the input")
    image = is_image(input_path)
    if image != is_image(output_path):
        what = "an image" if image else "a video"
        raise PerturbationError(f"{output_path}: the input is {what}; write {what} too")
    rng = np.random.default_rng(seed)
    chain = [step.draw(rng, video=not image) for step in parse_chain(spec, level)]
    output_path.parent.mkdir(parents=True, exist_ok=True)
    if image:
        write_image(output_path, perturb_image(read_image(input_path), chain, rng))
    else:
        perturb_video_file(input_path, output_path, chain, rng)
    if meta_path is not None:
        write_meta(meta_path, str(input_path), str(output_path), chain)
    return chain


def read_meta(meta_path: str | Path) -> dict[str, list[str]]:
    """The reference's meta file: ``{path: [TYPE:LEVEL, ...]}`` (one line per file)."""
    path = Path(meta_path)
    if not path.exists():
        return {}
    meta = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            name, *steps = line.split()
            meta[name] = steps
    return meta


def write_meta(
    meta_path: str | Path, input_path: str, output_path: str, chain: Sequence[Perturbation]
) -> None:
    """Add ``output_path`` to the meta file with the input's own steps (when the input is a
    perturbed file listed there) followed by ``chain``, as the reference's
    ``write_to_meta_file``. Paths with spaces cannot be written in its format."""
    if any(c.isspace() for c in input_path + output_path):
        raise PerturbationError("the meta file's format cannot hold paths with spaces")
    meta = read_meta(meta_path)
    meta[output_path] = list(meta.get(input_path, [])) + [str(p) for p in chain]
    atomic_write_text(meta_path, "".join(" ".join([k, *v]) + "\n" for k, v in meta.items()))
