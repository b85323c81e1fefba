r"""Evaluate a detector under DeeperForensics-1.0's perturbations, with fairness under them.

Seven perturbation types at five levels, each applied to the whole decoded frames.

  fairforensics robustness --run RUN_DIR --test-data FF-c23 --source-root DATASET_ROOT
  fairforensics robustness --detector NAME --weights FILE --test-data FF-c23 \
      --source-root DATASET_ROOT [--types CS,GB,VC] [--levels 1,3,5] [--faces detect]
  fairforensics robustness --model PACKAGE_DIR|hf:OWNER/NAME[@REV] --test-data FF-c23 ...

The perturbations are applied to the whole decoded frames before the face crop (frames mode:
an index made by ``preprocess``, whose ``source`` paths lie under --source-root, the
``dataset.root`` of its preprocess config); an index of crops only is perturbed crop by crop
(crops mode). Settings of the test: configs/test/default.yaml < --config < --set.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from fairforensics.cli.errors import UserInputError, add_import_argument, configure_logging, run_cli
from fairforensics.cli.helptext import config_help, guide
from fairforensics.cli.partial import add_allow_partial_argument
from fairforensics.cli.preflight import check_source_files, check_test_settings
from fairforensics.cli.source import add_detector_source, check_detector_source
from fairforensics.cli.thresholds import add_threshold_arguments, print_threshold
from fairforensics.configs import import_modules
from fairforensics.configs.writable import check_writable
from fairforensics.preprocessing.perturbations import TYPES, check_cases


def _list(text: str, kind: type = str) -> list:
    try:
        return [kind(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserInputError(f"{text!r}: expected a comma-separated list") from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("robustness"),
    )
    add_detector_source(p)
    p.add_argument("--train-data", default="", help="training data shown in tables")
    p.add_argument("--test-data", nargs="+", required=True, help="dataset names")
    p.add_argument("--data-root", help="folder of the dataset indexes")
    p.add_argument(
        "--val-data", help="choose the decision threshold on this dataset's val split (EER rule)"
    )
    p.add_argument(
        "--config", type=Path, action="append", default=[], help=config_help("test", "test config")
    )
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument(
        "--out",
        type=Path,
        help="output folder (default: robustness/ in test.py's evaluation folder, "
        "RUN_DIR/eval/<weights>/robustness, where the leaderboard finds it)",
    )
    p.add_argument("--overwrite", action="store_true", help="predict again even if cached")
    p.add_argument("--types", default=",".join(TYPES), help="perturbation types (default: all 7)")
    p.add_argument("--levels", default="1,2,3,4,5", help="perturbation levels (default: 1-5)")
    p.add_argument(
        "--faces",
        choices=("clean", "detect"),
        default="clean",
        help="crop with the clean frames' faces (default) or find them on the perturbed frames",
    )
    p.add_argument("--mode", choices=("auto", "frames", "crops"), default="auto")
    p.add_argument("--source-root", help="where the index's source videos lie (frames mode)")
    p.add_argument("--seed", type=int, default=0, help="seed of BW's and GNC's draws")
    p.add_argument(
        "--frame-size", default="720,1280", help="crops mode, BW: frame height,width of the crops"
    )
    p.add_argument("--crop-side", type=float, help="crops mode, BW: frame pixels a crop covers")
    p.add_argument("--attributes", nargs="+", help="fairness: attributes (default: all)")
    p.add_argument(
        "--fairness-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fairness report setting (configs/fairness/report.yaml), e.g. level=video",
    )
    p.add_argument("--no-fairness", action="store_true", help="skip fairness under perturbation")
    p.add_argument("--no-progress", action="store_true")
    add_threshold_arguments(p)
    add_allow_partial_argument(p)
    add_import_argument(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    check_detector_source(args)
    check_cases(_list(args.types), _list(args.levels, int))  # before torch loads
    if args.out is not None:
        check_writable(args.out)  # before the model loads
    check_test_settings(args.config, args.overrides)  # then the settings and the files,
    check_source_files(args)  # before torch loads
    # imported after the arguments parse: --help and argument errors load no torch
    from fairforensics.evaluation import settings, testing
    from fairforensics.evaluation.model_package.load import load_model
    from fairforensics.evaluation.report import add_sections
    from fairforensics.evaluation.results import slug
    from fairforensics.evaluation.robustness import (
        RUN_INFO,
        RobustnessConfig,
        read_cases,
        run_robustness,
    )
    from fairforensics.evaluation.thresholds import (
        DecisionThreshold,
        decision_threshold,
        warn_if_one_class,
    )
    from fairforensics.fairness.report import load_report_config
    from fairforensics.fairness.robustness import case_gaps, write_robustness_fairness
    from fairforensics.preprocessing.index import dataset_label
    from fairforensics.preprocessing.resolve import check_datasets_complete, resolve_index

    import_modules(args.imports)
    configure_logging(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    overrides = [*args.overrides, "test_data=[" + ",".join(args.test_data) + "]"]
    if args.data_root:
        overrides.append(f"data_root={args.data_root}")
    cfg = settings.load_test_config(*args.config, overrides=overrides)
    check_datasets_complete(
        [*cfg.test_data, *([args.val_data] if args.val_data else [])],
        cfg.data_root or "datasets",
        allow_partial=args.allow_partial,
    )
    rcfg = RobustnessConfig(
        types=_list(args.types),
        levels=_list(args.levels, int),
        faces=args.faces,
        mode=args.mode,
        source_root=args.source_root,
        seed=args.seed,
        frame_size=_list(args.frame_size, int),
        crop_side=args.crop_side,
    )
    report_cfg = None if args.no_fairness else load_report_config(overrides=args.fairness_set)
    package = load_model(args.model) if args.model else None
    out = args.out
    if out is None and package is None:
        weights_label = (
            args.weights if args.weights in ("best", "last") else Path(args.weights).stem
        )
        out = (
            args.run / "eval" / weights_label / "robustness"
            if args.run
            else Path("evals") / f"{args.detector}_{weights_label}" / "robustness"
        )
    detector, name, train_data, meta, out = testing.load_for_test(
        args.run, args.detector, args.weights, args.model_config, cfg, out, variant=args.variant,
        package=package,
    )  # fmt: skip
    if args.out is None and package is not None:  # evals/<detector>_<package>/robustness
        out = out / "robustness"
    testing.check_writable(out)
    if args.val_data:
        if args.threshold is not None or args.threshold_from is not None:
            raise UserInputError("give --val-data, --threshold or --threshold-from, not several")
        val_index = resolve_index(args.val_data, cfg.data_root or "datasets")
        value = testing.validation_threshold(detector, val_index, cfg)
        threshold = DecisionThreshold(
            value, f"EER rule, {cfg.levels[0]} level, on the val split of {val_index.dataset}"
        )
    else:
        threshold = decision_threshold(
            run=args.run,
            threshold=args.threshold,
            threshold_from=args.threshold_from,
            weights=args.weights,
            packaged=None if package is None else package.threshold,
        )
    cfg.threshold = threshold.value
    meta["threshold_from"] = threshold.source
    print_threshold(threshold)
    run_robustness(
        detector,
        name,
        cfg,
        rcfg,
        out,
        train_data=train_data or args.train_data,
        meta=meta,
        overwrite=args.overwrite,
        progress=not args.no_progress,
    )
    for test_data in cfg.test_data:
        _, cases = read_cases(out / "predictions" / slug(test_data))
        clean = cases["clean"]
        warn_if_one_class(clean.score, threshold, f"{test_data} (clean)", y_true=clean.label)
    if report_cfg is not None:
        report_cfg.threshold = cfg.threshold
        rows = []
        partial = json.loads((out / RUN_INFO).read_text(encoding="utf-8")).get("partial") or {}
        for test_data in cfg.test_data:
            _, cases = read_cases(out / "predictions" / slug(test_data))
            label = dataset_label(test_data, partial.get(test_data))  # as in every table
            rows += case_gaps(cases, args.attributes, report_cfg, test_data=label)
        if rows:
            sections = write_robustness_fairness(rows, out, figures=cfg.plots)
            if cfg.report:
                add_sections(out / "report.html", sections)
            print((out / "robustness_fairness_table.md").read_text(encoding="utf-8"))
        else:
            logging.getLogger("fairness").warning("no attribute with two groups: no fairness")
    print((out / "robustness_table.md").read_text(encoding="utf-8"))
    if cfg.report:
        print(f"report: {(out / 'report.html').resolve()}")
    return 0


if __name__ == "__main__":
    run_cli(main)
