"""Audit a dataset for shortcuts: can its labels be predicted from file metadata alone?

  fairforensics audit --data FF-c23 --data-root datasets --source-root RAW_ROOT --out audit/FF-c23

Reads each video's or image's container, codec, width, height, frame rate, bit rate, duration,
file size and JPEG quality (the raw files the index's ``source`` paths name, under
--source-root, else the source root the index records), the face's size in the frame and the
crops' sharpness; a random forest, cross-validated with identities (or videos) kept apart,
predicts the label from them, and a permutation test that refits it all (--n-perm times, labels
permuted within identities) gives the p-value. Writes audit.json, audit.md, audit.png/.pdf and
the out-of-fold scores as predictions/<dataset>.csv (the leaderboard's ``metadata`` baseline);
warns of any AUC above 0.7 on at least 5 videos of each class. Prints first whether the file
metadata was read, then the verdict.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from fairforensics.cli.errors import UserInputError, configure_logging
from fairforensics.cli.helptext import guide
from fairforensics.configs.writable import check_writable
from fairforensics.preprocessing.index import ALL_SPLITS, SPLIT_CHOICES


def _at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {low}")
        return value

    return parse


_positive = _at_least(1)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("audit"),
    )
    p.add_argument("--data", required=True, help="dataset name (or a path to its index .json)")
    p.add_argument("--data-root", default="datasets", help="folder of the dataset indexes")
    p.add_argument(
        "--source-root",
        type=Path,
        help="where the index's source files lie (default: the source root the index records; "
        "without either only the crops are audited)",
    )
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument(
        "--split",
        nargs="+",
        choices=SPLIT_CHOICES,
        default=[ALL_SPLITS],
        help="splits to audit (default: all)",
    )
    p.add_argument("--no-faces", action="store_true", help="skip the face detector (face_share)")
    p.add_argument("--folds", type=_positive, default=5, help="cross-validation folds (default 5)")
    p.add_argument("--trees", type=_positive, default=100, help="trees of the forest (default 100)")
    p.add_argument(
        "--n-perm",
        type=_at_least(0),
        default=99,
        help="refits of the permutation test (default 99: p from 0.01; 0: no p-value)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.source_root is not None and not args.source_root.is_dir():
        raise UserInputError(f"--source-root {args.source_root}: not a folder")
    check_writable(args.out)  # before any file is read
    # imported after the arguments parse: --help and argument errors load no torch
    from fairforensics.evaluation.audit import audit_dataset
    from fairforensics.preprocessing.resolve import resolve_index

    configure_logging(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    index = resolve_index(args.data, args.data_root)
    summary = audit_dataset(
        index,
        args.out,
        source_root=args.source_root,
        splits=tuple(args.split),
        faces=not args.no_faces,
        n_splits=args.folds,
        n_estimators=args.trees,
        n_perm=args.n_perm,
        seed=args.seed,
        progress=not args.no_progress,
    )
    if summary["not_read"]:
        print(f"{index.dataset}: {summary['not_read']}")
    print(f"{index.dataset}: {summary['verdict']}")
    print(
        f"{index.dataset}: {summary['n_videos']} videos ({summary['n_skipped']} skipped); "
        f"{len(summary['warnings'])} warning(s); {args.out / 'audit.md'}"
    )
    log = logging.getLogger("fairforensics.audit")
    for warning in summary["warnings"]:
        log.warning("shortcut: %s", warning)
    return 0
