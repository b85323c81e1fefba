"""Package a trained detector to share it: weights, crop, frames, threshold and results.

  fairforensics export RUN_DIR [--weights best|last] [--fairness FAIRNESS_DIR] --out DIR
  fairforensics export --detector NAME --weights FILE [--preset deepfakebench|mesonet]
      [--model-config YAML] [--threshold T] --out DIR

The folder holds model.safetensors (no pickle), config.json (detector, model config, input and
normalisation, crop, face-crop settings, frames per video, validation threshold, the run's
temperature scaling fitted on validation when it stored one, training and validation data with
index hashes) and README.md (a model card with the Hugging Face Hub's
model-index metadata and the files' SHA-256). Upload it as a Hub model repository, or give the
folder itself, to --model of test, detect, robustness and metamorphic. Exporting never changes
the run.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from fairforensics.cli.errors import UserInputError, add_import_argument, configure_logging, run_cli
from fairforensics.cli.helptext import guide
from fairforensics.cli.preflight import check_detector_name, check_run, check_weights
from fairforensics.cli.source import HELP
from fairforensics.configs.writable import check_writable

PRESETS = ("deepfakebench", "mesonet")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("export"),
    )
    p.add_argument("run", nargs="?", type=Path, metavar="RUN_DIR", help=HELP["run"])
    p.add_argument("--detector", help=HELP["detector"] + ", instead of RUN_DIR")
    p.add_argument("--weights", help=HELP["weights"])
    p.add_argument(
        "--preset",
        choices=PRESETS,
        help="with --detector: the preprocessing the weights come from: deepfakebench "
        "(DeepfakeBench's released checkpoints: its model config, crop and normalisation) or "
        "mesonet (the MesoNet authors' .h5: their crop and input)",
    )
    p.add_argument("--model-config", type=Path, help=HELP["model_config"])
    p.add_argument(
        "--threshold",
        type=float,
        help="with --detector: a decision threshold to record (default none: decisions use 0.5 "
        "and say so)",
    )
    p.add_argument(
        "--fairness",
        type=Path,
        help="with RUN_DIR: a folder of fairforensics fairness on the run's evaluation, whose "
        "summary goes into the model card",
    )
    p.add_argument("--out", type=Path, required=True, help="the package folder (new or empty)")
    add_import_argument(p)
    args = p.parse_args(argv)
    if (args.run is None) == (args.detector is None):
        raise UserInputError("give RUN_DIR or --detector NAME --weights FILE")
    if args.run is not None:
        extra = [f"--{k.replace('_', '-')}" for k in ("preset", "model_config", "threshold")
                 if getattr(args, k) is not None]  # fmt: skip
        if extra:
            raise UserInputError(f"{', '.join(extra)}: for --detector; a run records its own")
        if args.weights not in (None, "best", "last"):
            raise UserInputError(f"--weights {args.weights}: a run exports best or last")
    elif args.weights in (None, "best", "last"):
        raise UserInputError("--detector needs --weights FILE (best/last belong to a run)")
    elif args.fairness is not None:
        raise UserInputError("--fairness goes with RUN_DIR (an evaluated run)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    check_writable(args.out)  # before the weights are read
    if args.run is not None and args.weights in (None, "best", "last"):  # then the weights'
        check_run(args.run, args.weights or "best")  # files, before torch loads
    elif args.run is None:
        check_detector_name(args.detector, args.imports)
        if args.weights is not None:
            check_weights(args.weights)
    from fairforensics.configs import import_modules

    import_modules(args.imports)
    configure_logging(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from fairforensics.evaluation.model_package.export import export_run, export_weights

    if args.run is not None:
        out = export_run(args.run, args.out, weights=args.weights or "best", fairness=args.fairness)
    else:
        from fairforensics.detectors import list_detectors

        if args.detector not in list_detectors():
            raise UserInputError(
                f"--detector {args.detector!r} is not a registered detector; choose one of "
                f"{', '.join(list_detectors())} (or --import the module that registers it)"
            )
        out = export_weights(
            args.detector,
            args.weights,
            args.out,
            preset=args.preset,
            model_config=args.model_config,
            threshold=args.threshold,
        )
    print(f"model package: {out.resolve()}")
    return 0


if __name__ == "__main__":
    run_cli(main)
