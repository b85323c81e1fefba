"""Evaluate a detector on test sets, or join evaluations into a leaderboard.

  scripts/test.py --run RUN_DIR [--weights best|last|FILE] --test-data FF-c23 CDFv2 ...
      [--split train|val|test|all]
  scripts/test.py --detector NAME --weights FILE [--model-config YAML] --test-data ...
  scripts/test.py --model PACKAGE_DIR|hf:OWNER/NAME[@REV] --test-data ...  (its threshold too)
  scripts/test.py --predictions FF-c23=a.csv CDFv2=b.csv --name MyDetector --out DIR
  scripts/test.py --leaderboard EVAL_DIR [EVAL_DIR ...] --out DIR
  scripts/test.py --compare A.csv B.csv  (DeLong's test of two detectors' AUCs, JSON)
  scripts/test.py --run RUN_DIR --test-data ... --calibration cal.json|run  (calibrated scores:
      a calibrate file, or the temperature the run fitted on validation; --predictions too)

Settings: configs/test/default.yaml < --config FILE < --set key=value (see evaluation.settings).
A requested test set that is skipped (an empty split, a failed prediction) is named and the
command exits 1 once the others are evaluated.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairforensics.cli.errors import UserInputError, add_import_argument, configure_logging, run_cli
from fairforensics.cli.helptext import config_help, guide
from fairforensics.cli.partial import add_allow_partial_argument
from fairforensics.cli.preflight import (
    check_calibration,
    check_files_exist,
    check_source_files,
    check_test_settings,
)
from fairforensics.cli.source import add_detector_source, check_detector_source
from fairforensics.configs import ConfigError, import_modules
from fairforensics.configs.writable import check_writable
from fairforensics.preprocessing.index import SPLIT_CHOICES  # no torch: --help stays light

if TYPE_CHECKING:
    from fairforensics.evaluation.calibration.source import ChosenCalibration
    from fairforensics.evaluation.testing import TestSetsSkipped


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("test"),
    )
    src = add_detector_source(p)
    src.add_argument(
        "--predictions", nargs="+", metavar="SET=CSV", help="evaluate existing predictions files"
    )
    src.add_argument(
        "--leaderboard", nargs="+", type=Path, metavar="EVAL_DIR", help="join evaluation folders"
    )
    src.add_argument(
        "--compare", nargs=2, type=Path, metavar="CSV", help="DeLong test of two files"
    )
    p.add_argument("--name", help="detector name shown in tables for --predictions")
    p.add_argument(
        "--format",
        choices=("csv", "parquet"),
        default="csv",
        help="format of the predictions files written (default csv; parquet is read wherever a "
        "predictions file is)",
    )
    p.add_argument(
        "--scores",
        choices=("prob", "logits"),
        default="prob",
        help="--predictions/--compare: the score column holds probabilities (default) or logits "
        "(the sigmoid is applied; the evaluation folder keeps probabilities)",
    )
    p.add_argument(
        "--train-data",
        default="",
        help="training data shown in tables (for --detector/--predictions)",
    )
    p.add_argument(
        "--test-data", nargs="+", default=None, help="dataset names (<data_root>/<name>.json)"
    )
    p.add_argument("--data-root", help="folder of the dataset indexes")
    p.add_argument(
        "--split",
        choices=SPLIT_CHOICES,
        help=f"split of each test set to score: {', '.join(SPLIT_CHOICES)} (all: every video; "
        "default: the test config's split, test)",
    )
    p.add_argument(
        "--val-data",
        nargs="+",
        help="choose the decision threshold on these datasets' val splits, pooled (EER rule); "
        "default: --run's validation threshold, a --model's threshold, else 0.5",
    )
    p.add_argument(
        "--calibration",
        metavar="FILE|run",
        help="map every score through a fitted calibration before any metric: a file of "
        "fairforensics calibrate, or run (the temperature scaling --run fitted on its validation "
        "frames, or the one a --model package carries); the predictions keep the original in "
        "score_uncalibrated, eval.json says which was applied, and a run's or package's "
        "threshold is mapped through it",
    )
    p.add_argument(
        "--config",
        type=Path,
        action="append",
        default=[],
        help=config_help("test", "test config, repeatable"),
    )
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", type=Path, help="output folder (default RUN_DIR/eval/<weights>)")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="predict again even if predictions of the same provenance exist",
    )
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="skip test sets whose index is missing (listed in eval.json and the report)",
    )
    add_allow_partial_argument(p)
    p.add_argument(
        "--within",
        nargs="+",
        help="leaderboard: within-domain test sets (default: those of the rows' training data)",
    )
    p.add_argument(
        "--latex",
        action="store_true",
        help="leaderboard: each table also as LaTeX (booktabs, <table>.tex)",
    )
    p.add_argument(
        "--section",
        action="append",
        default=[],
        metavar="TITLE=PATH[,PATH]",
        help="extra report section (fairness, metamorphic): images or .html files",
    )
    add_import_argument(p)
    return p.parse_args(argv)


def _sections(items: list[str]) -> list[tuple[str, list[str]]]:
    out = []
    for item in items:
        title, sep, paths = item.partition("=")
        if not sep:
            raise ConfigError(f"--section {item!r}: expected TITLE=PATH[,PATH]")
        out.append((title, paths.split(",")))
    return out


def _sets_threshold(args: argparse.Namespace) -> bool:
    """The user chose the decision threshold (``--set threshold=`` or a --config that sets it),
    which then wins over a model package's."""
    from fairforensics.configs import load_yaml, resolve_config

    return any(o.startswith("threshold=") for o in args.overrides) or any(
        "threshold" in (load_yaml(resolve_config(c, "test")) or {}) for c in args.config
    )


