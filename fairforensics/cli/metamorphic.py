r"""Metamorphic fairness testing of a detector (paper 000): makeup test cases, per-gender tables.

  scripts/metamorphic.py --run RUN_DIR [--weights best|last|FILE] --test-data DATASET
  scripts/metamorphic.py --detector NAME --weights FILE [--variant paper | --model-config YAML]
      --test-data DATASET [--data-root DIR]
  scripts/metamorphic.py --model PACKAGE_DIR|hf:OWNER/NAME[@REV] --test-data DATASET

A score at or above the decision threshold is a fake decision: by default the run's validation
threshold (see --threshold). --weights FILE is what scripts/test.py reads: a torch checkpoint
(ours or DeepfakeBench's) or, for meso4/meso_inception4, the MesoNet authors' Keras .h5 (e.g.
Meso4_DF.h5). Example::

    python scripts/metamorphic.py --run runs/meso4_demo --test-data demo \
        --relations configs/metamorphic/makeup.yaml
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from fairforensics.cli.errors import add_import_argument, configure_logging, run_cli
from fairforensics.cli.helptext import config_help, guide
from fairforensics.cli.preflight import check_source_files
from fairforensics.cli.source import add_detector_source, check_detector_source
from fairforensics.cli.thresholds import add_threshold_arguments, print_threshold
from fairforensics.configs import ConfigError, import_modules
from fairforensics.configs.writable import check_writable


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("metamorphic"),
    )
    add_detector_source(p)
    p.add_argument(
        "--test-data", required=True, help="dataset name (<data_root>/<name>.json) or index path"
    )
    p.add_argument(
        "--relations",
        help=config_help("metamorphic", "relations (test cases) config (default: makeup)"),
    )
    p.add_argument(
        "--data-root",
        default=None,
        help="folder of dataset indexes (default: the run's; 'datasets' with --detector)",
    )
    p.add_argument(
        "--out",
        default=None,
        help="output folder (default: RUN/metamorphic/<dataset>, or "
        "metamorphic/<detector>_<weights or package name>/<dataset> with --detector or --model)",
    )
    p.add_argument("--split", default="test", choices=("train", "val", "test"))
    p.add_argument("--frame-num", type=int, default=None, help="frames per video (default: all)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--device", default="cpu")
    p.add_argument(
        "--examples", type=int, default=4, help="faces on the example sheet (across groups)"
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a relations-file key, e.g. max_yaw=45",
    )
    add_threshold_arguments(p)
    add_import_argument(p)
    return p.parse_args(argv)


def _evaluate_named(args: argparse.Namespace, options: dict) -> dict[str, Path]:
    """``--detector NAME --weights FILE``: the loading of ``scripts/test.py``."""
    from fairforensics.configs.crop import expected_crop
    from fairforensics.detectors import list_detectors
    from fairforensics.detectors.registry import plugin_failure_note
    from fairforensics.detectors.weights import load_named_detector, weights_config
    from fairforensics.evaluation.provenance import file_sha256
    from fairforensics.evaluation.thresholds import decision_threshold
    from fairforensics.fairness.metamorphic.pipeline import evaluate_detector

    if args.detector not in list_detectors():
        raise ConfigError(
            f"--detector {args.detector!r} is not a registered detector"
            f"{plugin_failure_note(args.detector)}; choose one of "
            f"{', '.join(list_detectors())} (or --import the module that registers it)"
        )
    detector, model_cfg = load_named_detector(
        args.detector, args.weights, args.model_config, args.variant
    )
    described = weights_config(args.detector, args.weights, args.model_config, args.variant)
    weights = Path(args.weights)
    meta = {
        "detector": args.detector,
        "weights": weights.name,
        "weights_sha256": file_sha256(weights),
        "model": model_cfg,
    }
    threshold = decision_threshold(threshold=args.threshold, threshold_from=args.threshold_from)
    print_threshold(threshold)
    return evaluate_detector(
        detector,
        args.test_data,
        args.relations,
        data_root=args.data_root or "datasets",
        out_dir=args.out,
        out_parent=Path("metamorphic") / f"{args.detector}_{weights.stem}",
        meta=meta,
        expected_crop=expected_crop(described),
        threshold=threshold,
        **options,
    )


def _evaluate_package(args: argparse.Namespace, options: dict) -> dict[str, Path]:
    """``--model DIR|hf:OWNER/NAME[@REV]``: a model package, with its crop and threshold."""
    from fairforensics.evaluation.model_package.load import load_model
    from fairforensics.evaluation.thresholds import decision_threshold
    from fairforensics.fairness.metamorphic.pipeline import evaluate_detector

    package = load_model(args.model)
    meta = {
        "detector": package.name,
        "model_package": package.ref,
        "weights_sha256": package.config["weights_sha256"],
        "model": package.config["model"],
    }
    threshold = decision_threshold(
        threshold=args.threshold, threshold_from=args.threshold_from, packaged=package.threshold
    )
    print_threshold(threshold)
    return evaluate_detector(
        package.detector,
        args.test_data,
        args.relations,
        data_root=args.data_root or "datasets",
        out_dir=args.out,
        out_parent=Path("metamorphic") / f"{package.name}_{package.label}",
        meta=meta,
        expected_crop=package.crop,
        threshold=threshold,
        **options,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    check_detector_source(args)
    configure_logging(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.run is not None and (args.model_config is not None or args.variant is not None):
        raise ConfigError("--model-config and --variant go with --detector, not --run")
    if args.out is not None:
        check_writable(args.out)  # before the transformations and predictions
    check_source_files(args)  # then the model's files, before torch loads
    # after the arguments are read, so that --help and argument errors import no torch
    from fairforensics.evaluation.thresholds import decision_threshold
    from fairforensics.fairness.metamorphic.pipeline import evaluate_run
    from fairforensics.fairness.metamorphic.relations import DEFAULT_RELATIONS

    args.relations = args.relations or str(DEFAULT_RELATIONS)
    options = {
        "split": args.split,
        "frame_num": args.frame_num,
        "batch_size": args.batch_size,
        "device": args.device,
        "overrides": args.set,
        "n_examples": args.examples,
    }
    import_modules(args.imports)
    if args.model is not None:
        files = _evaluate_package(args, options)
    elif args.detector is not None:
        files = _evaluate_named(args, options)
    else:
        threshold = decision_threshold(
            run=Path(args.run),
            threshold=args.threshold,
            threshold_from=args.threshold_from,
            weights=args.weights,
        )
        print_threshold(threshold)
        files = evaluate_run(
            args.run,
            args.test_data,
            args.relations,
            data_root=args.data_root,
            out_dir=args.out,
            weights=args.weights,
            threshold=threshold,
            **options,
        )
    logging.getLogger("metamorphic").info("wrote %s", files["markdown"].parent)
    print(files["markdown"].read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    run_cli(main)
