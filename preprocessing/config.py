"""Typed schema of ``configs/preprocess/<dataset>.yaml`` (DeepfakeBench, Appendix A.1 "Configuration").

Relative paths in a config resolve against the current working directory.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from fairforensics.configs.crop import CropSpec
from fairforensics.configs.loader import build_config, config_to_dict, load_config, resolve_config


@dataclass
class AttributesConfig:
    """An attributes CSV joined into the index (per video or per subject)."""

    csv: str
    join: Literal["identity", "video"] = "identity"  # match the subject id, or the video id
    key_column: str | None = None  # default: "identity" for join=identity, "video" otherwise
    columns: list[str] = field(default_factory=list)  # empty: every other column

    @property
    def key(self) -> str:
        return self.key_column or ("identity" if self.join == "identity" else "video")


@dataclass
class DatasetConfig:
    """Which dataset to read: ``type`` picks the module, ``options`` are that module's options."""

    name: str
    type: str
    root: str
    options: dict[str, Any] = field(default_factory=dict)
    attributes: AttributesConfig | None = None

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or "\\" in self.name:
            raise ValueError(f"dataset.name must be a plain file name, got {self.name!r}")


@dataclass
class SamplingConfig:
    """Which frames of a video to keep: ``num_frames`` spread over it, every ``stride``-th, or
    (``clips``) ``num_clips`` runs of ``clip_size`` consecutive frames, for video detectors."""

    mode: Literal["fixed_num_frames", "fixed_stride", "clips"] = "fixed_num_frames"
    num_frames: int = 32
    stride: int = 1
    clip_size: int = 16
    num_clips: int = 4

    def __post_init__(self) -> None:
        for name in ("num_frames", "stride", "clip_size", "num_clips"):
            if getattr(self, name) <= 0:
                raise ValueError(f"sampling.{name} must be positive, got {getattr(self, name)}")


@dataclass
class DecodeConfig:
    """Video reader: ``pyav`` decodes only what kept frames need; ``opencv`` is the fallback."""

    backend: Literal["pyav", "opencv"] = "pyav"
    threads: int = 1  # decoder threads per worker process
    device: Literal["cpu", "cuda"] = "cpu"  # cuda: NVDEC through PyAV (backend pyav only)

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise ValueError("decode.threads must be >= 1")
        if self.device != "cpu" and self.backend != "pyav":
            raise ValueError("decode.device other than cpu needs decode.backend: pyav")


@dataclass
class FaceConfig:
    detector: Literal["hog", "cnn", "mtcnn"] = "hog"  # mtcnn: preprocessing/mtcnn.py
    upsample: int = 0
    detect_max_side: int | None = 640  # detect on a downscaled copy; null: full resolution
    retry_upsample: int = 1  # no face found: retry with up to this many more upsamplings
    keep: Literal["largest", "all"] = "largest"  # all: every face (PAD images of several people)
    detect_on: Literal["gray", "rgb"] = "gray"  # HOG scans the luma copy; rgb: as DeepfakeBench
    # videos with keep=largest: search each kept frame first at the coarsest scale where the
    # previous kept frame's face is 1.25x the smallest findable face (nothing found: as usual)
    face_size_from_previous: bool = True
    # where MTCNN runs (cuda: mtcnn only; no CUDA at run time is an error, never a CPU fallback;
    # the pool's workers then share the GPU, each with its own CUDA context)
    device: Literal["cpu", "cuda"] = "cpu"
    # mtcnn: kept frames of a video detected together (MTCNN.detect_batch); 1: frame by frame.
    # Batches do not use face_size_from_previous (every frame is searched at detect_max_side),
    # which on a CPU saves more than batching (docs/preprocessing.md "Speed"); null: 32 with
    # face.device cuda, 1 on the cpu
    batch_size: int | None = None

    def __post_init__(self) -> None:
        if self.upsample < 0 or self.retry_upsample < 0:
            raise ValueError("face.upsample and face.retry_upsample must be >= 0")
        if self.device != "cpu" and self.detector != "mtcnn":
            raise ValueError(
                f"face.device: {self.device} needs face.detector: mtcnn (dlib's detectors run "
                f"on the CPU), got face.detector: {self.detector}"
            )
        if self.batch_size is None:
            self.batch_size = 32 if self.device == "cuda" else 1
        if self.batch_size < 1:
            raise ValueError(f"face.batch_size must be an integer >= 1, got {self.batch_size!r}")
        if self.detect_max_side is not None and self.detect_max_side < 32:
            raise ValueError("face.detect_max_side must be >= 32 or null")


