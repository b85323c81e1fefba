"""``fairforensics board build``: every bundle of a submissions folder unpacked (archives, into
a cache keyed by their SHA-256), checked (:func:`.checks.admit`) and handed to the site builder
(:func:`benchmarks.site.build_site`) with the refused ones and their reasons."""

from __future__ import annotations

import logging
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from fairforensics.benchmarks.submissions.admitted import AdmittedBundle
from fairforensics.benchmarks.submissions.bundle import BUNDLE_FILE
from fairforensics.benchmarks.submissions.checks import BundleRefused, admit
from fairforensics.benchmarks.submissions.definition import Definition, load_definition
from fairforensics.evaluation.provenance import file_sha256

log = logging.getLogger(__name__)

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")


@dataclass
class BoardBundles:
    """The bundles of a submissions folder: admitted, and refused as ``(name, one line)``."""

    admitted: list[AdmittedBundle] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


def unpack(archive: Path, cache_dir: Path) -> Path:
    """The folder of a bundle archive, unpacked once into ``cache_dir/bundles/<SHA-256>/``."""
    target = cache_dir / "bundles" / file_sha256(archive)
    if (target / BUNDLE_FILE).is_file():
        return target
    tmp = target.with_name(target.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(tmp, filter="data")  # no links out, no absolute paths
    except (tarfile.TarError, OSError, EOFError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BundleRefused(f"unreadable archive ({exc})") from None
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def _bundle_folder(path: Path, cache_dir: Path) -> Path:
    """The bundle folder an entry of the submissions folder stands for."""
    if path.is_dir():
        return path
    if path.name.endswith(ARCHIVE_SUFFIXES):
        return unpack(path, cache_dir)
    raise BundleRefused("not a bundle (a folder or a .tar.gz of `fairforensics submit`)")


def check_bundles(submissions: Path, definition: Definition, cache_dir: Path) -> BoardBundles:
    """Every entry of ``submissions`` (sorted by name, hidden ones skipped) admitted or refused;
    a second bundle of a detector already admitted (or the same bundle twice) is refused."""
    if not submissions.is_dir():
        raise ValueError(f"{submissions}: no such submissions folder")
    out = BoardBundles()
    by_detector: dict[str, str] = {}
    by_sha: dict[str, str] = {}
    for path in sorted(submissions.iterdir()):
        if path.name.startswith("."):
            continue
        try:
            bundle = admit(_bundle_folder(path, cache_dir), definition, cache_dir=cache_dir)
            if bundle.sha256 in by_sha:
                raise BundleRefused(f"the same bundle as {by_sha[bundle.sha256]}")
            if bundle.detector in by_detector:
                raise BundleRefused(
                    f"detector {bundle.detector!r} is already on the board from "
                    f"{by_detector[bundle.detector]} (one bundle a detector: replace it)"
                )
        except BundleRefused as exc:
            log.warning("refused %s: %s", path.name, exc)
            out.refused.append((path.name, str(exc)))
            continue
        by_sha[bundle.sha256] = by_detector[bundle.detector] = path.name
        out.admitted.append(bundle)
    return out


def build_board(
    submissions: str | Path,
    benchmark: str | Path,
    out: str | Path,
    *,
    cache_dir: str | Path | None = None,
) -> BoardBundles:
    """Check every bundle of ``submissions`` against ``benchmark`` (a shipped name or a file) and
    write the site to ``out``; ``cache_dir`` (default ``<out>-cache`` beside it) holds unpacked
    archives and the site's cached summaries. Returns the admitted and refused bundles."""
    from fairforensics.benchmarks.site import build_site

    definition = load_definition(benchmark)
    site = Path(out)
    cache = Path(cache_dir) if cache_dir is not None else site.with_name(site.name + "-cache")
    bundles = check_bundles(Path(submissions), definition, cache)
    build_site(
        bundles.admitted,
        site,
        benchmark=definition.name,
        test_sets=list(definition.test_sets),
        refused=bundles.refused,
        cache_dir=cache,
    )
    return bundles
