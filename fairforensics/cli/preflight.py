"""The file errors of every verb, found before torch is imported (issue 46, item 8): a bad
``--model`` path, a ``--run`` without ``config.yaml`` or its checkpoint, a text file as
``--weights``, a folder without images or videos, a typo in a test config. Each is one
``error:`` line within a second or so, not after the ten seconds torch and the detectors take to
load. The checks read what the loaders read, with their messages; the loaders still check (a
library caller does not come through here)."""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairforensics.configs import ConfigError
from fairforensics.configs.filekind import weights_problem

if TYPE_CHECKING:  # imported when checked, not when the command starts
    from fairforensics.evaluation.calibration.source import ChosenCalibration

#: a built-in detector's registration, as :mod:`detectors.registry` finds it in the source
_REGISTERED = re.compile(r"^[ \t]*@register_detector\(\s*[\"']([^\"']+)[\"']", re.MULTILINE)


def known_detectors() -> set[str]:
    """The built-in detectors (read from the source of ``detectors/``, as the registry lists
    them, without importing it), the names of the detector plugins' entry points, and the
    detectors registered in this process (when the registry is already imported)."""
    spec = importlib.util.find_spec("fairforensics.detectors")
    folders = list(spec.submodule_search_locations or []) if spec else []
    names = {
        m for folder in folders for path in Path(folder).rglob("*.py")
        for m in _REGISTERED.findall(path.read_text(encoding="utf-8"))
    }  # fmt: skip
    names |= {ep.name for ep in metadata.entry_points(group="fairforensics.detectors")}
    registry = sys.modules.get("fairforensics.detectors.registry")  # registered in this process
    return names | (set(registry.list_detectors()) if registry is not None else set())


def check_detector_name(name: str, imports: Sequence[str] = (), option: str = "--detector") -> None:
    """``name`` is a registered detector (unless ``--import`` modules may register it)."""
    if imports:
        return
    known = known_detectors()
    if name not in known:
        raise ConfigError(
            f"{option} {name!r} is not a registered detector; choose one of "
            f"{', '.join(sorted(known))} (or --import the module that registers it)"
        )


def check_weights(path: str | Path) -> None:
    """``path`` can be a detector's weights file (see :func:`configs.filekind.weights_problem`)."""
    problem = weights_problem(path)
    if problem is not None:
        raise ConfigError(problem)


def check_run(run: str | Path, weights: str | None = "best") -> None:
    """A run directory with its ``config.yaml`` and the ``weights`` checkpoint (``best``,
    ``last`` or a file; None: the config only)."""
    from fairforensics.preprocessing.rundir import RunDir

    folder = RunDir(run)
    folder.read_config()
    if weights is not None:
        check_weights(folder.checkpoint(weights))


def check_model(ref: str) -> None:
    """A model package folder (its ``config.json`` read and checked, its weights present);
    a Hub reference (``hf:``) is checked when it is fetched."""
    from fairforensics.evaluation.model_package.hub import PREFIX
    from fairforensics.evaluation.model_package.schema import (
        WEIGHTS_FILE,
        PackageError,
        read_package_config,
    )

    if str(ref).startswith(PREFIX):
        return
    folder = Path(ref)
    read_package_config(folder)
    if not (folder / WEIGHTS_FILE).is_file():
        raise PackageError(f"{folder / WEIGHTS_FILE}: missing; the package has no weights")


def check_source_files(args: argparse.Namespace) -> None:
    """The files of ``--run`` / ``--model`` / ``--detector --weights`` and ``--model-config``
    (after :func:`cli.source.check_detector_source` checked the combination)."""
    if getattr(args, "model", None) is not None:
        check_model(args.model)
    elif getattr(args, "run", None) is not None:
        check_run(args.run, args.weights)
    elif getattr(args, "detector", None) is not None:
        check_detector_name(args.detector, getattr(args, "imports", ()))
        if args.weights is not None:
            check_weights(args.weights)
    config = getattr(args, "model_config", None)
    if config is not None:
        from fairforensics.configs import resolve_config

        resolve_config(config, "detectors")


