"""Shipped YAML files that repeat a default for users to read must agree with its one home."""

from __future__ import annotations

import pytest

from fairforensics.configs import CONFIG_DIR, load_config, load_yaml
from fairforensics.evaluation.settings import TestConfig, load_test_config


def test_the_shipped_test_yaml_only_documents_the_defaults() -> None:
    assert load_test_config() == load_config(TestConfig)


@pytest.mark.parametrize(
    "path", sorted((CONFIG_DIR / "detectors").glob("*.yaml")), ids=lambda p: p.stem
)
def test_detector_yaml_resolution_agrees_with_the_model_input_size(path) -> None:
    """The trainer uses ``train.resolution`` and sets ``model.input_size`` from it; a YAML that
    gives both must give the same value, or one would silently overwrite the other."""
    data = load_yaml(path)
    size = (data.get("model") or {}).get("input_size")
    resolution = (data.get("train") or {}).get("resolution")
    if size is not None and resolution is not None:
        assert size == resolution, (
            f"{path}: model.input_size {size} != train.resolution {resolution}"
        )
