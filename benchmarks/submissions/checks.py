"""The checks that admit a bundle to a board (:func:`admit`): its files match its manifest,
every predictions file has its provenance, and each test set's rows are the benchmark's test
items. A bundle that fails one is refused with one line naming the difference
(:class:`BundleRefused`).

Per test set of each evaluation folder:

* the test set is one of the benchmark's;
* ``<set>.provenance.json`` exists and names the bundle's detector and an index SHA-256;
* the videos scored (method and video id; FF++ and DeepfakeBench method spellings are one) are
  the benchmark's items, none missing (a subset) and none other;
* where the benchmark pins the index SHA-256 and the bundle's differs (another preprocessing),
  the bundle enters only the ``own preprocessing`` track, with a note, and rows per video are
  not compared; otherwise each video's rows must equal its pinned frame count (another frame
  sampling is refused). Clip rows (video detectors) are checked by video only.

Everything per row runs on integer codes (one ``np.unique`` a file); strings are handled once
per video.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.benchmarks.submissions.admitted import AdmittedBundle, Track
from fairforensics.benchmarks.submissions.bundle import (
    code_version_text,
    read_bundle,
    read_eval_info,
)
from fairforensics.benchmarks.submissions.definition import BenchmarkSet, Definition, SetItems
from fairforensics.benchmarks.submissions.manifest import (
    manifest_mismatch,
    manifest_sha256,
    read_manifest,
)
from fairforensics.evaluation.predictions import (
    Predictions,
    PredictionsError,
    predictions_file,
    read_predictions,
    slug,
)
from fairforensics.evaluation.provenance import provenance_path
from fairforensics.preprocessing.files import write_json
from fairforensics.preprocessing.frame_paths import canonical_method

EXAMPLES = 3  # item names a refusal quotes


class BundleRefused(ValueError):
    """A bundle a board does not admit; the message is one line naming the difference."""


def _keys(method: np.ndarray, video_id: np.ndarray) -> np.ndarray:
    """``canonical method/video id`` per video (a string a video, none a row)."""
    canon = {m: canonical_method(m) for m in set(method.tolist())}
    return np.array([f"{canon[m]}/{v}" for m, v in zip(method, video_id, strict=True)])


def _shown(keys: np.ndarray) -> str:
    """A few keys for a refusal line."""
    more = len(keys) - EXAMPLES
    return ", ".join(keys[:EXAMPLES].tolist()) + (f" and {more:,} more" if more > 0 else "")


def video_rows(pred: Predictions) -> tuple[np.ndarray, np.ndarray]:
    """The keys (:func:`_keys`) of the videos scored and their rows, from the codes."""
    m_codes, methods = pred.codes("method")
    v_codes, videos = pred.codes("video_id")
    combined = m_codes * max(len(videos), 1) + v_codes
    uniq, counts = np.unique(combined, return_counts=True)
    m, v = np.divmod(uniq, max(len(videos), 1))
    return _keys(methods[m], videos[v]), counts


def items_difference(
    pred: Predictions, items: SetItems, name: str, *, compare_rows: bool
) -> str | None:
    """How the predictions' rows differ from the test items of set ``name``, in one line, or
    None: missing videos (a subset), other videos, other rows per video (other frame
    sampling; with ``compare_rows`` and frame rows only)."""
    keys, rows = video_rows(pred)
    want = _keys(items.method, items.video_id)
    order = np.argsort(want)
    want, frames = want[order], items.frames[order]
    missing = want[~np.isin(want, keys)]
    if len(missing):
        return (
            f"{name}: scored on a subset: {len(missing):,} of {len(want):,} test videos missing "
            f"({_shown(missing)})"
        )
    other = keys[~np.isin(keys, want)]
    if len(other):
        return (
            f"{name}: {len(other):,} scored videos are not test items of the benchmark "
            f"({_shown(other)})"
        )
    if not compare_rows or pred.row_unit != "frame":
        return None
    at = np.searchsorted(want, keys)
    expected = frames[at]
    off = (expected >= 0) & (rows != expected)
    if off.any():
        first = np.flatnonzero(off)[:EXAMPLES]
        shown = ", ".join(f"{keys[i]}: {rows[i]} rows, the benchmark {expected[i]}" for i in first)
        return (
            f"{name}: other frame sampling: {int(off.sum()):,} of {len(keys):,} videos have "
            f"other rows than the benchmark's frames ({shown})"
        )
    return None


def _provenance(path: Path, rel: str, detector: str) -> dict[str, Any]:
    """The provenance next to a predictions file, or a refusal naming what is missing."""
    prov = provenance_path(path)
    try:
        data = json.loads(prov.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleRefused(f"missing provenance: {rel}/{prov.name}") from None
    except (OSError, ValueError):
        raise BundleRefused(f"unreadable provenance: {rel}/{prov.name}") from None
    if not isinstance(data, dict) or "index_sha256" not in data:
        raise BundleRefused(f"provenance without the index SHA-256: {rel}/{prov.name}")
    if data.get("detector") != detector:
        raise BundleRefused(
            f"{rel}/{prov.name}: provenance names detector {data.get('detector')!r}, "
            f"the bundle {detector!r}"
        )
    return data


def check_test_set(
    path: Path, rel: str, detector: str, spec: BenchmarkSet
) -> tuple[Track, str | None]:
    """The track one predictions file enters and its note, or a :class:`BundleRefused`."""
    prov = _provenance(path, rel, detector)
    own = spec.index_sha256 is not None and prov["index_sha256"] != spec.index_sha256
    if spec.items is not None:
        try:
            pred = read_predictions(path)
        except (PredictionsError, ValueError, OSError) as exc:
            raise BundleRefused(f"{rel}/{path.name}: unreadable predictions ({exc})") from None
        why = items_difference(pred, spec.items, spec.name, compare_rows=not own)
        if why:
            raise BundleRefused(why)
    if own:
        what = "none recorded" if prov["index_sha256"] is None else prov["index_sha256"][:12]
        return "own preprocessing", (
            f"{spec.name}: index SHA-256 {what} is not the benchmark's "
            f"{spec.index_sha256[:12]}: the same test videos from another preprocessing"
        )
    return "benchmark", None


class CheckCache:
    """Verdicts of :func:`check_test_set` in ``folder/checks/``, keyed by the SHA-256 of the
    predictions file, of its provenance (both from the verified manifest) and of the
    definition, so that a rebuild reads no predictions file it has checked before."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = None if folder is None else folder / "checks"

    def _path(self, *parts: str) -> Path | None:
        if self.folder is None or not all(parts):
            return None
        key = hashlib.sha256(":".join(parts).encode()).hexdigest()
        return self.folder / f"{key}.json"

    def check(
        self, path: Path, rel: str, detector: str, spec: BenchmarkSet, digests: tuple[str, ...]
    ) -> tuple[Track, str | None]:
        """:func:`check_test_set`, or its verdict cached under ``digests``."""
        where = self._path(*digests, detector, spec.name)
        if where is not None and where.is_file():
            seen = json.loads(where.read_text(encoding="utf-8"))
            if "refused" in seen:
                raise BundleRefused(seen["refused"])
            return seen["track"], seen["note"]
        try:
            track, note = check_test_set(path, rel, detector, spec)
        except BundleRefused as exc:
            if where is not None:
                write_json(where, {"refused": str(exc)})
            raise
        if where is not None:
            write_json(where, {"track": track, "note": note})
        return track, note


