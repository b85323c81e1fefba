"""The face crops of one indexed video under every perturbation case, for robustness evaluation.

**Frames mode** (an index made by ``preprocess``, whose videos name their ``source`` and
``frame_indices``): the frames the index stored are decoded once from the source video, the
faces are found once on the clean frames (:mod:`preprocessing.face_path`, the path
preprocessing runs, so the clean crops are the stored ones), and every case perturbs the whole
decoded frames before the crop, as the reference perturbs videos: with the clean frames' faces
(``faces: clean``) or with faces found again on the perturbed frames (``faces: detect``, so
face-detector failures count). VC needs the whole video: the one decoding pass feeds every
frame to one H.264 encoder per CRF (in memory), whose output is decoded back. Only the frames
that are scored are perturbed and cropped.

**Crops mode** (an index of crops only, e.g. an imported DeepfakeBench JSON): the stored crops
are perturbed as images. This differs from the reference, which perturbs whole frames: the blur
kernel, the resampling factor and the noise act at the crop's scale; BW places the reference's
``min(h, w) // 256 * param`` blocks over a frame of ``frame_size`` with the crop covering a
centred ``crop_side`` square of it, and pastes the blocks that fall in the crop, scaled to the
crop; VC encodes the video's stored crops as one clip (they are not consecutive frames).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import cv2
import numpy as np

from fairforensics.preprocessing.align import warp_image
from fairforensics.preprocessing.clips import clip_windows, video_runs
from fairforensics.preprocessing.config import FaceSettings
from fairforensics.preprocessing.face_path import (
    DecodedFrames,
    FaceLog,
    FoundFaces,
    NoFaceError,
    as_stored,
    crop_faces,
    face_analyzer,
    find_faces,
)
from fairforensics.preprocessing.faces import FaceAnalyzer
from fairforensics.preprocessing.frames import sample_positions
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry
from fairforensics.preprocessing.perturb_video import VideoEncoder, open_video
from fairforensics.preprocessing.perturbations import (
    BLOCK,
    Perturbation,
    block_count,
    block_wise,
    perturb_frame,
    perturbation_rng,
)
from fairforensics.preprocessing.video import MediaReadError, read_frames

CLEAN = "clean"
#: CPU seconds per stage in a ``timing`` dict
STAGES = ("decode", "detect", "perturb", "encode", "crop")


@dataclass
class ScoredUnit:
    """What one row of a predictions file scores: a frame's crop, or a clip of crops."""

    frame: int  # source frame number (a clip: its first frame)
    crops: list[np.ndarray]  # one crop (image detector) or the clip's crops, RGB uint8


