"""Pack a detector's evaluation folders into a submission bundle for a shared leaderboard.

  fairforensics submit EVAL_DIR [EVAL_DIR ...] --out BUNDLE [--package REF] [--card FILE]
      [--costs FILE] [--archive]

Each EVAL_DIR is an output folder of `fairforensics test` (one per training seed) of ONE
detector: its eval.json, predictions files and their provenance (detector, weights and index
SHA-256) are copied, with the model card or package reference, costs, the code version and the
submission time (SOURCE_DATE_EPOCH when set), and a SHA-256 manifest.json. No weights are
needed. --archive writes BUNDLE.tar.gz (reproducible) instead of the folder. A board admits it
with `fairforensics board build` (its guide below).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from fairforensics.cli.errors import UserInputError, configure_logging, run_cli
from fairforensics.cli.helptext import guide


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=guide("submit"),
    )
    p.add_argument("eval_dirs", nargs="+", type=Path, metavar="EVAL_DIR")
    p.add_argument("--out", type=Path, required=True, help="the bundle folder (new or empty)")
    p.add_argument(
        "--package",
        help="the model package: a folder of `fairforensics export` (its README.md becomes the "
        "card unless --card) or hf:OWNER/NAME@REVISION",
    )
    p.add_argument("--card", type=Path, help="a model card (Markdown) to show")
    p.add_argument("--costs", type=Path, help="a costs JSON (e.g. a board's costs.json)")
    p.add_argument("--archive", action="store_true", help="write BUNDLE.tar.gz, not a folder")
    args = p.parse_args(argv)
    for d in args.eval_dirs:
        if not (d / "eval.json").is_file():
            raise UserInputError(
                f"{d}: not an evaluation folder of `fairforensics test` (no eval.json)"
            )
    for path, option in ((args.card, "--card"), (args.costs, "--costs")):
        if path is not None and not path.is_file():
            raise UserInputError(f"{option} {path}: no such file")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from fairforensics.configs.writable import check_writable, check_writable_file

    if args.archive:
        name = args.out.name if args.out.name.endswith(".tar.gz") else args.out.name + ".tar.gz"
        check_writable_file(args.out.with_name(name))
    else:
        check_writable(args.out)
    configure_logging(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from fairforensics.benchmarks.submissions.bundle import SubmitSettings, make_bundle

    settings = SubmitSettings(args.package, args.card, args.costs, args.archive)
    out = make_bundle(args.eval_dirs, args.out, settings)
    print(f"bundle: {out.resolve()}")
    return 0


if __name__ == "__main__":
    run_cli(main)
