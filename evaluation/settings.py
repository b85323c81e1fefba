"""The config schema of ``scripts/test.py`` (defaults: ``configs/test/default.yaml``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fairforensics.configs import CONFIG_DIR, ConfigError, load_config
from fairforensics.preprocessing.index import SPLIT_CHOICES

DEFAULT_CONFIG = CONFIG_DIR / "test" / "default.yaml"


@dataclass
class AnalysisConfig:
    """Frames per class for each analysis tool on the first test set (0 = off)."""

    gradcam: int = 0
    tsne: int = 0
    spectra: int = 0


@dataclass
class TestConfig:
    """Settings of ``scripts/test.py`` (``configs/test/default.yaml``)."""

    __test__ = False  # not a pytest test class

    data_root: str | None = None
    test_data: list[str] = field(default_factory=list)
    split: Literal[SPLIT_CHOICES] = "test"  # train, val, test or all (every video of the index)
    frame_num: int | None = None
    batch_size: int = 32
    num_workers: int = 0
    device: str = "auto"
    amp: bool = True
    levels: list[Literal["frame", "video"]] = field(default_factory=lambda: ["frame", "video"])
    reduce: Literal["mean", "median", "max"] = "mean"
    threshold: float = 0.5
    metrics: list[str] = field(default_factory=lambda: ["auc", "ap", "eer", "acc"])
    fpr_targets: list[float] = field(default_factory=lambda: [0.01, 0.1])
    n_boot: int = 1000
    confidence: float = 0.95
    seed: int = 0
    plots: bool = True
    report: bool = True
    analysis: AnalysisConfig = field(default_factory=lambda: AnalysisConfig())

    def __post_init__(self) -> None:
        known = {"acc", "precision", "recall", "f1", "auc", "ap", "eer", "eer_threshold"}
        known |= {f"tpr@fpr={x:g}" for x in self.fpr_targets}
        bad = [m for m in self.metrics if m not in known]
        if bad:
            raise ConfigError(
                f"test config: key 'metrics' has unknown {', '.join(bad)}; allowed: "
                f"{', '.join(sorted(known))}"
            )
        if self.n_boot < 0 or not 0 < self.confidence < 1 or self.batch_size < 1:
            raise ConfigError(
                "test config: need n_boot >= 0, 0 < confidence < 1 and batch_size >= 1"
            )
        if not self.levels:
            raise ConfigError("test config: key 'levels' must name 'frame' and/or 'video'")


def load_test_config(
    *paths: str | Path | None, overrides: Sequence[str] | Mapping[str, Any] = ()
) -> TestConfig:
    """Defaults < ``configs/test/default.yaml`` < ``paths`` < ``overrides``."""
    return load_config(TestConfig, DEFAULT_CONFIG, *paths, overrides=overrides, kind="test")
