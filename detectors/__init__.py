"""Detector registry and models: ``build_detector(name, cfg)``, ``list_detectors()``."""

from detectors.base import Detector, DetectorConfig
from detectors.registry import (
    build_detector,
    get_detector_class,
    list_detectors,
    load_detector_yaml,
    register_detector,
)

__all__ = [
    "Detector",
    "DetectorConfig",
    "build_detector",
    "get_detector_class",
    "list_detectors",
    "load_detector_yaml",
    "register_detector",
]
