"""A submission bundle (``fairforensics submit``): one detector's evaluation folders (one per
seed) with what a board needs to check and show them, and a SHA-256 manifest.

Layout of a bundle folder::

    bundle.json                  detector, training data, submission time, code version,
                                 package reference, the evaluation folders and their sources
    evals/<k>/eval.json          of each submitted evaluation folder (k = 1, 2, ...)
    evals/<k>/predictions/<set>.csv|.parquet and <set>.provenance.json
    evals/<k>/robustness/robustness_run.json   when the folder holds a robustness run
    card.md                      the model card (--card, or the README.md of a --package folder)
    costs.json                   --costs
    manifest.json                SHA-256 of every other file (:mod:`.manifest`)

No weights are copied. ``--archive`` writes the folder as one reproducible ``.tar.gz`` (sorted
members, the submission time as every mtime, no owner names).
"""

from __future__ import annotations

import gzip
import json
import logging
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from fairforensics.benchmarks.submissions.manifest import read_bundle_json, write_manifest
from fairforensics.evaluation.model_package.hub import PREFIX, parse_hub_ref
from fairforensics.evaluation.model_package.schema import CARD_FILE, CONFIG_FILE
from fairforensics.evaluation.predictions import predictions_file, slug
from fairforensics.evaluation.provenance import file_sha256, provenance_path
from fairforensics.preprocessing.files import write_json
from fairforensics.preprocessing.rundir import build_time, git_commit

log = logging.getLogger(__name__)

BUNDLE_FILE = "bundle.json"
BUNDLE_FORMAT = "fairforensics-bundle/1"
EVALS = "evals"
BUNDLE_CARD = "card.md"
BUNDLE_COSTS = "costs.json"
ROBUSTNESS_RUN = "robustness/robustness_run.json"  # evaluation.robustness.RUN_INFO


@dataclass(frozen=True)
class SubmitSettings:
    """What ``fairforensics submit`` adds to the evaluation folders."""

    package: str | None = None  # a model package folder or hf:OWNER/NAME@REVISION
    card: Path | None = None  # a model card (Markdown)
    costs: Path | None = None  # a costs JSON (benchmarks.costs' costs.json)
    archive: bool = False  # write BUNDLE.tar.gz instead of the folder


def code_version() -> dict[str, str | None]:
    """``{"fairforensics": version, "git_commit": commit or None}`` of the running code."""
    try:
        version: str | None = metadata.version("fairforensics")
    except metadata.PackageNotFoundError:
        version = None
    return {"fairforensics": version, "git_commit": git_commit()}


def code_version_text(code: dict[str, Any]) -> str:
    """``"fairforensics 0.1.0 (git 1a2b3c4d5e6f)"`` of a bundle's ``code_version``."""
    text = f"fairforensics {code.get('fairforensics') or 'unknown version'}"
    commit = code.get("git_commit")
    return (
        f"{text} (git {commit[:12]}{'+dirty' if commit.endswith('+dirty') else ''})"
        if commit
        else text
    )


def read_eval_info(eval_dir: Path) -> dict[str, Any]:
    """The ``eval.json`` of an evaluation folder; a missing one is a ``ValueError`` naming it."""
    path = eval_dir / "eval.json"
    if not path.is_file():
        raise ValueError(f"{eval_dir}: not an evaluation folder (no eval.json)")
    info = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(info, dict) or not info.get("detector"):
        raise ValueError(f"{path}: no detector named (not an eval.json of `fairforensics test`)")
    return info


def _package(ref: str | None) -> tuple[dict[str, Any] | None, Path | None]:
    """The bundle's package entry and the card a package folder brings (None, None without)."""
    if ref is None:
        return None, None
    if ref.startswith(PREFIX):
        repo, revision = parse_hub_ref(ref)
        if revision is None:
            raise ValueError(f"--package {ref}: pin a revision (hf:{repo}@REVISION)")
        return {"ref": ref}, None
    folder = Path(ref)
    if not (folder / CONFIG_FILE).is_file():
        raise ValueError(f"--package {ref}: not a model package folder (no {CONFIG_FILE})")
    entry = {"ref": folder.name, "config_sha256": file_sha256(folder / CONFIG_FILE)}
    card = folder / CARD_FILE
    return entry, card if card.is_file() else None


