"""A bundle that passed every check of :mod:`benchmarks.submissions.checks`: what the site
builder (:mod:`benchmarks.site`) reads, and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

#: ``benchmark``: scored on the definition's test items with its index; ``own preprocessing``:
#: the same test videos, scored from another preprocessing or frame sampling (never ranked with
#: the first).
Track = Literal["benchmark", "own preprocessing"]


@dataclass(frozen=True)
class AdmittedBundle:
    """One checked submission: a detector's evaluation folders (one per seed) and what the site
    shows about it."""

    sha256: str  # SHA-256 of the bundle's manifest.json: the bundle's identity and cache key
    detector: str
    path: Path  # the bundle's folder (an archive is unpacked into the build's cache first)
    eval_dirs: tuple[Path, ...]  # inside ``path``: eval.json + predictions/<set>.csv, one per seed
    added: str  # when the submission was made, ISO 8601 UTC, from its manifest
    code_version: str  # the FairForensics version (and git commit when known) that scored it
    track: Track = "benchmark"
    baseline: bool = False
    package: str | None = None  # a model package reference (folder name or hub id@revision)
    card: Path | None = None  # the model card (Markdown) inside the bundle, when submitted
    costs: dict[str, Any] | None = None  # the bundle's costs.json, when submitted
    notes: tuple[str, ...] = field(default_factory=tuple)  # why the track, what was checked
