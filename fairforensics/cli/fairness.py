r"""Fairness report of a predictions file: per-group metrics, bias factor, FDR/ABF, ODTA, figures.

    python scripts/fairness.py --predictions runs/x/predictions/test.csv --attributes gender \
        --out runs/x/fairness
    # intersectional groups (female/Asian, ...); groups under 30 rows reported but not ranked
    python scripts/fairness.py --predictions test.csv --attributes gender,race \
        --min-group-size 30 --out runs/x/fairness_gxr
    python scripts/fairness.py --protocol configs/fairness/protocol_1.yaml --out runs/p1 \
        --data-root demo_data/processed --dataset demo
    # on the same videos scored twice (a perturbation, a mitigation, a new checkpoint): did a
    # gap change? paired_changes.csv|md|json (change, interval, p, Holm-adjusted p)
    python scripts/fairness.py --predictions before.csv --paired-with after.csv \
        --attributes gender --out runs/x/paired
"""

from __future__ import annotations

import argparse
import functools
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fairforensics.cli.errors import (
    UserInputError,
    add_import_argument,
    configure_logging,
    describe,
    run_cli,
)
from fairforensics.cli.helptext import config_help, guide
from fairforensics.cli.partial import add_allow_partial_argument
from fairforensics.cli.preflight import check_files_exist
from fairforensics.cli.thresholds import add_threshold_arguments, print_threshold
from fairforensics.configs import ConfigError, import_modules, shipped_configs
from fairforensics.configs.writable import check_writable

if TYPE_CHECKING:
    from fairforensics.evaluation.thresholds import DecisionThreshold
    from fairforensics.fairness.report import ReportConfig


def train_run(detector: str, train_configs: list, overrides: dict) -> Path:
    """One training of a fairness protocol (with FairSWAP when its config enables it)."""
    from fairforensics.fairness.fairswap import fairswap_transforms
    from fairforensics.training.config import load_train_config
    from fairforensics.training.trainer import Trainer

    cfg = load_train_config(detector, *train_configs, overrides=overrides)
    return Trainer(cfg, batch_transforms=fairswap_transforms(cfg.train)).fit()


def report_threshold(cfg: ReportConfig, args: argparse.Namespace) -> DecisionThreshold:
    """The report's decision threshold: the report settings' ``threshold`` when they set one
    (an error together with --threshold/--threshold-from), else
    :func:`evaluation.thresholds.decision_threshold` (--threshold, --threshold-from, the
    eval.json beside the predictions, 0.5)."""
    from fairforensics.evaluation.thresholds import DecisionThreshold, decision_threshold

    if cfg.threshold is None:
        return decision_threshold(
            threshold=args.threshold,
            threshold_from=args.threshold_from,
            predictions=Path(args.predictions),
        )
    if args.threshold is not None or args.threshold_from is not None:
        raise UserInputError(
            "the report settings set threshold (--config/--set) and --threshold or "
            "--threshold-from gives another: give one"
        )
    return DecisionThreshold(cfg.threshold, f"threshold {cfg.threshold:g} of the report settings")


