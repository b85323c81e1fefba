"""Variant selection: configs/detectors/<name>.yaml (DeepfakeBench) vs paper/<name>.yaml."""

from __future__ import annotations

import pytest

from fairforensics.configs import CONFIG_DIR, ConfigError
from fairforensics.detectors import build_detector, load_detector_yaml
from fairforensics.detectors.registry import detector_config_path
from fairforensics.training.config import load_train_config


def test_paper_yaml_path_and_default() -> None:
    assert detector_config_path("cnn_aug") == CONFIG_DIR / "detectors" / "cnn_aug.yaml"
    assert detector_config_path("cnn_aug", "paper") == (
        CONFIG_DIR / "detectors" / "paper" / "cnn_aug.yaml"
    )
    with pytest.raises(ConfigError, match="unknown variant 'keras'"):
        detector_config_path("cnn_aug", "keras")


def test_variant_picks_the_yaml() -> None:
    assert load_detector_yaml("cnn_aug")["model"]["mean"] == [0.5, 0.5, 0.5]
    assert load_detector_yaml("cnn_aug", variant="paper")["model"]["mean"] == [0.485, 0.456, 0.406]
    model = build_detector("cnn_aug", variant="paper")
    assert model.cfg.mean == (0.485, 0.456, 0.406)
    assert build_detector("cnn_aug").cfg.mean == (0.5, 0.5, 0.5)


def test_missing_paper_variant_is_an_error() -> None:
    with pytest.raises(ConfigError, match="has no paper variant"):
        load_detector_yaml("xception", variant="paper")
    with pytest.raises(ConfigError, match="has no paper variant"):
        build_detector("xception", {"pretrained": False}, variant="paper")


def test_train_config_reads_the_variant() -> None:
    dfb = load_train_config("cnn_aug")
    paper = load_train_config("cnn_aug", variant="paper")
    assert dfb.train.optimizer.weight_decay == pytest.approx(5e-4)
    assert paper.model["mean"] == [0.485, 0.456, 0.406]
    assert paper.train.augment.blur.p == pytest.approx(0.5)


def test_explicit_detector_yaml_names_the_detector(tmp_path) -> None:
    path = tmp_path / "my_cnn_aug.yaml"
    path.write_text("detector: cnn_aug\nmodel:\n  input_size: 128\ntrain:\n  epochs: 3\n")
    cfg = load_train_config(detector_yaml=path)
    assert cfg.detector == "cnn_aug" and cfg.model["input_size"] == 128 and cfg.train.epochs == 3
