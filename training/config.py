"""The trainer's typed configuration (``TrainConfig``) and its layered loader.

Defaults follow DeepfakeBench (paper 002, Sec. 4.1 and Appendix A.3): Adam, lr 2e-4,
betas (0.9, 0.999), batch 32, 32 frames per video for training and testing, 256x256 faces, and
the augmentations of :class:`AugmentConfig`. Layers: dataclass defaults < the detector YAML's
``model:``/``train:``/``crop:`` sections < each YAML file < ``--set`` overrides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fairforensics.configs import (
    ConfigError,
    build_config,
    load_config,
    load_yaml,
    parse_overrides,
    resolve_config,
)
from fairforensics.configs.crop import CropSpec
from fairforensics.detectors.registry import get_detector_class, load_detector_yaml
from fairforensics.preprocessing.rundir import RunDir
from fairforensics.training.fair_losses import FairLossConfig

_Rule = tuple[Callable[[Any], bool], str]  # (is the value allowed?, the allowed values in words)

_AT_LEAST_0: _Rule = (lambda v: v >= 0, "a number >= 0")
_AT_LEAST_1: _Rule = (lambda v: v >= 1, "an integer >= 1")
_POSITIVE: _Rule = (lambda v: v > 0, "a number > 0")
_PROBABILITY: _Rule = (lambda v: 0 <= v <= 1, "a probability in [0, 1]")
_NULL_OR_AT_LEAST_1: _Rule = (lambda v: v is None or v >= 1, "null or an integer >= 1")


def _range(lo: float, hi: float) -> _Rule:
    """A ``[low, high]`` pair with ``lo <= low <= high <= hi``."""
    return (lambda v: lo <= v[0] <= v[1] <= hi, f"[low, high] with {lo:g} <= low <= high <= {hi:g}")


def check_values(section: object, rules: Mapping[str, _Rule]) -> None:
    """Raise ``ValueError`` naming the first field of ``section`` whose value breaks its rule.

    Raised inside a dataclass ``__post_init__``, the config loader turns it into a one-line
    :class:`~configs.ConfigError` naming the file and the section.
    """
    for name, (ok, allowed) in rules.items():
        value = getattr(section, name)
        if not ok(value):
            raise ValueError(f"key '{name}' has value {value!r}; allowed values: {allowed}")


@dataclass
class OptimizerConfig:
    """Optimiser: Adam (paper default, lr 2e-4, betas 0.9/0.999), AdamW or SGD.

    ``sam_rho`` > 0 wraps it in sharpness-aware minimisation with that radius (two forward-backward
    passes per step; ``sam_adaptive``: ASAM's parameter-scaled radius; :mod:`training.sam`).
    """

    name: Literal["adam", "adamw", "sgd"] = "adam"
    lr: float = 2e-4
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0
    momentum: float = 0.9
    nesterov: bool = False
    sam_rho: float = 0.0
    sam_adaptive: bool = False

    def __post_init__(self) -> None:
        check_values(
            self,
            {
                "lr": _POSITIVE,
                "betas": (lambda v: all(0 <= b < 1 for b in v), "two numbers in [0, 1)"),
                "eps": _AT_LEAST_0,
                "weight_decay": _AT_LEAST_0,
                "momentum": _PROBABILITY,
                "sam_rho": (lambda v: v >= 0, "a number >= 0 (0: no SAM)"),
            },
        )


@dataclass
class SchedulerConfig:
    """Learning-rate schedule, stepped once per optimiser step (not once per run).

    ``step``: multiply by ``gamma`` every ``step_size`` epochs; ``cosine``: cosine decay to
    ``min_lr`` over the run; ``none``: constant. ``warmup_steps`` > 0 adds a linear warm-up.
    """

    name: Literal["none", "step", "cosine"] = "none"
    step_size: int = 10
    gamma: float = 0.1
    min_lr: float = 0.0
    warmup_steps: int = 0

    def __post_init__(self) -> None:
        check_values(
            self,
            {"step_size": _AT_LEAST_1, "gamma": _POSITIVE, "min_lr": _AT_LEAST_0,
             "warmup_steps": _AT_LEAST_0},
        )  # fmt: skip


@dataclass
class FlipConfig:
    p: float = 0.5

    def __post_init__(self) -> None:
        check_values(self, {"p": _PROBABILITY})


@dataclass
class RotateConfig:
    p: float = 0.5
    limit: float = 10.0

    def __post_init__(self) -> None:
        check_values(self, {"p": _PROBABILITY, "limit": (lambda v: 0 <= v <= 180, "0 to 180")})


@dataclass
class BlurConfig:
    p: float = 0.5
    blur_limit: tuple[int, int] = (3, 7)

    def __post_init__(self) -> None:
        odd = (lambda v: v[0] <= v[1] and all(k >= 3 and k % 2 for k in v), "odd [low, high] >= 3")
        check_values(self, {"p": _PROBABILITY, "blur_limit": odd})


@dataclass
class IsotropicResizeConfig:
    """Resize the longest side to the resolution with a random interpolation pair (p=1)."""

    p: float = 1.0

    def __post_init__(self) -> None:
        check_values(self, {"p": _PROBABILITY})


COLOR_KINDS = ("brightness_contrast", "fancy_pca", "hsv")


@dataclass
class ColorConfig:
    """One of ``kinds`` (brightness/contrast, FancyPCA, hue-saturation-value), applied with ``p``."""

    p: float = 0.5
    kinds: tuple[str, ...] = COLOR_KINDS
    brightness_limit: tuple[float, float] = (-0.1, 0.1)
    contrast_limit: tuple[float, float] = (-0.1, 0.1)
    fancy_pca_alpha: float = 0.1
    hue_shift_limit: float = 20.0
    sat_shift_limit: float = 30.0
    val_shift_limit: float = 20.0

    def __post_init__(self) -> None:
        check_values(
            self,
            {"p": _PROBABILITY, "brightness_limit": _range(-1, 1), "contrast_limit": _range(-1, 1),
             "fancy_pca_alpha": _AT_LEAST_0, "hue_shift_limit": _AT_LEAST_0,
             "sat_shift_limit": _AT_LEAST_0, "val_shift_limit": _AT_LEAST_0,
             "kinds": (lambda v: 0 < len(v) == len(set(v)) and set(v) <= set(COLOR_KINDS),
                       f"a non-empty list of distinct kinds of {', '.join(COLOR_KINDS)}")},
        )  # fmt: skip


@dataclass
class DownscaleConfig:
    """Down-scale by a ratio drawn from ``ratios`` (nearest) and back (linear), with ``p``
    (DeepfakeBench's ``RandomDownScale``: LSDA's augmentation)."""

    p: float = 0.0
    ratios: tuple[int, ...] = (2, 4)

    def __post_init__(self) -> None:
        check_values(
            self,
            {"p": _PROBABILITY, "ratios": (lambda v: len(v) > 0 and min(v) >= 1, "ratios >= 1")},
        )


@dataclass
class SharpenConfig:
    """albumentations' ``Sharpen(alpha, lightness)`` with ``p`` (LSDA's augmentation)."""

    p: float = 0.0
    alpha: tuple[float, float] = (0.2, 0.5)
    lightness: tuple[float, float] = (0.5, 1.0)

    def __post_init__(self) -> None:
        check_values(self, {"p": _PROBABILITY, "alpha": _range(0, 1), "lightness": _range(0, 10)})


@dataclass
class JpegConfig:
    p: float = 0.5
    quality: tuple[int, int] = (40, 100)

    def __post_init__(self) -> None:
        check_values(self, {"p": _PROBABILITY, "quality": _range(1, 100)})


@dataclass
class AugmentConfig:
    """Training augmentations (DeepfakeBench A.3); set ``p: 0`` to switch one off."""

    enabled: bool = True
    hflip: FlipConfig = field(default_factory=FlipConfig)
    rotate: RotateConfig = field(default_factory=RotateConfig)
    blur: BlurConfig = field(default_factory=BlurConfig)
    isotropic_resize: IsotropicResizeConfig = field(default_factory=IsotropicResizeConfig)
    color: ColorConfig = field(default_factory=ColorConfig)
    downscale: DownscaleConfig = field(default_factory=DownscaleConfig)
    sharpen: SharpenConfig = field(default_factory=SharpenConfig)
    jpeg: JpegConfig = field(default_factory=JpegConfig)


@dataclass
class FairSwapConfig:
    """FairSWAP batch augmentation (paper 001 Sec. V), applied after collation."""

    enabled: bool = False
    p1: float = 0.3
    p2: float = 0.3
    p3: float = 0.5
    p4: float = 0.5
    patch: int = 64
    group_key: str = "gender"

    def __post_init__(self) -> None:
        rules = dict.fromkeys(("p1", "p2", "p3", "p4"), _PROBABILITY) | {"patch": _AT_LEAST_1}
        check_values(self, rules)


@dataclass
class TrainSection:
    """Everything about how to train; a detector YAML's ``train:`` section overrides these."""

    epochs: int = 10
    batch_size: int = 32
    eval_batch_size: int | None = None
    frame_num: int = 32
    test_frame_num: int = 32
    resolution: int | None = None
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    grad_clip: float | None = None
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    channels_last: bool = True
    compile: bool = False
    keep_host_memory: bool = True
    ddp_find_unused: bool = False
    seed: int = 1024
    sampler: Literal["shuffle", "class_balanced", "group_balanced", "class_group_balanced"] = (
        "shuffle"
    )
    group_key: str | None = None
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    fairswap: FairSwapConfig = field(default_factory=FairSwapConfig)
    fair_loss: FairLossConfig = field(default_factory=FairLossConfig)
    pixel_map_size: int = 14
    eval_every_steps: int = 0
    checkpoint_every_steps: int = 0
    selection: Literal["val", "test-top3"] = "val"
    selection_metric: Literal["auc", "ap", "eer", "acc"] = "auc"
    selection_level: Literal["frame", "video"] = "frame"
    patience: int | None = None
    log_every_steps: int = 20
    save_predictions: bool = True

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "frame_num", "test_frame_num"):
            if getattr(self, name) < 1:
                raise ValueError(f"train.{name} must be >= 1, got {getattr(self, name)}")
        if self.sampler in ("group_balanced", "class_group_balanced") and not self.group_key:
            raise ValueError(f"train.sampler {self.sampler!r} needs train.group_key (an attribute)")
        if self.patience is not None and self.patience < 1:
            raise ValueError(f"train.patience must be >= 1 or null, got {self.patience}")
        check_values(
            self,
            {
                "eval_batch_size": _NULL_OR_AT_LEAST_1,
                "resolution": _NULL_OR_AT_LEAST_1,
                "grad_clip": (lambda v: v is None or v > 0, "null or a number > 0"),
                "seed": (lambda v: 0 <= v < 2**32, "an integer in [0, 2**32)"),
                "pixel_map_size": _AT_LEAST_1,
                "eval_every_steps": (lambda v: v >= 0, "an integer >= 0 (0: once per epoch)"),
                "checkpoint_every_steps": (lambda v: v >= 0, "an integer >= 0 (0: off)"),
                "log_every_steps": _AT_LEAST_1,
            },
        )


