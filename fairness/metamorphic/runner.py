"""Apply every test case to every test face and score source and follow-up inputs.

The detector is reached only through a *scorer*: ``scorer(list of RGB uint8 images) -> scores``
(probability of fake), so any model can be tested; :func:`detector_scorer` wraps a registered
detector with :func:`evaluation.predict.predict_images`. For a video detector a sample is a clip
(``image`` TxHxWx3, ``landmarks`` Tx68x2) and every transform is applied to every frame of it with
that frame's landmarks (makeup on each frame of the clip). A face on which a transform cannot be
applied (no landmarks, a failing transform) is skipped with its reason, for every case, as the
paper removed faces that makeup could not be applied to; the benchmark is computed on the same
faces as the test cases.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.thresholds import DEFAULT_THRESHOLD, DecisionThreshold
from fairforensics.fairness.metamorphic.examples import Example, ExamplePicker
from fairforensics.fairness.metamorphic.regions import LandmarkError, check_landmarks
from fairforensics.fairness.metamorphic.relations import BENCHMARK, MetamorphicConfig
from fairforensics.fairness.metamorphic.transforms import Transform

log = logging.getLogger(__name__)

Scorer = Callable[[list[np.ndarray]], np.ndarray]


@dataclass
class FaceSample:
    """One test face: RGB uint8 image, label (0 real, 1 fake), attributes and 68 landmarks; or a
    clip (``image`` TxHxWx3, ``landmarks`` Tx68x2; ``frame`` its first frame)."""

    key: str
    image: np.ndarray
    label: int
    attributes: dict[str, str] = field(default_factory=dict)
    landmarks: np.ndarray | None = None
    dataset: str = ""
    video_id: str = ""
    frame: int = 0
    method: str = ""
    identity: str = ""

    @property
    def is_clip(self) -> bool:
        return np.asarray(self.image).ndim == 4

    def meta(self) -> FaceMeta:
        """Everything but the pixels and landmarks."""
        return FaceMeta(
            key=self.key,
            label=int(self.label),
            attributes=dict(self.attributes),
            dataset=self.dataset,
            video_id=self.video_id,
            frame=self.frame,
            method=self.method,
            unit="clip" if self.is_clip else "frame",
        )


@dataclass
class FaceMeta:
    """A tested face without its pixels: what the tables and predictions need."""

    key: str
    label: int
    attributes: dict[str, str]
    dataset: str
    video_id: str
    frame: int
    method: str
    unit: str = "frame"  # or "clip" (a video detector's sample)


@dataclass
class Skipped:
    """A face left out of the test, and why."""

    key: str
    reason: str


@dataclass
class MetamorphicResult:
    """Scores of the benchmark and of every test case on the same faces, plus what was skipped;
    ``threshold`` makes the decisions of the tables."""

    config: MetamorphicConfig
    rows: list[FaceMeta]
    scores: dict[str, np.ndarray]  # BENCHMARK and every case id -> [n]
    changed: dict[str, np.ndarray]  # case id -> fraction of pixels each transform changed
    skipped: list[Skipped] = field(default_factory=list)
    examples: list[Example] = field(default_factory=list)
    threshold: DecisionThreshold = DecisionThreshold(DEFAULT_THRESHOLD, "0.5 (default)")

    @property
    def case_ids(self) -> list[str]:
        return [case.id for case in self.config.cases]

    @property
    def labels(self) -> np.ndarray:
        return np.array([r.label for r in self.rows], dtype=np.int64)

    def attribute(self, name: str) -> np.ndarray:
        """One attribute per face ('' where a face lacks it)."""
        return np.array([r.attributes.get(name, "") for r in self.rows], dtype=object)

    def predictions(self, case_id: str) -> Predictions:
        """The scores of ``case_id`` (or ``benchmark``) as a predictions table."""
        names = sorted({k for r in self.rows for k in r.attributes})
        return Predictions(
            dataset=[r.dataset for r in self.rows],
            video_id=[r.video_id or r.key for r in self.rows],
            frame=[r.frame for r in self.rows],
            label=self.labels,
            score=self.scores[case_id],
            method=[r.method for r in self.rows],
            attributes={k: self.attribute(k) for k in names},
            unit=[r.unit for r in self.rows],
        )


def detector_scorer(detector: Any, batch_size: int = 32, device: str = "cpu") -> Scorer:
    """A scorer that runs a registered detector through ``evaluation.predict.predict_images``."""
    from fairforensics.evaluation.predict import predict_images
    from fairforensics.preprocessing.device import resolve_device

    # an unusable device fails here, before any transform
    device = str(resolve_device(device, option="--device cpu"))

    def score(images: list[np.ndarray]) -> np.ndarray:
        return predict_images(detector, images, batch_size=batch_size, device=device)

    return score


def _transform_all(
    sample: FaceSample, cases: Sequence[str], transforms: dict[str, Transform]
) -> tuple[dict[str, np.ndarray], dict[str, float]] | Skipped:
    """Every case's image (or clip) of one face, or the reason it cannot be tested."""
    if sample.label not in (0, 1):
        return Skipped(sample.key, f"label must be 0 (real) or 1 (fake), got {sample.label!r}")
    frames = list(sample.image) if sample.is_clip else [sample.image]
    points = sample.landmarks
    if not sample.is_clip or points is None:
        points = [points] * len(frames)
    elif len(points) != len(frames):
        return Skipped(sample.key, f"{len(points)} landmark sets for {len(frames)} frames")
    if any(transforms[c].needs_landmarks for c in cases):
        try:
            points = [check_landmarks(lm, source=f"{sample.key}: landmarks") for lm in points]
        except LandmarkError as exc:
            return Skipped(sample.key, str(exc))
    images, changed = {}, {}
    for case in cases:
        outs, masks = [], []
        for frame, landmarks in zip(frames, points, strict=True):
            try:
                out, mask = transforms[case](frame, landmarks)
            except (ValueError, LandmarkError, IndexError) as exc:
                return Skipped(sample.key, f"{case}: transform failed: {exc}")
            if out.shape != frame.shape or out.dtype != np.uint8:
                return Skipped(sample.key, f"{case}: transform returned {out.dtype} {out.shape}")
            outs.append(out)
            masks.append(np.asarray(mask) > 0)
        images[case] = np.stack(outs) if sample.is_clip else outs[0]
        changed[case] = float(np.mean(masks))
    return images, changed