@dataclass
class VideoCases:
    """One video's scored units per case (``clean`` and ``TYPE:LEVEL``); a case without units
    lost the video, for the reason in ``failed``."""

    units: dict[str, list[ScoredUnit]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _add(timing: dict[str, float] | None, stage: str, t0: float) -> None:
    if timing is not None:
        timing[stage] = timing.get(stage, 0.0) + time.process_time() - t0


def scored_positions(
    video: VideoEntry, frame_num: int | None, clip_size: int | None
) -> list[list[int]]:
    """Positions in ``video.frames`` of each scored unit, as the test loader picks them: one
    frame each (``frame_num`` spread evenly), or each clip of ``clip_size`` frames."""
    n = len(video.frames)
    frame_num = frame_num or n
    if clip_size is None:
        return [[p] for p in sample_positions(n, frame_num)]
    windows = clip_windows(video_runs(video), clip_size, max(frame_num // clip_size, 1))
    return [list(range(w.start, w.start + clip_size)) for w in windows]


def has_sources(index: DatasetIndex, source_root: str | Path | None) -> bool:
    """True when frames mode can run: the index records its face settings and every video its
    source file (found under ``source_root``) and stored frame numbers."""
    if source_root is None or index.preprocess is None:
        return False
    return all(v.source and v.frame_indices for v in index.videos)


def _compressed_frames(
    path: Path, keep: set[int], crfs: Sequence[int], timing: dict[str, float] | None
) -> tuple[dict[int, np.ndarray], dict[int, dict[int, np.ndarray]]]:
    """One decoding pass: the ``keep`` frames (RGB) and, per CRF, the same frames of the whole
    video re-encoded (VC) and decoded back."""
    import io

    t0 = time.process_time()
    source = open_video(path)
    frames: dict[int, np.ndarray] = {}
    pix_fmt = source.stream.codec_context.pix_fmt
    try:
        encoders = {crf: VideoEncoder(io.BytesIO(), source, crf, ".mp4", pix_fmt) for crf in crfs}
        for i, frame in enumerate(source.frames()):
            if i in keep:
                frames[i] = np.ascontiguousarray(frame.to_ndarray(format="rgb24"))
            _add(timing, "decode", t0)
            t0 = time.process_time()
            for encoder in encoders.values():
                encoder.encode(frame)
            _add(timing, "encode", t0)
            t0 = time.process_time()
    finally:
        source.close()
    out: dict[int, dict[int, np.ndarray]] = {}
    for crf, encoder in encoders.items():
        t0 = time.process_time()
        encoder.close()
        _add(timing, "encode", t0)
        t0 = time.process_time()
        out[crf] = _decode_keep(encoder.target, keep)
        _add(timing, "decode", t0)
    return frames, out


def _decode_keep(buffer, keep: set[int]) -> dict[int, np.ndarray]:
    buffer.seek(0)
    video = open_video(buffer)
    try:
        return {
            i: np.ascontiguousarray(f.to_ndarray(format="rgb24"))
            for i, f in enumerate(video.frames())
            if i in keep
        }
    finally:
        video.close()


#: perturbations computed only on the part of the frame a clean-faces crop reads (pointwise, or
#: local within the blur's radius): the crop is that of the whole perturbed frame
REGION_TYPES = frozenset({"CS", "CC", "GNC", "BW", "GB"})


def footprint(
    matrix: np.ndarray, size: int, shape: tuple[int, ...], margin: int = 0
) -> tuple[int, int, int, int]:
    """(x0, y0, x1, y1): the frame pixels a ``size`` crop at ``matrix`` reads (bilinear: the
    mapped square's bounding box and 2 pixels), widened by ``margin``, inside the frame."""
    inverse = cv2.invertAffineTransform(matrix)
    corners = np.array([[0, 0, 1], [size, 0, 1], [0, size, 1], [size, size, 1]], np.float64)
    xy = corners @ inverse.T
    pad = 2 + margin
    x0 = min(max(int(np.floor(xy[:, 0].min())) - pad, 0), shape[1])
    y0 = min(max(int(np.floor(xy[:, 1].min())) - pad, 0), shape[0])
    x1 = max(min(int(np.ceil(xy[:, 0].max())) + pad + 1, shape[1]), x0)
    y1 = max(min(int(np.ceil(xy[:, 1].max())) + pad + 1, shape[0]), y0)
    return x0, y0, x1, y1


def region_crop(
    frame: np.ndarray,
    case: Perturbation,
    rng: np.random.Generator,
    matrix: np.ndarray,
    size: int,
) -> np.ndarray:
    """The crop at ``matrix`` of ``frame`` perturbed by ``case`` (one of :data:`REGION_TYPES`),
    computed on the crop's footprint only: the same pixels as cropping the whole perturbed frame
    (GNC: its noise drawn for those pixels only; BW: the same block draws over the whole frame)."""
    margin = int(case.param) // 2 if case.type == "GB" else 0
    x0, y0, x1, y1 = footprint(matrix, size, frame.shape, margin)
    part = np.ascontiguousarray(frame[y0:y1, x0:x1])
    if case.type == "BW":
        part = block_wise(part, int(case.param), rng, frame.shape[:2], (x0, y0))
    elif part.size:
        part = perturb_frame(part, case, rng)
    # warped from a frame-sized canvas (zero pages but the footprint) at the same matrix:
    # shifting the matrix instead moves OpenCV's fixed-point rounding of the coordinates
    canvas = np.zeros_like(frame)
    canvas[y0:y1, x0:x1] = part
    return warp_image(canvas, matrix, size)


def _restrict(faces: FoundFaces, frames: set[int]) -> FoundFaces:
    """The faces of ``faces`` on ``frames`` only."""
    keep = [j for j, (i, _, _) in enumerate(faces.found) if i in frames]
    return replace(
        faces,
        found=[faces.found[j] for j in keep],
        boxes=[faces.boxes[j] for j in keep],
        tracks=[faces.tracks[j] for j in keep],
    )


def _units(
    crops: dict[int, np.ndarray], frame_units: list[list[int]]
) -> tuple[list[ScoredUnit], int]:
    """Units whose every frame has a crop, and how many units lack one."""
    units = [
        ScoredUnit(frames[0], [crops[i] for i in frames])
        for frames in frame_units
        if all(i in crops for i in frames)
    ]
    return units, len(frame_units) - len(units)


def frame_cases(
    index: DatasetIndex,
    video: VideoEntry,
    source_root: str | Path,
    cases: Sequence[Perturbation],
    *,
    faces: str = "clean",
    frame_num: int | None = None,
    clip_size: int | None = None,
    seed: int = 0,
    analyzer: FaceAnalyzer | None = None,
    timing: dict[str, float] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> VideoCases:
    """Frames mode (module docstring) for one video: the clean units and those of every case.
    ``on_stage`` is told each stage as it starts (``decode``, ``faces``, then each case)."""
    stage = on_stage or (lambda what: None)
    settings = FaceSettings.from_json(index.preprocess, f"{index.dataset}: preprocess")
    if settings.face.keep != "largest":
        raise ValueError(
            f"{index.dataset}: robustness scores one face per frame; the index was made with "
            "face.keep: all"
        )
    path = Path(source_root) / str(video.source)
    if not path.is_file():
        raise MediaReadError(f"{path}: source video not found (check --source-root)")
    indices = list(video.frame_indices or [])
    positions = scored_positions(video, frame_num, clip_size)
    frame_units = [[indices[p] for p in unit] for unit in positions]
    needed = {i for unit in frame_units for i in unit}
    crfs = sorted({int(p.param) for p in cases if p.type == "VC"})
    stage("decode" + (f" + {len(crfs)} H.264 encodes" if crfs else ""))
    t0 = time.process_time()
    if crfs:
        frames, compressed = _compressed_frames(path, set(indices), crfs, timing)
    else:
        d = settings.decode
        frames = read_frames(path, indices, backend=d.backend, threads=d.threads, device=d.device)
        compressed = {}
        _add(timing, "decode", t0)
    missing = [i for i in indices if i not in frames]
    if missing:
        raise MediaReadError(f"{path}: frames {missing[:5]} of the index are past its end")
    clips = None
    if video.clips is not None:
        clips = [[indices[s + j] for j in range(n)] for s, n in video.clips]
    decoded = DecodedFrames(path, frames, len(frames), indices, clips)
    log = FaceLog()
    stage("faces")
    t0 = time.process_time()
    analyzer = analyzer or face_analyzer(settings.face)
    clean_faces = find_faces(decoded, settings, analyzer, log)
    _add(timing, "detect", t0)
    chosen = _restrict(clean_faces, needed)
    result = VideoCases(notes=list(log.notes))

    def crop(frame_set: dict[int, np.ndarray], found: FoundFaces) -> dict[int, np.ndarray]:
        t = time.process_time()
        crops = crop_faces(frame_set, found, settings.align)
        out = {c.frame: as_stored(c.image, settings.output) for c in crops}
        _add(timing, "crop", t)
        return out

    t0 = time.process_time()
    clean_crops = crop_faces({i: frames[i] for i in needed}, chosen, settings.align)
    _add(timing, "crop", t0)
    matrices = {c.frame: c.matrix for c in clean_crops}

    def crop_clean_faces(frame_set: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Crops at the clean crops' alignments (what crop_faces gives with the clean faces)."""
        t = time.process_time()
        size = settings.align.size
        out = {
            i: as_stored(warp_image(frame_set[i], m, size), settings.output)
            for i, m in matrices.items()
        }
        _add(timing, "crop", t)
        return out

    stored_clean = {c.frame: as_stored(c.image, settings.output) for c in clean_crops}
    result.units[CLEAN], lost = _units(stored_clean, frame_units)
    if lost:
        result.notes.append(f"clean: {lost} units without a face crop")
    for case in cases:
        name = str(case)
        stage(name)
        t0 = time.process_time()
        if faces == "clean" and case.type in REGION_TYPES:
            rng = perturbation_rng(seed, index.dataset, video.method, video.id, name)
            size = settings.align.size
            crops = {
                i: as_stored(region_crop(frames[i], case, rng, matrices[i], size), settings.output)
                for i in sorted(matrices)
            }
            _add(timing, "perturb", t0)
            result.units[name], _ = _units(crops, frame_units)
            if not result.units[name]:
                result.failed[name] = "no scored unit kept a face crop"
            continue
        if case.type == "VC":
            perturbed = {i: compressed[int(case.param)][i] for i in needed}
        else:
            rng = perturbation_rng(seed, index.dataset, video.method, video.id, name)
            perturbed = {i: perturb_frame(frames[i], case, rng) for i in sorted(needed)}
        _add(timing, "perturb", t0)
        if faces == "clean":
            result.units[name], _ = _units(crop_clean_faces(perturbed), frame_units)
        else:  # detect: the faces of the perturbed frames
            sub_clips = None if clips is None else [c for c in clips if set(c) <= needed]
            t0 = time.process_time()
            try:
                found = find_faces(
                    replace(decoded, frames=perturbed, keep=sorted(needed), clips=sub_clips),
                    settings,
                    analyzer,
                )
            except (NoFaceError, MediaReadError) as exc:
                result.failed[name] = f"no face on the perturbed frames ({exc})"
                result.units[name] = []
                continue
            finally:
                _add(timing, "detect", t0)
            result.units[name], _ = _units(crop(perturbed, found), frame_units)
        if not result.units[name]:
            result.failed[name] = "no scored unit kept a face crop"
    return result


def crop_block_wise(
    crop: np.ndarray,
    param: int,
    rng: np.random.Generator,
    frame_size: tuple[int, int],
    crop_side: float,
) -> np.ndarray:
    """BW on a face crop as if it covered a centred ``crop_side`` square of a frame of
    ``frame_size`` (height, width): the reference's blocks are placed on that frame and those
    falling in the crop are pasted, scaled to the crop's pixels."""
    h, w = frame_size
    out = crop.copy()
    n = block_count(h, w, param)
    if n == 0:
        return out
    scale = crop.shape[0] / crop_side
    y0, x0 = (h - crop_side) / 2, (w - crop_side) / 2
    for x, y in rng.integers(0, [w - BLOCK, h - BLOCK], size=(n, 2)):
        top, left = (y - y0) * scale, (x - x0) * scale
        bottom, right = top + BLOCK * scale, left + BLOCK * scale
        r0, r1 = max(int(round(top)), 0), min(int(round(bottom)), crop.shape[0])
        c0, c1 = max(int(round(left)), 0), min(int(round(right)), crop.shape[1])
        if r0 < r1 and c0 < c1:
            out[r0:r1, c0:c1] = 128
    return out


def _compress_crops(crops: list[np.ndarray], crf: int, timing: dict[str, float] | None):
    """VC of a sequence of crops (one clip at 25 fps), decoded back."""
    import io
    from fractions import Fraction

    import av

    from fairforensics.preprocessing.perturb_video import VideoSource

    t0 = time.process_time()
    h, w = crops[0].shape[:2]
    even = [np.ascontiguousarray(c[: h - h % 2, : w - w % 2]) for c in crops]
    source = VideoSource(None, None, w - w % 2, h - h % 2, Fraction(25), Fraction(1, 25))
    buffer = io.BytesIO()
    encoder = VideoEncoder(buffer, source, crf, ".mp4", "yuv420p")
    for n, crop in enumerate(even):
        frame = av.VideoFrame.from_ndarray(crop, format="rgb24")
        frame.pts, frame.time_base = n, Fraction(1, 25)
        encoder.encode(frame)
    encoder.close()
    _add(timing, "encode", t0)
    t0 = time.process_time()
    decoded = _decode_keep(buffer, set(range(len(crops))))
    _add(timing, "decode", t0)
    out = []
    for n, crop in enumerate(crops):
        back = crop.copy()
        back[: h - h % 2, : w - w % 2] = decoded[n]
        out.append(back)
    return out


def crop_cases(
    index: DatasetIndex,
    video: VideoEntry,
    cases: Sequence[Perturbation],
    *,
    frame_num: int | None = None,
    clip_size: int | None = None,
    seed: int = 0,
    frame_size: tuple[int, int] = (720, 1280),
    crop_side: float | None = None,
    timing: dict[str, float] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> VideoCases:
    """Crops mode (module docstring) for one video: the clean units and those of every case
    (``on_stage``: as :func:`frame_cases`'s, from ``decode``)."""
    stage = on_stage or (lambda what: None)
    stage("decode")
    t0 = time.process_time()
    positions = sorted({p for unit in scored_positions(video, frame_num, clip_size) for p in unit})
    crops: dict[int, np.ndarray] = {}
    for p in positions:
        bgr = cv2.imread(str(index.resolve(video.frames[p])), cv2.IMREAD_COLOR)
        if bgr is not None:
            crops[p] = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    _add(timing, "decode", t0)
    result = VideoCases()
    if not crops:
        raise MediaReadError(f"{index.dataset}: {video.method}/{video.id}: no readable crop")
    number = {p: (video.frame_indices[p] if video.frame_indices else p) for p in positions}
    frame_units = [list(u) for u in scored_positions(video, frame_num, clip_size)]

    def units(images: dict[int, np.ndarray]) -> list[ScoredUnit]:
        kept, _ = _units(images, frame_units)
        return [ScoredUnit(number[u.frame], u.crops) for u in kept]

    result.units[CLEAN] = units(crops)
    order = sorted(crops)
    for case in cases:
        name = str(case)
        stage(name)
        t0 = time.process_time()
        if case.type == "VC":
            _add(timing, "perturb", t0)
            done = _compress_crops([crops[p] for p in order], int(case.param), timing)
            perturbed = dict(zip(order, done, strict=True))
        else:
            rng = perturbation_rng(seed, index.dataset, video.method, video.id, name)
            if case.type == "BW":
                side = crop_side or next(iter(crops.values())).shape[0]
                perturbed = {
                    p: crop_block_wise(crops[p], int(case.param), rng, frame_size, side)
                    for p in order
                }
            else:
                perturbed = {p: perturb_frame(crops[p], case, rng) for p in order}
            _add(timing, "perturb", t0)
        result.units[name] = units(perturbed)
    return result