@dataclass
class DataSection:
    """Which datasets to use: names resolve to ``<data_root>/<name>.json``."""

    data_root: str = "datasets"
    train_data: list[str] = field(default_factory=list)
    val_data: list[str] = field(default_factory=list)
    test_data: list[str] = field(default_factory=list)
    num_workers: int = 2
    cache: bool = False
    cache_dir: str | None = None
    max_unreadable_fraction: float = 0.01  # of an epoch's frames; more stops the run

    def __post_init__(self) -> None:
        check_values(
            self,
            {
                "num_workers": (lambda v: v >= 0, "an integer >= 0 (0: no workers)"),
                "max_unreadable_fraction": (lambda v: 0 <= v <= 1, "a fraction in [0, 1]"),
            },
        )


@dataclass
class TrainConfig:
    """A full training run: ``detector``, its ``model`` fields, ``train`` and ``data`` sections.

    ``crop`` is the face crop the weights were trained on (:class:`configs.crop.CropSpec`): the
    detector YAML's ``crop:`` section (its original weights'); a run's saved config holds its
    training data's crop instead (``null`` when an index does not record it or they differ)."""

    detector: str = "meso4"
    model: dict[str, Any] = field(default_factory=dict)
    train: TrainSection = field(default_factory=TrainSection)
    data: DataSection = field(default_factory=DataSection)
    crop: CropSpec | None = None
    output_dir: str = "runs"
    run_name: str | None = None
    device: str = "auto"


