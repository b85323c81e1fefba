"""Score videos and images with a detector, as ``preprocess`` + ``test.py`` would score them.

Each file goes through the face path preprocessing runs (:func:`preprocessing.face_path.
face_crops`: only the sampled frames decoded, faces found, aligned and cropped in memory) with
the settings the detector's training data was made with, and its crops are scored through the
dataset and batches ``test.py`` uses (:mod:`evaluation.detection.scoring`): a video's score is
the mean (``test.py``'s ``reduce``) of its faces' scores over the same frames. Files are
processed ``files_per_batch`` at a time and their faces scored in shared batches. A file that
cannot be read, or is not an image or video, fails alone; one without a face in any sampled
frame is ``no_face``; each says why in its result (the command prints one line per file).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np
from tqdm import tqdm

from fairforensics.configs import ConfigError
from fairforensics.evaluation.detection.inputs import InputFile, expand_inputs, other_files_note
from fairforensics.evaluation.detection.results import DetectResult, FaceScore, FileResult
from fairforensics.evaluation.detection.scoring import Unit, score_units, short_for_clips
from fairforensics.evaluation.detection.source import Scorer, load_scorer
from fairforensics.evaluation.metrics import video_scores
from fairforensics.evaluation.model_package.load import LoadedModel, load_model
from fairforensics.evaluation.thresholds import decision_threshold, warn_if_one_class
from fairforensics.preprocessing.config import FaceSettings
from fairforensics.preprocessing.device import resolve_device
from fairforensics.preprocessing.face_path import (
    STAGES,
    FaceCrop,
    FaceLog,
    NoFaceError,
    decode_sampled,
    face_analyzer,
    face_crops,
)
from fairforensics.preprocessing.faces import FaceAnalyzer
from fairforensics.preprocessing.video import MediaReadError

log = logging.getLogger(__name__)

STRIP = 8  # faces per file shown in the report
THUMB = 112  # their side, pixels


@dataclass
class _Pending:
    """A file whose crops wait for the model."""

    result: FileResult
    units: list[Unit]
    crops: dict[str, list[FaceCrop | None]]  # unit key -> the crop of each image (None: --crops)
    tracks: dict[str, int]  # unit key -> track


def detect(
    paths: str | Path | Sequence[str | Path],
    run: str | Path | None = None,
    detector: str | None = None,
    weights: str | Path | None = None,
    *,
    model: str | Path | LoadedModel | None = None,
    model_config: str | Path | None = None,
    variant: str | None = None,
    device: str = "auto",
    batch_size: int = 32,
    amp: bool = True,
    crops: bool = False,
    all_faces: bool = False,
    explain: bool = False,
    threshold: float | None = None,
    threshold_from: str | Path | None = None,
    face_overrides: Sequence[str] = (),
    keep_crops: bool = False,
    files_per_batch: int = 16,
    progress: bool = False,
) -> DetectResult:
    """Score every image and video of ``paths`` (files, folders searched recursively, ``.txt``
    lists of paths) with the detector of ``run`` (``weights``: ``best``, ``last`` or a file) or
    the registered ``detector`` and its ``weights`` file, or the model package ``model`` (a
    folder, ``hf:OWNER/NAME[@REVISION]`` or a :class:`LoadedModel`; its crop, frames and
    threshold).

    ``crops``: the images (or a video's sampled frames) already are face crops, scored as they
    are (resized to the detector's input). ``all_faces``: every face, grouped into tracks
    across frames (image detectors; a file's score is its highest track's), instead of the
    largest. ``explain``: Grad-CAM overlays of the faces the report shows. ``threshold`` /
    ``threshold_from`` (an ``eval.json`` of ``test.py`` or a run directory): the verdicts'
    threshold (default: the validation threshold the run recorded, else 0.5;
    :func:`evaluation.thresholds.decision_threshold`). ``face_overrides``: ``KEY=VALUE`` changes of the face-crop settings
    (``sampling.num_frames=8``). ``keep_crops``: keep every scored crop in the results.
    """
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    if not paths:
        raise ConfigError("no input: give at least one image, video, folder or list of paths")
    if batch_size < 1 or files_per_batch < 1:
        raise ConfigError("batch_size and files_per_batch must be >= 1")
    dev = str(resolve_device(device, option="--device cpu"))  # unusable: one error, no work
    package = load_model(model) if isinstance(model, (str, Path)) else model
    scorer = load_scorer(
        run, detector, weights, model_config, variant, face_overrides, package=package
    )
    chosen = decision_threshold(
        run=None if run is None else Path(run),
        packaged=None if package is None else package.threshold,
        threshold=threshold,
        threshold_from=None if threshold_from is None else Path(threshold_from),
        weights=scorer.weights,
    )
    value = chosen.value
    settings = scorer.settings
    if all_faces:
        if scorer.clip_size is not None:
            raise ConfigError(
                f"--all-faces scores every face of a frame; {scorer.name} is a video detector, "
                "whose clips follow the largest face"
            )
        settings = replace(settings, face=replace(settings.face, keep="all"))
    inputs, others = expand_inputs(paths)
    if not inputs:
        found = f" (only {len(others)} other files)" if others else ""
        raise ConfigError(f"no images or videos found in {', '.join(map(str, paths))}{found}")
    if others:
        log.info("skipped %s", other_files_note(others))
    if settings.face.device != "cpu" and not crops:
        # MTCNN on a device this machine lacks: an error
        resolve_device(settings.face.device, option="--set face.device=cpu")
    files, timing = _run(inputs, scorer, settings, crops, value, dev, batch_size, amp,
                         keep_crops, explain, files_per_batch, progress)  # fmt: skip
    scores = [f.score for f in files if f.score is not None]
    if len(scores) > 1:
        warn_if_one_class(scores, chosen, f"detect with {scorer.name}")
    return DetectResult(
        files=files,
        detector=scorer.name,
        weights=scorer.weights,
        threshold=value,
        threshold_source=str(chosen),
        face_settings=None if crops else settings.to_json(),
        face_settings_source="none: --crops (the inputs are face crops)"
        if crops
        else scorer.settings_source,
        frame_num=scorer.frame_num,
        reduce=scorer.reduce,
        device=dev,
        other_files=[str(p) for p in others],
        timing=timing,
        explain=_explain_note(scorer) if explain else None,
        meta={**scorer.meta, "run": None if scorer.run is None else str(scorer.run)},
        train_data=scorer.train_data,
        calibration=None
        if scorer.calibration is None
        else {**scorer.calibration.record(), "description": scorer.calibration.describe()},
    )


def _run(
    inputs: list[InputFile],
    scorer: Scorer,
    settings: FaceSettings,
    crops: bool,
    threshold: float,
    device: str,
    batch_size: int,
    amp: bool,
    keep_crops: bool,
    explain: bool,
    files_per_batch: int,
    progress: bool,
) -> tuple[list[FileResult], dict[str, float]]:
    """Every file's result, ``files_per_batch`` files at a time (cropped, then scored together),
    and the CPU seconds per stage."""
    analyzer = None if crops else face_analyzer(settings.face)
    timing = dict.fromkeys((*STAGES[:-1], "model", "explain"), 0.0)
    explain = explain and _explain_note(scorer) is None
    files: list[FileResult] = []
    bar = tqdm(total=len(inputs), desc="detect", unit="file", disable=None if progress else True)
    for start in range(0, len(inputs), files_per_batch):
        chunk = inputs[start : start + files_per_batch]
        items = [
            _prepare(n, entry, scorer, settings, analyzer, crops, timing)
            for n, entry in enumerate(chunk, start)
        ]
        files += [item.result if isinstance(item, _Pending) else item for item in items]
        pending = [item for item in items if isinstance(item, _Pending)]
        if pending:
            _score(pending, scorer, threshold, device, batch_size, amp, keep_crops, timing)
        if pending and explain:
            t0 = time.process_time()
            _explain(pending, scorer, device)
            timing["explain"] += time.process_time() - t0
        bar.update(len(chunk))
    bar.close()
    return files, timing


def _prepare(
    n: int,
    entry: InputFile,
    scorer: Scorer,
    settings: FaceSettings,
    analyzer: FaceAnalyzer | None,
    crops: bool,
    timing: dict[str, float],
) -> _Pending | FileResult:
    """The units of one file (its face tracks' crops), or its result when it has none."""
    result = FileResult(entry.path, entry.kind, "failed", reason=entry.problem)
    if entry.problem:
        return result
    try:
        if crops:
            pending = _crop_inputs(n, entry, settings, result, timing)
        else:
            pending = _face_units(n, entry, settings, analyzer, result, timing)
    except NoFaceError as exc:
        result.status, result.reason = "no_face", str(exc)
        return result
    except MediaReadError as exc:
        result.reason = str(exc)
        return result
    except Exception as exc:  # a strange file must not stop the others
        log.exception("%s: failed", entry.path)
        result.reason = f"{type(exc).__name__}: {exc}"
        return result
    short = {u.key: short_for_clips(scorer.detector, u) for u in pending.units}
    pending.units = [u for u in pending.units if short[u.key] is None]
    if not pending.units:
        result.reason = next(iter(short.values()))
        return result
    return pending


def _face_units(
    n: int,
    entry: InputFile,
    settings: FaceSettings,
    analyzer: FaceAnalyzer | None,
    result: FileResult,
    timing: dict[str, float],
) -> _Pending:
    """One unit per face track of the file's crops (face path)."""
    got = face_crops(entry.path, settings, analyzer, timing)
    result.frames_total = got.decoded.total
    result.frames_sampled = len(got.decoded.frames)
    result.notes = [*got.log.warnings, *got.log.notes]  # a short video's warning first
    result.skipped_frames = got.log.skipped_frames
    by_track: dict[int, list[FaceCrop]] = {}
    for crop in got.crops:
        by_track.setdefault(crop.track, []).append(crop)
    units, crops, tracks = [], {}, {}
    for track, faces in sorted(by_track.items()):
        key = f"{n}:{track}"
        clips = [c.clip for c in faces] if got.decoded.clips is not None else None
        units.append(Unit(key, [c.image for c in faces], [c.frame for c in faces], clips))
        crops[key], tracks[key] = list(faces), track
    return _Pending(result, units, crops, tracks)


def _crop_inputs(
    n: int, entry: InputFile, settings: FaceSettings, result: FileResult, timing: dict[str, float]
) -> _Pending:
    """An image that is a face crop, or a video's sampled frames, each as it is."""
    flog = FaceLog()
    decoded = decode_sampled(entry.path, settings, flog, timing)
    result.frames_total, result.frames_sampled = decoded.total, len(decoded.frames)
    result.notes, result.skipped_frames = [*flog.warnings, *flog.notes], flog.skipped_frames
    numbers = sorted(decoded.frames)
    key = f"{n}:0"
    clips = None
    if decoded.clips is not None:
        clip_of = {i: c for c, clip in enumerate(decoded.clips) for i in clip}
        clips = [clip_of[i] for i in numbers]
    unit = Unit(key, [decoded.frames[i] for i in numbers], numbers, clips)
    return _Pending(result, [unit], {key: [None] * len(numbers)}, {key: 0})


def _score(
    pending: list[_Pending],
    scorer: Scorer,
    threshold: float,
    device: str,
    batch_size: int,
    amp: bool,
    keep_crops: bool,
    timing: dict[str, float],
) -> None:
    """Score the units of ``pending`` in shared batches and fill in their results."""
    units = [u for p in pending for u in p.units]
    t0 = time.process_time()
    pred = score_units(
        scorer.detector,
        units,
        frame_num=scorer.frame_num,
        batch_size=batch_size,
        device=device,
        amp=amp,
        task=scorer.task,
    )
    timing["model"] += time.process_time() - t0
    _, unit_scores, keys = video_scores(
        np.zeros(len(pred), np.int64), pred.score, pred.video_id.astype(str), scorer.reduce
    )
    score_of = dict(zip(keys.tolist(), unit_scores.tolist(), strict=True))
    face_cal, cal_of = None, {}
    if scorer.calibration is not None:  # each face mapped, then reduced as the raw scores
        face_cal = scorer.calibration.calibration.apply(pred.score)
        _, unit_cal, cal_keys = video_scores(
            np.zeros(len(pred), np.int64), face_cal, pred.video_id.astype(str), scorer.reduce
        )
        cal_of = dict(zip(cal_keys.tolist(), unit_cal.tolist(), strict=True))
    clip = scorer.clip_size or 1
    low, high = scorer.verdicts
    for p in pending:
        res = p.result
        for unit in p.units:
            rows = np.flatnonzero(pred.video_id == unit.key)
            track = p.tracks[unit.key]
            for r in rows:
                pos = unit.frames.index(int(pred.frame[r]))
                crop = p.crops[unit.key][pos]
                res.faces.append(
                    FaceScore(
                        frame=int(pred.frame[r]),
                        frames=unit.frames[pos : pos + clip],
                        track=track,
                        box=None if crop is None or crop.box is None else tuple(crop.box),
                        score=float(pred.score[r]),
                        crop=unit.images[pos] if keep_crops else None,
                        calibrated=None if face_cal is None else float(face_cal[r]),
                    )
                )
            res.track_scores[track] = float(score_of[unit.key])
        res.faces.sort(key=lambda f: (f.frame, f.track))
        res.score = max(res.track_scores.values())
        if cal_of:  # the calibrated score of the track that gives the file its score
            best = max(p.units, key=lambda u: score_of[u.key])
            res.calibrated = float(cal_of[best.key])
        res.status, res.reason = "scored", None
        res.verdict = high if res.score >= threshold else low
        res.strip = [(f, _thumb(_image_of(p, f)), None) for f in _spread(res.faces)]


def _image_of(p: _Pending, face: FaceScore) -> np.ndarray:
    """The crop of ``face`` (a clip: its first frame)."""
    unit = next(u for u in p.units if p.tracks[u.key] == face.track)
    return unit.images[unit.frames.index(face.frame)]


def _spread(faces: list[FaceScore], n: int = STRIP) -> list[FaceScore]:
    """Up to ``n`` faces spread evenly over ``faces``."""
    if len(faces) <= n:
        return list(faces)
    picks = np.round(np.linspace(0, len(faces) - 1, n)).astype(int)
    return [faces[i] for i in sorted(set(picks.tolist()))]


def _thumb(image: np.ndarray, side: int = THUMB) -> np.ndarray:
    h, w = image.shape[:2]
    if max(h, w) <= side:
        return image.copy()
    s = side / max(h, w)
    size = (max(1, round(w * s)), max(1, round(h * s)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def _explain_note(scorer: Scorer) -> str | None:
    """Why Grad-CAM cannot explain ``scorer``'s detector (None: it can)."""
    if scorer.clip_size is not None:
        return f"Grad-CAM reads single frames; {scorer.name} is a video detector"
    from fairforensics.evaluation.analysis.gradcam import last_conv

    try:
        last_conv(scorer.detector)
    except ValueError as exc:
        return f"Grad-CAM needs a convolutional layer: {exc}"
    return None


def _explain(pending: list[_Pending], scorer: Scorer, device: str) -> None:
    """Grad-CAM overlays of the faces each file's report strip shows."""
    from fairforensics.evaluation.analysis.gradcam import grad_cam_images

    for p in pending:
        images = [_image_of(p, face) for face, _, _ in p.result.strip]
        if not images:
            continue
        _, overlays = grad_cam_images(scorer.detector, images, device=device)
        p.result.strip = [
            (face, thumb, _thumb(ov))
            for (face, thumb, _), ov in zip(p.result.strip, overlays, strict=True)
        ]


def exit_code(result: DetectResult) -> int:
    """1 when any file failed (unreadable, unsupported), else 0 (``no_face`` is a result)."""
    return 1 if result.failed else 0