def check_media_inputs(paths: Sequence[str | Path]) -> None:
    """``detect``'s paths are not only folders without images or videos (a file or a missing
    path is reported by ``detect`` itself): the error of :func:`evaluation.detection.detect`."""
    from fairforensics.preprocessing.video import IMAGE_SUFFIXES, VIDEO_SUFFIXES

    media = IMAGE_SUFFIXES | VIDEO_SUFFIXES
    others = 0
    for raw in paths:
        folder = Path(raw).expanduser()
        if not folder.is_dir():
            return
        for file in folder.rglob("*"):
            if any(part.startswith(".") for part in file.relative_to(folder).parts):
                continue
            if file.is_file():
                if file.suffix.lower() in media:
                    return
                others += 1
    found = f" (only {others} other files)" if others else ""
    raise ConfigError(f"no images or videos found in {', '.join(map(str, paths))}{found}")


def check_test_settings(config_files: Sequence[str | Path], overrides: Sequence[str]) -> None:
    """A test config (``--config`` files and ``--set``) without unknown keys or bad values."""
    from fairforensics.evaluation.settings import load_test_config

    load_test_config(*config_files, overrides=list(overrides))


def check_files_exist(paths: Sequence[str | Path], what: str) -> None:
    """Each of ``paths`` is a file (``what``: e.g. ``predictions file``)."""
    for path in paths:
        if not Path(path).is_file():
            reason = "a folder" if Path(path).is_dir() else "not found"
            raise ConfigError(f"{path}: {what} {reason}")


def check_calibration(
    args: argparse.Namespace, package_config: dict[str, Any] | None = None
) -> ChosenCalibration | None:
    """The calibration ``--calibration`` names (a :class:`~evaluation.calibration.source.
    ChosenCalibration`, or None without the option), refused with one line when it is not a
    calibration, has an unknown method, or was fitted for another detector or run than the
    scores it would map. A Hub ``--model`` is checked once fetched (``package_config``)."""
    spec = getattr(args, "calibration", None)
    if spec is None:
        return None
    from fairforensics.evaluation.calibration.run import producer_of
    from fairforensics.evaluation.calibration.source import (
        STORED,
        check_producer,
        choose_calibration,
        package_producers,
        run_producers,
    )
    from fairforensics.evaluation.provenance import file_sha256

    model, run, weights = getattr(args, "model", None), getattr(args, "run", None), args.weights
    if model is not None:
        if package_config is None and str(model).startswith("hf:"):
            return None
        if package_config is None:
            from fairforensics.evaluation.model_package.schema import read_package_config

            package_config = read_package_config(model)
        folder = None if str(model).startswith("hf:") else Path(model)
        chosen = choose_calibration(
            spec, package_config=package_config, package_ref=str(model), package_folder=folder
        )
        checks = [(package_producers(package_config), f"model package {model}")]
    elif run is not None:
        chosen = choose_calibration(spec, run=run, weights=weights or "best")
        checks = [(run_producers(run, weights or "best"), f"run {run} ({weights or 'best'})")]
    elif getattr(args, "detector", None) is not None and weights is not None:
        chosen = choose_calibration(spec)
        producer = {"detector": args.detector, "weights_sha256": file_sha256(weights)}
        checks = [([producer], f"{args.detector} with {weights}")]
    elif getattr(args, "predictions", None):
        chosen = choose_calibration(spec)
        files = [item.partition("=")[2] for item in args.predictions]
        checks = [([producer_of(f)], f"the scores of {f}") for f in files]
    else:
        raise ConfigError(
            "--calibration applies to the scores of --run, --model, --detector or --predictions"
        )
    if spec != STORED:  # a run's or package's own calibration was fitted on its own scores
        for producers, what in checks:
            check_producer(chosen.calibration, producers, f"--calibration {spec}", what)
    return chosen
