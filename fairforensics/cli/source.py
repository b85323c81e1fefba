"""The detector a command loads, declared once for every verb that loads one (``test``,
``detect``, ``robustness``, ``metamorphic``): ``--run``, ``--detector`` or ``--model`` (one of
them), with ``--weights``, ``--model-config`` and ``--variant``. The combinations are checked
by :func:`check_detector_source` before anything heavy is imported (no torch for an argument
error)."""

from __future__ import annotations

import argparse
from pathlib import Path

from fairforensics.cli.errors import UserInputError

HELP = {
    "run": "run directory of fairforensics train (with --weights best|last|FILE)",
    "detector": "registered detector name (with --weights FILE)",
    "model": "a model package: a folder of fairforensics export (model.safetensors, "
    "config.json, README.md) or hf:OWNER/NAME[@REVISION] on the Hugging Face Hub (cached; "
    "HF_HUB_OFFLINE=1 reads the cache only); its crop, frames and threshold come with it",
    "weights": "best | last (of --run; default best) | a file: torch checkpoint (ours or "
    "DeepfakeBench's) or, for meso4/meso_inception4, the authors' Keras .h5",
    "model_config": "detector YAML for --detector: a file, or a shipped name such as meso4 or "
    "paper/ucf (default: the checkpoint's, else configs/detectors/NAME.yaml; for a Keras file "
    "configs/detectors/paper/NAME.yaml)",
    "variant": "with --detector and no --model-config: configs/detectors/NAME.yaml "
    "(deepfakebench) or configs/detectors/paper/NAME.yaml (paper)",
}


def add_detector_source(
    parser: argparse.ArgumentParser, *, required: bool = True
) -> argparse._MutuallyExclusiveGroup:
    """Add ``--run`` / ``--detector`` / ``--model`` (mutually exclusive; one is required unless
    ``required`` is false) and ``--weights``, ``--model-config``, ``--variant``. Returns the
    exclusive group, to which a verb may add its other sources (``test``'s ``--predictions``)."""
    source = parser.add_mutually_exclusive_group(required=required)
    source.add_argument("--run", type=Path, help=HELP["run"])
    source.add_argument("--detector", help=HELP["detector"])
    source.add_argument("--model", metavar="DIR|hf:OWNER/NAME[@REV]", help=HELP["model"])
    parser.add_argument("--weights", help=HELP["weights"])
    parser.add_argument("--model-config", type=Path, help=HELP["model_config"])
    parser.add_argument("--variant", choices=["deepfakebench", "paper"], help=HELP["variant"])
    return source


def check_detector_source(args: argparse.Namespace) -> None:
    """The combinations :func:`add_detector_source`'s options allow, as one-line errors; sets
    ``args.weights`` to ``best`` for ``--run`` without it."""
    if args.model is not None:
        given = [f"--{k}" for k in ("weights", "model_config", "variant") if getattr(args, k)]
        if given:
            raise UserInputError(
                f"{', '.join(g.replace('_', '-') for g in given)}: a --model package holds its "
                "weights and config; give them with --run or --detector instead"
            )
        return
    if args.detector is not None:
        if args.weights in (None, "best", "last"):
            raise UserInputError(
                "--detector needs --weights FILE (best/last belong to --run): a torch checkpoint "
                "(ours or DeepfakeBench's) or, for meso4/meso_inception4, the authors' Keras .h5"
            )
        return
    if args.run is not None:
        if args.model_config is not None or args.variant is not None:
            raise UserInputError(
                "--model-config and --variant go with --detector, not --run (a run records its "
                "model config)"
            )
        args.weights = args.weights or "best"