@dataclass
class AlignConfig:
    """The face crop (:class:`configs.crop.CropSpec`): ``method`` ``template`` is DeepfakeBench's
    five-point alignment with the margin ``scale``; ``mesonet`` the MesoNet authors' crop of side
    ``scale`` x max(eye distance, eye-to-mouth distance) (2.86: ``--config crop/mesonet``)."""

    size: int = 256
    scale: float = 1.3  # the margin of DeepfakeBench
    smooth_window: int = 0  # temporal moving average of landmarks over sampled frames; 0: off
    method: Literal["template", "mesonet"] = "template"

    def __post_init__(self) -> None:
        if self.size < 16 or self.scale < 1.0 or self.smooth_window < 0:
            raise ValueError("align.size must be >= 16, align.scale >= 1, smooth_window >= 0")

    @property
    def crop(self) -> CropSpec:
        """The crop these settings make (recorded in the index)."""
        return CropSpec(self.method, self.scale, self.size)

    def cropping(self, crop: CropSpec) -> AlignConfig:
        """These settings with the crop ``crop`` (its method, scale and size)."""
        return replace(self, method=crop.method, scale=crop.scale, size=crop.size)


@dataclass
class OutputConfig:
    root: str = "datasets"
    format: Literal["png", "jpg"] = "png"
    jpeg_quality: int = 95
    mask_threshold: int = 128

    def __post_init__(self) -> None:
        if not 1 <= self.jpeg_quality <= 100 or not 0 <= self.mask_threshold <= 255:
            raise ValueError("output.jpeg_quality must be 1-100 and mask_threshold 0-255")


@dataclass
class FaceSettings:
    """The settings of the path from a video or image to face crops
    (:mod:`preprocessing.face_path`): what a dataset index records under ``preprocess`` so that
    a detector trained on it sees the same crops in ``detect``."""

    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    face: FaceConfig = field(default_factory=FaceConfig)
    align: AlignConfig = field(default_factory=AlignConfig)
    output: OutputConfig = field(default_factory=OutputConfig)

    def __post_init__(self) -> None:
        if self.sampling.mode == "clips" and self.face.keep != "largest":
            raise ValueError(
                "sampling.mode: clips follows one face through each clip; it needs "
                f"face.keep: largest, got face.keep: {self.face.keep}"
            )

    def to_json(self) -> dict[str, Any]:
        """The settings as JSON (``output.root``, where files went, left out)."""
        data = {k: config_to_dict(getattr(self, k)) for k in FACE_SETTINGS_KEYS}
        del data["output"]["root"]
        return data

    @classmethod
    def from_json(cls, data: Any, source: str = "<preprocess settings>") -> FaceSettings:
        """Settings from :meth:`to_json` (missing keys take the defaults; a ConfigError names a
        bad one and ``source``)."""
        return build_config(cls, data, source=source)


FACE_SETTINGS_KEYS = ("sampling", "decode", "face", "align", "output")


@dataclass
class PreprocessConfig:
    dataset: DatasetConfig
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    face: FaceConfig = field(default_factory=FaceConfig)
    align: AlignConfig = field(default_factory=AlignConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    workers: int = 0  # 0: every core
    # the command fails (exit 1, after writing the index and manifest) when more than this share
    # of the listed videos fail (missing, corrupt, no face); 1.0 accepts any number of failures
    max_failed_share: float = 0.05

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_failed_share <= 1.0:
            raise ValueError(f"max_failed_share must be in [0, 1], got {self.max_failed_share}")
        self.face_settings()  # the rules between its sections

    def face_settings(self) -> FaceSettings:
        """The settings of the path from a video to face crops (shared with ``detect``)."""
        return FaceSettings(*(getattr(self, k) for k in FACE_SETTINGS_KEYS))

    def fingerprint(self) -> str:
        """Hash of every setting that changes the files written for a video."""
        parts = {k: config_to_dict(getattr(self, k)) for k in ("sampling", "face", "align")}
        if self.sampling.mode != "clips":  # results made before clips existed stay valid
            for key in ("clip_size", "num_clips"):
                del parts["sampling"][key]
        if self.align.method == "template":  # results made before crop methods stay valid
            del parts["align"]["method"]
        parts["output"] = {k: v for k, v in config_to_dict(self.output).items() if k != "root"}
        text = json.dumps(parts, sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    @property
    def index_path(self) -> Path:
        return Path(self.output.root) / f"{self.dataset.name}.json"


def load_preprocess_config(*paths: str | Path, overrides: Any = ()) -> PreprocessConfig:
    """Load and validate a preprocessing config (defaults < files < ``--set`` overrides); a
    path may name a shipped config (``FF-c23``, see :func:`~configs.loader.resolve_config`).

    The dataset module's ``options`` are checked here too, so a bad option fails at load time.
    """
    from fairforensics.configs.loader import ConfigError
    from fairforensics.preprocessing.datasets import dataset_options

    paths = tuple(resolve_config(p, "preprocess") for p in paths)
    cfg = load_config(PreprocessConfig, *paths, overrides=overrides)
    source = " + ".join(str(p) for p in paths) or "<defaults>"
    try:
        dataset_options(cfg.dataset.type, cfg.dataset.options, source)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return cfg
