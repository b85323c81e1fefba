"""The face crop a detector expects and the one a dataset index was cut with: :class:`CropSpec`.

Two geometries (``method``), both a square of ``size`` pixels placed with dlib's 68 landmarks
(:func:`preprocessing.align.crop_matrix` computes them):

- ``template``, DeepfakeBench's (paper 002, Appendix A.1): a similarity transform of five points
  (eye centres, nose tip, mouth corners) onto the five-point template of 112-px face crops,
  shrunk towards the centre by the margin ``scale`` (1.3 in DeepfakeBench). The crop side is
  about 3.8 x max(eye distance, eye-to-mouth distance) at 1.3 (docs/detectors.md, MesoNet).
- ``mesonet``, the MesoNet authors' (``pipeline.py`` of their repository, Afchar et al. 2018):
  upright (the line from the eyes' midpoint to the lips' centre made vertical), centred on the
  middle of the nose, side = ``scale`` x max(eye distance, eye-to-mouth distance); their
  ``K = 2.2`` times ``l_factor = 1.3`` makes ``scale: 2.86``.

A detector YAML's ``crop:`` section names the crop its original weights were trained on; read it
with :func:`expected_crop`. A dataset index records its crop under ``crop`` (schema version 3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from fairforensics.configs.loader import build_config

CROP_METHODS = ("template", "mesonet")


@dataclass(frozen=True)
class CropSpec:
    """A face crop: its geometry (``method``), its margin or side factor (``scale``) and its
    side in pixels (``size``)."""

    method: Literal["template", "mesonet"] = "template"
    scale: float = 1.3
    size: int = 256

    def __post_init__(self) -> None:
        if self.method not in CROP_METHODS:
            raise ValueError(
                f"key 'method' has value {self.method!r}; allowed values: {', '.join(CROP_METHODS)}"
            )
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 16:
            raise ValueError(
                f"key 'size' has value {self.size!r}; allowed values: an integer >= 16"
            )
        if not isinstance(self.scale, (int, float)) or not self.scale >= 1.0:
            raise ValueError(f"key 'scale' has value {self.scale!r}; allowed values: a number >= 1")

    def describe(self) -> str:
        """One line for logs and reports."""
        if self.method == "mesonet":
            what = (
                f"the MesoNet authors' crop (side {self.scale:g} x max(eye distance, "
                "eye-to-mouth distance), centred on the nose)"
            )
        else:
            what = f"DeepfakeBench's five-point alignment with margin {self.scale:g}"
        return f"{what}, {self.size} px"

    def matches(self, other: CropSpec) -> bool:
        """The same geometry, margin (within 0.1 %) and size."""
        return (
            self.method == other.method
            and self.size == other.size
            and math.isclose(self.scale, other.scale, rel_tol=1e-3)
        )

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "scale": float(self.scale), "size": int(self.size)}


def crop_from_mapping(data: Any, source: str = "<crop>") -> CropSpec | None:
    """A :class:`CropSpec` from a ``crop`` mapping (``None`` stays ``None``); a bad key or value
    is a :class:`~configs.ConfigError` naming ``source``."""
    if data is None:
        return None
    return build_config(CropSpec, data, source=source)


def expected_crop(
    detector_cfg: Mapping[str, Any] | None, source: str = "detector config"
) -> CropSpec | None:
    """The crop a detector's original weights were trained on: the ``crop:`` section of its
    detector YAML (:func:`detectors.registry.load_detector_yaml`, or a run's saved config), or
    ``None`` where the original defines none."""
    if not detector_cfg:
        return None
    return crop_from_mapping(detector_cfg.get("crop"), source)


__all__ = ["CROP_METHODS", "CropSpec", "crop_from_mapping", "expected_crop"]