def load_train_config(
    detector: str | None = None,
    *yaml_paths: str | Path | None,
    overrides: Iterable[str] | Mapping[str, Any] = (),
    detector_yaml: str | Path | None = None,
    variant: str | None = None,
) -> TrainConfig:
    """Resolve a :class:`TrainConfig`.

    Layers: defaults < ``configs/detectors/<detector>.yaml`` (``model`` and ``train``) <
    each file of ``yaml_paths`` (same shape as :class:`TrainConfig`) < ``overrides``
    (``"train.lr=1e-4"`` strings or a nested mapping). ``detector`` may also come from a file
    or an override (precedence: ``--set detector=`` > argument > files); the detector YAML of
    the final name is used: ``detector_yaml`` if given, else ``configs/detectors/paper/<name>.yaml``
    for ``variant="paper"``, else ``configs/detectors/<name>.yaml``.
    """
    if detector_yaml is not None:
        detector_yaml = resolve_config(detector_yaml, "detectors")
    yaml_paths = tuple(None if p is None else resolve_config(p, "train") for p in yaml_paths)
    from_files = load_yaml(detector_yaml).get("detector") if detector_yaml is not None else None
    for path in yaml_paths:
        if path is not None:
            from_files = load_yaml(path).get("detector", from_files)
    over = dict(overrides) if isinstance(overrides, Mapping) else parse_overrides(overrides)
    name = over.get("detector") or detector or from_files
    if not name or not isinstance(name, str):
        raise ConfigError("no detector given: pass --detector NAME or set 'detector' in a config")
    try:
        get_detector_class(name)
    except KeyError as exc:
        raise ConfigError(str(exc.args[0])) from None
    over["detector"] = name
    det_yaml = load_detector_yaml(name, detector_yaml, variant)
    base = {
        "detector": name,
        "model": dict(det_yaml.get("model") or {}),
        "train": dict(det_yaml.get("train") or {}),
        "crop": det_yaml.get("crop"),
    }
    return load_config(TrainConfig, *yaml_paths, overrides=over, base=base)


def read_run_config(run_dir: str | Path) -> TrainConfig:
    """The typed config a run directory saved (the same ``config.yaml`` that
    ``evaluation.runs.load_run`` reads, through :class:`preprocessing.rundir.RunDir`)."""
    run = RunDir(run_dir)
    return build_config(TrainConfig, run.read_config(), str(run.config))