def inside(folder: Path, rel: str) -> Path:
    """``folder/rel`` when it exists inside the bundle folder, else a refusal (a
    ``bundle.json`` that names ``../x`` or a path it lacks)."""
    path = folder / rel
    if not path.resolve().is_relative_to(folder.resolve()) or not path.exists():
        raise BundleRefused(f"bundle.json names {rel!r}, which is not inside the bundle")
    return path


def admit(
    bundle: str | Path, definition: Definition, *, cache_dir: Path | None = None
) -> AdmittedBundle:
    """The checked bundle (folder) on ``definition``'s board, or :class:`BundleRefused` (any
    unreadable or malformed part of it too); ``cache_dir``: where verdicts are kept
    (:class:`CheckCache`)."""
    try:
        return _admit(Path(bundle), definition, CheckCache(cache_dir))
    except BundleRefused:
        raise
    except (ValueError, KeyError, TypeError, OSError) as exc:
        what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise BundleRefused(f"malformed bundle: {what}".splitlines()[0]) from None


def _admit(folder: Path, definition: Definition, cache: CheckCache) -> AdmittedBundle:
    """:func:`admit` without the translation of other errors."""
    try:
        mismatch = manifest_mismatch(folder)
        meta = read_bundle(folder)
    except ValueError as exc:
        raise BundleRefused(str(exc).replace(f"{folder}/", "")) from None
    if mismatch:
        raise BundleRefused(f"manifest mismatch: {mismatch}")
    detector = str(meta["detector"])
    files = read_manifest(folder)
    tracks: set[str] = set()
    notes: list[str] = []
    seen: set[str] = set()
    eval_dirs, baseline = [], False
    for entry in meta.get("evals", []):
        rel = str(entry["path"])
        d = inside(folder, rel)
        info = read_eval_info(d)
        if info["detector"] != detector:
            raise BundleRefused(f"{rel}/eval.json: detector {info['detector']!r}, not {detector!r}")
        baseline = baseline or bool(info.get("baseline"))
        for name in info.get("test_data", []):
            path = predictions_file(d / "predictions", slug(name))
            if not path.is_file():
                continue
            spec = definition.test_sets.get(name)
            if spec is None:
                raise BundleRefused(
                    f"{rel}: test set {name!r} is not one of benchmark {definition.name}'s "
                    f"({', '.join(definition.test_sets)})"
                )
            prefix = f"{rel}/predictions"
            digests = (
                files.get(f"{prefix}/{path.name}", ""),
                files.get(f"{prefix}/{provenance_path(path).name}", ""),
                definition.sha256,
            )
            track, note = cache.check(path, prefix, detector, spec, digests)
            tracks.add(track)
            seen.add(name)
            if note and note not in notes:
                notes.append(note)
        eval_dirs.append(d)
    if not seen:
        raise BundleRefused("no predictions of the benchmark's test sets")
    absent = [n for n in definition.test_sets if n not in seen]
    if absent:
        notes.append(f"not submitted: {', '.join(absent)}")
    card = inside(folder, meta["card"]) if meta.get("card") else None
    costs = (
        json.loads(inside(folder, meta["costs"]).read_text(encoding="utf-8"))
        if meta.get("costs")
        else None
    )
    return AdmittedBundle(
        sha256=manifest_sha256(folder),
        detector=detector,
        path=folder,
        eval_dirs=tuple(eval_dirs),
        added=str(meta["submitted"]),
        code_version=code_version_text(meta.get("code_version") or {}),
        track="own preprocessing" if "own preprocessing" in tracks else "benchmark",
        baseline=baseline,
        package=(meta.get("package") or {}).get("ref"),
        card=card,
        costs=costs,
        notes=tuple(notes),
    )