def _score(scorer: Scorer, images: list[np.ndarray], what: str) -> np.ndarray:
    scores = np.asarray(scorer(images), dtype=np.float64).reshape(-1)
    if len(scores) != len(images):
        raise ValueError(f"scorer returned {len(scores)} scores for {len(images)} {what} images")
    if not np.isfinite(scores).all():
        raise ValueError(f"scorer returned NaN or infinite scores for {what} images")
    return scores


def _chunks(
    items: Iterable[FaceSample | Skipped], size: int
) -> Iterator[list[FaceSample | Skipped]]:
    chunk: list[FaceSample | Skipped] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def check_group_attribute(rows: Sequence[FaceMeta], config: MetamorphicConfig) -> None:
    """Error unless some tested face has a value of ``config.group_key`` among ``config.groups``
    (any value when ``groups`` is empty); the message names the attribute and what is present."""
    key = config.group_key
    values = {str(r.attributes[key]) for r in rows if str(r.attributes.get(key, "")).strip()}
    present = sorted({k for r in rows for k in r.attributes})
    if not values:
        raise ValueError(
            f"group attribute {key!r}: none of the {len(rows)} tested faces has it; attributes "
            f"present: {present or 'none'} (set group_key in the relations file, or add "
            f"{key!r} to the index's attributes)"
        )
    wanted = set(config.groups)
    if wanted and not wanted & values:
        raise ValueError(
            f"group attribute {key!r}: values {sorted(values)} hold none of the groups "
            f"{config.groups} of the relations file (fix 'groups' there)"
        )
    found = sorted(values & wanted if wanted else values)
    if len(found) < 2:
        log.warning("group attribute %r has one group %s: no bias factor", key, found)