def paired(args: argparse.Namespace, cfg: ReportConfig, threshold: DecisionThreshold) -> int:
    """``--paired-with``: the paired change of every gap from ``--predictions`` to
    ``--paired-with`` (:func:`fairness.paired.paired_changes`), written to ``--out``."""
    from fairforensics.evaluation.predictions import read_predictions
    from fairforensics.fairness.paired import paired_changes, write_paired_changes
    from fairforensics.fairness.tables import to_markdown

    first = read_predictions(args.predictions, scores=args.scores)
    second = read_predictions(args.paired_with, scores=args.scores)
    names = (args.predictions, args.paired_with)
    rows = paired_changes(first, second, args.attributes, cfg, names=names)
    if not rows:
        print("no attribute with two or more groups: nothing to compare", file=sys.stderr)
        return 1
    paths = write_paired_changes(rows, args.out)
    print_threshold(threshold)
    cols = ["attribute", "metric", "group_a", "group_b", "change", "ci_low", "ci_high", "p"]
    print(to_markdown(rows, [*cols, "p_adjusted"]))
    print(f"paired changes: {paths[0]}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("fairness"),
    )
    shipped_protocols = [n for n in shipped_configs("fairness") if n != "report"]
    parser.add_argument("--predictions", help="predictions CSV (one row per frame)")
    parser.add_argument(
        "--paired-with",
        metavar="CSV",
        help="predictions of the same videos and frames scored otherwise: the paired change of "
        "every gap (paired_changes.csv) instead of the report",
    )
    parser.add_argument(
        "--attributes",
        nargs="+",
        help="attribute columns to group by (default: all); a,b groups by their intersection",
    )
    parser.add_argument(
        "--scores",
        choices=("prob", "logits"),
        default="prob",
        help="the predictions' score column: probabilities (default) or logits (sigmoid applied)",
    )
    parser.add_argument("--out", required=True, help="output folder for tables and figures")
    parser.add_argument(
        "--config", help=config_help("fairness", "report settings", names=["report"])
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a report key"
    )
    parser.add_argument("--level", choices=("frame", "video"), help="frame- or video-level metrics")
    parser.add_argument("--no-figures", action="store_true", help="skip the figures")
    parser.add_argument(
        "--alpha",
        type=float,
        help="FDR/ABF weight of APCER (beats a protocol's alpha, which beats the report's)",
    )
    parser.add_argument(
        "--species-rule",
        choices=("pooled", "worst"),
        help="attack species in APCER: pooled proportion (paper 001) or worst species (ISO)",
    )
    parser.add_argument(
        "--min-group-size",
        type=int,
        help="groups with fewer rows are reported but not ranked (no gaps, tests, FDR/ABF)",
    )
    parser.add_argument(
        "--protocol",
        help=config_help(
            "fairness", "run a protocol instead (trains detectors)", shipped_protocols
        ),
    )
    parser.add_argument("--data-root", help="protocol: folder of the dataset index")
    parser.add_argument("--dataset", help="protocol: dataset name (<data-root>/<name>.json)")
    parser.add_argument(
        "--detectors", nargs="+", help="protocol: override the protocol's detectors"
    )
    parser.add_argument(
        "--train-config",
        help=config_help("train", "protocol: extra train config (e.g. demo)"),
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    add_allow_partial_argument(parser)
    add_threshold_arguments(parser)
    add_import_argument(parser)
    args = parser.parse_args(argv)
    if args.protocol:
        if args.paired_with:
            raise UserInputError("--paired-with compares two predictions files, not a protocol")
        if args.threshold is not None or args.threshold_from is not None:
            raise UserInputError(
                "--threshold and --threshold-from apply to --predictions: a protocol "
                "compares groups at APCER operating points"
            )
        if not (args.data_root and args.dataset):
            parser.error("--protocol needs --data-root and --dataset")
    elif not args.predictions:
        parser.error("give --predictions FILE (or --protocol FILE)")
    if args.out is not None:
        check_writable(args.out)  # before any fairness protocol trains
    check_files_exist([p for p in (args.predictions, args.paired_with) if p], "predictions file")
    # after the arguments are read, so that --help and argument errors import no torch
    from fairforensics.evaluation.predictions import PredictionsError, read_predictions
    from fairforensics.evaluation.thresholds import warn_if_one_class
    from fairforensics.fairness import protocols
    from fairforensics.fairness.evaluation_section import (
        add_fairness_section,
        evaluation_notes,
        evaluation_report_of,
    )
    from fairforensics.fairness.report import (
        fairness_report,
        format_summary,
        load_report_config,
        write_report,
    )
    from fairforensics.preprocessing.resolve import check_datasets_complete

    configure_logging(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    overrides = list(args.set)
    if args.level:
        overrides.append(f"level={args.level}")
    if args.no_figures:
        overrides.append("figures=false")
    for key in ("alpha", "species_rule", "min_group_size"):
        if getattr(args, key) is not None:
            overrides.append(f"{key}={getattr(args, key)}")
    explicit_alpha = any(o.split("=", 1)[0].strip() == "alpha" for o in overrides)
    try:
        import_modules(args.imports)
        cfg = load_report_config(args.config, overrides=overrides)
        if args.protocol:
            check_datasets_complete(
                [args.dataset], args.data_root, allow_partial=args.allow_partial
            )
            protocol = protocols.load_protocol(args.protocol)
            if not explicit_alpha:  # --alpha / --set alpha= > the protocol's alpha > report's
                cfg.alpha = protocol.alpha
            tables = protocols.run_protocol(
                protocol,
                args.data_root,
                args.dataset,
                args.out,
                detectors=args.detectors,
                train_configs=[args.train_config] if args.train_config else [],
                report_cfg=cfg,
                train_fn=functools.partial(protocols.train_and_predict, train_run),
            )
            for name, path in tables.items():
                print(f"{name}: {path}")
            return 0
        threshold = report_threshold(cfg, args)
        cfg.threshold = threshold.value
        if args.paired_with:
            return paired(args, cfg, threshold)
        pred = read_predictions(args.predictions, scores=args.scores)
        notes = evaluation_notes(args.predictions)  # a partial set, another crop (eval.json)
        for note in notes:
            logging.getLogger("fairness").warning("%s", note)
        warn_if_one_class(pred.score, threshold, args.predictions, y_true=pred.label)
        reports = fairness_report(pred, args.attributes, cfg)
        if not reports:
            print("no attribute with two or more groups: nothing to report", file=sys.stderr)
            return 1
        write_report(reports, args.out, figures=cfg.figures, threshold=threshold)
    except (ConfigError, PredictionsError, KeyError, ValueError) as exc:
        print(f"error: {describe(exc)}", file=sys.stderr)  # names, not a KeyError's repr
        return 2
    print_threshold(threshold)
    print("".join(f"note: {n}\n" for n in notes) + format_summary(reports))
    print(f"tables and figures: {args.out}")
    report = evaluation_report_of(args.predictions)
    if report is not None:  # the predictions of scripts/test.py: add the section to its report
        try:
            add_fairness_section(report, reports, Path(args.out), args.predictions, cfg.threshold)
        except (OSError, ValueError) as exc:
            logging.getLogger("fairness").warning("%s: no fairness section added: %s", report, exc)
        else:
            print(f"fairness section added to {report}")
    return 0


if __name__ == "__main__":
    run_cli(main)
