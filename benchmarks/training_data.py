"""What our training-data recipes make, summarised for comparison with DeepfakeBench's datasets.

Each recipe (SBI's self-blended pairs, I2G, FWA, Face X-ray, SLADD's synthesis, UCF's pairs,
LSDA's domain groups, the clip augmentation) is drawn N times on the same real faces that made
the stored references (``tests/data/training_data_parity/<recipe>.json``, from DeepfakeBench's own
dataset code; how: their README), and every draw becomes a flat record of the branches taken and
the measured outputs (:mod:`benchmarks.training_data_stats`). Branches are observed by wrapping
the functions that take them for the duration of the draws, never by changing them.

Used by ``scripts/training_data_parity.py`` and ``tests/test_training_data_parity.py``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from fairforensics.benchmarks.training_data_stats import compare, pair_record, summarise

#: the face photos (tests/data/faces/celebrities) that the references were made from: the first
#: two of each identity in file-name order where dlib finds a face, 26 faces
FACE_SIZE = 256
PER_IDENTITY = 2

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "training_data_parity"


FACES_FILE = "faces.json"


def detect_photo_landmarks(folder: Path) -> list[dict[str, Any]]:
    """The reference photos of ``folder`` (a copy of tests/data/faces/celebrities): the first
    :data:`PER_IDENTITY` of each identity in file-name order where dlib (HOG) finds a face, with
    the 68 landmarks of the largest face in the photo. Stored as :data:`FACES_FILE` (dlib is slow)."""
    import csv

    import cv2

    from fairforensics.preprocessing.faces import FaceAnalyzer

    with open(folder / "attributes.csv", newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: r["file"])
    taken: dict[str, int] = {}
    analyzer = FaceAnalyzer(detector="hog")
    photos = []
    for row in rows:
        if taken.get(row["identity"], 0) >= PER_IDENTITY:
            continue
        found = analyzer.analyze(
            cv2.cvtColor(cv2.imread(str(folder / row["file"])), cv2.COLOR_BGR2RGB)
        )
        if not found:
            continue
        photos.append({"file": row["file"], "landmarks": np.asarray(found[0][1]).tolist()})
        taken[row["identity"]] = taken.get(row["identity"], 0) + 1
    return photos


def parity_faces(
    folder: Path, size: int = FACE_SIZE, root: Path = REFERENCE_DIR
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(name, aligned uint8 RGB crop, 68 landmarks in the crop) of the reference faces: the photos
    of ``folder`` named in ``root``/:data:`FACES_FILE` with their stored dlib landmarks
    (:func:`detect_photo_landmarks`), aligned as the preprocessing does
    (``preprocessing.align.align_face``, 256 px, scale 1.3)."""
    import cv2

    from fairforensics.preprocessing.align import align_face

    faces = []
    for photo in json.loads((root / FACES_FILE).read_text())["photos"]:
        rgb = cv2.cvtColor(cv2.imread(str(folder / photo["file"])), cv2.COLOR_BGR2RGB)
        crop, _, points = align_face(rgb, np.asarray(photo["landmarks"], np.float64), size)
        faces.append((photo["file"], crop, points.astype(np.float32)))
    return faces


class Spy:
    """Wraps functions for the duration of a ``with`` block and notes what they are called with."""

    def __init__(self) -> None:
        self.notes: dict[str, Any] = {}
        self._stack = contextlib.ExitStack()

    def wrap(self, owner: Any, name: str, note: Callable[..., None]) -> None:
        """Replace ``owner.name`` by a wrapper that calls ``note(result, *args, **kwargs)``."""
        original = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            note(result, *args, **kwargs)
            return result

        self._stack.enter_context(mock.patch.object(owner, name, wrapper))

    def __enter__(self) -> Spy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.close()


# ----------------------------------------------------------------------------- SBI


