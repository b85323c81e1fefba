r"""Verify that a dataset arrived whole: absent, unlisted and unreadable files, per-method counts.

Examples::

    ff-verify --config FF-c23 --set dataset.root=/data/FaceForensics++     # a raw dataset
    ff-verify datasets/FF-c23.json                                         # a processed tree
    ff-verify dataset_json/FaceForensics++.json --data-root /data/dfb      # DeepfakeBench / DF40
    ff-verify /data/FaceForensics++ --write-manifest ff.sha256             # lab A
    ff-verify /data/FaceForensics++ --manifest ff.sha256                   # lab B: same bytes?

A raw dataset is checked through its preprocess config (any shipped one): the files its lists
name, the videos or images beside them that no list names, each one decoded (first and last
frame), and the counts per method against the published ones (FF++ and Celeb-DF v2, and the
test splits of those and of Celeb-DF++). A JSON index
is checked the same way for its frames, landmarks and masks, and, when the index records the
raw dataset it was made from (``source_root``, or --source-root), each video's source file is
found and decoded too. --write-manifest writes the SHA-256 of every file of the tree (the
dataset root, the index's folder, or the folder given); --manifest compares the tree with one.
Prints a table; exit 1 when anything differs, 0 when nothing does, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from fairforensics.cli.errors import UserInputError, add_import_argument, run_cli
from fairforensics.cli.helptext import config_help, guide


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("verify"),
    )
    p.add_argument(
        "target",
        nargs="?",
        type=Path,
        help="a dataset index JSON (ours, DeepfakeBench's or DF40's) or a folder (manifests only)",
    )
    p.add_argument(
        "--config",
        action="append",
        help=config_help("preprocess", "a raw dataset's preprocess config, repeatable"),
    )
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument(
        "--data-root",
        type=Path,
        help="a DeepfakeBench / DF40 JSON: the folder its frame paths start from",
    )
    p.add_argument(
        "--source-root",
        type=Path,
        help="an index: where its source videos lie (default: the source_root it records)",
    )
    p.add_argument(
        "--write-manifest", type=Path, metavar="FILE", help="write the tree's SHA-256 manifest"
    )
    p.add_argument(
        "--manifest", type=Path, metavar="FILE", help="compare the tree with a SHA-256 manifest"
    )
    p.add_argument("--no-decode", action="store_true", help="check presence only, decode no file")
    p.add_argument(
        "--workers", type=int, default=min(8, os.cpu_count() or 1), help="threads (decode, hash)"
    )
    p.add_argument("--json", type=Path, metavar="FILE", help="write every finding as JSON")
    p.add_argument("--no-progress", action="store_true")
    add_import_argument(
        p, "import a module first (e.g. one that registers a dataset layout; repeatable)"
    )
    args = p.parse_args(argv)
    if (args.target is None) == (not args.config):
        p.error("give a target (an index JSON or a folder) or --config, one of them")
    if args.overrides and not args.config:
        p.error("--set applies to --config")
    if args.workers < 1:
        p.error("--workers must be >= 1")
    if args.target is not None and not args.target.exists():
        raise UserInputError(f"{args.target}: no such file or folder")
    if args.target is not None and args.target.is_file() and args.target.suffix != ".json":
        raise UserInputError(f"{args.target}: expected a dataset index (.json) or a folder")
    if args.source_root is not None and not args.source_root.is_dir():
        raise UserInputError(f"--source-root {args.source_root}: not a folder")
    if args.data_root is not None and not args.data_root.is_dir():
        raise UserInputError(f"--data-root {args.data_root}: not a folder")
    if args.manifest is not None and not args.manifest.is_file():
        raise UserInputError(f"--manifest {args.manifest}: no such file")
    if args.write_manifest is not None and args.manifest is not None:
        p.error("--write-manifest and --manifest: one at a time")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from fairforensics.configs import import_modules
    from fairforensics.configs.writable import check_writable_file
    from fairforensics.preprocessing import verify

    for out in (args.write_manifest, args.json):
        if out is not None:
            check_writable_file(out)  # before the tree is read
    import_modules(args.imports)
    decode, bar, workers = not args.no_decode, not args.no_progress, args.workers
    if args.config:
        from fairforensics.preprocessing.config import load_preprocess_config

        cfg = load_preprocess_config(*args.config, overrides=args.overrides)
        report = verify.verify_raw(cfg, decode=decode, workers=workers, progress=bar)
    elif args.target.is_dir():
        report = verify.verify_tree(args.target)
    else:
        report = verify.verify_index(
            args.target,
            args.data_root,
            source_root=args.source_root,
            decode=decode,
            workers=workers,
            progress=bar,
        )
    if args.write_manifest is not None:
        n = verify.write_manifest(report.tree, args.write_manifest, workers=workers, progress=bar)
        report.notes.append(f"SHA-256 manifest of {n:,} files written to {args.write_manifest}")
    if args.manifest is not None:
        verify.compare_manifest(report, args.manifest, workers=workers, progress=bar)
    print(report.table(), end="")
    if args.json is not None:
        from fairforensics.preprocessing.files import write_json

        write_json(args.json, report.to_json(), indent=2)
    return 0 if report.ok else 1


if __name__ == "__main__":
    run_cli(main)
