"""What ``detect`` scores with: the detector (a run, or a registered name and a weights file),
the face-crop settings its training data was made with, the frames per video ``test.py`` scores
and the decision threshold."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fairforensics.configs import ConfigError, load_config
from fairforensics.configs.crop import CropSpec, crop_from_mapping
from fairforensics.detectors.base import Detector
from fairforensics.evaluation.calibration.fitting import CalibrationError
from fairforensics.evaluation.calibration.source import ChosenCalibration
from fairforensics.evaluation.model_package.load import LoadedModel
from fairforensics.evaluation.predict import clip_size_of
from fairforensics.evaluation.settings import load_test_config
from fairforensics.evaluation.testing import load_for_test
from fairforensics.preprocessing.config import FaceSettings, SamplingConfig
from fairforensics.preprocessing.index import DatasetIndexError
from fairforensics.preprocessing.resolve import resolve_index_path
from fairforensics.preprocessing.rundir import RunDir

log = logging.getLogger(__name__)

#: DeepfakeBench's face-crop settings but the crop, then with its crop
_DEFAULT_SAMPLING = "DeepfakeBench's defaults (dlib HOG, 32 frames per video"
DEFAULTS = f"{_DEFAULT_SAMPLING}, margin 1.3, 256 px)"


@dataclass
class Scorer:
    """A detector with everything needed to score files as ``test.py`` scores its test sets."""

    detector: Detector
    name: str
    weights: str  # best, last or the weights file given
    meta: dict[str, Any]  # weights_file, weights_sha256, run (paths as given)
    settings: FaceSettings
    settings_source: str  # where the settings come from, said in every output
    frame_num: int | None  # faces scored per video (test.py's frame_num); None: all
    reduce: str  # a video's score from its faces' (test.py's reduce)
    run: Path | None = None
    train_data: str = ""  # the training data's names joined by "+" ("": not known)
    #: the calibration the run or package stored, with where it comes from (None: none)
    calibration: ChosenCalibration | None = None

    @property
    def clip_size(self) -> int | None:
        return clip_size_of(self.detector)

    @property
    def task(self) -> str:
        return "pad" if type(self.detector).family == "PAD" else "deepfake"

    @property
    def verdicts(self) -> tuple[str, str]:
        """(below the threshold, at or above it)."""
        return ("bona fide", "attack") if self.task == "pad" else ("real", "fake")


def load_scorer(
    run: str | Path | None = None,
    detector: str | None = None,
    weights: str | Path | None = None,
    model_config: str | Path | None = None,
    variant: str | None = None,
    face_overrides: Sequence[str] = (),
    *,
    package: LoadedModel | None = None,
) -> Scorer:
    """The detector of ``run`` (``weights``: best, last or a file) or the registered
    ``detector`` with a ``weights`` file (``model_config``/``variant`` as in ``test.py``), with
    the face-crop settings of the run's training index (else :data:`DEFAULTS`, cropping as the
    run's config or the detector's YAML says: its ``crop``, :func:`configs.crop.expected_crop`),
    changed by ``face_overrides`` (``KEY=VALUE``, e.g. ``sampling.num_frames=8``). ``package``
    (a loaded model package) replaces both: the settings, frames and reduction it records."""
    if sum(x is not None for x in (run, detector, package)) != 1:
        raise ConfigError(
            "give a run directory (run=...), a detector name (detector=...) or a model package "
            "(model=...)"
        )
    cfg = load_test_config()
    if package is not None:
        cfg.reduce = package.reduce
    model, name, train_data, meta, _ = load_for_test(
        None if run is None else Path(run),
        detector,
        str(weights or "best"),
        model_config,
        cfg,
        out=Path("."),
        variant=variant,
        package=package,
    )
    crop = crop_from_mapping(meta.get("expected_crop"), "expected_crop")
    if package is not None and package.face_settings is not None:
        settings, source = package.face_settings, package.face_settings_source
    elif package is not None:
        settings, source = default_face_settings(crop, f"model package {package.ref}")
    elif run is not None:
        settings, source = run_face_settings(Path(run), crop)
    else:
        settings, source = default_face_settings(crop, f"{name}'s config")
    clip = clip_size_of(model)
    if clip is not None and settings.sampling.mode != "clips":
        if run is None and package is None:  # a video detector sees clips of consecutive frames
            n = max(32 // clip, 1)
            settings = replace(
                settings, sampling=SamplingConfig("clips", clip_size=clip, num_clips=n)
            )
            source += f", with {n} clip(s) of {clip} consecutive frames for the video detector"
        else:
            log.warning(
                "%s is a video detector but its training data was not cut into clips "
                "(sampling.mode: %s); its clips will skip frames, as in test.py",
                name, settings.sampling.mode,
            )  # fmt: skip
    if face_overrides:
        settings = load_config(FaceSettings, base=settings.to_json(), overrides=face_overrides)
        source += " changed by " + ", ".join(face_overrides)
    calibration = stored_calibration(run, str(weights or "best"), package)
    return Scorer(
        model,
        name,
        package.ref if package is not None else str(weights or "best"),
        {k: meta.get(k) for k in ("weights_file", "weights_sha256")},
        settings,
        source,
        cfg.frame_num,
        cfg.reduce,
        None if run is None else Path(run),
        train_data,
        calibration,
    )


def stored_calibration(
    run: str | Path | None, weights: str, package: LoadedModel | None
) -> ChosenCalibration | None:
    """The calibration a package carries or a run stored for its ``weights`` checkpoint."""
    if package is not None and package.calibration is not None:
        return ChosenCalibration(package.calibration, f"model package {package.ref}", None)
    if run is None or package is not None or weights not in ("best", "last"):
        return None
    from fairforensics.evaluation.calibration.source import STORED, choose_calibration

    try:
        return choose_calibration(STORED, run=run, weights=weights)
    except CalibrationError as exc:
        log.info("no calibrated probability: %s", exc)
        return None


def default_face_settings(crop: CropSpec | None, where: str) -> tuple[FaceSettings, str]:
    """:data:`DEFAULTS` cropping as ``crop`` says (the crop a detector's weights expect, read
    from ``where``; ``None``: DeepfakeBench's), and where the settings come from."""
    settings = FaceSettings()
    if crop is None or crop.matches(settings.align.crop):
        return settings, DEFAULTS
    settings = replace(settings, align=settings.align.cropping(crop))
    return settings, f"{_DEFAULT_SAMPLING}) with the crop of {where}: {crop.describe()}"


def run_face_settings(run: Path, crop: CropSpec | None = None) -> tuple[FaceSettings, str]:
    """The face-crop settings a run's training data was made with, and where they come from:
    the run's ``meta.json`` (``preprocess``, written by training), else its training indexes
    (their ``preprocess``), else :data:`DEFAULTS` with ``crop`` (the training data's crop the
    run's config records; said so)."""
    rundir = RunDir(run)
    cfg = rundir.read_config()
    data = cfg.get("data") or {}
    names = data.get("train_data") or []
    names = [names] if isinstance(names, str) else list(names)
    try:
        recorded = json.loads(rundir.meta.read_text(encoding="utf-8")).get("preprocess") or {}
    except (OSError, ValueError):
        recorded = {}
    found: dict[str, tuple[dict[str, Any], str]] = {}
    for name in names:
        if recorded.get(name):
            found[name] = (recorded[name], f"{rundir.meta}")
            continue
        try:
            path = resolve_index_path(name, data.get("data_root") or "datasets")
            settings = json.loads(path.read_text(encoding="utf-8")).get("preprocess")
        except (DatasetIndexError, OSError, ValueError):
            continue
        if settings:
            found[name] = (settings, str(path))
    if not found:
        log.warning(
            "the training data of %s (%s) records no face-crop settings (an index made before "
            "they were recorded, or imported); cropping with %s",
            run,
            ", ".join(names),
            DEFAULTS if crop is None else f"{_DEFAULT_SAMPLING}) with the crop of its config",
        )
        settings, source = default_face_settings(crop, f"{run}'s config")
        return settings, (
            f"{source}: the run's training data ({', '.join(names)}) records no settings"
        )
    first = next(iter(found))
    settings, where = found[first]
    if any(s != settings for s, _ in found.values()):
        log.warning(
            "the training indexes of %s were made with different face-crop settings; using "
            "those of %s", run, first
        )  # fmt: skip
    source = f"the run's training data {first} (recorded in {where})"
    return FaceSettings.from_json(settings, source=where), source