def _choose_threshold(
    args: argparse.Namespace, cfg: Any, meta: dict, detector: Any, out: Path, package: Any
) -> None:
    """``cfg.threshold`` and ``meta``'s ``threshold_from``/``threshold_chosen_by``, said in the
    log: the user's (``--set threshold=``, a --config), else chosen on ``--val-data``, else the
    resolver of ``detect`` (:func:`evaluation.thresholds.decision_threshold`: ``--run``'s
    validation threshold, a ``--model``'s threshold, else the default 0.5 and why); ``main``
    says it once the sets are evaluated."""
    from fairforensics.evaluation import testing
    from fairforensics.evaluation.thresholds import decision_threshold
    from fairforensics.preprocessing.resolve import resolve_index

    if _sets_threshold(args):
        meta["threshold_from"] = f"given: {cfg.threshold:g} (--set threshold / --config)"
        meta["threshold_chosen_by"] = "given"
    elif args.val_data:  # names under the data root, or .json paths (the one resolver)
        indexes = [resolve_index(v, cfg.data_root or "datasets") for v in args.val_data]
        cfg.threshold = testing.validation_threshold(detector, indexes, cfg, out_dir=out)
        sets = "+".join(i.dataset for i in indexes)
        meta["threshold_from"] = f"EER rule, {cfg.levels[0]} level, on the val split of {sets}"
        meta["threshold_chosen_by"] = "val_data"
    else:
        chosen = decision_threshold(
            run=args.run,
            packaged=None if package is None else package.threshold,
            weights=args.weights or "best",
            default=cfg.threshold,
        )
        cfg.threshold = chosen.value
        meta["threshold_from"] = chosen.source
        meta["threshold_chosen_by"] = (
            "run" if args.run is not None and chosen.source.startswith("validation threshold")
            else "package" if package is not None and package.threshold == chosen
            else "default"
        )  # fmt: skip


