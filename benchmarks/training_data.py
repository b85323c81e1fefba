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


RECIPES: dict[str, Callable[..., list[dict[str, Any]]]] = {"sbi": draw_sbi, "i2g": draw_i2g}

#: statistics that differ from DeepfakeBench's for a documented reason (docs/training.md,
#: "Training data against DeepfakeBench's"): left out of the comparison's verdict
KNOWN_DIFFERENCES: dict[str, dict[str, str]] = {"sbi": {}}

#: absolute slack of numeric statistics where the two sides round pixels differently
SLACK: dict[str, dict[str, float]] = {"sbi": {}}


def load_reference(recipe: str, root: Path = REFERENCE_DIR) -> dict[str, Any]:
    """The stored DeepfakeBench reference of ``recipe`` (its summary and how it was drawn)."""
    return json.loads((root / f"{recipe}.json").read_text())


def compare_recipe(
    recipe: str, faces: list, n: int, seed: int = 0, reference: dict | None = None
) -> list[dict[str, Any]]:
    """Our summary of ``n`` draws against the reference, one row per statistic; rows of
    :data:`KNOWN_DIFFERENCES` carry the reason and do not fail."""
    ref = reference or load_reference(recipe)
    ours = summarise(RECIPES[recipe](faces, n, seed))
    rows = compare(ours, ref["summary"], SLACK.get(recipe))
    known = KNOWN_DIFFERENCES.get(recipe, {})
    for row in rows:
        key = row["stat"].split("=")[0].split(" ")[0]
        if key in known:
            row["known"] = known[key]
    return rows


def iter_failures(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Rows outside their tolerance that are not known differences."""
    return (r for r in rows if not r["ok"] and "known" not in r)