def draw_sbi(faces: list, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """N self-blended pairs (``blend:sbi_paper``, :func:`preprocessing.self_blending.self_blend_pair`)
    of the faces in turn, with the hull type, which image got the source-target augmentation, its
    frequency branch, the blend ratio and the outputs' measures."""
    from fairforensics.preprocessing import self_blending as sb

    rng = np.random.default_rng(seed)
    records = []
    with Spy() as spy:
        spy.wrap(sb, "hull_mask", lambda r, shape, pts, kind: spy.notes.update(hull=kind))
        spy.wrap(sb, "source_target_augment", lambda r, *a: spy.notes.update(augmented_out=r))
        spy.wrap(sb, "_sharpen", lambda r: spy.notes.update(freq="sharpen"))
        spy.wrap(
            sb,
            "deform_source",
            lambda r, source, *a: spy.notes.update(
                augmented="source" if source is spy.notes.get("augmented_out") else "target"
            ),
        )
        for i in range(n):
            _, image, pts = faces[i % len(faces)]
            spy.notes.clear()
            spy.notes["freq"] = "downscale"
            out = sb.self_blend_pair(image, pts, rng)
            branches = {k: spy.notes[k] for k in ("hull", "augmented", "freq")}
            records.append(pair_record(image, out["image"], out["real"], out["mask"], branches))
    return records


# ----------------------------------------------------------------------------- I2G


def partner_of(faces: list, i: int) -> tuple[np.ndarray, np.ndarray]:
    """The other real face a recipe takes with face ``i`` (I2G's foreground, Face X-ray's source):
    the next face, on both sides (the partner search is compared separately)."""
    _, image, pts = faces[(i + 1) % len(faces)]
    return image, pts


def draw_i2g(faces: list, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """N inconsistency images (``blend:i2g``, :func:`preprocessing.i2g.i2g_pair`) of the faces in
    turn, each with :func:`partner_of` as the foreground, with the hull type and the measures."""
    from fairforensics.preprocessing import i2g

    rng = np.random.default_rng(seed)
    records = []
    with Spy() as spy:
        spy.wrap(i2g, "hull_mask", lambda r, shape, pts, kind: spy.notes.update(hull=kind))
        for i in range(n):
            _, image, pts = faces[i % len(faces)]
            out = i2g.i2g_pair(image, pts, partner_of(faces, i % len(faces)), rng)
            records.append(
                pair_record(
                    image, out["image"], out["real"], out["mask"], {"hull": spy.notes["hull"]}
                )
            )
    return records


# ----------------------------------------------------------------------------- FWA, Face X-ray


class NotingGenerator:
    """A numpy Generator that notes the values :meth:`choice` draws from the sequences named in
    ``watch`` (name -> sequence), for the branch shares of a recipe that draws from ``rng``."""

    def __init__(self, rng: np.random.Generator, watch: dict[str, tuple], notes: dict) -> None:
        self._rng, self._watch, self._notes = rng, watch, notes

    def choice(self, seq: Any, *args: Any, **kwargs: Any) -> Any:
        value = self._rng.choice(seq, *args, **kwargs)
        for name, watched in self._watch.items():
            if tuple(np.ravel(seq)) == tuple(watched):
                self._notes[name] = f"{value:g}"
        return value

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rng, name)


def draw_fwa(faces: list, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """N FWA pairs as the ``fwa`` detector's default (``deepfakebench``) recipe trains on them:
    the real face as loaded (training augmentation off in its config) and its ``blend:fwa`` fake
    (:func:`preprocessing.blending.face_warp`), with the scale drawn and the measures."""
    from fairforensics.preprocessing import blending

    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        _, image, pts = faces[i % len(faces)]
        notes: dict[str, str] = {}
        out = blending.generate(
            "fwa", image, pts, NotingGenerator(rng, {"scale": blending.FWA_SCALES}, notes)
        )
        records.append(
            {"face_found": True, **pair_record(image, out["image"], image, out["mask"], notes)}
        )
    return records


def draw_xray(faces: list, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """N Face X-ray pairs (``blend:xray``, :func:`preprocessing.blending.xray_blend`) of the faces
    in turn with :func:`partner_of` as the partner: the real face as loaded, the blend, its mask
    and X-ray target."""
    from fairforensics.preprocessing import blending

    rng = np.random.default_rng(seed)
    records = []
    for i in range(n):
        _, image, pts = faces[i % len(faces)]
        out = blending.generate("xray", image, pts, rng, partner=partner_of(faces, i % len(faces)))
        records.append(pair_record(image, out["image"], image, out["mask"], {}, xray=out["xray"]))
    return records


# ----------------------------------------------------------------------------- SLADD


def draw_sladd(faces: list, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """N SLADD syntheses (:func:`detectors.sladd_synthesis.synthesize`) of a real face with a
    region of :func:`partner_of` (standing in for the paired fake), with the synthesiser's choice
    :func:`benchmarks.training_data_stats.sladd_choice` (the generator network's in training),
    the colour transfer drawn and the measures."""
    from fairforensics.benchmarks.training_data_stats import sladd_choice
    from fairforensics.detectors import sladd_synthesis as ss

    rng = np.random.default_rng(seed)
    records = []
    with Spy() as spy:
        spy.wrap(ss, "transfer_colours", lambda r, mode, *a: spy.notes.update(colour=mode))
        for i in range(n):
            _, real, real_pts = faces[i % len(faces)]
            fake, fake_pts = partner_of(faces, i % len(faces))
            region, kind, mag = sladd_choice(i)
            out, mask = ss.synthesize(real, real_pts, fake, fake_pts, region, kind, mag, rng)
            branches = {"region": str(region), "kind": str(kind), "colour": spy.notes["colour"]}
            records.append(pair_record(real, out, real, mask, branches))
    return records


# ----------------------------------------------------------------------------- clips

CLIP_FRAMES = 4


def draw_clip(faces: list, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """N augmented clips as the video detectors train on them (``training.augment.build_augment``
    with the default settings, DeepfakeBench's; :func:`preprocessing.frames.apply_augment_clip`),
    each of :data:`CLIP_FRAMES` copies of one face, with the transforms applied (noted by wrapping
    the transform classes' ``apply``/``apply_to_images``) and the measures."""
    from fairforensics.benchmarks.training_data_stats import AUGMENT_NAMES, clip_record
    from fairforensics.preprocessing.frames import apply_augment_clip
    from fairforensics.training import augment
    from fairforensics.training.config import AugmentConfig

    seeds = np.random.default_rng(seed).integers(2**31 - 1, size=n)
    applied: set[str] = set()
    records = []
    with Spy() as spy:
        _spy_augment(spy, AUGMENT_NAMES, applied)
        pipeline = augment.build_augment(AugmentConfig(), FACE_SIZE)  # binds the wrapped methods
        for i in range(n):
            _, face, _ = faces[i % len(faces)]
            applied.clear()
            out = apply_augment_clip(pipeline, int(seeds[i]), [(face, None, None)] * CLIP_FRAMES)
            records.append(clip_record(face, [f[0] for f in out], set(applied)))
    return records


def _spy_augment(spy: Spy, names: dict[str, str], applied: set[str]) -> None:
    """Note in ``applied`` the transforms of ``names`` (albumentations class name -> our name)
    that a pipeline built after this call applies."""
    import albumentations as A

    from fairforensics.training import augment

    for cls_name, name in names.items():
        cls = getattr(augment, cls_name, None) or getattr(A, cls_name)  # ours where we have one
        for method in ("apply", "apply_to_images"):
            spy.wrap(cls, method, lambda r, *a, _name=name, **k: applied.add(_name))


def draw_lsda(faces: list, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """N faces augmented as the ``lsda`` detector's recipe augments every image of a domain
    group (its config's ``train.augment``, :func:`preprocessing.frames.apply_augment`), with the
    transforms applied and the measures."""
    from fairforensics.benchmarks.training_data_stats import LSDA_AUGMENT_NAMES, augment_record
    from fairforensics.preprocessing.frames import apply_augment
    from fairforensics.training import augment
    from fairforensics.training.config import load_train_config

    cfg = load_train_config("lsda").train
    seeds = np.random.default_rng(seed).integers(2**31 - 1, size=n)
    applied: set[str] = set()
    records = []
    with Spy() as spy:
        _spy_augment(spy, LSDA_AUGMENT_NAMES, applied)
        pipeline = augment.build_augment(cfg.augment, cfg.resolution)  # binds the wrapped methods
        for i in range(n):
            _, face, _ = faces[i % len(faces)]
            applied.clear()
            out = apply_augment(pipeline, int(seeds[i]), face)[0]
            records.append(augment_record(face, out, set(applied), LSDA_AUGMENT_NAMES.values()))
    return records


RECIPES: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "sbi": draw_sbi,
    "i2g": draw_i2g,
    "fwa": draw_fwa,
    "xray": draw_xray,
    "clip": draw_clip,
    "sladd": draw_sladd,
    "lsda": draw_lsda,
}

#: statistics (keys of the records) where ours differs from DeepfakeBench's beyond sampling error,
#: with the reason (docs/training.md, "The data side of each recipe"); the test checks that these
#: and only these differ in the stored summaries
_BGR = (
    "DeepfakeBench's post_proc converts BGR to RGB an image its load_rgb already gave as RGB: "
    "FWA and Face X-ray train on BGR faces (and are tested on RGB ones); ours stays RGB"
)
_DFB_AUG = (
    "DeepfakeBench augments the real face (data_aug: RGB shift p 0.3, hue-saturation-value and "
    "brightness/contrast +-0.1 always, then down-scaling or sharpening always) and the fake's "
    "background or source (blended_aug: colour p 0.3 each, JPEG 40-100 p 0.5; Face X-ray: data_aug "
    "on both faces), each drawn on its own; ours applies the detector's training augmentation "
    "(off in its config) to the frame, and the fake is made from that frame"
)
#: what FWA and Face X-ray share: DeepfakeBench's BGR training and its per-face augmentation
_PAIR_BLEND: dict[str, str] = {
    "fake_first_minus_last_channel": _BGR,
    "real_first_minus_last_channel": _BGR,
    "real_vs_input_absdiff": _DFB_AUG + " (and the channel order)",
    "real_vs_input_changed": _DFB_AUG,
    "real_max": _DFB_AUG,
    "real_min": _DFB_AUG,
    "fake_max": _DFB_AUG,
    "fake_min": _DFB_AUG,
}
KNOWN_DIFFERENCES: dict[str, dict[str, str]] = {
    "fwa": {
        **_PAIR_BLEND,
        "fake_vs_real_absdiff": _DFB_AUG + ": the pair's two images differ everywhere",
        "fake_vs_real_changed": _DFB_AUG + ": the pair's two images differ everywhere",
        "mask_gt0": (
            "DeepfakeBench pastes the blurred face with a hard mask (the warped masked face's "
            "pixels > 0); ours blends it with the soft hull mask, whose blurred rim adds 0.09 of "
            "the image above 0 (the area above 0.5 and the mean agree)"
        ),
    },
    "xray": {
        **_PAIR_BLEND,
        "hull": (
            "DeepfakeBench draws one of five landmark hulls (whole, normal, inner, inner without "
            "eyebrows, mouth) and deforms it piecewise-affinely; ours deforms the one convex "
            "hull (preprocessing.blending.random_blend_mask)"
        ),
        "warp": (
            "DeepfakeBench warps the partner affinely or, in half the draws, by a 3-D "
            "(Delaunay) warp of 48 landmarks; ours by a similarity transform always"
        ),
        "mask_gt0": (
            "DeepfakeBench's blend mask is nearly binary (feathered only at its rim); ours is "
            "the smoothed hull mask with a wider soft rim (the areas above 0.5 agree)"
        ),
        "fake_vs_real_absdiff": "the wider soft mask rim and the colour transfer (Lab against RGB)",
        "fake_vs_real_changed": "the wider soft mask rim",
        "xray_gt0": (
            "the X-ray target B = 4 M (1 - M): DeepfakeBench's from its nearly binary mask "
            "blurred 3x3 (a thin boundary), ours from the smoothed mask (three times as wide)"
        ),
        "xray_gt05": "the X-ray target: see xray_gt0",
        "xray_mean": "the X-ray target: see xray_gt0",
        "xray_max": "the X-ray target's peak: 0.99998 (DeepfakeBench, uint8 mask / 255) or 1",
    },
    "sladd": {
        "fake_vs_real_changed": (
            "DeepfakeBench turns the normalised images back into uint8 by truncation "
            "(((x + 1) / 2 * 255).astype(uint8)), one level lower in 0.23 of the pixels of these "
            "faces; ours rounds, so only the pasted region changes"
        ),
        "fake_vs_real_absdiff": (
            "the pasted region changes the face by 1.81 levels on average against DeepfakeBench's "
            "1.42 (of which 0.23 is its truncation); region, mask area, blending type and colour "
            "transfer shares agree; the cause is not found"
        ),
    },
}


def load_reference(recipe: str, root: Path = REFERENCE_DIR) -> dict[str, Any]:
    """The stored reference of ``recipe``: DeepfakeBench's summary and how it was drawn (top
    level) and ours under ``"ours"`` (``scripts/training_data_parity.py --write``)."""
    return json.loads((root / f"{recipe}.json").read_text())


def draw_summary(recipe: str, faces: list, n: int, seed: int = 0) -> dict[str, Any]:
    """Our summary of ``n`` draws of ``recipe`` on ``faces``, as stored under ``"ours"``."""
    return {"draws": n, "seed": seed, "summary": summarise(RECIPES[recipe](faces, n, seed))}


def stat_key(row: dict[str, Any]) -> str:
    """The record key a comparison row is about (``"hull=components"`` -> ``"hull"``)."""
    return row["stat"].split("=")[0].split(" ")[0]


def compare_recipe(recipe: str, ours: dict[str, Any], dfb: dict[str, Any]) -> list[dict[str, Any]]:
    """Our summary against DeepfakeBench's, one row per statistic; rows of
    :data:`KNOWN_DIFFERENCES` carry the reason (``"known"``)."""
    rows = compare(ours, dfb)
    known = KNOWN_DIFFERENCES.get(recipe, {})
    for row in rows:
        if stat_key(row) in known:
            row["known"] = known[stat_key(row)]
    return rows


def iter_failures(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Rows outside their tolerance that are not known differences."""
    return (r for r in rows if not r["ok"] and "known" not in r)