def run_metamorphic(
    samples: Iterable[FaceSample | Skipped],
    config: MetamorphicConfig,
    transforms: dict[str, Transform],
    scorer: Scorer,
    *,
    chunk_size: int = 64,
    n_examples: int = 4,
    progress: bool = True,
    threshold: DecisionThreshold | None = None,
) -> MetamorphicResult:
    """Score every face untransformed and under every test case.

    ``samples`` may also yield :class:`Skipped` records (faces the loader could not read);
    they are kept in the result. Faces are processed ``chunk_size`` at a time, so memory does
    not grow with the test set. The example sheet shows ``n_examples`` faces spread over the
    groups, real and fake, and people (:mod:`fairness.metamorphic.examples`). ``threshold``:
    the decision threshold of the result (default 0.5); the sheet shows faces whose decision a
    case flips first.
    """
    threshold = threshold or DecisionThreshold(DEFAULT_THRESHOLD, "0.5 (default)")
    cases = [case.id for case in config.cases]
    missing = [c for c in cases if c not in transforms]
    if missing:
        raise KeyError(f"no transform built for test cases {missing}")
    rows: list[FaceMeta] = []
    scores: dict[str, list[np.ndarray]] = {BENCHMARK: [], **{c: [] for c in cases}}
    changed: dict[str, list[float]] = {c: [] for c in cases}
    skipped: list[Skipped] = []
    picker = ExamplePicker(n_examples, config.groups)
    bar = tqdm(desc="metamorphic", unit="face", disable=None if progress else True)  # on a tty
    for chunk in _chunks(samples, chunk_size):
        kept: list[FaceSample] = []
        follow: dict[str, list[np.ndarray]] = {c: [] for c in cases}
        for sample in chunk:
            made = (
                sample if isinstance(sample, Skipped) else _transform_all(sample, cases, transforms)
            )
            if isinstance(made, Skipped):
                log.warning("skipped %s: %s", made.key, made.reason)
                skipped.append(made)
                continue
            images, fractions = made
            kept.append(sample)
            for c in cases:
                follow[c].append(images[c])
                changed[c].append(fractions[c])
        bar.update(len(chunk))
        if not kept:
            continue
        scored = {BENCHMARK: _score(scorer, [s.image for s in kept], BENCHMARK)}
        scored |= {c: _score(scorer, follow[c], c) for c in cases}
        for name, values in scored.items():
            scores[name].append(values)
        rows.extend(s.meta() for s in kept)
        for i, sample in enumerate(kept):
            images = {BENCHMARK: sample.image, **{c: follow[c][i] for c in cases}}
            picker.offer(
                _example(
                    sample, images, {k: v[i] for k, v in scored.items()}, config, threshold.value
                )
            )
    bar.close()
    if not rows:
        reasons = "; ".join(f"{s.key}: {s.reason}" for s in skipped[:5])
        raise ValueError(f"no face could be tested ({len(skipped)} skipped: {reasons})")
    check_group_attribute(rows, config)
    return MetamorphicResult(
        config=config,
        rows=rows,
        scores={k: np.concatenate(v) for k, v in scores.items()},
        changed={k: np.asarray(v) for k, v in changed.items()},
        skipped=skipped,
        examples=picker.chosen(),
        threshold=threshold,
    )


def _example(
    sample: FaceSample,
    images: dict[str, np.ndarray],
    scores: dict[str, float],
    config: MetamorphicConfig,
    threshold: float,
) -> Example:
    """A candidate of the example sheet (a clip shows its first frame)."""
    fake = {name: score >= threshold for name, score in scores.items()}
    return Example(
        key=sample.key,
        group=str(sample.attributes.get(config.group_key, "")),
        label=int(sample.label),
        person=f"{sample.dataset}/{sample.identity or sample.video_id or sample.key}",
        images={k: v[0] if v.ndim == 4 else v for k, v in images.items()},
        scores={k: float(v) for k, v in scores.items()},
        flipped=any(v != fake[BENCHMARK] for v in fake.values()),
    )