def _copy_eval(src: Path, dst: Path, info: dict[str, Any]) -> list[str]:
    """Copy an evaluation folder's ``eval.json``, predictions, provenance and robustness run
    into ``dst``; returns the test sets copied."""
    (dst / "predictions").mkdir(parents=True)
    shutil.copyfile(src / "eval.json", dst / "eval.json")
    copied = []
    for name in info.get("test_data", []):
        pred = predictions_file(src / "predictions", slug(name))
        if not pred.is_file():
            log.warning("%s: no predictions for %s; left out of the bundle", src, name)
            continue
        shutil.copyfile(pred, dst / "predictions" / pred.name)
        prov = provenance_path(pred)
        if prov.is_file():
            shutil.copyfile(prov, dst / "predictions" / prov.name)
        else:
            log.warning("%s: no provenance; a board refuses the bundle", prov)
        copied.append(name)
    if (src / ROBUSTNESS_RUN).is_file():
        (dst / ROBUSTNESS_RUN).parent.mkdir(parents=True)
        shutil.copyfile(src / ROBUSTNESS_RUN, dst / ROBUSTNESS_RUN)
    return copied


def make_bundle(
    eval_dirs: Sequence[str | Path], out: str | Path, settings: SubmitSettings = SubmitSettings()
) -> Path:
    """Pack the evaluation folders of one detector into the bundle ``out`` (a folder, or
    ``out.tar.gz`` with ``settings.archive``); returns what was written. Folders of several
    detectors are refused (one detector per bundle)."""
    dirs = [Path(d) for d in eval_dirs]
    if not dirs:
        raise ValueError("give at least one evaluation folder")
    infos = [read_eval_info(d) for d in dirs]
    detectors = sorted({str(i["detector"]) for i in infos})
    if len(detectors) > 1:
        raise ValueError(
            f"one detector per bundle; these folders hold {', '.join(detectors)} "
            "(submit each detector's folders on their own)"
        )
    package, package_card = _package(settings.package)
    card = settings.card or package_card
    for path, what in ((settings.card, "--card"), (settings.costs, "--costs")):
        if path is not None and not path.is_file():
            raise ValueError(f"{what} {path}: no such file")
    target = Path(out)
    final = _archive_name(target) if settings.archive else target
    if final.exists() and (final.is_file() or any(final.iterdir())):
        raise ValueError(f"{final}: exists; give a new --out")
    with tempfile.TemporaryDirectory(dir=final.parent if final.parent.is_dir() else None) as tmp:
        folder = Path(tmp) / "bundle"
        evals = []
        for k, (d, info) in enumerate(zip(dirs, infos, strict=True), start=1):
            rel = f"{EVALS}/{k}"
            sets = _copy_eval(d, folder / rel, info)
            evals.append({"path": rel, "source": d.resolve().name, "test_data": sets})
        if not any(e["test_data"] for e in evals):
            raise ValueError("no predictions file in these evaluation folders; nothing to submit")
        if card is not None:
            shutil.copyfile(card, folder / BUNDLE_CARD)
        if settings.costs is not None:
            json.loads(settings.costs.read_text(encoding="utf-8"))  # a JSON file, or an error
            shutil.copyfile(settings.costs, folder / BUNDLE_COSTS)
        when = build_time()
        meta = {
            "format": BUNDLE_FORMAT,
            "detector": detectors[0],
            "train_data": sorted({str(i.get("train_data", "")) for i in infos}),
            "submitted": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "code_version": code_version(),
            "package": package,
            "card": BUNDLE_CARD if card is not None else None,
            "costs": BUNDLE_COSTS if settings.costs is not None else None,
            "evals": evals,
        }
        write_json(folder / BUNDLE_FILE, meta, indent=2)
        write_manifest(folder)
        if settings.archive:
            _write_archive(folder, final, int(when.timestamp()))
        else:
            final.parent.mkdir(parents=True, exist_ok=True)
            if final.exists():
                final.rmdir()
            shutil.move(str(folder), final)
    return final


def _archive_name(out: Path) -> Path:
    """``out`` with ``.tar.gz`` (kept when it has it)."""
    return out if out.name.endswith(".tar.gz") else out.with_name(out.name + ".tar.gz")


def _write_archive(folder: Path, out: Path, mtime: int) -> None:
    """``folder``'s files as a reproducible ``.tar.gz``, written atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    with (
        open(tmp, "wb") as raw,
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=mtime) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            member = tarfile.TarInfo(path.relative_to(folder).as_posix())
            member.size, member.mtime, member.mode = path.stat().st_size, mtime, 0o644
            with open(path, "rb") as fh:
                tar.addfile(member, fh)
    tmp.replace(out)


def read_bundle(folder: str | Path) -> dict[str, Any]:
    """A bundle's ``bundle.json``; a missing or foreign one is a ``ValueError`` naming it."""
    return read_bundle_json(Path(folder) / BUNDLE_FILE, "bundle.json", BUNDLE_FORMAT)
