r"""Preprocess a dataset: aligned face crops, landmarks, masks and the dataset index JSON.

Example::

    python scripts/preprocess.py --config configs/preprocess/demo.yaml --workers 2
    ff-preprocess --config FF-c23 --num-shards 8 --shard-index $SLURM_ARRAY_TASK_ID
    ff-preprocess --config FF-c23 --index-only
    python scripts/preprocess.py --import-deepfakebench FaceForensics++.json \
        --data-root /data/deepfakebench --out datasets/FF-c23.json
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from fairforensics.cli.errors import add_import_argument, configure_logging, run_cli
from fairforensics.cli.helptext import config_help, guide
from fairforensics.configs import import_modules
from fairforensics.configs.writable import check_writable, check_writable_file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=guide("preprocess"))
    parser.add_argument(
        "--config",
        action="append",
        help=config_help("preprocess", "dataset config, repeatable (later wins)"),
    )
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    parser.add_argument("--num-shards", type=int, default=1)
    parser.add_argument("--shard-index", type=int, default=0)
    parser.add_argument("--overwrite", action="store_true", help="redo finished videos")
    parser.add_argument(
        "--index-only", action="store_true", help="write the index, process nothing"
    )
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--list",
        action="store_true",
        help="list the dataset (videos, labels, methods, splits, attributes) and its counts "
        "per split and method; decodes nothing",
    )
    parser.add_argument(
        "--list-out", type=Path, metavar="FILE", help="with --list: write the listing as CSV"
    )
    add_import_argument(
        parser, "import a module first (e.g. one that registers a dataset layout; repeatable)"
    )
    dfb = parser.add_argument_group("import a DeepfakeBench JSON instead of preprocessing")
    dfb.add_argument("--import-deepfakebench", type=Path, metavar="JSON")
    dfb.add_argument("--data-root", type=Path, help="folder the JSON's frame paths start from")
    dfb.add_argument("--out", type=Path, help="index to write (inside --data-root or above it)")
    dfb.add_argument("--compression", default="c23")
    dfb.add_argument("--strip-prefix", help="leading path to remove from the JSON's frame paths")
    dfb.add_argument(
        "--dataset", help="name of the index and its predictions (default: the stem of --out)"
    )
    dfb.add_argument("--attributes", type=Path, help="CSV of per-video attributes (gender, ...)")
    dfb.add_argument(
        "--attributes-key",
        default="video",
        help="its key column: <label name>/<video>, <method>/<video> or the video id",
    )
    dfb.add_argument(
        "--df40",
        action="store_true",
        help="a DF40 JSON: give each entry its DF40 method, family, domain and known/unknown",
    )
    dfb.add_argument(
        "--allow-missing-frames",
        action="store_true",
        help="drop frames that do not exist (logged, counted in split_info) instead of failing",
    )
    args = parser.parse_args(argv)
    configure_logging(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.import_deepfakebench:
        if not (args.data_root and args.out):
            parser.error("--import-deepfakebench needs --data-root and --out")
        check_writable_file(args.out)  # before the JSON is read
        return _import(args)
    if not args.config:
        parser.error("--config is required")
    if args.list_out and not args.list:
        parser.error("--list-out needs --list")
    # after the arguments are read, so that --help and argument errors start at once
    from fairforensics.preprocessing.config import load_preprocess_config
    from fairforensics.preprocessing.pipeline import (
        PreprocessInterrupted,
        StopRequested,
        TooManyFailures,
        check_failures,
        run_preprocess,
    )

    import_modules(args.imports)
    cfg = load_preprocess_config(*args.config, overrides=args.overrides)
    if args.list:
        if args.list_out is not None:
            check_writable_file(args.list_out, "--list-out")  # before the tree is listed
        return _list(cfg, args.list_out)
    check_writable(cfg.output.root, "output.root (--set output.root=DIR)")  # before any video
    try:
        summary = run_preprocess(
            cfg,
            workers=args.workers,
            num_shards=args.num_shards,
            shard_index=args.shard_index,
            overwrite=args.overwrite,
            index_only=args.index_only,
            progress=not args.no_progress,
        )
    except PreprocessInterrupted as exc:  # Ctrl-C / SIGTERM: the finished videos are indexed
        logging.getLogger("preprocess").error("%s", exc)
        return exc.exit_code
    except StopRequested as exc:  # while listing, or while writing the index
        logging.getLogger("preprocess").error("interrupted; re-run the same command to resume")
        return 128 + exc.signum
    print(json.dumps(summary.to_json(), indent=1))
    try:
        check_failures(summary, cfg.max_failed_share)
    except TooManyFailures as exc:
        logging.getLogger("preprocess").error("%s", exc)
        return exc.exit_code
    return 0


def _list(cfg: object, out: Path | None) -> int:
    """Print the counts of the listing (and write its CSV): the same listing, and the same
    errors, as a run."""
    from fairforensics.preprocessing.listing_table import listing_counts, write_listing_csv
    from fairforensics.preprocessing.pipeline import list_items

    listing = list_items(cfg)
    if out is not None:
        write_listing_csv(listing, Path(cfg.dataset.root), out)
    summary = {
        "dataset": cfg.dataset.name,
        "videos": listing.videos_found,
        "missing": listing.missing,
        "counts": listing_counts(listing),
        "split_info": listing.split_info,
    }
    if out is not None:
        summary["listing"] = str(out)
    print(json.dumps(summary, indent=1))
    return 0


def _import(args: argparse.Namespace) -> int:
    from fairforensics.preprocessing.datasets.deepfakebench import (
        import_deepfakebench_json,
        rebase_index,
    )
    from fairforensics.preprocessing.index import write_index

    index = import_deepfakebench_json(
        args.import_deepfakebench, args.data_root, compression=args.compression,
        strip_prefix=args.strip_prefix, dataset=args.dataset or args.out.stem,
        attributes=args.attributes, attributes_key=args.attributes_key,
        allow_missing_frames=args.allow_missing_frames,
    )  # fmt: skip
    if args.df40:
        from fairforensics.preprocessing.datasets.df40 import annotate_df40

        annotate_df40(index)
    rebase_index(index, args.out.parent)
    write_index(index, args.out)
    print(json.dumps({"index": str(args.out), "videos": len(index.videos)}))
    return 0


if __name__ == "__main__":
    run_cli(main)