def _calibrate_threshold(cfg: Any, meta: dict, calibration: ChosenCalibration) -> None:
    """A threshold chosen on raw scores (the run's, ``--val-data``'s, a package's) mapped
    through the calibration, so that it decides on the calibrated scores as on the raw ones; a
    given or default threshold already is one on probabilities, and stays."""
    if meta.get("threshold_chosen_by") not in ("run", "val_data", "package"):
        return
    from fairforensics.evaluation.calibration.apply import calibrated_threshold

    raw = cfg.threshold
    cfg.threshold = calibrated_threshold(calibration.calibration, raw)
    meta["threshold_uncalibrated"] = raw
    meta["threshold_from"] += (
        f"; {raw:.6g} on the raw scores, mapped through the {calibration.calibration.method} "
        "calibration"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    check_detector_source(args)
    if args.scores != "prob" and not (args.predictions or args.compare):
        raise UserInputError("--scores applies to --predictions and --compare files only")
    if args.predictions and not (args.out and args.name):
        raise ConfigError("--predictions needs --name and --out")
    if args.out is not None:
        check_writable(args.out)  # before any model is loaded or file scored
    check_test_settings(args.config, args.overrides)  # then the settings and the files,
    check_source_files(args)  # before torch loads
    check_files_exist(
        [item.partition("=")[2] for item in args.predictions or []], "predictions file"
    )
    check_files_exist(args.compare or [], "predictions file")
    calibration = check_calibration(args)  # not a calibration, or not of these scores
    # after the arguments are read, so that --help and argument errors import no torch
    from fairforensics.evaluation import settings

    import_modules(args.imports)
    configure_logging(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    overrides = list(args.overrides)
    if args.test_data:
        overrides.append("test_data=[" + ",".join(args.test_data) + "]")
    if args.data_root:
        overrides.append(f"data_root={args.data_root}")
    if args.split:
        overrides.append(f"split={args.split}")
    cfg = settings.load_test_config(*args.config, overrides=overrides)
    skipped: TestSetsSkipped | None = None
    extra = _sections(args.section)
    if args.compare:
        from dataclasses import asdict

        from fairforensics.evaluation.predictions import read_predictions
        from fairforensics.evaluation.scoring import compare_auc

        a, b = (read_predictions(p, scores=args.scores) for p in args.compare)
        result = {lvl: asdict(compare_auc(a, b, lvl, cfg.reduce)) for lvl in cfg.levels}
        print(json.dumps(result, indent=2))
        return 0
    if args.leaderboard:
        from fairforensics.evaluation import leaderboard

        out = args.out or Path("leaderboard")
        leaderboard.build_leaderboard(
            args.leaderboard,
            out,
            cfg.metrics,
            cfg.levels,
            reduce=cfg.reduce,
            threshold=cfg.threshold if _sets_threshold(args) else None,  # else each row's own
            within=args.within,
            latex=args.latex,
            extra_sections=extra,
            n_boot=cfg.n_boot,
            confidence=cfg.confidence,
            seed=cfg.seed,
        )
    elif args.predictions:  # scored already: no model, no torch
        from fairforensics.evaluation import results

        files = dict(item.partition("=")[::2] for item in args.predictions)
        out = args.out
        results.evaluate_prediction_files(
            files, out, cfg, args.name, args.train_data, extra_sections=extra, scores=args.scores,
            fmt=args.format, calibration=calibration,
        )  # fmt: skip
    else:
        from fairforensics.evaluation import testing
        from fairforensics.evaluation.model_package.load import load_model
        from fairforensics.preprocessing.resolve import check_datasets_complete

        check_datasets_complete(
            [*cfg.test_data, *(args.val_data or [])],
            cfg.data_root or "datasets",
            allow_partial=args.allow_partial,
        )
        if args.detector:
            from fairforensics.detectors import list_detectors
            from fairforensics.detectors.registry import plugin_failure_note

            if args.detector not in list_detectors():
                raise UserInputError(
                    f"--detector {args.detector!r} is not a registered detector"
                    f"{plugin_failure_note(args.detector)}; choose one of "
                    f"{', '.join(list_detectors())} (or --import the module that registers it)"
                )
        package = load_model(args.model) if args.model else None
        if args.calibration is not None and calibration is None:  # a Hub package, now fetched
            calibration = check_calibration(args, package.config)
        detector, name, train_data, meta, out = testing.load_for_test(
            args.run,
            args.detector,
            args.weights,
            args.model_config,
            cfg,
            args.out,
            variant=args.variant,
            package=package,
        )
        _choose_threshold(args, cfg, meta, detector, out, package)
        if calibration is not None:
            _calibrate_threshold(cfg, meta, calibration)
        try:
            testing.run_test(
                detector,
                name,
                cfg,
                out,
                train_data=train_data or args.train_data,
                meta=meta,
                overwrite=args.overwrite,
                extra_sections=extra,
                tensorboard_dir=args.run / "tensorboard" if args.run else None,
                allow_missing=args.allow_missing,
                fmt=args.format,
                calibration=calibration,
            )
        except testing.TestSetsSkipped as exc:  # the others are written: show them, exit 1
            skipped = exc
        from fairforensics.cli.thresholds import print_threshold
        from fairforensics.evaluation.thresholds import DecisionThreshold

        print_threshold(DecisionThreshold(cfg.threshold, meta["threshold_from"]))
    for level in cfg.levels:
        summary = out / "tables" / f"{level}_summary.md"
        if summary.is_file():
            print(summary.read_text(encoding="utf-8"))
    print(f"report: {(out / 'report.html').resolve()}")
    if not args.leaderboard:  # a leaderboard reads the evaluations' predictions, writes none
        print(f"predictions: {(out / 'predictions').resolve()}")
    if skipped is not None:
        print(f"error: {skipped}", file=sys.stderr)
        return skipped.exit_code
    return 0


if __name__ == "__main__":
    run_cli(main)
