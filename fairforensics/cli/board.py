"""Define a benchmark's test items, and build a leaderboard site from submission bundles.

  fairforensics board define --test-data NAME [NAME ...] --data-root DIR --out FILE
      [--name NAME] [--split test] [--frame-num 32]
  fairforensics board build SUBMISSIONS/ --benchmark NAME|FILE --out SITE/ [--cache DIR]
      [--allow-refused]

define pins each index's SHA-256 and its test videos with the rows a frame detector writes
(frame-num evenly spaced frames; 0: every frame). build checks every bundle (folders and
.tar.gz archives of `fairforensics submit`) against the benchmark (a shipped name or a
definition file): its manifest, provenance and test items; lists each refused bundle with one
line and exits 1 when any is refused (unless --allow-refused), then writes the static site.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from fairforensics.cli.errors import UserInputError, configure_logging, run_cli
from fairforensics.cli.helptext import guide


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("board"),
    )
    sub = p.add_subparsers(dest="action", required=True, metavar="{define,build}")
    d = sub.add_parser("define", help="write a benchmark definition from dataset indexes")
    d.add_argument("--test-data", nargs="+", required=True, metavar="NAME")
    d.add_argument("--data-root", type=Path, required=True, help="where NAME.json lie")
    d.add_argument("--out", type=Path, required=True, help="the definition file (.json)")
    d.add_argument("--name", help="the benchmark's name (default: the file's stem)")
    d.add_argument("--split", default="test", help="the split whose videos are the test items")
    d.add_argument("--frame-num", type=int, default=32, help="frames per video (0: all)")
    b = sub.add_parser("build", help="check every bundle and write the site")
    b.add_argument("submissions", type=Path, metavar="SUBMISSIONS")
    b.add_argument("--benchmark", required=True, help="a shipped benchmark name or a file")
    b.add_argument("--out", type=Path, required=True, help="the site folder")
    b.add_argument("--cache", type=Path, help="unpacked archives and cached checks (default: "
                   "SITE-cache beside the site)")  # fmt: skip
    b.add_argument("--allow-refused", action="store_true", help="exit 0 with refused bundles")
    args = p.parse_args(argv)
    if args.action == "define":
        if args.frame_num < 0:
            raise UserInputError(f"--frame-num {args.frame_num}: must be >= 0 (0: every frame)")
        if not args.data_root.is_dir():
            raise UserInputError(f"--data-root {args.data_root}: not a folder")
    elif not args.submissions.is_dir():
        raise UserInputError(f"{args.submissions}: no such submissions folder")
    return args


def define(args: argparse.Namespace) -> int:
    """``board define``."""
    from fairforensics.benchmarks.submissions.definition import (
        definition_from_indexes,
        write_definition,
    )
    from fairforensics.configs.writable import check_writable_file

    check_writable_file(args.out)
    data = definition_from_indexes(
        args.test_data,
        args.data_root,
        name=args.name or args.out.stem,
        split=args.split,
        frame_num=args.frame_num or None,
    )
    write_definition(data, args.out)
    videos = sum(len(s["items"]) for s in data["test_sets"])
    print(f"benchmark {data['name']}: {len(data['test_sets'])} test sets, {videos:,} videos "
          f"-> {args.out}")  # fmt: skip
    return 0


def build(args: argparse.Namespace) -> int:
    """``board build``."""
    from fairforensics.benchmarks.submissions.definition import load_definition
    from fairforensics.configs.writable import check_writable

    load_definition(args.benchmark)  # a wrong name fails before any bundle is read
    check_writable(args.out)
    try:
        import fairforensics.benchmarks.site  # noqa: F401
        from fairforensics.benchmarks.submissions.build import build_board
    except ImportError as exc:
        raise UserInputError(f"board build needs fairforensics.benchmarks.site ({exc})") from None
    bundles = build_board(args.submissions, args.benchmark, args.out, cache_dir=args.cache)
    print(f"site: {args.out.resolve()} ({len(bundles.admitted)} bundles admitted, "
          f"{len(bundles.refused)} refused)")  # fmt: skip
    for name, why in bundles.refused:
        print(f"refused {name}: {why}", file=sys.stderr)
    return 1 if bundles.refused and not args.allow_refused else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return define(args) if args.action == "define" else build(args)


if __name__ == "__main__":
    run_cli(main)
